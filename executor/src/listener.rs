//! The Unix-socket server: one request per connection, peer uid checked before a byte is read,
//! a bounded number of connections, a deadline on every read, exact framing.

use std::sync::Arc;

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
    tracing::info!(socket = %ctx.config.socket.display(), "executor listening");
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
                    tokio::spawn(async move { connection(&ctx, &limit, stream).await });
                }
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
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

async fn connection(ctx: &Context, limit: &Arc<Semaphore>, stream: UnixStream) {
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
    // One deadline, from accept, covers both the wait for a slot and the request itself: no
    // connection queues for or holds a slot longer than the frame timeout before its request
    // is read. The slot queue is first come, first served, so a request that arrives behind
    // connections that send nothing gets its slot when they time out, which is before its own
    // deadline. (Refusing at once when full let a handful of idle connections turn every real
    // approval away.)
    let deadline = tokio::time::Instant::now() + ctx.config.frame_timeout;
    let Ok(Ok(_permit)) =
        tokio::time::timeout_at(deadline, Arc::clone(limit).acquire_owned()).await
    else {
        respond(ctx, &mut framed, Response::Refused(Refusal::Busy)).await;
        return;
    };
    let request = match tokio::time::timeout_at(deadline, read_request(&mut framed)).await {
        Ok(Ok(request)) => request,
        Ok(Err(refusal)) => {
            audit_frame(ctx, &refusal);
            respond(ctx, &mut framed, Response::Refused(refusal)).await;
            return;
        }
        Err(_) => {
            audit_frame(ctx, &Refusal::FrameTruncated);
            respond(ctx, &mut framed, Response::Refused(Refusal::FrameTruncated)).await;
            return;
        }
    };
    let response = match request {
        Request::Status => Response::Status(crate::describe::status(ctx)),
        Request::Describe(describe) => match crate::describe::describe(ctx, describe).await {
            Ok(d) => Response::Described(d),
            Err(r) => Response::Refused(r),
        },
        Request::Execute(execute) => crate::execute::execute(ctx, peer, execute).await,
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
    if let Err(e) = ctx.store.audit(&entry) {
        tracing::error!(error = %e, "could not audit a refused peer");
    }
}

fn audit_frame(ctx: &Context, refusal: &Refusal) {
    let entry = Entry {
        kind: "refused",
        reason: refusal.code().to_string(),
        ..Entry::default()
    };
    if let Err(e) = ctx.store.audit(&entry) {
        tracing::error!(error = %e, "could not audit a frame refusal");
    }
}
