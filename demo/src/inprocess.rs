//! What `fleetwatch serve` runs, started in this process from the assistant library: the chat
//! engine, the chat socket and the approval page, configured only from the demo's own values.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fleetwatch::answer::Assistant;
use fleetwatch::config::{Autonomy, Config, SETTINGS_FILE};
use fleetwatch::executor_client::ExecutorClient;
use fleetwatch::keys::ApproverKey;
use fleetwatch::model::{ApiKey, ModelApi, ModelConfig};
use fleetwatch::page::{self, PageConfig, PageDeps, PageHandle, SecretDelivery};
use fleetwatch::reads::{self, Reader, Token};
use fleetwatch::store::Store;
use fleetwatch::{grants, serve};
use fleetwatch_protocol::policy::Policy;
use serde_json::json;
use tokio::sync::oneshot;

use crate::POLICY;
use crate::leftovers::{Leftovers, write_private};
use crate::pieces::{self, Sim, progress, sibling};

/// The assistant's configuration, built only from the demo's own values.
///
/// The demo is a demo: both sign-ins read the same simulated sandbox team. The assistant's read
/// token is the sandbox team's, so the rooms the model reads are the rooms a proposal may
/// change and "start recording in <room>" can go all the way to a write. The executor alone
/// still holds the write path, behind the fence (the sandbox devices) and a signed, single-use
/// approval. A real installation keeps the two teams apart, and the executor's login refuses a
/// sandbox team that overlaps the normal one.
pub(crate) fn assistant_config(
    state: &Path,
    sim: &Sim,
    fence: &str,
    executor_socket: &Path,
) -> Result<Config, String> {
    let policy = state.join("tool_policy.yaml");
    write_private(&policy, POLICY)?;
    write_private(&state.join(SETTINGS_FILE), "autonomy: propose\n")?;
    write_private(&state.join(reads::TOKEN_FILE), &sim.sandbox_token)?;
    let values: Vec<(&str, String)> = vec![
        ("FLEETWATCH_EPIPHAN_URL", sim.mcp_url.clone()),
        ("FLEETWATCH_ALLOW_LOOPBACK_HTTP", "1".to_owned()),
        ("FLEETWATCH_WRITE_DEVICE_IDS", fence.to_owned()),
        (
            "FLEETWATCH_EXECUTOR_SOCKET",
            executor_socket.display().to_string(),
        ),
        ("FLEETWATCH_POLICY", policy.display().to_string()),
        ("FLEETWATCH_STATE_DIR", state.display().to_string()),
    ];
    let config = Config::from_lookup(|name| {
        values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.clone())
    })
    .map_err(|e| e.to_string())?;
    if config.settings.autonomy != Autonomy::Propose || !config.proposing() {
        return Err("the demo settings did not switch proposing on".to_owned());
    }
    Ok(config)
}

/// The approval page's port, chosen before the executor starts (its configuration names the
/// page's origin, the one place passkeys may be used): `FLEETWATCH_APPROVE_PORT` or the usual
/// default for the interactive demo (so the address is the familiar one) when it is free on
/// both loopback addresses, else a free port; any free port for the script.
fn page_port(script: bool) -> Result<u16, String> {
    let wanted = if script {
        None
    } else {
        Some(
            std::env::var("FLEETWATCH_APPROVE_PORT")
                .ok()
                .and_then(|v| v.trim().parse::<u16>().ok())
                .unwrap_or(fleetwatch::config::DEFAULT_APPROVE_PORT),
        )
    };
    free_loopback_port(wanted, None)
}

/// The confirm page's port: 8768 in the interactive demo when it is free, another free port
/// otherwise (never the approval page's).
fn confirm_port(script: bool, page: u16) -> Result<u16, String> {
    free_loopback_port((!script).then_some(8768), Some(page))
}

/// `wanted` when it is free on both loopback addresses, else a free one; never `not`.
fn free_loopback_port(wanted: Option<u16>, not: Option<u16>) -> Result<u16, String> {
    if let Some(port) = wanted {
        if loopback_free(port) && Some(port) != not {
            return Ok(port);
        }
        println!("  port {port} is busy on this machine; a free port is taken instead");
    }
    for _ in 0..16 {
        let port = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port for the approval page: {e}"))?
            .port();
        if loopback_free(port) && Some(port) != not {
            return Ok(port);
        }
    }
    Err("no port is free on both loopback addresses".to_owned())
}

