//! `fleetwatch serve`: the long-running assistant. It holds the normal sign-in, the model key
//! and the signing key, and answers questions on a Unix socket (mode 0660) whose peers are
//! checked against the operator uid/gid list before a byte is read.

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::json;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, watch};
use tokio_util::codec::Framed;

use crate::answer::Assistant;
use crate::chat::{self, ChatCommand, ChatFrame, ChatResponse};
use crate::config::Config;
use crate::keys::ApproverKey;
use crate::model::ModelConfig;
use crate::pending;
use crate::reads::{Reader, Token};
use crate::store::{self, Store};

/// At most this many chat connections at once; further ones wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 16;

/// Who may talk to the chat socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operators {
    /// Allowed user IDs.
    pub uids: Vec<u32>,
    /// Allowed group IDs (primary group of the peer process).
    pub gids: Vec<u32>,
}

impl Operators {
    /// From the settings; with none listed, only the user running the assistant.
    pub fn from_config(config: &Config) -> Operators {
        Operators::from_settings(&config.settings)
    }

    /// From `settings.yaml` as read; with none listed, only the user running the assistant.
    pub fn from_settings(settings: &crate::config::Settings) -> Operators {
        let mut uids = settings.operator_uids.clone();
        if uids.is_empty() && settings.operator_gids.is_empty() {
            uids.push(rustix::process::getuid().as_raw());
        }
        Operators {
            uids,
            gids: settings.operator_gids.clone(),
        }
    }

    /// Whether a peer with these credentials may chat.
    pub fn allows(&self, uid: u32, gid: u32) -> bool {
        self.uids.contains(&uid) || self.gids.contains(&gid)
    }
}

/// The operators as `settings.yaml` lists them now: read again for the next connection
/// whenever the file changed, so an operator added (or removed) counts without a restart. A
/// file that no longer reads keeps the list it had, and says so in the log.
#[derive(Debug, Clone)]
pub struct OperatorList {
    /// The state folder whose `settings.yaml` names them; `None` for a fixed list.
    state_dir: Option<PathBuf>,
    current: Operators,
    /// The file's identity when it was last read: modified time, length, inode.
    seen: Option<(std::time::SystemTime, u64, u64)>,
}

impl From<Operators> for OperatorList {
    fn from(current: Operators) -> OperatorList {
        OperatorList {
            state_dir: None,
            current,
            seen: None,
        }
    }
}

impl OperatorList {
    /// Follows `settings.yaml` in the configuration's state folder, from what it says now.
    pub fn following(config: &Config) -> OperatorList {
        let mut list = OperatorList {
            state_dir: Some(config.state_dir.clone()),
            current: Operators::from_config(config),
            seen: None,
        };
        list.seen = list.stamp();
        list
    }

    fn settings_path(&self) -> Option<PathBuf> {
        self.state_dir
            .as_ref()
            .map(|d| d.join(crate::config::SETTINGS_FILE))
    }

    fn stamp(&self) -> Option<(std::time::SystemTime, u64, u64)> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(self.settings_path()?).ok()?;
        Some((meta.modified().ok()?, meta.len(), meta.ino()))
    }

    /// The operators now, reading the file again if it changed since it was last read.
    pub fn now(&mut self) -> &Operators {
        let stamp = self.stamp();
        if let Some(dir) = self.state_dir.clone()
            && stamp != self.seen
        {
            self.seen = stamp;
            match crate::config::Settings::load(&dir) {
                Ok(settings) => {
                    self.current = Operators::from_settings(&settings);
                    tracing::info!(operators = ?self.current, "chat: operator list read again");
                }
                Err(e) => tracing::warn!("chat: {e}; the operator list stays as it was"),
            }
        }
        &self.current
    }

    /// What a peer not on the list is told, in one line it can print.
    fn refusal(&self, uid: u32, gid: u32) -> String {
        let file = self
            .settings_path()
            .map_or_else(|| "settings.yaml".to_owned(), |p| p.display().to_string());
        format!(
            "uid {uid} is not an operator here: the administrator adds it to operator_uids (or \
             its group, gid {gid}, to operator_gids) in {file}; it counts from the next question, \
             without a restart"
        )
    }
}

