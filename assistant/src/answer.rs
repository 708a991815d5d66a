//! One question, end to end: the model loop when a key is set (with the keyword answer as the
//! fallback when a model call fails), the keyword answer otherwise. Shared by `serve` (chat)
//! and by `ask --replay` (in process), so both answer through the same guarded reads.
//!
//! Neither the question nor the answer is written anywhere: the audit row holds counts only.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use fleetwatch_protocol::policy::Policy;
use fleetwatch_words::question::Question;
use serde_json::{Value, json};

use crate::config::Config;
use crate::executor_client::ExecutorClient;
use crate::grants::Grants;
use crate::grounding::SetAside;
use crate::lang::{self, Lang};
use crate::model::{self, ModelConfig, ProposeResult, ToolHandler, TurnEnd};
use crate::proposals::Proposer;
use crate::reads::Reader;
use crate::snapshot::{Snapshot, SnapshotCache};
use crate::store::{self, Status, Store};
use crate::{fleet_tools, keyword, toolspec};

/// What the operator gets back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    /// The answer text.
    pub answer: String,
    /// Proposals stored while answering (still pending).
    pub proposals: Vec<u64>,
    /// The approval page address, when a proposal was made.
    pub page: Option<String>,
    /// A note about how the answer was made (for example, why the model was not used).
    pub note: Option<String>,
}

/// The question-answering engine.
pub struct Assistant {
    policy: Arc<Policy>,
    reader: Arc<Reader>,
    store: Arc<Mutex<Store>>,
    proposer: Proposer,
    model: Option<ModelConfig>,
    state_dir: PathBuf,
    proposing: bool,
    fence_configured: bool,
    page: String,
    snapshots: SnapshotCache,
}

/// How the engine is put together.
pub struct Parts {
    /// The policy.
    pub policy: Arc<Policy>,
    /// The guarded reader.
    pub reader: Arc<Reader>,
    /// The store.
    pub store: Arc<Mutex<Store>>,
    /// The proposal checker.
    pub proposer: Proposer,
    /// The model, or `None` for keyword answers only.
    pub model: Option<ModelConfig>,
    /// The state folder (grants are re-read from it every question).
    pub state_dir: PathBuf,
    /// `autonomy: propose`.
    pub proposing: bool,
    /// A fence is configured.
    pub fence_configured: bool,
    /// The approval page address.
    pub page: String,
}

struct TurnHandler<'a> {
    assistant: &'a Assistant,
    grants: Grants,
    asked_by: &'a str,
    /// The question's snapshot, read at its first fleet tool call and used by every other.
    snapshot: tokio::sync::OnceCell<Arc<Snapshot>>,
    /// The operator's language, for what the fleet tools say in words.
    lang: Lang,
    /// The rooms a change may go to, asked of the executor at the first call that needs them.
    changeable: tokio::sync::OnceCell<fleet_tools::Changeable>,
}

impl TurnHandler<'_> {
    async fn snapshot(&self) -> Result<&Arc<Snapshot>, String> {
        self.snapshot
            .get_or_try_init(|| async {
                let grants = &self.grants;
                self.assistant
                    .snapshots
                    .get(&self.assistant.reader, &|c| grants.is_open(c))
                    .await
                    .map_err(|e| e.to_string())
            })
            .await
    }
}

impl TurnHandler<'_> {
    async fn changeable(&self) -> &fleet_tools::Changeable {
        self.changeable
            .get_or_init(|| async {
                let assistant = self.assistant;
                if !(assistant.proposing && assistant.fence_configured) {
                    return fleet_tools::Changeable::Off;
                }
                match assistant.executor().rooms().await {
                    Ok(list) => fleet_tools::Changeable::Read(list),
                    Err(e) => fleet_tools::Changeable::Failed(e.to_string()),
                }
            })
            .await
    }
}

