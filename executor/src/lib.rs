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
pub mod describe;
pub mod doctor;
pub mod epiphan;
pub mod execute;
pub mod listener;
pub mod login;
pub mod os;
pub mod reads;
pub mod slot;
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

/// `audit verify`: the row count and head, or the first bad row.
pub fn audit_verify(config: &Config) -> Result<String, String> {
    context::state_dir(config).map_err(|e| e.to_string())?;
    let path = config.database();
    if !path.exists() {
        return Err(format!(
            "{} does not exist; nothing to verify",
            path.display()
        ));
    }
    let conn = store::connect(&path).map_err(|e| e.to_string())?;
    let (rows, head) = audit::verify(&conn).map_err(|e| e.to_string())?;
    if !audit::guarded(&conn).map_err(|e| e.to_string())? {
        return Err(
            "the chain verifies, but a trigger that keeps the audit append-only is missing".into(),
        );
    }
    Ok(format!(
        "audit chain OK: {rows} row(s), head {}",
        audit::hex(&head)
    ))
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
