//! `fleetwatch-confirm verify`: a receipt (DESIGN §11) checked from public inputs alone — the
//! receipt, an approver file, the executor's public receipt key and, optionally, the tool
//! policy — trusting neither the assistant nor the executor. Every check runs; each failure is
//! said in its own sentence, and the change is said in words from the signed claims.

use std::collections::BTreeSet;

use fleetwatch_protocol::audit::row_hash;
use fleetwatch_protocol::claims::{
    ApprovalClaims, ApprovalSignature, KeyId, SignedApproval, TrustedKeys,
};
use fleetwatch_protocol::passkey::{self, Approvers, PasskeyAssertion, RelyingParty};
use fleetwatch_protocol::policy::Policy;
use fleetwatch_protocol::receipt::{
    self, RECEIPT_FORMAT, Receipt, Statement, claims_sha256, unb64,
};
use fleetwatch_protocol::{fleet, hex};

/// What a verification found: the change in words, and every check that failed.
#[derive(Debug, Default)]
pub struct Report {
    /// The change, who approved it and what came of it, one line each.
    pub words: Vec<String>,
    /// One sentence per failed check; empty when the receipt holds.
    pub failures: Vec<String>,
}

/// The public inputs, as text.
pub struct Inputs<'a> {
    /// The receipt file.
    pub receipt: &'a str,
    /// The approver file (`approvers.pub`) that held the approvers.
    pub approvers: &'a str,
    /// The executor's public receipt key, base64 (`fleetwatch-executor receipt --key`).
    pub receipt_key: &'a str,
    /// `tool_policy.yaml`, to check the policy entry the claims were approved under.
    pub policy: Option<&'a str>,
}

