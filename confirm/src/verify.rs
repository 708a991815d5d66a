//! `fleetwatch-confirm verify`: a receipt (DESIGN §11) checked from public inputs alone — the
//! receipt, an approver file, the executor's public receipt key and, optionally, the tool
//! policy — trusting neither the assistant nor the executor. Every check runs; each failure is
//! said in its own sentence, and the change is said in words from the signed claims. The
//! verdict comes first and names the outcome, so text inside a receipt (every piece of it shown
//! through [`fleetwatch_protocol::shown::readable`]) can never stand above it.

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

/// What a verification found: the verdict's facts, the change in words, and every check that
/// failed.
#[derive(Debug, Default)]
pub struct Report {
    /// The change, who approved it and what came of it, one line each.
    pub words: Vec<String>,
    /// One sentence per failed check; empty when the receipt holds.
    pub failures: Vec<String>,
    /// The outcome the executor's statement names (`done`, `failed`, `unknown`), once the
    /// statement reads.
    pub outcome: Option<String>,
    /// How many passkey assertions and audit rows the receipt carries.
    pub counts: (usize, usize),
    /// The origin each passkey assertion was made on, in the receipt's order.
    pub origins: Vec<String>,
    /// The origins the executor accepted assertions from, as its statement says.
    pub accepted_origins: Vec<String>,
}

/// Exit status of a receipt that does not verify.
pub const NOT_VERIFIED: u8 = 1;
/// Exit status of a verified receipt of a change the executor says failed.
pub const VERIFIED_FAILED: u8 = 2;
/// Exit status of a verified receipt of a change whose result the executor could not know.
pub const VERIFIED_UNKNOWN: u8 = 3;

impl Report {
    /// A failed check, in a sentence shown the readable way (an error may quote the receipt).
    fn fail(&mut self, text: impl AsRef<str>) {
        self.failures
            .push(fleetwatch_protocol::shown::readable(text.as_ref(), 2000));
    }

    /// Whether every check held.
    pub fn verified(&self) -> bool {
        self.failures.is_empty() && self.outcome.is_some()
    }

    /// The exit status: 0 only for a verified change the executor says was done;
    /// [`VERIFIED_FAILED`] or [`VERIFIED_UNKNOWN`] for a verified one that failed or whose
    /// result is unknown; [`NOT_VERIFIED`] for anything that does not verify.
    pub fn status(&self) -> u8 {
        match (self.verified(), self.outcome.as_deref()) {
            (true, Some("done")) => 0,
            (true, Some("failed")) => VERIFIED_FAILED,
            (true, _) => VERIFIED_UNKNOWN,
            (false, _) => NOT_VERIFIED,
        }
    }

    /// The first line said: whether the receipt verifies and, when it does, the outcome.
    pub fn verdict(&self) -> String {
        if !self.verified() {
            return format!(
                "NOT VERIFIED: {} check(s) failed, each below; nothing this receipt says is proven.",
                self.failures.len().max(1)
            );
        }
        let what = match self.outcome.as_deref() {
            Some("done") => "this change was DONE".to_owned(),
            Some("failed") => "this change FAILED (no write took effect where Epiphan said so)".to_owned(),
            _ => "the result of this change is UNKNOWN (the write was sent; it may or may not have been made)".to_owned(),
        };
        format!(
            "Verified: the executor says {what}. The assistant's signature, {} passkey \
             assertion(s) over these claims, the quorum, the executor's signed statement and {} \
             audit row(s) all hold.",
            self.counts.0, self.counts.1
        )
    }

    /// The whole result as JSON, for scripts: the verdict, the status, the outcome, the
    /// failures, the change in words and the origins.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "verified": self.verified(),
            "status": self.status(),
            "verdict": self.verdict(),
            "outcome": self.outcome,
            "failures": self.failures,
            "change": self.words,
            "passkey_origins": self.origins,
            "accepted_origins": self.accepted_origins,
        })
        .to_string()
    }
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
    /// Origins the person expects the passkeys to have answered on; when any are given, an
    /// assertion made on another origin fails the verification.
    pub expect_origins: &'a [String],
}

