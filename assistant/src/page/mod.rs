//! The approval page: where a person approves one exact change.
//!
//! It listens on the loopback addresses only, 127.0.0.1 and ::1 on one port (there is no setting
//! that widens it), and is opened as `http://localhost:<port>/`, the host name a passkey can be
//! bound to; holding both addresses keeps another local user from taking `localhost` on the
//! one it left free. It asks for a secret made
//! at start, shows one card at a time built by code from the stored proposal and a fresh
//! `Describe`, consumes the approval in one statement on the database clock, signs the claims
//! and sends `Execute` to the executor. See `server` for the per-request guards and `approve`
//! for the decision flows.

use std::future::Future;
use std::io::IsTerminal as _;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetwatch_protocol::policy::Policy;
use serde_json::json;
use tokio::sync::oneshot;

use crate::config::{Autonomy, Config};
use crate::executor_client::ExecutorClient;
use crate::keys::ApproverKey;
use crate::store::Store;

pub mod approve;
pub mod card;
pub mod csrf;
pub mod i18n;
pub mod pace;
pub mod passkeys;
pub mod secret;
pub mod server;
pub mod sessions;
mod steps;
pub mod throttle;
pub mod views;

pub use secret::SecretDelivery;
pub use throttle::{Clock, ManualClock, SystemClock};

/// The default bound on one request (an approval includes a describe and the write).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How the page is set up.
pub struct PageConfig {
    /// Port on 127.0.0.1 (`FLEETWATCH_APPROVE_PORT`; 0 picks a free one, for tests).
    pub port: u16,
    /// The assistant's state folder (the secret file goes here).
    pub state_dir: PathBuf,
    /// The operator's `autonomy: propose`.
    pub autonomy_propose: bool,
    /// A write fence (allowlist or team ID) is configured.
    pub fence_configured: bool,
    /// Where the secret goes.
    pub secret_delivery: SecretDelivery,
    /// Bound on each request.
    pub request_timeout: Duration,
    /// The clock the sign-in throttle and sessions use.
    pub clock: Arc<dyn Clock>,
    /// The confirm page's origin: where Approve hands the tab for the passkey, and the only
    /// origin whose form may post the assertion back.
    pub confirm_origin: String,
}

impl PageConfig {
    /// From the assistant's configuration.
    pub fn from_config(config: &Config) -> PageConfig {
        PageConfig {
            port: config.approve_port,
            state_dir: config.state_dir.clone(),
            autonomy_propose: config.settings.autonomy == Autonomy::Propose,
            fence_configured: config.fence.configured(),
            secret_delivery: SecretDelivery::Auto,
            confirm_origin: config.confirm_origin.clone(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            clock: Arc::new(SystemClock::new()),
        }
    }
}

/// What the page shares with the rest of `serve`.
#[derive(Clone)]
pub struct PageDeps {
    /// The proposal store.
    pub store: Arc<Mutex<Store>>,
    /// The executor's socket.
    pub executor: ExecutorClient,
    /// The assistant's copy of the tool policy.
    pub policy: Arc<Policy>,
    /// The approval-signing key.
    pub key: Arc<ApproverKey>,
}

/// Why the page did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// A precondition is missing; each entry names one.
    #[error("the approval page will not start: {}", .0.join("; "))]
    NotReady(Vec<String>),
    /// The port could not be bound on one of the loopback addresses.
    #[error(
        "the approval page cannot listen on {addr}: {source}; another program holds that \
         address, so `localhost:{}` would not be only this page's (stop it, or choose another \
         FLEETWATCH_APPROVE_PORT)", addr.port()
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The secret or a key could not be made or written.
    #[error("the approval page secret: {0}")]
    Secret(std::io::Error),
    /// Serving failed.
    #[error("the approval page stopped: {0}")]
    Serve(std::io::Error),
}

/// A running page (tests and `run`).
pub struct PageHandle {
    /// The bound IPv4 address (127.0.0.1; the same port is held on ::1 unless `ipv6` is false).
    pub addr: SocketAddr,
    /// Whether ::1 is held too (false only on a host without IPv6 loopback).
    pub ipv6: bool,
    /// The secret file, when the secret was written to one.
    pub secret_file: Option<PathBuf>,
    /// What was printed at start (never the secret unless it went to a terminal).
    pub announcement: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), PageError>>,
}

impl PageHandle {
    /// Stops the page and waits for it; the secret file is gone when this returns.
    pub async fn shutdown(mut self) -> Result<(), PageError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(PageError::Serve(std::io::Error::other(e.to_string()))),
        }
    }
}

/// Checks the preconditions, naming everything missing.
pub async fn preflight(config: &PageConfig, deps: &PageDeps) -> Result<(), PageError> {
    let mut missing = Vec::new();
    if !config.autonomy_propose {
        missing.push(
            "proposing is off (set `autonomy: propose` in settings.yaml in the state folder)"
                .to_owned(),
        );
    }
    if !config.fence_configured {
        missing.push(
            "no write fence is configured (set FLEETWATCH_WRITE_DEVICE_IDS or \
             FLEETWATCH_WRITE_TEAM_ID)"
                .to_owned(),
        );
    }
    match deps.executor.status().await {
        Ok(status) => {
            if !status.sandbox_sign_in {
                missing.push(
                    "the executor has no sandbox sign-in (run `fleetwatch-executor login \
                     --sandbox`)"
                        .to_owned(),
                );
            }
            if !status.fence_configured {
                missing.push("the executor has no write fence configured".to_owned());
            }
        }
        Err(e) => missing.push(format!("the executor does not answer Status: {e}")),
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PageError::NotReady(missing))
    }
}

