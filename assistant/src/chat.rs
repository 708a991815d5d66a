//! The chat socket's messages: one length-delimited JSON frame per question and per reply.
//! The client (`fleetwatch ask`) holds no secret; it only carries text to `fleetwatch serve`.

use std::path::Path;

use futures_util::{SinkExt as _, StreamExt as _};
use serde::{Deserialize, Serialize};
use tokio::net::UnixStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::answer::Reply;

/// Largest chat frame either side accepts.
pub const MAX_CHAT_FRAME: usize = 64 * 1024;
/// Longest question accepted, in characters.
pub const MAX_QUESTION_CHARS: usize = 4_000;

/// A question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    /// The operator's question.
    pub question: String,
    /// Keyword answer only.
    #[serde(default)]
    pub no_ai: bool,
}

/// A request about proposals rather than a question: what waits, a denial, where some stand.
/// Approving is not among them: it stays on the page, behind a passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ChatCommand {
    /// The proposals waiting now.
    Pending,
    /// Deny a waiting proposal, with the person's reason (optional).
    Deny {
        /// The proposal number.
        proposal: u64,
        /// Why, in the person's words; kept redacted and capped, and told to the chat that
        /// asked for the proposal.
        #[serde(default)]
        reason: String,
    },
    /// Where these proposals stand (the prompt asks for the ones it raised).
    Standings {
        /// Proposal numbers, at most [`MAX_WATCHED`].
        proposals: Vec<u64>,
    },
}

/// The most proposals one `Standings` request may ask about.
pub const MAX_WATCHED: usize = 64;

/// One frame from a client: a question, or a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ChatFrame {
    /// A question.
    Question(ChatRequest),
    /// A command.
    Command(ChatCommand),
}

/// The server's answer to one frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatResponse {
    /// The reply.
    Reply(Reply),
    /// The question could not be taken (too long, malformed).
    Error(String),
    /// The proposals waiting now, oldest first.
    Pending(Vec<crate::pending::Waiting>),
    /// The proposal was denied.
    Denied(u64),
    /// Where the proposals asked about stand, in the order asked.
    Standings(Vec<crate::pending::Standing>),
}

/// The framing both sides use.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_CHAT_FRAME)
        .new_codec()
}

/// Asks one question over the socket. Dropping the returned future closes the connection,
/// which cancels the question on the server.
pub async fn ask(socket: &Path, request: &ChatRequest) -> Result<Reply, String> {
    match exchange(socket, &ChatFrame::Question(request.clone())).await? {
        ChatResponse::Reply(reply) => Ok(reply),
        ChatResponse::Error(message) => Err(message),
        _ => Err("the assistant answered something other than a reply".to_owned()),
    }
}

/// Sends one command and returns the answer (an `Error` answer as `Err`).
pub async fn command(socket: &Path, command: &ChatCommand) -> Result<ChatResponse, String> {
    match exchange(socket, &ChatFrame::Command(command.clone())).await? {
        ChatResponse::Error(message) => Err(message),
        other => Ok(other),
    }
}

/// One frame out, one frame back, on a new connection.
async fn exchange(socket: &Path, frame: &ChatFrame) -> Result<ChatResponse, String> {
    let stream = UnixStream::connect(socket).await.map_err(|e| {
        format!(
            "cannot reach `fleetwatch serve` at {} ({e}); is it running, and are you in its \
             operator group?",
            socket.display()
        )
    })?;
    let mut framed = Framed::new(stream, codec());
    let body = serde_json::to_vec(frame).map_err(|e| e.to_string())?;
    // A server that refuses this peer answers before it reads: its one frame is read even
    // when sending failed, and said instead of the sending error.
    let sent = framed.send(tokio_util::bytes::Bytes::from(body)).await;
    let frame = match (framed.next().await, sent) {
        (Some(Ok(frame)), _) => frame,
        (_, Err(e)) => return Err(format!("sending the request: {e}")),
        (None, Ok(())) => {
            return Err("the assistant closed the connection without answering".to_owned());
        }
        (Some(Err(e)), Ok(())) => return Err(format!("reading the answer: {e}")),
    };
    serde_json::from_slice::<ChatResponse>(&frame)
        .map_err(|e| format!("the answer could not be read: {e}"))
}
