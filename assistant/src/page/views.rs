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
}

/// The approve form's values.
pub struct ApproveForm {
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
    /// "Proposal #N".
    pub heading: String,
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
}
