//! The settings the installed service runs with, for `doctor` run by hand: the `Environment=`
//! lines of its unit, the environment file the unit names (which overrides them, as systemd
//! does) and the credentials it loads, with the shell's own variables on top. Each value keeps
//! where it came from, so `doctor` can say it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The installed unit.
pub const UNIT: &str = "/etc/systemd/system/fleetwatch.service";

/// The environment file the unit reads unless it names another.
pub const ENV_FILE: &str = "/etc/fleetwatch/fleetwatch.env";

/// Largest unit or environment file read.
const MAX_FILE: u64 = 256 * 1024;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The environment `doctor` runs in (the service does not see it).
    Shell,
    /// An environment file.
    File(PathBuf),
    /// An `Environment=` line of the unit.
    Unit(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Shell => f.write_str("this shell"),
            Source::File(path) | Source::Unit(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The variables the service would see, and where each came from.
#[derive(Debug, Clone, Default)]
pub struct ServiceEnv {
    vars: BTreeMap<String, (String, Source)>,
    /// What was read, in words (for the `settings` line).
    pub read: Vec<String>,
    /// Shell values the service would not see, or sees otherwise.
    pub shell_only: Vec<String>,
}

impl ServiceEnv {
    /// The unit at `unit` (if it exists), the environment file it names — or `env_file` when
    /// given, which must exist — and `shell` on top.
    pub fn load(
        unit: &Path,
        env_file: Option<&Path>,
        shell: impl IntoIterator<Item = (String, String)>,
    ) -> Result<ServiceEnv, String> {
        let mut env = ServiceEnv::default();
        let mut files: Vec<(PathBuf, bool)> = Vec::new();
        match read(unit)? {
            Some(text) => {
                let parsed = parse_unit(&text);
                for (name, value) in parsed.environment {
                    let value = resolve_credentials(&value, &parsed.credentials);
                    env.set(name, value, Source::Unit(unit.to_path_buf()));
                }
                files = parsed.env_files;
                env.read.push(format!("the unit {}", unit.display()));
            }
            None => env.read.push(format!(
                "no unit at {} (not installed here)",
                unit.display()
            )),
        }
        if let Some(path) = env_file {
            files = vec![(path.to_path_buf(), false)];
        } else if files.is_empty() {
            files.push((PathBuf::from(ENV_FILE), true));
        }
        for (path, optional) in files {
            match read(&path)? {
                Some(text) => {
                    for (name, value) in parse_env_file(&text)
                        .map_err(|(line, why)| format!("{}, line {line}: {why}", path.display()))?
                    {
                        env.set(name, value, Source::File(path.clone()));
                    }
                    env.read.push(path.display().to_string());
                }
                None if optional => env
                    .read
                    .push(format!("no {} (the unit's is optional)", path.display())),
                None => return Err(format!("{}: no such file", path.display())),
            }
        }
        for (name, value) in shell {
            if !name.starts_with("FLEETWATCH_") {
                continue;
            }
            match env.vars.get(&name) {
                Some((theirs, _)) if *theirs == value => continue,
                Some((_, from)) => env
                    .shell_only
                    .push(format!("{name} (the service uses the value from {from})")),
                None => env.shell_only.push(name.clone()),
            }
            env.set(name, value, Source::Shell);
        }
        Ok(env)
    }

    fn set(&mut self, name: String, value: String, source: Source) {
        self.vars.insert(name, (value, source));
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<String> {
        self.vars.get(name).map(|(v, _)| v.clone())
    }

    /// Each `FLEETWATCH_` variable set, with where it came from: `NAME (from …)`.
    pub fn sources(&self) -> Vec<String> {
        self.vars
            .iter()
            .filter(|(name, _)| name.starts_with("FLEETWATCH_"))
            .map(|(name, (_, from))| format!("{name} (from {from})"))
            .collect()
    }
}

/// A file's text, `None` when it does not exist.
fn read(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    match std::fs::File::open(path) {
        Ok(file) => {
            let mut text = String::new();
            file.take(MAX_FILE)
                .read_to_string(&mut text)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Some(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// What a unit says of its environment.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UnitEnv {
    /// `Environment=` assignments, in order.
    pub environment: Vec<(String, String)>,
    /// `EnvironmentFile=` paths, and whether each is optional (`-`).
    pub env_files: Vec<(PathBuf, bool)>,
    /// `LoadCredential=NAME:PATH` pairs.
    pub credentials: Vec<(String, String)>,
}

/// Reads the `[Service]` section's `Environment=`, `EnvironmentFile=` and `LoadCredential=`
/// lines (an empty assignment resets the list, as systemd reads it).
pub fn parse_unit(text: &str) -> UnitEnv {
    let mut out = UnitEnv::default();
    let mut in_service = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_service = line == "[Service]";
            continue;
        }
        if !in_service || line.starts_with(['#', ';']) {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Environment" if value.is_empty() => out.environment.clear(),
            "Environment" => {
                for word in words(value) {
                    if let Some((name, v)) = word.split_once('=') {
                        out.environment.push((name.to_owned(), v.to_owned()));
                    }
                }
            }
            "EnvironmentFile" if value.is_empty() => out.env_files.clear(),
            "EnvironmentFile" => match value.strip_prefix('-') {
                Some(path) => out.env_files.push((PathBuf::from(path), true)),
                None => out.env_files.push((PathBuf::from(value), false)),
            },
            "LoadCredential" => {
                if let Some((name, path)) = value.split_once(':') {
                    out.credentials.push((name.to_owned(), path.to_owned()));
                }
            }
            _ => {}
        }
    }
    out
}

/// Space-separated words, each possibly in double or single quotes.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// `%d/NAME` (the credentials folder systemd makes) as the file the unit loads it from.
fn resolve_credentials(value: &str, credentials: &[(String, String)]) -> String {
    match value.strip_prefix("%d/") {
        Some(name) => credentials
            .iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| value.to_owned(), |(_, path)| path.clone()),
        None => value.to_owned(),
    }
}

/// An environment file as systemd reads one: `NAME=value` lines; blank lines and lines starting
/// with `#` or `;` skipped; a value in double or single quotes loses them; a line ending in `\`
/// goes on on the next. A line that is not an assignment is refused with its number.
pub fn parse_env_file(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut first = 0;
    for (index, raw) in text.lines().enumerate() {
        if pending.is_empty() {
            first = index + 1;
        }
        if let Some(head) = raw.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(raw);
        let line = std::mem::take(&mut pending);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err((first, "not a NAME=value line".into()));
        };
        let name = name.trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err((first, format!("{name:?} is not a variable name")));
        }
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_file_reads_as_systemd_reads_it() {
        let text = "# site\n\nSITE_A=1\n ; old\nSITE_B=\"two words\"\nSITE_C='x'\nSITE_D=a\\\nb\n";
        assert_eq!(
            parse_env_file(text).unwrap(),
            vec![
                ("SITE_A".into(), "1".into()),
                ("SITE_B".into(), "two words".into()),
                ("SITE_C".into(), "x".into()),
                ("SITE_D".into(), "ab".into()),
            ]
        );
        assert_eq!(parse_env_file("A=1\nexport B=2\n").unwrap_err().0, 2);
        assert_eq!(parse_env_file("just words\n").unwrap_err().0, 1);
    }

    #[test]
    fn a_unit_gives_its_environment_files_and_credentials() {
        let unit = "[Unit]\nEnvironment=NOT=this\n[Service]\nEnvironment=A=1 \"B=two words\"\n\
                    Environment=K=%d/key\nEnvironmentFile=-/etc/x.env\nLoadCredential=key:/etc/k\n";
        let parsed = parse_unit(unit);
        assert_eq!(
            parsed.environment,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into()),
                ("K".into(), "%d/key".into())
            ]
        );
        assert_eq!(parsed.env_files, vec![(PathBuf::from("/etc/x.env"), true)]);
        assert_eq!(
            resolve_credentials("%d/key", &parsed.credentials),
            "/etc/k".to_owned()
        );
    }

    #[test]
    fn the_file_overrides_the_unit_and_the_shell_is_said_apart() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("site.env");
        std::fs::write(
            &env,
            "FLEETWATCH_WRITE_TEAM_ID=file\nFLEETWATCH_AI_MODEL=m\n",
        )
        .unwrap();
        let unit = dir.path().join("u.service");
        std::fs::write(
            &unit,
            format!(
                "[Service]\nEnvironment=FLEETWATCH_WRITE_TEAM_ID=unit FLEETWATCH_STATE_DIR=/s\nEnvironmentFile=-{}\n",
                env.display()
            ),
        )
        .unwrap();
        let loaded = ServiceEnv::load(
            &unit,
            None,
            [
                ("FLEETWATCH_AI_MODEL".to_owned(), "other".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned()),
            ],
        )
        .unwrap();
        assert_eq!(
            loaded.get("FLEETWATCH_WRITE_TEAM_ID").as_deref(),
            Some("file")
        );
        assert_eq!(loaded.get("FLEETWATCH_STATE_DIR").as_deref(), Some("/s"));
        assert_eq!(loaded.get("FLEETWATCH_AI_MODEL").as_deref(), Some("other"));
        assert_eq!(loaded.get("PATH"), None);
        assert!(
            loaded.shell_only[0].contains("uses the value from"),
            "{:?}",
            loaded.shell_only
        );
        assert!(
            loaded.sources().contains(&format!(
                "FLEETWATCH_WRITE_TEAM_ID (from {})",
                env.display()
            )),
            "{:?}",
            loaded.sources()
        );
        // A file named on the command line must exist.
        assert!(ServiceEnv::load(&unit, Some(&dir.path().join("none")), []).is_err());
    }
}
