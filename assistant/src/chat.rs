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

/// The server's answer to one frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatResponse {
    /// The reply.
    Reply(Reply),
    /// The question could not be taken (too long, malformed).
    Error(String),
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
    let stream = UnixStream::connect(socket).await.map_err(|e| {
        format!(
            "cannot reach `fleetwatch serve` at {} ({e}); is it running, and are you in its \
             operator group?",
            socket.display()
        )
    })?;
    let mut framed = Framed::new(stream, codec());
    let body = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    framed
        .send(tokio_util::bytes::Bytes::from(body))
        .await
        .map_err(|e| format!("sending the question: {e}"))?;
    let frame = framed
        .next()
        .await
        .ok_or_else(|| "the assistant closed the connection without answering".to_owned())?
        .map_err(|e| format!("reading the answer: {e}"))?;
    match serde_json::from_slice::<ChatResponse>(&frame) {
        Ok(ChatResponse::Reply(reply)) => Ok(reply),
        Ok(ChatResponse::Error(message)) => Err(message),
        Err(e) => Err(format!("the answer could not be read: {e}")),
    }
}