/// Binds the page's port on 127.0.0.1 and on ::1. Port 0 picks a free port on 127.0.0.1 and
/// takes the same one on ::1, trying again with another when ::1 already has it. A port that
/// another program holds on either address refuses the start; ::1 is left out only when the
/// host has no IPv6 loopback at all (then nobody can take it either).
async fn bind_loopback(
    port: u16,
) -> Result<(tokio::net::TcpListener, Option<tokio::net::TcpListener>), PageError> {
    use std::io::ErrorKind;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = tokio::net::TcpListener::bind(v4)
            .await
            .map_err(|source| PageError::Bind { addr: v4, source })?;
        let chosen = listener.local_addr().map_err(PageError::Serve)?.port();
        let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, chosen));
        match bind_v6_only(v6) {
            Ok(listener6) => return Ok((listener, Some(listener6))),
            Err(e) if ipv6_absent(&e) => return Ok((listener, None)),
            Err(e) if port == 0 && e.kind() == ErrorKind::AddrInUse && attempts < 16 => continue,
            Err(source) => return Err(PageError::Bind { addr: v6, source }),
        }
    }
}

/// A listener on exactly `addr` (an IPv6 address), never also on IPv4.
fn bind_v6_only(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v6()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// The errors of a host where ::1 does not exist (IPv6 switched off or not built in).
fn ipv6_absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrNotAvailable
        || e.raw_os_error() == Some(rustix::io::Errno::AFNOSUPPORT.raw_os_error())
}

/// Starts the page and returns at once with a handle.
pub async fn start(config: PageConfig, deps: PageDeps) -> Result<PageHandle, PageError> {
    preflight(&config, &deps).await?;
    let (listener, listener6) = bind_loopback(config.port).await?;
    let addr = listener.local_addr().map_err(PageError::Serve)?;
    let page_address = format!("http://localhost:{}/", addr.port());
    if listener6.is_none() {
        println!(
            "Approval page: IPv6 is switched off on this host, so it listens on 127.0.0.1 \
             only (nobody can take ::1 either)"
        );
    }
    let ipv6 = listener6.is_some();

    let secret = secret::generate().map_err(PageError::Secret)?;
    let to_terminal =
        config.secret_delivery == SecretDelivery::Auto && std::io::stdout().is_terminal();
    let (secret_file, announcement) = if to_terminal {
        // Shown once; the address and the secret are separate so the secret never becomes
        // part of a URL that a browser would keep in its history.
        println!("Approval page: {page_address}");
        println!("Page secret (shown once): {}", secret.expose());
        (None, format!("Approval page: {page_address}"))
    } else {
        let file =
            secret::SecretFile::write(&config.state_dir, &secret).map_err(PageError::Secret)?;
        let line = format!(
            "Approval page: {page_address} (its secret is in {})",
            file.path().display()
        );
        println!("{line}");
        (Some(file), line)
    };
    let secret_path = secret_file.as_ref().map(|f| f.path().to_owned());

    let app = Arc::new(server::App::new(
        addr.port(),
        secret,
        &config,
        deps.clone(),
    )?);
    if let Ok(mut store) = deps.store.lock() {
        let _ = store.audit("page_started", None, &json!({"port": addr.port()}));
    }
    let held = Arc::clone(&app);
    let router = server::router(app);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        // One router on both listeners; a stop ends both.
        let (stopping, _) = tokio::sync::watch::channel(false);
        let serve_on = |listener: tokio::net::TcpListener| {
            let mut stopped = stopping.subscribe();
            axum::serve(
                listener,
                router
                    .clone()
                    .into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|s| *s).await;
            })
        };
        let v4 = serve_on(listener);
        let v6 = listener6.map(serve_on);
        let both = async {
            match v6 {
                Some(v6) => {
                    let (a, b) = tokio::join!(v4.into_future(), v6.into_future());
                    a.and(b)
                }
                None => v4.await,
            }
        };
        let stop = async {
            // Refusals the burst rule holds are written once their second is over.
            let mut flush = tokio::time::interval(std::time::Duration::from_secs(1));
            tokio::pin!(stop_rx);
            loop {
                tokio::select! {
                    _ = &mut stop_rx => break,
                    _ = flush.tick() => server::flush_refusals(&held, false),
                }
            }
            let _ = stopping.send(true);
        };
        let (result, ()) = tokio::join!(both, stop);
        server::flush_refusals(&held, true);
        let result = result.map_err(PageError::Serve);
        // The file goes at a clean stop; a crash leaves it for the next start to replace.
        drop(secret_file);
        if let Ok(mut store) = deps.store.lock() {
            let _ = store.audit("page_stopped", None, &json!({}));
        }
        result
    });
    Ok(PageHandle {
        addr,
        ipv6,
        secret_file: secret_path,
        announcement,
        stop: Some(stop_tx),
        task,
    })
}

/// Serves the page until `shutdown` resolves (or serving fails).
pub async fn run(
    config: PageConfig,
    deps: PageDeps,
    shutdown: impl Future<Output = ()>,
) -> Result<(), PageError> {
    let mut handle = start(config, deps).await?;
    tokio::select! {
        () = shutdown => handle.shutdown().await,
        finished = &mut handle.task => match finished {
            Ok(result) => result,
            Err(e) => Err(PageError::Serve(std::io::Error::other(e.to_string()))),
        },
    }
}