impl ToolHandler for TurnHandler<'_> {
    async fn read(&self, tool: &str, args: Value) -> Result<Value, String> {
        let policy = &self.assistant.policy;
        // The loop already checked visibility; these are the second, independent gates.
        if let Some(entry) = policy.fleet_tool(tool) {
            if !toolspec::allowed_fleet(policy, &self.grants, tool) {
                return Err("that tool is not available".to_owned());
            }
            let snapshot = self.snapshot().await?;
            let unasked = fleet_tools::Changeable::NotAsked;
            let changeable = if fleet_tools::needs_changeable(tool, &args, snapshot) {
                self.changeable().await
            } else {
                &unasked
            };
            return fleet_tools::call(tool, &entry.schema, &args, snapshot, changeable, self.lang);
        }
        let Some(entry) = policy.read_tool(tool) else {
            return Err("that tool is not available".to_owned());
        };
        if entry.team_wide || !toolspec::allowed_read(policy, &self.grants, tool) {
            return Err("that tool is not available".to_owned());
        }
        // The model's arguments obey the read's schema before anything is sent: an extra key,
        // a missing one or a malformed ID is the model's mistake, not a question for Epiphan.
        fleetwatch_protocol::schema::Schema::compile(&entry.schema)
            .map_err(|_| "that tool is not available".to_owned())?
            .validate(&args)
            .map_err(|v| {
                let at = match v.pointer() {
                    p if p.is_empty() => "the top".to_owned(),
                    p => p,
                };
                format!(
                    "invalid arguments: they do not match {tool}'s schema at {at}; nothing was read"
                )
            })?;
        self.assistant
            .reader
            .read(tool, args)
            .await
            .map_err(|e| e.to_string())
    }

    async fn propose(&self, tool: &str, args: Value, reason: &str) -> ProposeResult {
        self.assistant
            .proposer
            .propose_as(tool, args, reason, self.asked_by)
            .await
    }
}

impl Assistant {
    /// Builds the engine.
    pub fn new(parts: Parts) -> Assistant {
        Assistant {
            policy: parts.policy,
            reader: parts.reader,
            store: parts.store,
            proposer: parts.proposer,
            model: parts.model,
            state_dir: parts.state_dir,
            proposing: parts.proposing,
            fence_configured: parts.fence_configured,
            page: parts.page,
            snapshots: SnapshotCache::default(),
        }
    }

    /// The usual assembly from settings. `proposing` is the caller's final word (a replay
    /// try-out passes false whatever the settings say).
    pub fn from_config(
        config: &Config,
        policy: Arc<Policy>,
        reader: Arc<Reader>,
        store: Arc<Mutex<Store>>,
        model: Option<ModelConfig>,
        proposing: bool,
    ) -> Assistant {
        let proposer = Proposer::new(
            Arc::clone(&policy),
            config.fence.clone(),
            proposing,
            config.state_dir.clone(),
            Arc::clone(&store),
            ExecutorClient::new(&config.executor_socket),
        );
        Assistant::new(Parts {
            policy,
            reader,
            store,
            proposer,
            model,
            state_dir: config.state_dir.clone(),
            proposing,
            fence_configured: config.fence.configured(),
            page: config.page_address(),
        })
    }

    /// Whether answers come from the model.
    pub fn model_on(&self) -> bool {
        self.model.is_some()
    }

    /// Answers one question. `no_ai` forces the keyword answer (which cannot propose).
    pub async fn ask(&self, question: &str, no_ai: bool) -> Reply {
        self.ask_in_chat(question, no_ai, "").await
    }

