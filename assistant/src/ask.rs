//! `fleetwatch ask`: the terminal client. With a question it prints one answer and exits;
//! without, it opens a prompt with line editing and in-memory history (questions are never
//! written to disk), a spinner while waiting, Ctrl-C to cancel a question and Ctrl-D to quit.
//!
//! It holds no secret: it talks to `fleetwatch serve` over the chat socket. With `--replay` it
//! answers in process over the replay folder instead, needing no daemon, and cannot propose.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::answer::{Assistant, Reply};
use crate::chat::{self, ChatRequest};
use crate::config::Config;
use crate::model::ModelConfig;
use crate::reads::Reader;
use crate::store::Store;
use fleetwatch_words::Lang;

/// Where answers come from.
pub enum Source {
    /// A running `fleetwatch serve`.
    Socket(PathBuf),
    /// In process, over a replay folder.
    Local(Box<Assistant>),
}

impl Source {
    /// The in-process engine over a replay folder: the state folder is not touched (the
    /// audit goes to a private in-memory database) and proposing is off.
    pub fn replay(
        config: &Config,
        dir: PathBuf,
        now: jiff::Timestamp,
        no_ai: bool,
    ) -> Result<Source, String> {
        if !dir.is_dir() {
            return Err(format!("replay folder {} does not exist", dir.display()));
        }
        let policy = Arc::new(config.load_replay_policy().map_err(|e| e.to_string())?);
        let reader = Arc::new(Reader::replay(dir, now, Arc::clone(&policy)));
        let store = Store::in_memory().map_err(|e| e.to_string())?;
        let model = if no_ai {
            None
        } else {
            ModelConfig::from_env()?
        };
        Ok(Source::Local(Box::new(Assistant::from_config(
            config,
            policy,
            reader,
            Arc::new(Mutex::new(store)),
            model,
            false,
        ))))
    }

    async fn ask(&self, question: &str, no_ai: bool) -> Result<Reply, String> {
        match self {
            Source::Socket(path) => {
                chat::ask(
                    path,
                    &ChatRequest {
                        question: question.to_owned(),
                        no_ai,
                    },
                )
                .await
            }
            Source::Local(assistant) => Ok(assistant.ask(question, no_ai).await),
        }
    }
}

/// Formats a reply for the terminal.
pub fn render(reply: &Reply, question: &str) -> String {
    let lang = fleetwatch_words::lang::detect(question);
    let mut out = reply.answer.trim_end().to_owned();
    if let Some(note) = &reply.note {
        out.push_str("\n\n");
        out.push_str(lang.pick("Note: ", "Nota: "));
        out.push_str(note);
    }
    for id in &reply.proposals {
        out.push_str("\n\n");
        out.push_str(&match (lang, &reply.page) {
            (Lang::En, Some(page)) => format!(
                "Proposal #{id} is waiting for a person to approve it at {page}. Nothing has \
                 changed yet."
            ),
            (Lang::En, None) => format!(
                "Proposal #{id} is waiting for a person to approve it. Nothing has changed yet."
            ),
            (Lang::Es, Some(page)) => format!(
                "La propuesta n.º {id} espera a que una persona la apruebe en {page}. Todavía \
                 no ha cambiado nada."
            ),
            (Lang::Es, None) => format!(
                "La propuesta n.º {id} espera a que una persona la apruebe. Todavía no ha \
                 cambiado nada."
            ),
        });
    }
    out
}

/// An error from asking, in the question's language.
fn failed(question: &str, error: &str) -> String {
    match fleetwatch_words::lang::detect(question) {
        Lang::En => format!("fleetwatch ask: the question could not be answered: {error}"),
        Lang::Es => format!("fleetwatch ask: no se pudo responder a la pregunta: {error}"),
    }
}

/// One question, printed; the exit code.
pub async fn one_shot(source: &Source, question: &str, no_ai: bool) -> i32 {
    match with_spinner(source.ask(question, no_ai)).await {
        Ok(reply) => {
            crate::say!("{}", render(&reply, question));
            0
        }
        Err(e) => {
            eprintln!("{}", failed(question, &e));
            1
        }
    }
}

/// How often the prompt asks `serve` where the proposals it raised stand.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// A proposal this prompt raised and has not yet seen to its end.
struct Watched {
    /// The status last said (`pending` when raised).
    said: String,
    /// The half-lifetime reminder was printed.
    reminded: bool,
    /// The language of the question that raised it.
    lang: Lang,
    /// The approval page's address, for the reminder.
    page: String,
}

/// The proposals the prompt watches, by number.
type WatchList = Arc<Mutex<std::collections::BTreeMap<u64, Watched>>>;

/// Statuses after which nothing more happens to a proposal.
fn settled(status: &str) -> bool {
    !matches!(status, "pending" | "approved")
}

/// One look at where the watched proposals stand: the lines to print, and the settled ones
/// dropped from the list.
async fn watch_once(socket: &std::path::Path, watched: &WatchList) -> Vec<String> {
    let ids: Vec<u64> = match watched.lock() {
        Ok(list) => list.keys().copied().take(chat::MAX_WATCHED).collect(),
        Err(_) => return Vec::new(),
    };
    if ids.is_empty() {
        return Vec::new();
    }
    let command = chat::ChatCommand::Standings { proposals: ids };
    let Ok(chat::ChatResponse::Standings(standings)) = chat::command(socket, &command).await else {
        // `serve` is away for a moment: ask again at the next tick.
        return Vec::new();
    };
    let now = crate::store::now_secs();
    let mut lines = Vec::new();
    let Ok(mut list) = watched.lock() else {
        return lines;
    };
    for standing in standings {
        let Some(w) = list.get_mut(&standing.proposal) else {
            continue;
        };
        if let Some(line) = crate::pending::outcome_line(&standing, Some(w.said.as_str()), w.lang) {
            lines.push(line);
        }
        w.said.clone_from(&standing.status);
        if !w.reminded
            && let Some(line) = crate::pending::reminder_line(&standing, &w.page, now, w.lang)
        {
            w.reminded = true;
            lines.push(line);
        }
        if settled(&standing.status) {
            list.remove(&standing.proposal);
        }
    }
    lines
}