/// Removes the socket file when the server stops, however it stops.
struct SocketGuard(PathBuf);

impl Drop for SocketGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Prepares everything `serve` holds, then serves until `shutdown` resolves.
pub async fn run(
    config: Config,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let policy = Arc::new(config.load_policy().map_err(|e| e.to_string())?);
    std::fs::create_dir_all(&config.state_dir)
        .map_err(|e| format!("state folder {}: {e}", config.state_dir.display()))?;
    let mut store = Store::open(&config.state_dir).map_err(|e| e.to_string())?;
    store.set_proposal_lifetime(config.proposal_lifetime);
    // Nothing from an earlier run may be approved against a fleet that has moved on.
    let expired = store
        .expire_all_pending("the assistant restarted", store::now_secs())
        .map_err(|e| e.to_string())?;
    let key = ApproverKey::load_or_create(&config.state_dir).map_err(|e| e.to_string())?;
    store
        .audit(
            "started",
            None,
            &json!({"expired": expired, "key_id": key.key_id().to_hex()}),
        )
        .map_err(|e| e.to_string())?;
    let token = Token::load(&config.state_dir).map_err(|e| e.to_string())?;
    let reader =
        Arc::new(Reader::live(&config, Arc::clone(&policy), token).map_err(|e| e.to_string())?);
    let model = ModelConfig::from_env()?;
    let model_said = match &model {
        Some(cfg) => format!("{} on the {} API", cfg.model, cfg.api.label()),
        None => "off".to_owned(),
    };
    let store = Arc::new(Mutex::new(store));
    let assistant = Arc::new(Assistant::from_config(
        &config,
        Arc::clone(&policy),
        reader,
        Arc::clone(&store),
        model,
        config.proposing(),
    ));
    let socket = config.chat_socket();
    let listener = bind(&socket)?;
    let _guard = SocketGuard(socket.clone());
    eprintln!(
        "fleetwatch serve: chat on {} (model {}, proposing {})",
        socket.display(),
        model_said,
        if config.proposing() { "on" } else { "off" },
    );
    let page = start_page(&config, &store, &policy, key).await;
    if let Some(page) = &page {
        let address = format!("http://localhost:{}/", page.addr.port());
        if let Some(notify) =
            crate::notify::NotifyConfig::from_env(&address, crate::doctor::env_lang())?
        {
            eprintln!("fleetwatch serve: notifying {}", notify.url);
            crate::notify::spawn(
                notify,
                Arc::clone(&store),
                Arc::clone(&policy),
                crate::executor_client::ExecutorClient::new(&config.executor_socket),
            );
        }
    }
    serve(
        listener,
        assistant,
        OperatorList::following(&config),
        shutdown,
    )
    .await;
    if let Some(page) = page
        && let Err(e) = page.shutdown().await
    {
        eprintln!("fleetwatch serve: {e}");
    }
    Ok(())
}

/// The approval page, beside the chat socket, when proposing is on. A page that cannot start
/// (no sandbox sign-in, no executor) is reported with what is missing; the chat still answers.
async fn start_page(
    config: &Config,
    store: &Arc<Mutex<Store>>,
    policy: &Arc<fleetwatch_protocol::policy::Policy>,
    key: ApproverKey,
) -> Option<crate::page::PageHandle> {
    if !config.proposing() {
        eprintln!("fleetwatch serve: approval page off (proposing is off)");
        return None;
    }
    let deps = crate::page::PageDeps {
        store: Arc::clone(store),
        executor: crate::executor_client::ExecutorClient::new(&config.executor_socket),
        policy: Arc::clone(policy),
        key: Arc::new(key),
    };
    match crate::page::start(crate::page::PageConfig::from_config(config), deps).await {
        Ok(page) => Some(page),
        Err(e) => {
            eprintln!("fleetwatch serve: {e}");
            None
        }
    }
}

