//! The Unix-socket server: one request per connection, peer uid checked before a byte is read,
//! a deadline on every read, exact framing. A connection holds no slot while it is read: the
//! whole frame must come within `frame_timeout` of accept (else it is closed), and only then
//! does the request wait for one of `max_connections` slots, so idle connections cannot stall
//! the socket. Open connections are bounded per peer uid, the bound shared equally between the
//! allowed uids.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use fleetwatch_protocol::Refusal;
use fleetwatch_protocol::wire::{self, MAX_FRAME, Request, Response};
use futures_util::{SinkExt, StreamExt};
use tokio::net::UnixStream;
use tokio::sync::Semaphore;
use tokio_util::codec::length_delimited::LengthDelimitedCodecError;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::audit::Entry;
use crate::checks;
use crate::context::Context;
use crate::os::{self, SocketError};

/// Serves until SIGTERM or SIGINT, then removes the socket.
pub async fn serve(ctx: Arc<Context>) -> Result<(), SocketError> {
    let listener = os::bind_socket(&ctx.config.socket)?;
    let limit = Arc::new(Semaphore::new(ctx.config.max_connections));
    let open = Arc::new(Open::new(
        ctx.config.max_connections,
        ctx.config.allowed_uids.len(),
    ));
    tracing::info!(socket = %ctx.config.socket.display(), "executor listening");
    // Refusals held by the burst rule are written once their second is over.
    let mut flush = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|source| SocketError::Io {
            path: ctx.config.socket.clone(),
            source,
        })?;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let ctx = Arc::clone(&ctx);
                    let limit = Arc::clone(&limit);
                    let open = Arc::clone(&open);
                    tokio::spawn(async move { connection(&ctx, &limit, &open, stream).await });
                }
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            _ = flush.tick() => flush_bursts(&ctx, false),
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    flush_bursts(&ctx, true);
    let _ = std::fs::remove_file(&ctx.config.socket);
    tracing::info!("executor stopped");
    Ok(())
}

fn codec() -> LengthDelimitedCodec {
    // The cap is checked on the length prefix, before the body is allocated.
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// Open connections per peer uid, against each uid's share.
struct Open {
    per_peer: usize,
    counts: Mutex<HashMap<u32, usize>>,
}

/// One open connection, counted until dropped.
struct Counted<'a>(&'a Open, u32);

impl Open {
    /// Sixteen open connections per slot, shared equally between the allowed uids.
    fn new(slots: usize, peers: usize) -> Open {
        Open {
            per_peer: (slots * 16 / peers.max(1)).max(1),
            counts: Mutex::default(),
        }
    }

    fn enter(&self, uid: u32) -> Option<Counted<'_>> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = counts.entry(uid).or_default();
        if *count >= self.per_peer {
            return None;
        }
        *count += 1;
        Some(Counted(self, uid))
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        let mut counts = self.0.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(&self.1) {
            *count = count.saturating_sub(1);
        }
    }
}

async fn connection(ctx: &Context, limit: &Arc<Semaphore>, open: &Open, stream: UnixStream) {
    // Who is calling, from the kernel, before anything the caller sent is looked at.
    let uid = match os::peer_uid(&stream) {
        Ok(uid) => uid,
        Err(e) => {
            tracing::warn!(error = %e, "peer credentials unavailable; connection closed");
            audit_peer(ctx, "unknown");
            return;
        }
    };
    let peer = match checks::peer(uid, &ctx.config.allowed_uids) {
        Ok(p) => p,
        Err(_) => {
            tracing::warn!(
                uid,
                "connection from a uid that is not allowed; closed without reading"
            );
            audit_peer(ctx, &format!("uid={uid}"));
            return;
        }
    };
    let mut framed = Framed::new(stream, codec());
    let Some(_counted) = open.enter(uid) else {
        respond(ctx, &mut framed, Response::Refused(Refusal::Busy)).await;
        return;
    };
    // The whole frame within the frame timeout of accept, holding no slot: a connection that
    // sends nothing costs a small buffer until then, never a slot another request waits for.
    let deadline = tokio::time::Instant::now() + ctx.config.frame_timeout;
    let request = match tokio::time::timeout_at(deadline, read_request(&mut framed)).await {
        Ok(Ok(request)) => request,
        Ok(Err(refusal)) => {
            audit_frame(ctx, uid, &refusal);
            respond(ctx, &mut framed, Response::Refused(refusal)).await;
            return;
        }
        Err(_) => {
            audit_frame(ctx, uid, &Refusal::FrameTruncated);
            respond(ctx, &mut framed, Response::Refused(Refusal::FrameTruncated)).await;
            return;
        }
    };
    // Then a slot for the work, first come first served, waited for as long again.
    let Ok(Ok(_permit)) =
        tokio::time::timeout(ctx.config.frame_timeout, Arc::clone(limit).acquire_owned()).await
    else {
        respond(ctx, &mut framed, Response::Refused(Refusal::Busy)).await;
        return;
    };
    let response = match request {
        Request::Status => Response::Status(crate::describe::status(ctx)),
        // Each describe reads Epiphan: a bounded number a minute.
        Request::Describe(_) if !ctx.describe_allowed() => Response::Refused(Refusal::Busy),
        Request::Describe(describe) => match crate::describe::describe(ctx, describe).await {
            Ok(d) => Response::Described(d),
            Err(r) => Response::Refused(r),
        },
        Request::Execute(execute) => crate::execute::execute(ctx, peer, execute).await,
        // Read-only, and it reads Epiphan: within the same budget as a describe.
        Request::Rooms if !ctx.describe_allowed() => Response::Refused(Refusal::Busy),
        Request::Rooms => match crate::describe::rooms(ctx).await {
            Ok(rooms) => Response::Rooms(rooms),
            Err(r) => Response::Refused(r),
        },
        // Read-only: the receipt `fleetwatch-executor receipt` writes, for the page to offer.
        Request::Receipt(id) => Response::Receipt(
            crate::receipt::write(&ctx.config, &fleetwatch_protocol::hex::encode(&id)).ok(),
        ),
    };
    respond(ctx, &mut framed, response).await;
}