/// Checks a receipt. The report verifies only when every signature, the challenge binding, the
/// quorum, the statement, every part of the evidence it binds and the audit rows all hold.
pub fn verify(inputs: &Inputs<'_>) -> Report {
    let mut report = Report::default();
    let receipt: Receipt = match serde_json::from_str(inputs.receipt) {
        Ok(r) => r,
        Err(e) => {
            report.fail(format!("The receipt is not a Fleetwatch receipt ({e})."));
            return report;
        }
    };
    if receipt.format != RECEIPT_FORMAT {
        report.fail(format!(
            "The receipt is in format {}, which this verifier does not read (it reads \
             {RECEIPT_FORMAT}; format 1 did not bind which persons approved).",
            receipt.format
        ));
        return report;
    }
    let Some(approval) = signed_approval(&receipt) else {
        report.fail(
            "A byte field of the receipt (claims, a signature or an assertion) is not base64.",
        );
        return report;
    };
    report.counts = (receipt.passkeys.len(), receipt.audit.len());

    // The approver file: assistant keys and persons' passkeys, as the executor reads it.
    let (keys, persons) = match approver_file(inputs.approvers) {
        Ok(parts) => parts,
        Err(e) => {
            report.fail(format!("The approver file does not load: {e}."));
            return report;
        }
    };
    let file_lines: BTreeSet<String> = inputs
        .approvers
        .lines()
        .filter_map(receipt::approver_line)
        .collect();
    for (n, line) in receipt.approvers.iter().enumerate() {
        if !file_lines.contains(line) {
            report.fail(format!(
                "Approver line {} of the receipt is not in the approver file: it was changed, \
                 or the file is not the one that approved this change.",
                n + 1
            ));
        }
    }

    // The assistant's signature over the raw claims bytes, before anything is decoded.
    if let Err(e) = keys.verify(&approval) {
        report.fail(format!(
            "The assistant's signature over the claims does not hold: {e}."
        ));
    }
    let claims = match ApprovalClaims::decode(&approval.claims) {
        Ok(c) => Some(c),
        Err(e) => {
            report.fail(format!("The claims do not decode: {e}."));
            None
        }
    };

    // The executor's statement, signed with the receipt key given here; the key the receipt
    // names must be that key.
    let given = inputs.receipt_key.trim();
    let key = unb64(given).unwrap_or_default();
    if unb64(&receipt.receipt_key) != Some(key.clone()) {
        report.fail(format!(
            "The receipt names the receipt key {}, not the key given ({}); it was checked with \
             the key given.",
            shown(&receipt.receipt_key, 64),
            shown(given, 64)
        ));
    }
    let signature = unb64(&receipt.statement_signature).unwrap_or_default();
    if !receipt::statement_signed_by(&key, &receipt.statement, &signature) {
        report.fail(
            "The executor's statement is not signed by the receipt key given: the statement was \
             changed, or another key signed it.",
        );
    }
    let Ok(statement) = serde_json::from_str::<Statement>(&receipt.statement) else {
        report.fail("The executor's statement does not read.");
        return report;
    };
    if !["done", "failed", "unknown"].contains(&statement.outcome.as_str()) {
        report.fail("The executor's statement names an outcome this verifier does not know.");
    }
    report.outcome = Some(statement.outcome.clone());
    report.accepted_origins = statement.origins.iter().map(|o| shown(o, 200)).collect();
    check_evidence(&receipt, &approval, &statement, &mut report);

    // Each passkey assertion over the challenge of these claims bytes, from the settings the
    // executor signed; then the persons against the quorum it required.
    let rp = RelyingParty::new(&statement.rp_id, statement.origins.iter().cloned());
    let mut approved_by = Vec::new();
    match passkey::verify_approval(&approval, &persons, &rp) {
        Err(e) => report.fail(format!(
            "A passkey assertion does not hold for these claims: {e}."
        )),
        Ok(verified) => {
            if let Err(e) = verified.require(usize::try_from(statement.quorum).unwrap_or(0)) {
                report.fail(format!(
                    "The quorum the executor required ({} person(s)) was not met by distinct \
                     persons: {e}.",
                    statement.quorum
                ));
            }
            for a in verified.assertions() {
                let who = format!(
                    "{} ({}, {})",
                    shown(a.name(), 64),
                    shown(a.person(), 32),
                    a.fingerprint()
                );
                if !approved_by.contains(&who) {
                    approved_by.push(who);
                }
            }
        }
    }
    check_origins(&approval, inputs.expect_origins, &mut report);

    check_rows(&receipt, &statement, claims.as_ref(), &mut report);

    let policy = inputs.policy.map(Policy::from_yaml);
    if let (Some(policy), Some(c)) = (&policy, &claims) {
        match policy {
            Err(e) => report.fail(format!("The tool policy does not load: {e}.")),
            Ok(policy) if policy.digest(&c.tool) != Some(c.policy_digest) => {
                report.fail(format!(
                    "The claims were approved under another policy entry for {} than the tool \
                     policy given holds.",
                    shown(&c.tool, 120)
                ));
            }
            Ok(_) => {}
        }
    }

    if let Some(c) = &claims {
        report.words = words(c, &statement, &approved_by, &report.origins);
    }
    report
}

/// Text from the receipt, the one readable way: a name cannot start a line of its own, pose as
/// a verdict or hide part of itself.
fn shown(text: &str, cap: usize) -> String {
    fleetwatch_protocol::shown::readable(text, cap)
}

