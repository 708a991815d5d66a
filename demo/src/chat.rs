//! The interactive demo's terminal chat.

use std::sync::Arc;

use fleetwatch::answer::Assistant;
use fleetwatch::ask;

use crate::operator::Operators;

/// What a line at the demo's prompt asks for.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    /// `approve N`: approve proposal N with the stand-in passkeys.
    Approve(u64),
    /// `install <line>`: install an operator's passkey line on the demo's executor.
    Install(&'a str),
    /// A question for the assistant.
    Question(&'a str),
}

fn parse(line: &str) -> Line<'_> {
    let mut words = line.splitn(2, char::is_whitespace);
    let first = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim();
    match first.to_lowercase().as_str() {
        "approve" => match rest.trim_start_matches('#').parse() {
            Ok(id) => Line::Approve(id),
            Err(_) => Line::Question(line),
        },
        "install" if rest.starts_with("passkey ") || rest.starts_with("'passkey ") => {
            Line::Install(rest)
        }
        _ => Line::Question(line),
    }
}

/// The demo's prompt: the engine's answers, rendered the way `fleetwatch ask` renders them,
/// and `approve N` / `install <line>` for the stand-in operators. Unlike `ask`, Ctrl-C at the
/// prompt ends the demo: here it is the way out people try first.
pub(crate) async fn chat(assistant: Arc<Assistant>, mut operators: Operators) -> i32 {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("fleetwatch demo: cannot open the terminal: {e}");
            return 1;
        }
    };
    loop {
        // Line reading blocks, so it runs off the async workers; the editor travels with it.
        let read = tokio::task::spawn_blocking(move || {
            let line = editor.readline("demo> ");
            (editor, line)
        })
        .await;
        let (back, line) = match read {
            Ok(pair) => pair,
            Err(_) => return 1,
        };
        editor = back;
        let question = match line {
            Ok(line) => line,
            Err(
                rustyline::error::ReadlineError::Interrupted | rustyline::error::ReadlineError::Eof,
            ) => return 0,
            Err(e) => {
                eprintln!("fleetwatch demo: {e}");
                return 1;
            }
        };
        let question = question.trim();
        if question.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(question);
        match parse(question) {
            Line::Approve(id) => {
                if let Err(e) = operators.approve(id).await {
                    println!("  {e}");
                }
                println!();
            }
            Line::Install(line) => match operators.install(line) {
                Ok(said) => println!("{said}\n"),
                Err(e) => println!("{e}\n"),
            },
            Line::Question(question) => {
                let reply = assistant.ask(question, false).await;
                println!("{}\n", ask::render(&reply, question));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_told_from_questions() {
        assert_eq!(parse("approve 3"), Line::Approve(3));
        assert_eq!(parse("Approve #12"), Line::Approve(12));
        assert_eq!(
            parse("approve the reboot"),
            Line::Question("approve the reboot")
        );
        assert_eq!(
            parse("install 'passkey ed25519 AA BB Ana'"),
            Line::Install("'passkey ed25519 AA BB Ana'")
        );
        assert_eq!(
            parse("install a new firmware"),
            Line::Question("install a new firmware")
        );
        assert_eq!(
            parse("what needs attention?"),
            Line::Question("what needs attention?")
        );
    }
}