/// Checks a receipt. The report's failures are empty only when every signature, the
/// challenge binding, the quorum, the statement and the audit rows all hold.
pub fn verify(inputs: &Inputs<'_>) -> Report {
    let mut report = Report::default();
    let receipt: Receipt = match serde_json::from_str(inputs.receipt) {
        Ok(r) => r,
        Err(e) => {
            report
                .failures
                .push(format!("The receipt is not a Fleetwatch receipt ({e})."));
            return report;
        }
    };
    if receipt.format != RECEIPT_FORMAT {
        report.failures.push(format!(
            "The receipt is in format {}, which this verifier does not read (it reads {RECEIPT_FORMAT}).",
            receipt.format
        ));
        return report;
    }
    let Some(approval) = signed_approval(&receipt) else {
        report.failures.push(
            "A byte field of the receipt (claims, a signature or an assertion) is not base64."
                .into(),
        );
        return report;
    };
    let fail = |report: &mut Report, text: String| report.failures.push(text);

    // The approver file: assistant keys and persons' passkeys, as the executor reads it.
    let (keys, persons) = match approver_file(inputs.approvers) {
        Ok(parts) => parts,
        Err(e) => {
            fail(
                &mut report,
                format!("The approver file does not load: {e}."),
            );
            return report;
        }
    };
    let file_lines: BTreeSet<&str> = inputs.approvers.lines().map(str::trim).collect();
    for (n, line) in receipt.approvers.iter().enumerate() {
        if !file_lines.contains(line.trim()) {
            fail(
                &mut report,
                format!(
                    "Approver line {} of the receipt is not in the approver file: it was changed, \
                     or the file is not the one that approved this change.",
                    n + 1
                ),
            );
        }
    }

    // The assistant's signature over the raw claims bytes, before anything is decoded.
    if let Err(e) = keys.verify(&approval) {
        fail(
            &mut report,
            format!("The assistant's signature over the claims does not hold: {e}."),
        );
    }
    let claims = match ApprovalClaims::decode(&approval.claims) {
        Ok(c) => Some(c),
        Err(e) => {
            fail(&mut report, format!("The claims do not decode: {e}."));
            None
        }
    };

    // The executor's statement, signed with the receipt key given here.
    let key = unb64(inputs.receipt_key.trim()).unwrap_or_default();
    let signature = unb64(&receipt.statement_signature).unwrap_or_default();
    if !receipt::statement_signed_by(&key, &receipt.statement, &signature) {
        fail(
            &mut report,
            "The executor's statement is not signed by the receipt key given: the statement was \
             changed, or another key signed it."
                .into(),
        );
    }
    let statement: Option<Statement> = serde_json::from_str(&receipt.statement).ok();
    let Some(statement) = statement else {
        fail(
            &mut report,
            "The executor's statement does not read.".into(),
        );
        return report;
    };
    if statement.claims_sha256 != claims_sha256(&approval.claims) {
        fail(
            &mut report,
            "The executor's statement is about other claims than the receipt carries.".into(),
        );
    }

    // Each passkey assertion over the challenge of these claims bytes, from the settings the
    // executor signed; then the persons against the quorum it required.
    let rp = RelyingParty::new(&statement.rp_id, statement.origins.iter().cloned());
    let mut approved_by = Vec::new();
    match passkey::verify_approval(&approval, &persons, &rp) {
        Err(e) => fail(
            &mut report,
            format!("A passkey assertion does not hold for these claims: {e}."),
        ),
        Ok(verified) => {
            if let Err(e) = verified.require(usize::try_from(statement.quorum).unwrap_or(0)) {
                fail(
                    &mut report,
                    format!(
                        "The quorum the executor required ({} person(s)) was not met by \
                         distinct persons: {e}.",
                        statement.quorum
                    ),
                );
            }
            for a in verified.assertions() {
                let who = format!("{} ({}, {})", a.name(), a.person(), a.fingerprint());
                if !approved_by.contains(&who) {
                    approved_by.push(who);
                }
            }
        }
    }

    check_rows(&receipt, &statement, claims.as_ref(), &mut report);

    let policy = inputs.policy.map(Policy::from_yaml);
    if let (Some(policy), Some(c)) = (&policy, &claims) {
        match policy {
            Err(e) => fail(&mut report, format!("The tool policy does not load: {e}.")),
            Ok(policy) if policy.digest(&c.tool) != Some(c.policy_digest) => fail(
                &mut report,
                format!(
                    "The claims were approved under another policy entry for {} than the tool \
                     policy given holds.",
                    c.tool
                ),
            ),
            Ok(_) => {}
        }
    }

    if let Some(c) = &claims {
        report.words = words(c, &statement, &approved_by);
    }
    report
}

