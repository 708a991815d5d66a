//! The documents match the code. Each check fails when the code grows without its docs:
//!
//! * every flag and every argument of every command of `fleetwatch`, `fleetwatch-executor`,
//!   `fleetwatch-sim` and `fleetwatch-demo` (read from their own `--help`) has a row in the
//!   configuration table of README.md and README.es.md;
//! * every `FLEETWATCH_*` variable named in the Rust sources is in both tables;
//! * the README's test command is the one `.ci/run` runs, and builds every binary tests run;
//! * README.md and README.es.md give the same commands;
//! * SECURITY.md and SECURITY.es.md cite the same tests, and every test cited there or in
//!   AGENTS.md exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use fleetwatch_e2e::{binary, workspace_root};

fn read(name: &str) -> String {
    std::fs::read_to_string(workspace_root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// --help

fn help(program: &Path, path: &[String]) -> String {
    let output = Command::new(program)
        .args(path)
        .arg("--help")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{} {} --help failed: {}",
        program.display(),
        path.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The lines of a `--help` section (`Commands:`, `Options:`), up to the next blank-line-free
/// heading.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| *l != heading);
    if lines.next().is_none() {
        return Vec::new();
    }
    lines
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .collect()
}

/// Subcommand names listed under `Commands:` (clap indents them by two spaces).
fn subcommands(help: &str) -> Vec<String> {
    section(help, "Commands:")
        .into_iter()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Long flags listed under `Options:`, without `--help` and `--version`.
fn flags(help: &str) -> BTreeSet<String> {
    section(help, "Options:")
        .into_iter()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        // The flag and its value name come before the first run of two spaces.
        .filter_map(|l| l.split("  ").next())
        .flat_map(|spec| spec.split([',', ' ', '=', '[', '<']))
        .filter(|word| word.starts_with("--") && word.len() > 2)
        .filter(|word| *word != "--help" && *word != "--version")
        .map(str::to_owned)
        .collect()
}

/// Arguments listed under `Arguments:` (`<LINE>...`, `[NAME]`), each as `<NAME>`.
fn arguments(help: &str) -> BTreeSet<String> {
    section(help, "Arguments:")
        .into_iter()
        .map(str::trim_start)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with(['<', '[']))
        .map(|w| {
            let name = w.trim_end_matches("...").trim_matches(['<', '>', '[', ']']);
            format!("<{name}>")
        })
        .collect()
}

/// Every command path of a binary with the flags and arguments it accepts. Flags of the top-level command
/// (global ones) are reported once, at the top.
fn command_flags(package: &str, name: &str) -> Vec<(String, BTreeSet<String>)> {
    let program = binary(package, name);
    let top = help(&program, &[]);
    let global = flags(&top);
    let mut out = vec![(name.to_owned(), global.clone())];
    let mut queue: Vec<Vec<String>> = subcommands(&top).into_iter().map(|s| vec![s]).collect();
    while let Some(path) = queue.pop() {
        let text = help(&program, &path);
        let mut own: BTreeSet<String> = flags(&text).difference(&global).cloned().collect();
        own.extend(arguments(&text));
        out.push((format!("{name} {}", path.join(" ")), own));
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    out.sort();
    out
}

fn all_commands() -> Vec<(String, BTreeSet<String>)> {
    let mut all = command_flags("fleetwatch", "fleetwatch");
    all.extend(command_flags("fleetwatch-executor", "fleetwatch-executor"));
    all.extend(command_flags("fleetwatch-sim", "fleetwatch-sim"));
    all.extend(command_flags("fleetwatch-demo", "fleetwatch-demo"));
    all.extend(command_flags("fleetwatch-confirm", "fleetwatch-confirm"));
    all
}

// ---------------------------------------------------------------------------------------------
// The README's configuration table

/// The table rows (lines starting with `|`) of the section whose `## ` heading starts with
/// `heading`.
fn table_rows(readme: &str, heading: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.starts_with(heading);
            continue;
        }
        if inside && line.starts_with('|') {
            rows.push(line.to_owned());
        }
    }
    assert!(!rows.is_empty(), "no table under `## {heading}`");
    rows
}

/// True when `text` holds `` `needle`` followed by something that ends the name (so `--now`
/// is not found inside `--nowhere`, nor a variable inside a longer one ending in `_FILE`).
fn names(text: &str, needle: &str) -> bool {
    let pattern = format!("`{needle}");
    text.match_indices(&pattern).any(|(i, _)| {
        text[i + pattern.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    })
}

/// Flags without a row naming both `` `command` `` and the flag.
fn undocumented_flags(rows: &[String], commands: &[(String, BTreeSet<String>)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (command, flags) in commands {
        for flag in flags {
            let documented = rows
                .iter()
                .any(|row| row.contains(&format!("`{command}`")) && names(row, flag));
            if !documented {
                missing.push(format!("{command} {flag}"));
            }
        }
    }
    missing
}

/// Every `FLEETWATCH_*` name in the workspace's Rust sources.
fn environment_names() -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&workspace_root(), &mut files);
    assert!(files.len() > 20, "found only {} Rust files", files.len());
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("FLEETWATCH_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(tail.len());
            let name = tail[..end].trim_end_matches('_');
            if name.len() > "FLEETWATCH_".len() {
                names.insert(name.to_owned());
            }
            rest = &tail[end.max(1)..];
        }
    }
    names
}