    /// The proposal store this engine keeps proposals in.
    pub fn store(&self) -> &Arc<Mutex<Store>> {
        &self.store
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The executor the proposer asks.
    pub fn executor(&self) -> &ExecutorClient {
        self.proposer.executor()
    }

    /// The chat's record for the model: who asks, and each denial of a proposal they raised
    /// that no turn of theirs has seen yet ("the operator denied proposal 3: <reason>").
    /// `None` when the asker is not known.
    fn chat_context(&self, asked_by: &str) -> Option<Value> {
        if asked_by.is_empty() {
            return None;
        }
        let denials = match self.store.lock() {
            Ok(mut store) => store.take_untold_denials(asked_by).unwrap_or_else(|e| {
                tracing::warn!("denials: {e}");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        let decisions: Vec<String> = denials
            .into_iter()
            .map(|(id, reason)| {
                if reason.is_empty() {
                    format!("the operator denied proposal {id} without giving a reason")
                } else {
                    format!("the operator denied proposal {id}: {reason}")
                }
            })
            .collect();
        let mut context = json!({"asked_by": asked_by});
        if !decisions.is_empty() {
            context["decisions"] = json!(decisions);
        }
        Some(context)
    }

    /// [`Assistant::ask`] for an operator of the chat: `asked_by` (their user name, empty when
    /// not known) is kept with every proposal the turn stores and told to the model, with what
    /// became of the proposals they raised before.
    pub async fn ask_in_chat(&self, question: &str, no_ai: bool, asked_by: &str) -> Reply {
        let lang = lang::detect(question);
        let chars = question.chars().count();
        let Some(cfg) = self.model.as_ref().filter(|_| !no_ai) else {
            let answer = self.keyword_answer(question, lang).await;
            self.audit_question(json!({"chars": chars, "outcome": "keyword"}));
            return Reply {
                answer,
                proposals: Vec::new(),
                page: None,
                note: None,
            };
        };

        let grants = match Grants::load(&self.state_dir) {
            Ok(grants) => grants,
            Err(e) => {
                // An untrustworthy grants file grants nothing; say so rather than guess.
                tracing::warn!("grants: {e}");
                Grants::default()
            }
        };
        let tools = toolspec::tools(&self.policy, &grants, self.proposing, self.fence_configured);
        if !toolspec::reads_shown(&tools) {
            // With nothing it may read, whatever the model says about the fleet is invented:
            // it is not asked at all.
            self.audit_question(json!({"chars": chars, "outcome": "no_read_category"}));
            let line = self.no_category_line(lang);
            return self.code_answer(question, lang, line).await;
        }
        let policy = Arc::clone(&self.policy);
        let visible_grants = grants.clone();
        let (proposing, fenced) = (self.proposing, self.fence_configured);
        let visible =
            move |name: &str| toolspec::is_shown(&policy, &visible_grants, proposing, fenced, name);
        let handler = TurnHandler {
            assistant: self,
            grants,
            asked_by,
            snapshot: tokio::sync::OnceCell::new(),
            lang,
            changeable: tokio::sync::OnceCell::new(),
        };
        let context = self.chat_context(asked_by);
        let outcome =
            model::run_turn_in_chat(cfg, &tools, &visible, question, context.as_ref(), &handler)
                .await;
        if !outcome.proposals.is_empty() {
            // The next answer reads the fleet anew: it may be asked once the change has run.
            self.snapshots.forget().await;
        }
        let detail = |label: &str| {
            json!({
                "chars": chars,
                "tools": outcome.tools_called,
                "proposals": outcome.proposals,
                "turns": outcome.model_calls,
                "input_tokens": outcome.input_tokens,
                "output_tokens": outcome.output_tokens,
                "outcome": label,
            })
        };
        match &outcome.outcome {
            TurnEnd::Failed(reason) => {
                // Whatever the failed turn proposed was never explained to the operator.
                self.expire(&outcome.proposals, "the model turn failed");
                self.audit_question(detail("failed"));
                let answer = self.keyword_answer(question, lang).await;
                let note = match lang {
                    Lang::En => format!(
                        "The AI model could not answer ({reason}), so this is the built-in \
                         keyword answer. Nothing was proposed."
                    ),
                    Lang::Es => format!(
                        "El modelo de IA no pudo responder ({reason}); esta es la respuesta \
                         básica por palabras clave. No se propuso nada."
                    ),
                };
                Reply {
                    answer,
                    proposals: Vec::new(),
                    page: None,
                    note: Some(note),
                }
            }
            TurnEnd::SetAside(why) => {
                self.audit_question(detail(&format!("set_aside:{}", why.label())));
                let line = set_aside_line(*why, lang);
                let mut reply = self.code_answer(question, lang, line).await;
                // What the turn stored was checked by code; it is shown by its number.
                reply.page = (!outcome.proposals.is_empty()).then(|| self.page.clone());
                reply.proposals = outcome.proposals.clone();
                reply
            }
            end => {
                let label = match (end, outcome.stopped_by) {
                    (TurnEnd::Apologised, Some(bound)) => format!("stopped:{}", bound.label()),
                    (TurnEnd::Apologised, None) => "stopped".to_owned(),
                    _ => "answered".to_owned(),
                };
                self.audit_question(detail(&label));
                let page = (!outcome.proposals.is_empty()).then(|| self.page.clone());
                Reply {
                    answer: outcome.answer.clone(),
                    proposals: outcome.proposals.clone(),
                    page,
                    note: None,
                }
            }
        }
    }

    /// Code's own answer in place of the model's: the keyword answer with `line` as its note
    /// when the question is one it knows, otherwise `line` and what the keyword answer can say.
    async fn code_answer(&self, question: &str, lang: Lang, line: String) -> Reply {
        let (answer, note) = if fleetwatch_words::question::of(question) == Question::Help {
            (format!("{line}\n\n{}", keyword::help(lang)), None)
        } else {
            (self.keyword_answer(question, lang).await, Some(line))
        };
        Reply {
            answer,
            proposals: Vec::new(),
            page: None,
            note,
        }
    }

    /// Why the model was not asked when no read category is open, and the command that opens
    /// the one its fleet tools need.
    fn no_category_line(&self, lang: Lang) -> String {
        let policy = &self.policy;
        let category = policy
            .fleet_tools()
            .find_map(|t| t.reads.first())
            .and_then(|read| policy.read_tool(read))
            .or_else(|| policy.read_tools().next())
            .map_or("fleet", |t| t.category.as_str());
        match lang {
            Lang::En => format!(
                "The AI model was not asked: no read category is open, so it could not read \
                 anything about the fleet. An administrator opens one with `fleetwatch grants \
                 open {category}` (`fleetwatch grants list` names them all)."
            ),
            Lang::Es => format!(
                "No se preguntó al modelo de IA: no hay ninguna categoría de lectura abierta, así \
                 que no podía leer nada de los equipos. Un administrador abre una con \
                 `fleetwatch grants open {category}` (`fleetwatch grants list` las nombra todas)."
            ),
        }
    }

    async fn keyword_answer(&self, question: &str, lang: Lang) -> String {
        // Every read whatever the grants: the keyword answer is shown to the operator only.
        match self.snapshots.fresh(&self.reader, &|_| true).await {
            Ok(snapshot) => keyword::answer(question, &snapshot),
            Err(e) => match lang {
                Lang::En => format!("I could not read the fleet: {e}"),
                Lang::Es => format!("No pude leer el estado de los equipos: {e}"),
            },
        }
    }

    fn expire(&self, ids: &[u64], reason: &str) {
        let Ok(mut store) = self.store.lock() else {
            return;
        };
        for id in ids {
            if let Err(e) = store.decide(*id, Status::Expired, reason, store::now_secs()) {
                tracing::warn!("expiring proposal {id}: {e}");
            }
        }
    }

    fn audit_question(&self, detail: Value) {
        let Ok(mut store) = self.store.lock() else {
            return;
        };
        if let Err(e) = store.audit("question", None, &detail) {
            tracing::warn!("audit: {e}");
        }
    }
}

/// The line said when the model's answer was set aside, and why, in the operator's language.
fn set_aside_line(why: SetAside, lang: Lang) -> String {
    let reason = match (why, lang) {
        (SetAside::NoRead, Lang::En) => "it rested on nothing read from the fleet",
        (SetAside::DataTag, Lang::En) => "it held text made to look like Fleetwatch's fleet data",
        (SetAside::Unseen, Lang::En) => {
            "it named a room or device that nothing read for this question returned"
        }
        (SetAside::NoRead, Lang::Es) => "no se basaba en nada leído de los equipos",
        (SetAside::DataTag, Lang::Es) => "contenía texto con la forma de los datos de Fleetwatch",
        (SetAside::Unseen, Lang::Es) => {
            "nombraba una sala o un equipo que ninguna lectura de esta pregunta devolvió"
        }
    };
    match lang {
        Lang::En => format!(
            "The AI model's answer was set aside: {reason}. This is Fleetwatch's own answer, \
             read just now."
        ),
        Lang::Es => format!(
            "Se descartó la respuesta del modelo de IA: {reason}. Esta es la respuesta propia de \
             Fleetwatch, leída ahora mismo."
        ),
    }
}
