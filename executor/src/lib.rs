//! The Fleetwatch executor: the only process that holds the sandbox sign-in and can write.
//!
//! It accepts one request per connection on a Unix socket from the configured assistant uid,
//! verifies the signed approval against installed public keys, spends the approval's nonce
//! durably, re-reads live state through the sandbox sign-in, re-checks everything with its own
//! policy and fence, and makes the one write. Start reading at [`execute::execute`].
#![forbid(unsafe_code)]

pub mod audit;
pub mod checks;
pub mod config;
pub mod context;
pub(crate) mod describe;
pub mod doctor;
pub mod epiphan;
pub(crate) mod execute;
pub(crate) mod listener;
pub mod login;
pub(crate) mod os;
pub(crate) mod reads;
pub mod slot;
pub(crate) mod state;
pub mod store;

use std::sync::Arc;

use config::Config;

/// `serve`: loads everything, then listens until stopped.
pub async fn serve(config: Config) -> Result<(), String> {
    let ctx = context::Context::load(config).map_err(|e| e.to_string())?;
    if !ctx.config.fence.configured() {
        tracing::warn!(
            "no fence configured (FLEETWATCH_WRITE_DEVICE_IDS / FLEETWATCH_WRITE_TEAM_ID): every Execute will be refused"
        );
    }
    listener::serve(Arc::new(ctx))
        .await
        .map_err(|e| e.to_string())
}

fn open_audit(config: &Config) -> Result<rusqlite::Connection, String> {
    context::state_dir(config).map_err(|e| e.to_string())?;
    let path = config.database();
    if !path.exists() {
        return Err(format!(
            "{} does not exist; nothing to verify",
            path.display()
        ));
    }
    store::connect(&path).map_err(|e| e.to_string())
}

/// `audit verify [--against LISTING]`: the row count and head, or the first bad row. With the
/// assistant's heads listing (`fleetwatch audit heads`), also that every assistant head this
/// log recorded is still in the assistant's chain, which is how removing the assistant's
/// newest audit rows shows.
pub fn audit_verify(config: &Config, assistant_heads: Option<&str>) -> Result<String, String> {
    use fleetwatch_protocol::anchor;
    let conn = open_audit(config)?;
    let (rows, head) = audit::verify(&conn).map_err(|e| e.to_string())?;
    if !audit::guarded(&conn).map_err(|e| e.to_string())? {
        return Err(
            "the chain verifies, but a trigger that keeps the audit append-only is missing".into(),
        );
    }
    let mut report = format!(
        "audit chain OK: {rows} row(s), head {}",
        fleetwatch_protocol::hex::encode(&head)
    );
    if let Some(listing) = assistant_heads {
        let theirs =
            anchor::parse_heads(listing).map_err(|e| format!("the assistant's heads: {e}"))?;
        let recorded = audit::assistant_anchors(&conn).map_err(|e| e.to_string())?;
        if let Some(missing) = anchor::first_missing(&recorded, &theirs) {
            return Err(format!(
                "audit row {} recorded the assistant's chain head {}, which the assistant's \
                 chain no longer contains: rows were removed from the assistant's audit log \
                 (or the listing is not from this assistant)",
                missing.row,
                fleetwatch_protocol::hex::encode(&missing.head)
            ));
        }
        report.push_str(&format!(
            "\nanchors OK: all {} assistant head(s) recorded here are in the assistant's chain ({} row(s))",
            recorded.len(),
            theirs.len()
        ));
    }
    Ok(report)
}

/// `audit heads`: one `SEQ HASH` line per audit row, oldest first, for the assistant's
/// `audit verify --against`.
pub fn audit_heads(config: &Config) -> Result<String, String> {
    let conn = open_audit(config)?;
    let heads = audit::heads(&conn).map_err(|e| e.to_string())?;
    Ok(heads
        .iter()
        .map(|(seq, hash)| fleetwatch_protocol::anchor::heads_line(*seq, hash))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `keys list`: the installed approver key IDs, one per line.
pub fn keys_list(config: &Config) -> Result<String, String> {
    let keys = context::load_keys(&config.approver_keys).map_err(|e| e.to_string())?;
    Ok(keys
        .key_ids()
        .iter()
        .map(|k| format!("ed25519 {}", k.to_hex()))
        .collect::<Vec<_>>()
        .join("\n"))
}