#[test]
fn flag_parsing_reads_clap_help() {
    let text = "Usage: x [OPTIONS] <COMMAND>\n\nCommands:\n  serve   Serve it\n          more words\n  help    Print\n\nOptions:\n      --config <CONFIG>  File\n      --port <PORT>      Port [default: 0]\n  -n, --no-ai            Keyword only\n  -h, --help             Print help\n";
    assert_eq!(subcommands(text), vec!["serve".to_owned()]);
    assert_eq!(
        flags(text).into_iter().collect::<Vec<_>>(),
        vec!["--config", "--no-ai", "--port"]
    );
    let with_args = "Usage: x add <LINE>...\n\nArguments:\n  <LINE>...  The line\n  [NAME]     A name\n\nOptions:\n  -h, --help  Print help\n";
    assert_eq!(
        arguments(with_args).into_iter().collect::<Vec<_>>(),
        vec!["<LINE>", "<NAME>"]
    );
    assert!(names("| `<LINE>` |", "<LINE>"));
    assert!(names("| `--now TIME` |", "--now"));
    assert!(!names("| `--nowhere` |", "--now"));
    // Built at run time, so the source scan below does not take them for real variables.
    let var = format!("{}X", "FLEETWATCH_");
    assert!(names(&format!("| `{var}` |"), &var));
    assert!(!names(&format!("| `{var}_FILE` |"), &var));
}

#[test]
fn every_flag_of_every_command_is_in_both_configuration_tables() {
    let commands = all_commands();
    // Sanity: the walk found the commands the READMEs talk about.
    for expected in [
        "fleetwatch demo",
        "fleetwatch ask",
        "fleetwatch-executor login",
        "fleetwatch-sim serve",
        "fleetwatch-demo",
    ] {
        assert!(
            commands.iter().any(|(c, _)| c == expected),
            "{expected} not found in --help"
        );
    }
    for (file, heading) in [
        ("README.md", "Configuration"),
        ("README.es.md", "Configuración"),
    ] {
        let rows = table_rows(&read(file), heading);
        let missing = undocumented_flags(&rows, &commands);
        assert!(
            missing.is_empty(),
            "{file}: flags with no row in the `## {heading}` table (a row names the command \
             in backticks and the flag): {missing:?}"
        );
    }
}

#[test]
fn every_environment_variable_in_the_sources_is_in_both_configuration_tables() {
    let names = environment_names();
    for expected in ["FLEETWATCH_EPIPHAN_URL", "FLEETWATCH_WRITE_DEVICE_IDS"] {
        assert!(names.contains(expected), "the scan missed {expected}");
    }
    for (file, heading) in [
        ("README.md", "Configuration"),
        ("README.es.md", "Configuración"),
    ] {
        let rows = table_rows(&read(file), heading).join("\n");
        let missing: Vec<&String> = names.iter().filter(|n| !self::names(&rows, n)).collect();
        assert!(
            missing.is_empty(),
            "{file}: variables with no row in the `## {heading}` table: {missing:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Commands

/// Command lines of the ```sh blocks (comments and blank lines left out).
fn shell_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside && line.trim() == "```sh";
            continue;
        }
        let line = line.trim();
        if inside && !line.is_empty() && !line.starts_with('#') {
            out.push(line.to_owned());
        }
    }
    out
}