/// Binds the chat socket, replacing a stale one, and sets mode 0660.
pub fn bind(path: &Path) -> Result<UnixListener, String> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            std::fs::remove_file(path)
                .map_err(|e| format!("removing stale socket {}: {e}", path.display()))?;
        } else {
            return Err(format!(
                "{} exists and is not a socket; remove it first",
                path.display()
            ));
        }
    }
    let listener =
        UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(|e| format!("setting the mode of {}: {e}", path.display()))?;
    Ok(listener)
}

/// The accept loop.
pub async fn serve(
    listener: UnixListener,
    assistant: Arc<Assistant>,
    operators: impl Into<OperatorList>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let mut operators = operators.into();
    // Each connection task holds a receiver; when the sender is dropped (or sends), every
    // task sees `changed()` resolve and stops at its next await point, dropping any question
    // in flight rather than answering into a closing socket.
    let (stop_tx, stop_rx) = watch::channel(false);
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        // The permit is taken before accepting, so at the limit new peers wait in the
        // listen backlog instead of being accepted and then starved.
        let permit = tokio::select! {
            permit = Arc::clone(&limit).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // The credential check happens before any byte is read from the peer.
        let Ok(peer) = stream.peer_cred() else {
            drop(stream);
            continue;
        };
        if !operators.now().allows(peer.uid(), peer.gid()) {
            tracing::warn!(
                uid = peer.uid(),
                "chat: peer not on the operator list; told so, connection closed"
            );
            // One frame it can print, within a bound. What it sent is read and thrown away
            // (never parsed) until it hangs up, so closing does not reset the connection and
            // take the frame with it.
            let said = operators.refusal(peer.uid(), peer.gid());
            tokio::spawn(async move {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), tell(stream, said))
                    .await;
                drop(permit);
            });
            continue;
        }
        let asker = user_name(peer.uid());
        let assistant = Arc::clone(&assistant);
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            connection(stream, assistant, stop, &asker).await;
            // Released only when the connection is fully done.
            drop(permit);
        });
    }
    let _ = stop_tx.send(true);
    // Wait for the tasks to notice: each holds a permit until it returns.
    let _ = limit
        .acquire_many(u32::try_from(MAX_CONNECTIONS).unwrap_or(u32::MAX))
        .await;
}

/// Writes one error frame to a peer that may not chat, then discards what it sends until it
/// hangs up.
async fn tell(stream: UnixStream, said: String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut framed = Framed::new(stream, chat::codec());
    let Ok(body) = serde_json::to_vec(&ChatResponse::Error(said)) else {
        return;
    };
    if framed
        .send(tokio_util::bytes::Bytes::from(body))
        .await
        .is_err()
    {
        return;
    }
    let mut stream = framed.into_inner();
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 4096];
    while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
}

/// The user name of a uid, from the system's user list (`/etc/passwd`): who asked, as the
/// card, `pending` and the audit show it. A uid with no entry is shown as `uid N`.
pub fn user_name(uid: u32) -> String {
    let listed = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                let id = fields.nth(1)?;
                (id.parse::<u32>().ok()? == uid && !name.is_empty()).then(|| name.to_owned())
            })
        });
    listed.unwrap_or_else(|| format!("uid {uid}"))
}

