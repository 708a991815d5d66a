//! Talking to Epiphan's MCP server, said once for both Fleetwatch processes.
//!
//! The assistant reads through its normal sign-in; the executor re-reads and makes the one
//! write through the sandbox sign-in. Both judge the same things about the same server, so
//! the judgement lives here:
//!
//! * [`url_policy`]: which URLs a credential may be sent to (also used by the sign-in crate
//!   for every endpoint it discovers, and by the assistant for the model API);
//! * [`sign_in`]: the one rule for "Epiphan says the sign-in has expired";
//! * [`mcp`]: the MCP client itself (streamable HTTP, each message sent once);
//! * [`session`]: opening a session (no redirects, no session recovery, no stream retry), the
//!   bounded read, the once-only write, and turning a result into JSON (unredacted: see
//!   `session`'s notes).
//!
//! What is *policy* stays with each process: the assistant's read guard (the policy's read
//! list) and the executor's kept session and its one retry of a read. Nothing here decides
//! who may write; the executor calls [`session::Session::call_write_once`] from one function
//! that consumes its last check's ticket, and the assistant never names it.
//!
//! # Why a crate of its own
//!
//! Both binaries link it, and it adds no third-party crate to either: reqwest, tokio,
//! serde_json, thiserror and tracing are already in the executor's graph. It speaks MCP
//! itself ([`mcp`]) rather than through a general MCP library, whose session recovery, stream
//! resumption and background worker a once-only write would have to switch off one by one. Keeping it apart
//! from the sign-in crate keeps each small enough to read in one sitting, and keeps the one
//! file that talks MCP easy to find for a reviewer of the executor.
#![forbid(unsafe_code)]

pub mod mcp;
pub mod session;
pub mod sign_in;
pub mod tls;
pub mod url_policy;

pub use session::{
    CallError, DeviceError, OpenError, ReadAnswer, Session, ToolResult, Unknown, WriteAnswer,
    http_client,
};
pub use url_policy::{UrlRefusal, check_url};