/// The receipt's byte fields decoded into the approval the executor verified.
fn signed_approval(receipt: &Receipt) -> Option<SignedApproval> {
    let signatures = receipt
        .signatures
        .iter()
        .map(|s| {
            Some(ApprovalSignature {
                key_id: KeyId(hex::decode_array(&s.key_id)?),
                signature: unb64(&s.signature)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let passkeys = receipt
        .passkeys
        .iter()
        .map(|a| {
            Some(PasskeyAssertion {
                credential_id: unb64(&a.credential_id)?,
                authenticator_data: unb64(&a.authenticator_data)?,
                client_data_json: unb64(&a.client_data_json)?,
                signature: unb64(&a.signature)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(SignedApproval {
        claims: unb64(&receipt.claims)?,
        signatures,
        passkeys,
    })
}

/// The approver file's assistant keys and persons' passkeys, each kind parsed by the
/// protocol's own parser from its lines (the other kind's lines blanked, so line numbers stay).
fn approver_file(text: &str) -> Result<(TrustedKeys, Approvers), String> {
    let only = |keys: bool| {
        text.lines()
            .map(|l| {
                let first = l.split_whitespace().next().unwrap_or("");
                if first.starts_with('#') || (first == "ed25519") == keys {
                    l
                } else {
                    ""
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let keys = TrustedKeys::parse(&only(true)).map_err(|e| e.to_string())?;
    let persons = Approvers::parse(&only(false)).map_err(|e| e.to_string())?;
    Ok((keys, persons))
}

/// The approval's audit rows: each one's hash recomputed from its content and the hash before
/// it, each naming this approval, one of them the outcome row the statement names.
fn check_rows(
    receipt: &Receipt,
    statement: &Statement,
    claims: Option<&ApprovalClaims>,
    report: &mut Report,
) {
    let id = claims.map(|c| hex::encode(&c.approval_id));
    for row in &receipt.audit {
        let fields: Vec<&str> = row.fields.iter().map(String::as_str).collect();
        let prev = hex::decode_array::<32>(&row.prev_hash).unwrap_or_default();
        if hex::encode(&row_hash(&prev, row.seq, row.time, &fields)) != row.row_hash {
            report.failures.push(format!(
                "Audit row {} does not match its chain hash: the row was changed.",
                row.seq
            ));
        }
        if id.as_deref().is_some_and(|id| fields.get(2) != Some(&id)) {
            report.failures.push(format!(
                "Audit row {} is about another approval than these claims.",
                row.seq
            ));
        }
    }
    let reason = match statement.outcome.as_str() {
        "failed" => "error",
        other => other,
    };
    let outcome_row = receipt
        .audit
        .iter()
        .find(|r| r.seq == statement.audit_row && r.row_hash == statement.chain_hash);
    match outcome_row {
        None => report.failures.push(format!(
            "The audit row the executor's statement names (row {}) is not in the receipt with \
             that chain hash.",
            statement.audit_row
        )),
        Some(row) if row.fields.get(1).map(String::as_str) != Some(reason) => {
            report.failures.push(format!(
                "Audit row {} does not record the outcome the statement says ({}).",
                row.seq, statement.outcome
            ));
        }
        Some(_) => {}
    }
    if !receipt
        .audit
        .iter()
        .any(|r| r.fields.first().map(String::as_str) == Some("accepted"))
    {
        report
            .failures
            .push("The receipt holds no audit row of the approval being accepted.".into());
    }
    if receipt.chain_head.0 < statement.audit_row {
        report
            .failures
            .push("The receipt's chain head is older than the outcome's row it holds.".into());
    }
}

/// The change in words, from the signed claims and the statement.
fn words(c: &ApprovalClaims, statement: &Statement, approved_by: &[String]) -> Vec<String> {
    let time = |t: i64| {
        jiff::Timestamp::from_second(t)
            .map(fleet::format_time)
            .unwrap_or_else(|_| t.to_string())
    };
    // Every text taken from the receipt is shown the protocol's one readable way: a name
    // cannot start a line of its own, pose as a verdict or hide part of itself.
    let shown = |text: &str, cap: usize| fleetwatch_protocol::shown::readable(text, cap);
    let mut out = vec![
        format!(
            "Change: {} {} (proposal #{})",
            shown(&c.tool, 120),
            shown(&c.arguments, 4000),
            c.proposal_id
        ),
        format!(
            "Rooms: {}",
            c.targets
                .iter()
                .map(|t| match c.names.iter().find(|n| &n.id == t) {
                    Some(n) => format!("“{}” ({})", shown(&n.name, 120), shown(t, 64)),
                    None => shown(t, 64),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "Approved by: {} (approved at {}; {} person(s) required)",
            if approved_by.is_empty() {
                "no person (the assistant's signature alone)".to_owned()
            } else {
                approved_by.join("; ")
            },
            time(c.approved_at),
            statement.quorum
        ),
    ];
    let codes: Vec<String> = statement
        .codes
        .iter()
        .map(|(device, code)| format!("{}: {}", shown(device, 64), shown(code, 64)))
        .collect();
    out.push(format!(
        "Outcome: {}{} at {} (executor audit row {})",
        shown(&statement.outcome.to_string(), 64),
        if codes.is_empty() {
            String::new()
        } else {
            format!(" ({})", codes.join(", "))
        },
        time(statement.time),
        statement.audit_row
    ));
    out
}