/// Whether `port` can be bound on 127.0.0.1 and on ::1 (or the host has no ::1).
fn loopback_free(port: u16) -> bool {
    let v4 = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port));
    let v6 = std::net::TcpListener::bind((std::net::Ipv6Addr::LOCALHOST, port));
    v4.is_ok()
        && match v6 {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::AddrNotAvailable,
        }
}

/// Everything running in this process.
pub(crate) struct Running {
    pub(crate) sim: Sim,
    config: Config,
    pub(crate) assistant: Arc<Assistant>,
    pub(crate) store: Arc<Mutex<Store>>,
    pub(crate) page: PageHandle,
    pub(crate) executor_config: PathBuf,
    pub(crate) executor_program: PathBuf,
    /// `fleetwatch-confirm`, which enrols the stand-in passkeys.
    pub(crate) confirm_program: PathBuf,
    /// The confirm page the demo runs (`fleetwatch-confirm serve`).
    pub(crate) confirm_origin: String,
    /// The executor's approver file.
    pub(crate) executor_approvers: PathBuf,
    /// The executor's socket, as the page reaches it.
    pub(crate) executor: ExecutorClient,
    /// The assistant's approval-signing key.
    pub(crate) key: Arc<ApproverKey>,
    chat_stop: oneshot::Sender<()>,
    chat_task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// The chat socket, where `fleetwatch ask`, `pending` and `deny` reach the assistant.
    pub(crate) fn chat_socket(&self) -> PathBuf {
        self.config.chat_socket()
    }

    /// Stops the page (its secret file goes with it) and the chat socket.
    pub(crate) async fn stop(self) {
        let _ = self.chat_stop.send(());
        let _ = self.chat_task.await;
        let _ = std::fs::remove_file(self.config.chat_socket());
        if let Err(e) = self.page.shutdown().await {
            eprintln!("fleetwatch demo: {e}");
        }
    }
}

/// Starts every piece: the children first, then the assistant in this process.
pub(crate) async fn start(
    leftovers: &mut Leftovers,
    script: bool,
    api: ModelApi,
) -> Result<Running, String> {
    let sim_program = sibling("fleetwatch-sim")?;
    let executor_program = sibling("fleetwatch-executor")?;
    let confirm_program = sibling("fleetwatch-confirm")?;
    let policy = Arc::new(Policy::from_yaml(POLICY).map_err(|e| format!("policy: {e}"))?);

    println!("Starting:");
    let sim = pieces::start_sim(leftovers, &sim_program).await?;
    let model_url = pieces::start_model(leftovers, &sim_program, api).await?;

    // The fence: exactly the sandbox team's devices.
    let sandbox = sim.sandbox_devices().await?;
    if sandbox.is_empty() {
        return Err("the simulator's sandbox team has no devices".to_owned());
    }
    let fence = sandbox.join(",");

    // The assistant's key is made first: its public line is what the executor trusts.
    let state = leftovers.subfolder("assistant")?;
    let key = ApproverKey::load_or_create(&state).map_err(|e| e.to_string())?;
    let port = page_port(script)?;
    let confirm_origin = format!("http://localhost:{}", confirm_port(script, port)?);
    let files = pieces::executor_files(
        leftovers,
        &key.key_line(),
        &sim.sandbox_token,
        &confirm_origin,
    )?;
    pieces::start_executor(leftovers, &executor_program, &files, &sim, &fence).await?;
    pieces::start_confirm(
        leftovers,
        &confirm_program,
        &confirm_origin,
        &format!("http://localhost:{port}"),
        &files.policy,
    )
    .await?;

    progress("starting the assistant (chat engine, chat socket, every category granted)");
    let mut config = assistant_config(&state, &sim, &fence, &files.socket)?;
    config.confirm_origin = confirm_origin.clone();
    let engine = Engine::open(&config, &state, &policy, &key, api, model_url)?;

    println!("  starting the approval page…");
    let key = Arc::new(key);
    let executor = ExecutorClient::new(&config.executor_socket);
    let deps = PageDeps {
        store: Arc::clone(&engine.store),
        executor: executor.clone(),
        policy: Arc::clone(&policy),
        key: Arc::clone(&key),
    };
    let page = start_page(&config, deps, port).await?;
    // Answers name the page's real address.
    config.approve_port = page.addr.port();
    let assistant = Arc::new(Assistant::from_config(
        &config,
        Arc::clone(&policy),
        engine.reader,
        Arc::clone(&engine.store),
        Some(engine.model),
        config.proposing(),
    ));
    let (chat_stop, chat_task) = start_chat_socket(&config, &assistant)?;
    if !script {
        println!("Open the page in a browser on this machine and enter the secret to sign in.");
        println!(
            "From another terminal you can also ask: FLEETWATCH_STATE_DIR={} fleetwatch ask",
            state.display()
        );
    }
    Ok(Running {
        sim,
        config,
        assistant,
        store: engine.store,
        page,
        executor_config: files.config,
        executor_approvers: files.approvers,
        executor_program,
        confirm_program,
        confirm_origin,
        executor,
        key,
        chat_stop,
        chat_task,
    })
}

