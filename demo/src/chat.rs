//! The interactive demo's terminal chat.

use std::sync::Arc;

use fleetwatch::answer::Assistant;
use fleetwatch::ask;

/// The demo's prompt: the engine's answers, rendered the way `fleetwatch ask` renders them.
/// Unlike `ask`, Ctrl-C at the prompt ends the demo: here it is the way out people try first.
pub(crate) async fn chat(assistant: Arc<Assistant>) -> i32 {
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
        let reply = assistant.ask(question, false).await;
        println!("{}\n", ask::render(&reply));
    }
}