/// The first ```sh block after the `## ` heading starting with `heading`.
fn first_block_after(text: &str, heading: &str) -> Vec<String> {
    let start = text
        .find(&format!("## {heading}"))
        .unwrap_or_else(|| panic!("no `## {heading}` section"));
    let rest = &text[start..];
    let block = rest.find("```sh").expect("a ```sh block");
    let body = &rest[block + 5..];
    let end = body.find("```").expect("the block ends");
    shell_lines(&format!("```sh{}```", &body[..end]))
}

/// `--locked` only forbids updating Cargo.lock; it does not change what runs.
fn normalised(command: &str) -> String {
    command
        .split_whitespace()
        .filter(|w| *w != "--locked")
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_readme_test_command_is_the_one_ci_runs() {
    let ci: Vec<String> = read(".ci/run")
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.starts_with("cargo test"))
        .map(normalised)
        .collect();
    assert_eq!(ci.len(), 1, ".ci/run should run one test command: {ci:?}");
    for (file, heading) in [
        ("README.md", "Two commands"),
        ("README.es.md", "Dos órdenes"),
    ] {
        let commands = first_block_after(&read(file), heading);
        assert_eq!(
            commands.len(),
            2,
            "{file}: exactly two set-up commands: {commands:?}"
        );
        assert!(
            commands[0].contains("cargo build") && commands[0].contains("fleetwatch demo"),
            "{file}: command 1 builds and starts the demo: {:?}",
            commands[0]
        );
        assert_eq!(
            normalised(&commands[1]),
            ci[0],
            "{file}: command 2 is what .ci/run runs"
        );
    }
}

/// The text without the `## ` section whose heading starts with `heading` (the benchmark
/// figures are measured on one machine and kept in English only).
fn without_section(text: &str, heading: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            skipping = title.starts_with(heading);
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn both_readmes_give_the_same_commands() {
    let en = shell_lines(&without_section(&read("README.md"), "Performance"));
    let es = shell_lines(&without_section(&read("README.es.md"), "Rendimiento"));
    assert!(en.len() >= 5, "README.md has too few commands: {en:?}");
    assert_eq!(
        en, es,
        "README.md and README.es.md differ in their commands"
    );
}

#[test]
fn the_demo_command_builds_every_binary_the_demo_runs() {
    let commands = first_block_after(&read("README.md"), "Two commands");
    // `--bins` (or naming each) matters: the demo runs the simulator and the executor as
    // separate programs from the folder fleetwatch is in.
    assert!(
        commands[0].contains("--bins")
            || (commands[0].contains("fleetwatch-sim")
                && commands[0].contains("fleetwatch-executor")),
        "{}",
        commands[0]
    );
}

#[test]
fn the_test_command_builds_every_binary_of_the_workspace() {
    // `cargo test --workspace` builds a package's binaries only for that package's own
    // integration tests; the demo's tests and this crate's run other packages' binaries as
    // separate programs, found next to the test executables. So every member with a binary has
    // at least one file under `tests/`.
    let root = workspace_root();
    let mut without = Vec::new();
    for entry in std::fs::read_dir(&root).expect("the workspace root lists") {
        let member = entry.expect("an entry").path();
        let Ok(manifest) = std::fs::read_to_string(member.join("Cargo.toml")) else {
            continue;
        };
        if member.ends_with("fuzz") {
            continue;
        }
        let has_binary = manifest.contains("[[bin]]") || member.join("src/main.rs").is_file();
        let has_tests = std::fs::read_dir(member.join("tests")).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.path().extension().is_some_and(|x| x == "rs"))
        });
        if has_binary && !has_tests {
            without.push(member.display().to_string());
        }
    }
    assert!(
        without.is_empty(),
        "members with a binary but no integration test (cargo test would not build it): {without:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Tests cited by SECURITY and AGENTS

/// `path.rs::test_name` citations in backticks.
fn cited_tests(text: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for piece in text.split('`').skip(1).step_by(2) {
        if let Some((file, test)) = piece.split_once(".rs::")
            && !file.contains(' ')
            && test
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            out.insert((format!("{file}.rs"), test.to_owned()));
        }
    }
    out
}