/// Watches the proposals in `watched` until the prompt ends, printing a line above the prompt
/// for each change (rustyline's external printer keeps the line being typed intact).
fn spawn_watcher(
    socket: PathBuf,
    watched: WatchList,
    mut printer: Option<impl rustyline::ExternalPrinter + Send + 'static>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(WATCH_EVERY).await;
            for line in watch_once(&socket, &watched).await {
                let printed = printer
                    .as_mut()
                    .is_some_and(|p| p.print(format!("{line}\n")).is_ok());
                if !printed {
                    eprintln!("{line}");
                }
            }
        }
    })
}

/// Aborts the watcher when the prompt ends, however it ends.
struct WatcherGuard(Option<tokio::task::JoinHandle<()>>);

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// The interactive prompt. Runs on the current runtime; line reading blocks a worker thread
/// briefly, which is fine for a single-user terminal client. Against `serve` it also says,
/// above the prompt, what becomes of each proposal it raised.
pub async fn repl(source: &Source, no_ai: bool) -> i32 {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("fleetwatch ask: cannot open the terminal: {e}");
            return 1;
        }
    };
    let watched: WatchList = Arc::default();
    let _watcher = WatcherGuard(match source {
        Source::Socket(path) => Some(spawn_watcher(
            path.clone(),
            Arc::clone(&watched),
            editor.create_external_printer().ok(),
        )),
        Source::Local(_) => None,
    });
    eprintln!("Ask about the fleet (Ctrl-C cancels a question, Ctrl-D quits).");
    loop {
        let line = match tokio::task::block_in_place(|| editor.readline("fleetwatch> ")) {
            Ok(line) => line,
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => return 0,
            Err(e) => {
                eprintln!("fleetwatch ask: {e}");
                return 1;
            }
        };
        let question = line.trim();
        if question.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(question);
        tokio::select! {
            result = with_spinner(source.ask(question, no_ai)) => match result {
                Ok(reply) => {
                    if let Ok(mut list) = watched.lock() {
                        for id in &reply.proposals {
                            list.insert(*id, Watched {
                                said: "pending".to_owned(),
                                reminded: false,
                                lang: fleetwatch_words::lang::detect(question),
                                page: reply.page.clone().unwrap_or_default(),
                            });
                        }
                    }
                    crate::say!("{}\n", render(&reply, question));
                }
                Err(e) => eprintln!("{}\n", failed(question, &e)),
            },
            // Dropping the question's future closes the socket, which cancels it server-side.
            _ = tokio::signal::ctrl_c() => eprintln!(
                "\n{}\n",
                fleetwatch_words::lang::detect(question).pick("(cancelled)", "(cancelada)")
            ),
        }
    }
}

async fn with_spinner<T>(work: impl std::future::Future<Output = T>) -> T {
    if !std::io::stderr().is_terminal() {
        return work.await;
    }
    let spinner = tokio::spawn(async {
        let frames = ['|', '/', '-', '\\'];
        let mut i = 0usize;
        loop {
            tokio::time::sleep(Duration::from_millis(120)).await;
            let frame = frames.get(i % frames.len()).copied().unwrap_or('|');
            eprint!("\r{frame} reading the fleet…");
            let _ = std::io::stderr().flush();
            i = i.wrapping_add(1);
        }
    });
    // A guard, so a cancelled question (its future dropped) also stops the spinner.
    let _guard = SpinnerGuard(spinner);
    work.await
}

struct SpinnerGuard(tokio::task::JoinHandle<()>);

impl Drop for SpinnerGuard {
    fn drop(&mut self) {
        self.0.abort();
        eprint!("\r\x1b[2K");
        let _ = std::io::stderr().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line `ask` prints for an answer, in Spanish for a Spanish question.
    #[test]
    fn a_spanish_question_gets_every_line_in_spanish() {
        let reply = Reply {
            answer: "Todo en orden.".to_owned(),
            proposals: vec![3, 4],
            page: Some("http://localhost:8767/".to_owned()),
            note: Some("El modelo de IA no pudo responder.".to_owned()),
        };
        let question = "¿puedes reiniciar la sala 2?";
        let shown = render(&reply, question);
        for english in ["Note", "Proposal", "waiting", "Nothing", "changed"] {
            assert!(!shown.contains(english), "{english}: {shown}");
        }
        assert!(shown.contains("Nota: El modelo"), "{shown}");
        assert!(
            shown.contains(
                "La propuesta n.º 3 espera a que una persona la apruebe en http://localhost:8767/."
            ),
            "{shown}"
        );
        let without_page = Reply {
            page: None,
            ..reply
        };
        assert!(render(&without_page, question).contains("La propuesta n.º 4 espera"));
        assert!(failed(question, "x").contains("no se pudo responder"));
        let english = render(&without_page, "can you restart room 2?");
        assert!(english.contains("Note: ") && english.contains("Proposal #4 is waiting"));
        assert!(failed("what is offline?", "x").contains("could not be answered"));
    }
}
