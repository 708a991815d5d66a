//! The executor's socket, from the assistant's side: connect, send one frame, read one frame,
//! close — every step under a deadline, so a stuck executor costs a refusal, not a hang.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::claims::SignedApproval;
use fleetwatch_protocol::wire::{
    self, DescribeRequest, Description, ExecuteRequest, Outcome, Request, Response, RoomList,
    StatusReport,
};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::net::UnixStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

/// Why the executor could not be asked or did not answer usably.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutorError {
    /// The socket could not be opened.
    #[error("the executor is not reachable at {path}: {problem}")]
    Unreachable {
        /// Socket path.
        path: String,
        /// The OS error.
        problem: String,
    },
    /// No answer in time.
    #[error("the executor did not answer within {0} s")]
    Timeout(u64),
    /// The answer was not a valid frame or message.
    #[error("the executor's answer could not be read: {0}")]
    Protocol(String),
    /// The executor refused (nothing ran).
    #[error("the executor refused: {}", .0.message())]
    Refused(Refusal),
}

/// A client for one socket path.
#[derive(Debug, Clone)]
pub struct ExecutorClient {
    socket: PathBuf,
    timeout: Duration,
}

impl ExecutorClient {
    /// With the default deadline for a read-only request (describe/status read Epiphan).
    pub fn new(socket: &Path) -> ExecutorClient {
        ExecutorClient {
            socket: socket.to_owned(),
            timeout: Duration::from_secs(45),
        }
    }

    /// Changes the deadline for the whole exchange.
    pub fn with_timeout(mut self, timeout: Duration) -> ExecutorClient {
        self.timeout = timeout;
        self
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The rooms that can be changed: the fenced rooms as the sandbox sign-in reads them now,
    /// by ID, name and channels. Names are redacted on arrival, as every text the executor
    /// passes through.
    pub async fn rooms(&self) -> Result<RoomList, ExecutorError> {
        match self.exchange(&Request::Rooms).await? {
            Response::Rooms(mut list) => {
                for room in &mut list.rooms {
                    room.name = fleetwatch_redact::redact_text(&room.name);
                    for (number, name) in &mut room.channels {
                        *number = fleetwatch_redact::redact_text(number);
                        *name = fleetwatch_redact::redact_text(name);
                    }
                }
                Ok(list)
            }
            Response::Refused(refusal) => Err(ExecutorError::Refused(refusal)),
            _ => Err(ExecutorError::Protocol(
                "unexpected answer to Rooms".to_owned(),
            )),
        }
    }

    /// Facts about a proposed change's targets, read through the sandbox sign-in.
    pub async fn describe(
        &self,
        tool: &str,
        arguments: &str,
    ) -> Result<Description, ExecutorError> {
        let request = Request::Describe(DescribeRequest {
            tool: tool.to_owned(),
            arguments: arguments.to_owned(),
        });
        match self.exchange(&request).await? {
            Response::Described(description) => redacted(description),
            Response::Refused(refusal) => Err(ExecutorError::Refused(refusal)),
            _ => Err(ExecutorError::Protocol(
                "unexpected answer to Describe".to_owned(),
            )),
        }
    }

    /// Version and configuration facts.
    pub async fn status(&self) -> Result<StatusReport, ExecutorError> {
        match self.exchange(&Request::Status).await? {
            Response::Status(report) => Ok(report),
            Response::Refused(refusal) => Err(ExecutorError::Refused(refusal)),
            _ => Err(ExecutorError::Protocol(
                "unexpected answer to Status".to_owned(),
            )),
        }
    }

    /// Runs one approved change. A lost answer after sending is the caller's "outcome
    /// unknown": this never retries.
    /// The receipt of the change with this approval ID, `None` when the executor holds none.
    pub async fn receipt(&self, approval_id: [u8; 16]) -> Result<Option<String>, ExecutorError> {
        match self.exchange(&Request::Receipt(approval_id)).await? {
            Response::Receipt(receipt) => Ok(receipt),
            Response::Refused(refusal) => Err(ExecutorError::Refused(refusal)),
            _ => Err(ExecutorError::Protocol(
                "unexpected answer to Receipt".to_owned(),
            )),
        }
    }

    pub async fn execute(
        &self,
        approval: SignedApproval,
        assistant_chain_head: [u8; 32],
    ) -> Result<Outcome, ExecutorError> {
        let request = Request::Execute(ExecuteRequest {
            approval,
            assistant_chain_head,
        });
        match self.exchange(&request).await? {
            Response::Executed(outcome) => Ok(outcome),
            Response::Refused(refusal) => Err(ExecutorError::Refused(refusal)),
            _ => Err(ExecutorError::Protocol(
                "unexpected answer to Execute".to_owned(),
            )),
        }
    }

    async fn exchange(&self, request: &Request) -> Result<Response, ExecutorError> {
        let body = wire::encode_request(request)
            .map_err(|e| ExecutorError::Protocol(format!("request not encodable: {e}")))?;
        let secs = self.timeout.as_secs();
        let exchange = async {
            let stream = UnixStream::connect(&self.socket).await.map_err(|e| {
                ExecutorError::Unreachable {
                    path: self.socket.display().to_string(),
                    problem: e.to_string(),
                }
            })?;
            let codec = LengthDelimitedCodec::builder()
                .max_frame_length(wire::MAX_FRAME)
                .new_codec();
            let mut framed = Framed::new(stream, codec);
            framed
                .send(tokio_util::bytes::Bytes::from(body))
                .await
                .map_err(|e| ExecutorError::Protocol(format!("send: {e}")))?;
            let frame = framed
                .next()
                .await
                .ok_or_else(|| {
                    ExecutorError::Protocol("connection closed without an answer".to_owned())
                })?
                .map_err(|e| ExecutorError::Protocol(format!("receive: {e}")))?;
            wire::decode_response(&frame).map_err(|e| ExecutorError::Protocol(e.to_string()))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| ExecutorError::Timeout(secs))?
    }
}

/// A description with every text in it redacted, as every other answer from Epiphan is before
/// the assistant shows or keeps it. The executor reads Epiphan without redacting (it keeps and
/// returns no text that could hold a secret, and names are not its to judge), so the names,
/// models, warnings and stream names it describes are redacted here, on arrival. The targets and
/// the fingerprint are the executor's own canonical values, compared byte for byte later, and
/// stay as they are (IDs and live-state flags only); so do the signed names, which only the
/// claims carry (to the confirm page and back to the executor, which compares them with what it
/// reads) — never the model, the card or a log.
fn redacted(mut description: Description) -> Result<Description, ExecutorError> {
    let targets = std::mem::take(&mut description.targets);
    let fingerprint = std::mem::take(&mut description.fingerprint);
    let names = std::mem::take(&mut description.names);
    let problem = |e: serde_json::Error| {
        ExecutorError::Protocol(format!(
            "the executor's description could not be redacted: {e}"
        ))
    };
    let mut value = serde_json::to_value(&description).map_err(problem)?;
    fleetwatch_redact::redact_value(&mut value);
    let mut description: Description = serde_json::from_value(value).map_err(problem)?;
    description.targets = targets;
    description.fingerprint = fingerprint;
    description.names = names;
    Ok(description)
}
