//! The page's views: askama templates under `assistant/templates/page/`, escaped by the engine.
//! Every field is either a fixed catalogue text or a value that went through
//! [`super::card::show_text`]; none of them is raw HTML.

use askama::Template;

use super::card::Card;
use super::i18n::Lang;

/// Sign-in form.
#[derive(Template)]
#[template(path = "page/login.html")]
pub struct LoginView {
    /// Language.
    pub t: Lang,
    /// Problems to show (wrong secret, wait).
    pub messages: Vec<String>,
}

/// Nothing waiting.
#[derive(Template)]
#[template(path = "page/empty.html")]
pub struct EmptyView {
    /// Language.
    pub t: Lang,
    /// Queue and fatigue notices.
    pub notices: Vec<String>,
    /// The operator's own pace in the last hour (the header line).
    pub pace: String,
    /// What the page's script follows.
    pub follow: Follow,
}

/// What an open page follows without a reload (`follow.js`): the proposal it shows, the ones
/// pending when it was drawn, and the words it says when that changes.
pub struct Follow {
    /// The proposal shown ("" on the empty page).
    pub shown: String,
    /// The pending proposals' numbers, comma-separated.
    pub pending: String,
    /// Whether the shown one already waits for a second person.
    pub waiting: bool,
    /// "{n} new change(s) waiting."
    pub new: String,
    /// "This change was decided elsewhere, or it expired."
    pub gone: String,
    /// "… waits for a second person."
    pub second: String,
    /// "Show".
    pub show: String,
}

impl Follow {
    /// The words in `lang` for a page showing `shown` (if any) with `pending` waiting.
    pub fn new(lang: Lang, shown: Option<u64>, pending: &[u64], waiting: bool) -> Follow {
        Follow {
            shown: shown.map(|id| id.to_string()).unwrap_or_default(),
            pending: pending
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(","),
            waiting,
            new: lang.t("follow.new").to_owned(),
            gone: lang.t("follow.gone").to_owned(),
            second: lang.t("follow.second").to_owned(),
            show: lang.t("follow.show").to_owned(),
        }
    }
}

/// What the page's script needs to ask the browser for a passkey assertion on this form.
pub struct PasskeyAsk {
    /// The challenge the confirm page will ask the passkey to sign: SHA-256 of the passkey
    /// domain and the exact claims bytes this approval will send (base64url). This page asks
    /// no passkey itself; the value marks the form as one that hands off, and lets a reader
    /// match it with the confirm page's.
    pub challenge: String,
}

/// The approve form's values.
pub struct ApproveForm {
    /// Set when this form's button must carry an operator's passkey.
    pub passkey: Option<PasskeyAsk>,
    /// Approval row ID.
    pub approval: String,
    /// Card binding digest.
    pub digest: String,
    /// Approve token.
    pub token: String,
    /// Seconds until the approval expires (database clock).
    pub remaining: i64,
    /// The expiry sentence.
    pub expires_text: String,
}

/// One card.
#[derive(Template)]
#[template(path = "page/card.html")]
pub struct CardView {
    /// Language.
    pub t: Lang,
    /// Queue and fatigue notices.
    pub notices: Vec<String>,
    /// The operator's own pace in the last hour (the header line).
    pub pace: String,
    /// The tab's title, with the count of waiting cards.
    pub title: String,
    /// "Proposal #N".
    pub heading: String,
    /// "Asked by ana · expires at 10:32 UTC (in 28 min) if nobody decides".
    pub asked: String,
    /// "N more waiting".
    pub more: Option<String>,
    /// The card.
    pub card: Card,
    /// Deny token.
    pub deny_token: String,
    /// Deny-all token.
    pub deny_all_token: String,
    /// The approve form, when Approve is offered.
    pub approve: Option<ApproveForm>,
    /// "Approved by Ana, waiting for a second person", while the change waits for more
    /// operators' passkeys.
    pub waiting: Option<String>,
    /// What the page's script follows.
    pub follow: Follow,
}

/// The second step for a disruptive change.
#[derive(Template)]
#[template(path = "page/confirm.html")]
pub struct ConfirmView {
    /// Language.
    pub t: Lang,
    /// The sentence naming the rooms.
    pub text: String,
    /// Effect preview lines.
    pub effects: Vec<String>,
    /// Window verdicts.
    pub window: Vec<String>,
    /// Proposal number.
    pub proposal: u64,
    /// Approval row ID.
    pub approval: String,
    /// Card digest.
    pub digest: String,
    /// Confirm token.
    pub token: String,
    /// Deny token.
    pub deny_token: String,
    /// "Yes, change <rooms>".
    pub confirm_label: String,
}

/// The hand-off of an approval to the confirm page: a form with the exact claims bytes and
/// the return token, sent at once by `static/submit.js` (or by its button).
#[derive(Template)]
#[template(path = "page/handoff.html")]
pub struct HandoffView {
    /// Language.
    pub t: Lang,
    /// `<confirm origin>/`.
    pub action: String,
    /// The claims bytes, standard base64.
    pub claims: String,
    /// What brings the answer back to this approval.
    pub return_token: String,
}

/// What a GET of a view answers: no card, fleet data, token or challenge, only a form that asks
/// for the view by POST with this tab's value, sent at once by `static/submit.js`.
#[derive(Template)]
#[template(path = "page/shell.html")]
pub struct ShellView {
    /// Language.
    pub t: Lang,
    /// The view's path, posted to.
    pub action: &'static str,
}

/// One enrolled passkey as the Passkeys view shows it.
pub struct ShownPasskey {
    /// `ES256` or `ED25519`.
    pub algorithm: String,
    /// Fingerprint, in groups of four.
    pub fingerprint: String,
    /// Synced or device-bound, in words.
    pub kind: String,
}

/// One enrolled person and their passkeys.
pub struct ShownPerson {
    /// The display name.
    pub name: String,
    /// The person ID.
    pub id: String,
    /// Their passkeys.
    pub passkeys: Vec<ShownPasskey>,
}

/// Who approves: the persons enrolled on the executor.
#[derive(Template)]
#[template(path = "page/passkeys.html")]
pub struct PasskeysView {
    /// Language.
    pub t: Lang,
    /// The persons, from the executor's `Status`.
    pub persons: Vec<ShownPerson>,
    /// Nobody enrolled, the trial mode, or no answer.
    pub notice: Option<String>,
}

/// An outcome, a refusal or a conflict.
#[derive(Template)]
#[template(path = "page/message.html")]
pub struct MessageView {
    /// Language.
    pub t: Lang,
    /// CSS class of the heading (fixed words only).
    pub class: &'static str,
    /// Heading.
    pub heading: String,
    /// Paragraphs.
    pub lines: Vec<String>,
    /// List items (per-device errors, reasons).
    pub details: Vec<String>,
    /// After a change that ran: the proposal and the approval ID (hex) whose receipt the page
    /// offers to download.
    pub receipt: Option<(u64, String)>,
}