/// A command from the chat: `pending`, `deny`, or where the asker's proposals stand.
async fn command(assistant: &Assistant, command: ChatCommand, asker: &str) -> ChatResponse {
    let now = store::now_secs();
    let trouble = |e: store::StoreError| ChatResponse::Error(format!("the proposal store: {e}"));
    match command {
        ChatCommand::Pending => {
            // Asked before the store is locked: the executor may take a moment to answer.
            let status = assistant.executor().status().await.ok();
            let Ok(mut store) = assistant.store().lock() else {
                return ChatResponse::Error("the proposal store is unavailable".to_owned());
            };
            match pending::waiting(&mut store, assistant.policy(), status.as_ref(), now) {
                Ok(list) => ChatResponse::Pending(list),
                Err(e) => trouble(e),
            }
        }
        ChatCommand::Deny { proposal, reason } => {
            let Ok(mut store) = assistant.store().lock() else {
                return ChatResponse::Error("the proposal store is unavailable".to_owned());
            };
            if let Err(e) = store.expire_due(now) {
                return trouble(e);
            }
            let how = format!("denied from the terminal by {asker}");
            match store.deny(proposal, &how, &reason, None, now) {
                Ok(true) => ChatResponse::Denied(proposal),
                Ok(false) => ChatResponse::Error(match store.proposal(proposal) {
                    Ok(Some(p)) => format!(
                        "proposal #{proposal} is not waiting (it is {}), so it cannot be denied",
                        p.status.as_str()
                    ),
                    _ => format!("there is no proposal #{proposal}"),
                }),
                Err(e) => trouble(e),
            }
        }
        ChatCommand::Standings { proposals } => {
            if proposals.len() > chat::MAX_WATCHED {
                return ChatResponse::Error(format!(
                    "at most {} proposals can be asked about at once",
                    chat::MAX_WATCHED
                ));
            }
            let Ok(mut store) = assistant.store().lock() else {
                return ChatResponse::Error("the proposal store is unavailable".to_owned());
            };
            match pending::standings(&mut store, &proposals, now) {
                Ok(list) => ChatResponse::Standings(list),
                Err(e) => trouble(e),
            }
        }
    }
}

async fn connection(
    stream: UnixStream,
    assistant: Arc<Assistant>,
    mut stop: watch::Receiver<bool>,
    asker: &str,
) {
    let (mut sink, mut source) = Framed::new(stream, chat::codec()).split();
    loop {
        let frame = tokio::select! {
            frame = source.next() => frame,
            _ = stop.changed() => return,
        };
        let Some(Ok(frame)) = frame else {
            return;
        };
        let request = match serde_json::from_slice::<ChatFrame>(&frame) {
            Err(_) => None,
            Ok(ChatFrame::Question(request)) => Some(request),
            Ok(ChatFrame::Command(c)) => {
                let response = tokio::select! {
                    response = command(&assistant, c, asker) => response,
                    _ = stop.changed() => return,
                };
                if send(&mut sink, &response).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let response = match request {
            None => ChatResponse::Error("the question could not be read".to_owned()),
            Some(request) if request.question.chars().count() > chat::MAX_QUESTION_CHARS => {
                ChatResponse::Error(format!(
                    "questions are limited to {} characters",
                    chat::MAX_QUESTION_CHARS
                ))
            }
            Some(request) if request.question.trim().is_empty() => {
                ChatResponse::Error("the question is empty".to_owned())
            }
            Some(request) => {
                // The client closing its end (Ctrl-C) or sending anything mid-question
                // cancels the question: the future is dropped at its next await point.
                tokio::select! {
                    reply = assistant.ask_in_chat(&request.question, request.no_ai, asker) => {
                        ChatResponse::Reply(reply)
                    }
                    _ = source.next() => return,
                    _ = stop.changed() => return,
                }
            }
        };
        if send(&mut sink, &response).await.is_err() {
            return;
        }
    }
}

/// Writes one answer frame.
async fn send(
    sink: &mut (impl futures_util::Sink<tokio_util::bytes::Bytes> + Unpin),
    response: &ChatResponse,
) -> Result<(), ()> {
    let body = serde_json::to_vec(response).map_err(|_| ())?;
    sink.send(tokio_util::bytes::Bytes::from(body))
        .await
        .map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_list() {
        let ops = Operators {
            uids: vec![1000],
            gids: vec![2000],
        };
        assert!(ops.allows(1000, 5));
        assert!(ops.allows(5, 2000));
        assert!(!ops.allows(5, 5));
    }
}