/// The assistant's parts before the page: grants, store, reader and model.
struct Engine {
    store: Arc<Mutex<Store>>,
    reader: Arc<Reader>,
    model: ModelConfig,
}

impl Engine {
    /// Opens every category, the store and the guarded reader; the model is the stand-in.
    fn open(
        config: &Config,
        state: &Path,
        policy: &Arc<Policy>,
        key: &ApproverKey,
        api: ModelApi,
        model_url: String,
    ) -> Result<Engine, String> {
        let categories: BTreeSet<String> = policy
            .read_tools()
            .map(|t| t.category.clone())
            .chain(policy.propose_entries().map(|e| e.category.clone()))
            .collect();
        for category in &categories {
            grants::open(state, policy, category).map_err(|e| e.to_string())?;
        }
        let mut store = Store::open(state).map_err(|e| e.to_string())?;
        store
            .audit(
                "started",
                None,
                &json!({"demo": true, "key_id": key.key_id().to_hex()}),
            )
            .map_err(|e| e.to_string())?;
        let token = Token::from_file(&state.join(reads::TOKEN_FILE)).map_err(|e| e.to_string())?;
        let reader = Arc::new(
            Reader::live(config, Arc::clone(policy), token)
                .map_err(|e| e.to_string())?
                .with_timeout(config.read_timeout),
        );
        let model = match api {
            ModelApi::Anthropic => {
                let api_key = ApiKey::new("offline-demo")
                    .ok_or_else(|| "the demo's placeholder model key is empty".to_owned())?;
                ModelConfig::new(model_url, api_key, "fleetwatch-offline-demo")
            }
            // As a team runs a model server of its own: on loopback, no key.
            ModelApi::OpenAi => {
                ModelConfig::with_api(api, model_url, None, "fleetwatch-offline-demo")
            }
        };
        println!("ok ({} categories open)", categories.len());
        Ok(Engine {
            store: Arc::new(Mutex::new(store)),
            reader,
            model,
        })
    }
}

/// The approval page on the port chosen before the executor started. It announces its address
/// itself.
async fn start_page(config: &Config, deps: PageDeps, port: u16) -> Result<PageHandle, String> {
    // The secret goes to a private file in the demo's folder either way: the demo's stand-in
    // operators sign in with it, and the interactive demo shows it (see `lib.rs`).
    let mut page_config = PageConfig::from_config(config);
    page_config.port = port;
    page_config.secret_delivery = SecretDelivery::File;
    page::start(page_config, deps)
        .await
        .map_err(|e| e.to_string())
}

/// The chat socket `fleetwatch ask` can talk to, served until the sender fires.
fn start_chat_socket(
    config: &Config,
    assistant: &Arc<Assistant>,
) -> Result<(oneshot::Sender<()>, tokio::task::JoinHandle<()>), String> {
    let listener = serve::bind(&config.chat_socket())?;
    let (chat_stop, stop_rx) = oneshot::channel::<()>();
    let chat_task = tokio::spawn(serve::serve(
        listener,
        Arc::clone(assistant),
        serve::Operators::from_config(config),
        async move {
            let _ = stop_rx.await;
        },
    ));
    Ok((chat_stop, chat_task))
}