fn assert_cited_tests_exist(file: &str, cited: &BTreeSet<(String, String)>) {
    assert!(cited.len() >= 10, "{file} cites only {} tests", cited.len());
    let mut missing = Vec::new();
    for (path, test) in cited {
        let text = std::fs::read_to_string(workspace_root().join(path)).unwrap_or_default();
        if !text.contains(&format!("fn {test}(")) {
            missing.push(format!("{path}::{test}"));
        }
    }
    assert!(
        missing.is_empty(),
        "{file} cites tests that do not exist: {missing:?}"
    );
}

#[test]
fn both_security_documents_cite_the_same_tests_and_they_exist() {
    let en = cited_tests(&read("SECURITY.md"));
    let es = cited_tests(&read("SECURITY.es.md"));
    assert_cited_tests_exist("SECURITY.md", &en);
    let files = |set: &BTreeSet<(String, String)>| -> BTreeSet<String> {
        set.iter().map(|(f, _)| f.clone()).collect()
    };
    assert_eq!(
        files(&en),
        files(&es),
        "the two documents name different test files"
    );
    assert_eq!(en, es, "the two documents cite different tests");
}

#[test]
fn the_tests_agents_must_keep_exist() {
    assert_cited_tests_exist("AGENTS.md", &cited_tests(&read("AGENTS.md")));
}

// ---------------------------------------------------------------------------------------------
// The reviewer's reading order

/// The paths a SECURITY document's reading-order section lists, in order.
fn reading_order_in(file: &str, heading: &str) -> Vec<String> {
    let text = read(file);
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("{file} has no {heading:?} section"));
    let section = &text[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|l| {
            let (number, rest) = l.split_once(". `")?;
            number.parse::<usize>().ok()?;
            Some(rest.split('`').next()?.to_owned())
        })
        .collect()
}

#[test]
fn the_reading_order_names_every_file_the_trusted_programs_link_and_both_documents_follow_it() {
    use fleetwatch_e2e::size;
    let root = workspace_root();
    let order: Vec<&str> = size::READING_ORDER.iter().map(|(p, _)| *p).collect();
    let linked: Vec<String> = size::linked_lines(&root)
        .expect("the executor's sources")
        .into_iter()
        .chain(size::confirm_lines(&root).expect("the confirm page's sources"))
        .map(|f| f.path)
        .filter(|p| p.ends_with(".rs"))
        .collect();
    let missing: Vec<&String> = linked
        .iter()
        .filter(|p| !order.contains(&p.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "linked files missing from size::READING_ORDER: {missing:?}"
    );
    for path in &order {
        assert!(
            root.join(path).is_file(),
            "{path} is in the reading order but not on disk"
        );
    }
    let unique: BTreeSet<&&str> = order.iter().collect();
    assert_eq!(unique.len(), order.len(), "a file is listed twice");
    for (file, heading) in [
        (
            "SECURITY.md",
            "## Reviewing the executor and the confirm page",
        ),
        (
            "SECURITY.es.md",
            "## Revisar el ejecutor y la página de confirmación",
        ),
    ] {
        assert_eq!(reading_order_in(file, heading), order, "{file}");
    }
}

#[test]
fn the_test_variables_tables_say_what_ci_really_sets() {
    let ci = read(".ci/run");
    // `export NAME="${NAME:-V}"` or `export NAME=V`: the value `.ci/run` runs the tests with.
    let set_by_ci = |name: &str| -> Option<String> {
        ci.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(&format!("export {name}="))?;
            let rest = rest.trim_matches('"');
            Some(
                rest.strip_prefix(&format!("${{{name}:-"))
                    .and_then(|r| r.strip_suffix('}'))
                    .unwrap_or(rest)
                    .to_owned(),
            )
        })
    };
    for (file, phrase) in [
        ("README.md", "in `.ci/run`"),
        ("README.es.md", "en `.ci/run`"),
    ] {
        let text = read(file);
        let mut seen = 0;
        for row in text.lines().filter(|l| l.starts_with("| `FLEETWATCH_")) {
            let cells: Vec<&str> = row.split(" | ").collect();
            let name = cells[0].trim_start_matches("| ").trim_matches('`');
            let default = cells.last().copied().unwrap_or_default();
            let Some(at) = default.find(phrase) else {
                continue;
            };
            seen += 1;
            let said = default[..at]
                .rsplit('`')
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            assert_eq!(
                Some(said.clone()),
                set_by_ci(name),
                "{file}: {name} is said to be `{said}` in .ci/run"
            );
        }
        assert!(seen >= 2, "{file}: no row says what .ci/run sets");
    }
}
