//! Who approves (DESIGN §9): the Passkeys view lists the persons enrolled on the executor, from
//! the public approver lines its `Status` reports, and says that an administrator enrols people
//! with `fleetwatch-confirm enrol` in a terminal. This page enrols nothing, keeps no passkey and
//! shows no command to run: a page the assistant serves cannot be where a person is bound.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use fleetwatch_protocol::passkey::{Approvers, Backup, PasskeyRecord};
use fleetwatch_protocol::wire::StatusReport;

use super::i18n::Lang;
use super::server::{App, html, lang_of};
use super::views::{LoginView, PasskeysView, ShownPasskey, ShownPerson};

/// The passkeys enrolled on the executor, from its `Status`. A line this build cannot read is
/// left out: it verifies nothing here, and the executor judges every assertion again anyway.
pub fn enrolled(status: &StatusReport) -> Approvers {
    let mut approvers = Approvers::default();
    for line in &status.approvers {
        if let Ok(record) = PasskeyRecord::parse_line(line) {
            let _ = approvers.add(record);
        }
    }
    approvers
}

/// The enrolled persons, each with their passkeys, in the order they first appear.
fn persons(lang: Lang, approvers: &Approvers) -> Vec<ShownPerson> {
    let mut out: Vec<(&str, ShownPerson)> = Vec::new();
    for r in approvers.records() {
        let key = r.person();
        let passkey = ShownPasskey {
            algorithm: r.algorithm().name().to_uppercase(),
            fingerprint: r.fingerprint().to_string(),
            kind: lang
                .t(match r.backup() {
                    Backup::Synced => "passkeys.synced",
                    Backup::DeviceBound => "passkeys.device_bound",
                })
                .to_owned(),
        };
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, person)) => person.passkeys.push(passkey),
            None => out.push((
                key,
                ShownPerson {
                    name: r.name().to_owned(),
                    id: key.to_owned(),
                    passkeys: vec![passkey],
                },
            )),
        }
    }
    out.into_iter().map(|(_, p)| p).collect()
}

/// `GET /passkeys`: who is enrolled on the executor, and how people are enrolled.
pub async fn show(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let lang = lang_of(&headers);
    if app.session(&headers).is_none() {
        return html(
            StatusCode::OK,
            &LoginView {
                t: lang,
                messages: Vec::new(),
            },
        );
    }
    let status = app.deps.executor.status().await.ok();
    let (persons, notice) = match &status {
        None => (Vec::new(), Some(lang.t("passkeys.unreachable"))),
        Some(status) => {
            let approvers = enrolled(status);
            let notice = if status.trial {
                Some(lang.t("passkeys.trial"))
            } else if approvers.is_empty() {
                Some(lang.t("passkeys.nobody"))
            } else {
                None
            };
            (persons(lang, &approvers), notice)
        }
    };
    html(
        StatusCode::OK,
        &PasskeysView {
            t: lang,
            persons,
            notice: notice.map(str::to_owned),
        },
    )
}
