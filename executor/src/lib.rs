//! The Fleetwatch executor: the only process that holds the sandbox sign-in and can write.
//!
//! It accepts one request per connection on a Unix socket from the configured assistant uid,
//! verifies the signed approval against installed public keys, spends the approval's nonce
//! durably, re-reads live state through the sandbox sign-in, re-checks everything with its own
//! policy and fence, and makes the one write. Start reading at [`execute::execute`].
#![forbid(unsafe_code)]

pub mod approvers;
pub mod audit;
pub mod audit_show;
pub mod checks;
pub mod config;
pub mod context;
pub(crate) mod describe;
pub mod doctor;
pub mod epiphan;
pub(crate) mod execute;
pub mod freeze;
pub(crate) mod holder;
pub(crate) mod listener;
pub mod login;
pub(crate) mod os;
pub(crate) mod reads;
pub mod receipt;
pub mod slot;
pub(crate) mod state;
pub mod store;

use std::sync::Arc;

use config::Config;

/// Root running a command on the executor's state becomes the state folder's owner first (see
/// [`os::act_as_state_owner`]); returns the uid taken on, if any.
pub fn act_as_state_owner(config: &Config) -> Result<Option<u32>, String> {
    os::act_as_state_owner(&config.state_dir)
}

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

/// `audit show`: the rows in words or JSON lines, opened read-only (it may run while `serve`
/// runs, as root, without leaving a file behind).
pub fn audit_show(
    config: &Config,
    filter: audit_show::Filter,
    json: bool,
    spanish: bool,
) -> Result<String, String> {
    let path = config.database();
    if !path.exists() {
        return Err(format!(
            "{} does not exist; nothing to show",
            path.display()
        ));
    }
    let conn = store::open_read_only(&path).map_err(|e| e.to_string())?;
    audit_show::show(&conn, filter, json, spanish).map(|text| text.trim_end().to_owned())
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

/// `keys list`: the installed assistant key IDs, one per line.
pub fn keys_list(config: &Config) -> Result<String, String> {
    let file = approvers::load(&config.approver_keys).map_err(|e| e.to_string())?;
    Ok(file
        .keys
        .key_ids()
        .iter()
        .map(|k| format!("ed25519 {}", k.to_hex()))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `approvers list`: the assistant keys, then every person with their passkeys (synced or
/// device-bound, and the last counter seen).
pub fn approvers_list(config: &Config) -> Result<String, String> {
    let path = &config.approver_keys;
    let text = approvers::read(path).map_err(|e| e.to_string())?;
    let file = approvers::parse(&text, path).map_err(|e| e.to_string())?;
    // The counters are a convenience here: a database that cannot be read says so in the
    // column rather than hiding the list.
    let counters = store::counters_read_only(&config.database());
    let mut out = vec![format!(
        "{} ({} assistant key(s); {} person(s) with {} passkey(s))",
        path.display(),
        file.keys.key_ids().len(),
        file.passkeys.persons(),
        file.passkeys.len()
    )];
    let listed = approvers::list(&text);
    let added = |a: &approvers::Listed| {
        a.added
            .clone()
            .unwrap_or_else(|| "(not by approvers add)".to_owned())
    };
    for a in listed.iter().filter(|a| a.kind == "assistant key") {
        out.push(format!(
            "assistant key  ed25519  {}  added {}  {}",
            a.fingerprint,
            added(a),
            if a.name.is_empty() { "-" } else { &a.name },
        ));
    }
    // Persons in the order they first appear, each with all their passkeys.
    let mut persons: Vec<(Option<String>, String, Vec<&approvers::Listed>)> = Vec::new();
    for a in listed.iter().filter(|a| a.kind == "passkey") {
        match persons.iter_mut().find(|(p, _, _)| *p == a.person) {
            Some((_, _, keys)) => keys.push(a),
            None => persons.push((a.person.clone(), a.name.clone(), vec![a])),
        }
    }
    for (person, name, keys) in &persons {
        let users = keys
            .first()
            .filter(|k| !k.users.is_empty())
            .map(|k| format!("  users {}", k.users.join(", ")))
            .unwrap_or_default();
        out.push(format!(
            "person {}  {name}  may approve {}{users}",
            person.as_deref().unwrap_or("-"),
            keys.first()
                .and_then(|k| k.scope.clone())
                .unwrap_or_else(|| "everything".to_owned())
        ));
        for a in keys {
            let counter = match (&a.credential_id, &counters) {
                (None, _) => "-".to_owned(),
                (Some(id), Ok(map)) => map
                    .get(id)
                    .map(u32::to_string)
                    .unwrap_or_else(|| "none yet".into()),
                (Some(_), Err(_)) => "unreadable".to_owned(),
            };
            out.push(format!(
                "  passkey  {:<7}  {}  {:<12}  counter {counter}  added {}",
                a.algorithm,
                a.fingerprint,
                a.backup.map_or("not recorded", |b| b.name()),
                added(a),
            ));
        }
    }
    if config.passkeys.trial() {
        out.push(
            "trial mode (passkeys: {quorum: 0}): the assistant's signature alone is accepted \
             where no other setting asks for persons"
                .into(),
        );
    } else if file.passkeys.is_empty() {
        out.push(
            "no person is enrolled: every change is refused until an administrator enrols one \
             with `fleetwatch-confirm enrol`"
                .into(),
        );
    }
    Ok(out.join("\n"))
}

/// `approvers add LINE`: checks the line with the whole file, writes the file atomically and
/// returns what to tell the administrator, fingerprint first.
pub fn approvers_add(
    config: &Config,
    line: &str,
    (may, users): (Option<&str>, Option<&str>),
) -> Result<String, String> {
    let path = &config.approver_keys;
    let existing = if path.exists() {
        approvers::read(path).map_err(|e| e.to_string())?
    } else {
        String::new()
    };
    let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let (text, added) = approvers::add(&existing, line, (may, users), &now, path)
        .map_err(|e| format!("refused, {} unchanged: {e}", path.display()))?;
    approvers::write_atomically(path, &text)?;
    let who = match (&added.person, added.name.is_empty()) {
        (Some(person), _) => format!(" of person {person}, {}", added.name),
        (None, false) => format!(" for {}", added.name),
        (None, true) => String::new(),
    };
    let mut message = format!(
        "added {} ({}){who} to {}\nfingerprint: {}\n",
        added.kind,
        added.algorithm,
        path.display(),
        added.fingerprint
    );
    if let Some(scope) = &added.scope {
        message.push_str(&format!("may approve: {scope}\n"));
    }
    if added.kind == "passkey" {
        message.push_str(
            "Compare the fingerprint with the one `fleetwatch-confirm enrol` printed; if they \
             differ, run `fleetwatch-executor approvers remove` with it now.\n",
        );
    }
    message.push_str("The running executor reads the file for every request: no restart needed.");
    Ok(message)
}

/// `approvers scope PERSON SCOPE`: what the person may approve, on every passkey line of
/// theirs, writing the file atomically.
pub fn approvers_scope(config: &Config, person: &str, scope: &str) -> Result<String, String> {
    let path = &config.approver_keys;
    let existing = approvers::read(path).map_err(|e| e.to_string())?;
    approvers::parse(&existing, path).map_err(|e| format!("refused, fix the file first: {e}"))?;
    let (text, changed) = approvers::set_scope(&existing, person, scope)
        .map_err(|e| format!("refused, {} unchanged: {e}", path.display()))?;
    approvers::parse(&text, path)
        .map_err(|e| format!("refused, {} unchanged: {e}", path.display()))?;
    approvers::write_atomically(path, &text)?;
    let words = approvers::list(&text)
        .into_iter()
        .find(|l| l.person.as_deref() == Some(person))
        .and_then(|l| l.scope)
        .unwrap_or_else(|| "everything".to_owned());
    Ok(format!(
        "person {person} ({changed} passkey(s)) may approve: {words}\nThe running executor \
         reads the file for every request: no restart needed."
    ))
}

/// `approvers remove WHO`: a person (all their passkeys), a fingerprint or a name, writing
/// the file atomically.
pub fn approvers_remove(config: &Config, who: &str) -> Result<String, String> {
    let path = &config.approver_keys;
    let existing = approvers::read(path).map_err(|e| e.to_string())?;
    approvers::parse(&existing, path).map_err(|e| format!("refused, fix the file first: {e}"))?;
    let (text, removed) = approvers::remove(&existing, who)
        .map_err(|e| format!("refused, {} unchanged: {e}", path.display()))?;
    approvers::write_atomically(path, &text)?;
    let mut out: Vec<String> = removed
        .iter()
        .map(|r| {
            format!(
                "removed {} ({}) {} with fingerprint {} from {}; it approves nothing from now on",
                r.kind,
                r.algorithm,
                if r.name.is_empty() { "-" } else { &r.name },
                r.fingerprint,
                path.display()
            )
        })
        .collect();
    let left = approvers::parse(&text, path).map_err(|e| e.to_string())?;
    if left.passkeys.is_empty() && removed.iter().any(|r| r.kind == "passkey") {
        out.push(if config.passkeys.trial() {
            "no person is enrolled any more; in trial mode (quorum: 0) the assistant's \
             signature alone is still accepted"
                .to_owned()
        } else {
            "that was the last person: from now on nothing is approved until someone is \
             enrolled again with `fleetwatch-confirm enrol`"
                .to_owned()
        });
    }
    Ok(out.join("\n"))
}