/// Exactly one frame: refuses an oversize or empty frame, a connection that ends early, and
/// anything after the frame.
async fn read_request(
    framed: &mut Framed<UnixStream, LengthDelimitedCodec>,
) -> Result<Request, Refusal> {
    match framed.next().await {
        Some(Ok(body)) => {
            if body.is_empty() {
                return Err(Refusal::FrameEmpty);
            }
            if !framed.read_buffer().is_empty() {
                return Err(Refusal::TrailingBytes);
            }
            wire::decode_request(&body).map_err(wire::DecodeError::refusal)
        }
        Some(Err(e))
            if e.get_ref()
                .is_some_and(|inner| inner.is::<LengthDelimitedCodecError>()) =>
        {
            Err(Refusal::FrameTooLarge)
        }
        Some(Err(_)) | None => Err(Refusal::FrameTruncated),
    }
}

async fn respond(
    ctx: &Context,
    framed: &mut Framed<UnixStream, LengthDelimitedCodec>,
    response: Response,
) {
    let body = match wire::encode_response(&response) {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "response did not encode");
            match wire::encode_response(&Response::Refused(Refusal::Internal)) {
                Ok(body) => body,
                Err(_) => return,
            }
        }
    };
    let send = async {
        framed.send(tokio_util::bytes::Bytes::from(body)).await?;
        framed.get_mut().shutdown().await
    };
    use tokio::io::AsyncWriteExt;
    if tokio::time::timeout(ctx.config.frame_timeout, send)
        .await
        .is_err()
    {
        tracing::warn!("client did not take the response in time");
    }
}

fn audit_peer(ctx: &Context, detail: &str) {
    let entry = Entry {
        kind: "peer_refused",
        reason: Refusal::PeerNotAllowed.code().to_string(),
        detail: detail.to_string(),
        ..Entry::default()
    };
    if let Err(e) = ctx.store.audit_refusal(entry, detail) {
        tracing::error!(error = %e, "could not audit a refused peer");
    }
}

fn audit_frame(ctx: &Context, uid: u32, refusal: &Refusal) {
    let peer = format!("uid={uid}");
    let entry = Entry {
        kind: "refused",
        reason: refusal.code().to_string(),
        detail: peer.clone(),
        ..Entry::default()
    };
    if let Err(e) = ctx.store.audit_refusal(entry, &peer) {
        tracing::error!(error = %e, "could not audit a frame refusal");
    }
}

fn flush_bursts(ctx: &Context, all: bool) {
    if let Err(e) = ctx.store.flush_bursts(all) {
        tracing::error!(error = %e, "could not audit the refusals held by the burst rule");
    }
}

#[cfg(test)]
mod tests {
    use super::Open;

    #[test]
    fn one_peer_filling_its_share_leaves_the_others_theirs() {
        let open = Open::new(4, 2);
        let held: Vec<_> = (0..32).map(|_| open.enter(1000)).collect();
        assert!(held.iter().all(Option::is_some));
        assert!(open.enter(1000).is_none(), "the 33rd of one peer");
        assert!(open.enter(1001).is_some(), "the other peer still gets in");
        drop(held);
        assert!(
            open.enter(1000).is_some(),
            "closed connections free the share"
        );
    }
}