/// Every part of the evidence against what the executor's statement binds: the claims, the
/// assistant's signatures, the passkey assertions and the approver lines, each by its hash,
/// and the audit rows by number and chain hash. Each part that differs has its own sentence.
fn check_evidence(
    receipt: &Receipt,
    approval: &SignedApproval,
    statement: &Statement,
    report: &mut Report,
) {
    if statement.claims_sha256 != claims_sha256(&approval.claims) {
        report.fail("The executor's statement is about other claims than the receipt carries.");
    }
    if statement.signatures_sha256 != receipt::signatures_sha256(&receipt.signatures) {
        report.fail(
            "The assistant's signatures in the receipt are not the ones the executor judged: one \
             was removed, added, reordered or changed.",
        );
    }
    if statement.passkeys_sha256 != receipt::passkeys_sha256(&receipt.passkeys) {
        report.fail(
            "The passkey assertions in the receipt are not the ones the executor judged: one was \
             removed, added, reordered or changed.",
        );
    }
    if statement.approvers_sha256 != receipt::approvers_sha256(&receipt.approvers) {
        report.fail(
            "The approver lines in the receipt are not the ones the executor verified the \
             approval with: one was removed, added, reordered or changed.",
        );
    }
    let carried: Vec<(i64, &str)> = receipt
        .audit
        .iter()
        .map(|r| (r.seq, r.row_hash.as_str()))
        .collect();
    let stated: Vec<(i64, &str)> = statement
        .audit
        .iter()
        .map(|(seq, hash)| (*seq, hash.as_str()))
        .collect();
    if carried != stated {
        report.fail(
            "The audit rows in the receipt are not the ones the executor's statement names: a \
             row was removed, added, reordered or changed.",
        );
    }
}

/// The origin each assertion was made on (from its client data); with expected origins, each
/// must be one of them.
fn check_origins(approval: &SignedApproval, expected: &[String], report: &mut Report) {
    let origins: Vec<Option<String>> = approval
        .passkeys
        .iter()
        .map(|a| {
            serde_json::from_slice::<serde_json::Value>(&a.client_data_json)
                .ok()?
                .get("origin")?
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    report.origins = origins
        .iter()
        .map(|o| shown(o.as_deref().unwrap_or("no origin"), 200))
        .collect();
    if expected.is_empty() {
        return;
    }
    if origins.is_empty() {
        report.fail(
            "No passkey approved this change, so no origin matches the one expected \
             (--expect-origin).",
        );
    }
    for (n, origin) in origins.iter().enumerate() {
        if !origin.as_ref().is_some_and(|o| expected.contains(o)) {
            report.fail(format!(
                "Passkey assertion {} was made on {}, not on an origin expected ({}).",
                n + 1,
                shown(origin.as_deref().unwrap_or("no origin"), 200),
                expected
                    .iter()
                    .map(|o| shown(o, 200))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
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
        let prev = hex::decode_array::<32>(&row.prev_hash);
        if prev.is_none_or(|prev| {
            hex::encode(&row_hash(&prev, row.seq, row.time, &fields)) != row.row_hash
        }) {
            report.fail(format!(
                "Audit row {} does not match its chain hash: the row was changed.",
                row.seq
            ));
        }
        if id.as_deref().is_some_and(|id| fields.get(2) != Some(&id)) {
            report.fail(format!(
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
        None => report.fail(format!(
            "The audit row the executor's statement names (row {}) is not in the receipt with \
             that chain hash.",
            statement.audit_row
        )),
        Some(row) if row.fields.get(1).map(String::as_str) != Some(reason) => {
            report.fail(format!(
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
        report.fail("The receipt holds no audit row of the approval being accepted.");
    }
}

/// The change in words, from the signed claims and the statement.
fn words(
    c: &ApprovalClaims,
    statement: &Statement,
    approved_by: &[String],
    origins: &[String],
) -> Vec<String> {
    let time = |t: i64| {
        jiff::Timestamp::from_second(t)
            .map(fleet::format_time)
            .unwrap_or_else(|_| t.to_string())
    };
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
    if !c.asked_by.is_empty() {
        out.push(format!(
            "Asked by: {} (what the assistant reported; the executor could not check it)",
            shown(&c.asked_by, 32)
        ));
    }
    if !origins.is_empty() {
        out.push(format!(
            "Passkeys answered on: {} (the executor accepted {})",
            origins.join(", "),
            statement
                .origins
                .iter()
                .map(|o| shown(o, 200))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let codes: Vec<String> = statement
        .codes
        .iter()
        .map(|(device, code)| format!("{}: {}", shown(device, 64), shown(code, 64)))
        .collect();
    out.push(format!(
        "Outcome: {}{} at {} (executor audit row {})",
        shown(&statement.outcome, 64),
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
