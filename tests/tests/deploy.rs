//! deploy/: the systemd units pass `systemd-analyze verify`, each service scores an exposure of
//! at most 1.5, the executor's view of peer uids stays real, the confirm page serves on the
//! loopback sockets its socket unit passes and nothing else, and the install script is
//! shellcheck-clean,
//! complete, idempotent and never overwrites keys or configuration. The script only ever runs
//! against a throwaway root here, with the commands that would touch the real system replaced by
//! canaries that fail the test if called.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ed25519_dalek::SigningKey;
use fleetwatch_e2e::{executor_binary, workspace_root};
use fleetwatch_protocol::claims::{KeyId, key_line};

/// The three services.
const SERVICES: [&str; 3] = [
    "fleetwatch.service",
    "fleetwatch-executor.service",
    "fleetwatch-confirm.service",
];

/// Every unit shipped: the services and the confirm page's sockets.
const UNITS: [&str; 4] = [
    "fleetwatch.service",
    "fleetwatch-executor.service",
    "fleetwatch-confirm.service",
    "fleetwatch-confirm.socket",
];

/// The two services that reach Epiphan (and so have network, state and sign-ins).
const NETWORKED: [&str; 2] = ["fleetwatch.service", "fleetwatch-executor.service"];

/// Commands that change the real system. In a throwaway-root install none may run.
const CANARIES: [&str; 8] = [
    "systemctl",
    "systemd-tmpfiles",
    "runuser",
    "useradd",
    "groupadd",
    "usermod",
    "chown",
    "chgrp",
];

fn deploy_dir() -> PathBuf {
    workspace_root().join("deploy")
}

/// The path of a required system tool. A missing tool fails the test: a skipped check would
/// let a broken unit or script through unnoticed. `.ci/run` installs both.
fn tool(name: &str, package: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => path,
        None => {
            let ci = std::env::var("FLEETWATCH_REQUIRE_TOOLS").as_deref() == Ok("1");
            panic!(
                "{name} is not installed{}; install it with \
                 `apt-get install --no-install-recommends {package}` (.ci/run does this)",
                if ci {
                    " (FLEETWATCH_REQUIRE_TOOLS=1)"
                } else {
                    ""
                }
            )
        }
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn unit_text(name: &str) -> String {
    std::fs::read_to_string(deploy_dir().join(name)).unwrap()
}

/// `Key=value` pairs of a unit, in order, without comments (repeated keys stay repeated).
fn directives(unit: &str) -> Vec<(String, String)> {
    unit.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .filter(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn values<'a>(d: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    d.iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

fn one<'a>(d: &'a [(String, String)], key: &str) -> &'a str {
    let v = values(d, key);
    assert_eq!(v.len(), 1, "{key}= should appear exactly once, found {v:?}");
    v[0]
}

/// Copies of the units whose ExecStart points at stub executables in `dir`, because
/// `systemd-analyze verify` refuses a unit whose binary does not exist.
fn units_with_stub_binaries(dir: &Path) -> Vec<PathBuf> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["fleetwatch", "fleetwatch-executor", "fleetwatch-confirm"] {
        let path = bin.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    UNITS
        .iter()
        .map(|name| {
            let rewritten =
                unit_text(name).replace("/usr/local/bin/", &format!("{}/", bin.display()));
            let path = dir.join(name);
            std::fs::write(&path, rewritten).unwrap();
            path
        })
        .collect()
}

fn verify(units: &[PathBuf]) -> Output {
    let analyze = tool("systemd-analyze", "systemd");
    run(Command::new(analyze)
        .args(["verify", "--man=no", "--generators=no"])
        .args(units))
}

#[test]
fn every_unit_verifies_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let units = units_with_stub_binaries(dir.path());
    let out = verify(&units);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "verify failed:\n{stderr}");
    // verify exits 0 on an unknown or misspelled setting and only warns, so any line about
    // these units is a failure (lines about the host's own units are not ours to judge).
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("fleetwatch") || l.contains(&dir.path().display().to_string()))
        .collect();
    assert!(ours.is_empty(), "verify warned about the units:\n{stderr}");
}

#[test]
fn verify_reports_a_misspelled_hardening_setting() {
    // Proves the check above can fail: a typo silently drops a protection, and only the
    // warning shows it.
    let dir = tempfile::tempdir().unwrap();
    let units = units_with_stub_binaries(dir.path());
    let broken = std::fs::read_to_string(&units[1])
        .unwrap()
        .replace("ProtectClock=yes", "ProtectClok=yes");
    std::fs::write(&units[1], broken).unwrap();
    let out = verify(&units[1..]);
    assert!(
        text(&out.stderr).contains("ProtectClok"),
        "verify did not report the typo: {}",
        text(&out.stderr)
    );
}

/// The overall exposure, whether the threshold of 1.5 held (the exit status), and the report.
fn exposure(unit: &Path) -> (f64, bool, String) {
    let analyze = tool("systemd-analyze", "systemd");
    let out = run(Command::new(analyze)
        .args(["security", "--offline=true", "--threshold=15", "--no-pager"])
        .arg(unit));
    let stdout = text(&out.stdout);
    let report = format!("{stdout}\n{}", text(&out.stderr));
    let line = stdout
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no overall exposure line:\n{report}"));
    let score = line
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("cannot read the score in {line:?}"));
    (score, out.status.success(), report)
}

#[test]
fn every_service_scores_an_exposure_of_at_most_1_5() {
    for name in SERVICES {
        let (score, within, report) = exposure(&deploy_dir().join(name));
        println!("{name}: exposure {score}");
        assert!(score <= 1.5, "{name} scores {score}:\n{report}");
        assert!(within, "--threshold=15 refused {name}:\n{report}");
    }
}

#[test]
fn removing_hardening_raises_the_measured_exposure() {
    // The score parser must see a real number: dropping protections has to push it over.
    let dir = tempfile::tempdir().unwrap();
    let weakened: String = unit_text("fleetwatch-executor.service")
        .lines()
        .filter(|l| {
            ![
                "CapabilityBoundingSet=",
                "SystemCallFilter=",
                "ProtectSystem=",
                "ProtectHome=",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let path = dir.path().join("fleetwatch-executor.service");
    std::fs::write(&path, weakened).unwrap();
    let (score, within, report) = exposure(&path);
    assert!(score > 1.5, "weakened unit still scores {score}:\n{report}");
    assert!(
        !within,
        "--threshold=15 accepted a weakened unit:\n{report}"
    );
}

/// The settings every service must carry, value for value.
const HARDENING: &[(&str, &str)] = &[
    ("Type", "exec"),
    ("NoNewPrivileges", "yes"),
    ("ProtectSystem", "strict"),
    ("ProtectHome", "yes"),
    ("PrivateTmp", "yes"),
    ("PrivateDevices", "yes"),
    ("DevicePolicy", "closed"),
    ("ProtectKernelTunables", "yes"),
    ("ProtectKernelModules", "yes"),
    ("ProtectKernelLogs", "yes"),
    ("ProtectControlGroups", "yes"),
    ("ProtectClock", "yes"),
    ("ProtectHostname", "yes"),
    ("ProtectProc", "invisible"),
    ("RestrictNamespaces", "yes"),
    ("RestrictRealtime", "yes"),
    ("RestrictSUIDSGID", "yes"),
    ("LockPersonality", "yes"),
    ("MemoryDenyWriteExecute", "yes"),
    ("SystemCallArchitectures", "native"),
    ("SystemCallErrorNumber", "EPERM"),
    ("CapabilityBoundingSet", ""),
    ("AmbientCapabilities", ""),
    ("KeyringMode", "private"),
    ("RemoveIPC", "yes"),
    ("UMask", "0077"),
    ("Restart", "on-failure"),
    ("PrivateIPC", "yes"),
    ("PrivateMounts", "yes"),
];

/// And the two that reach Epiphan, in addition.
const NETWORKED_HARDENING: &[(&str, &str)] = &[
    ("StateDirectoryMode", "0700"),
    ("RuntimeDirectoryMode", "0750"),
    ("RestartPreventExitStatus", "78"),
    ("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"),
];

#[test]
fn every_service_carries_the_full_hardening_set() {
    for name in SERVICES {
        let d = directives(&unit_text(name));
        for (key, want) in HARDENING {
            assert_eq!(one(&d, key), *want, "{name}: {key}=");
        }
        // /proc holds only processes, except for the executor, which reads /proc/net/tcp{,6}
        // at each approval with passkeys (who holds the confirm origin's port).
        if name == "fleetwatch-executor.service" {
            assert!(
                values(&d, "ProcSubset").is_empty(),
                "{name}: ProcSubset hides /proc/net"
            );
        } else {
            assert_eq!(one(&d, "ProcSubset"), "pid", "{name}: ProcSubset=");
        }
        let filters = values(&d, "SystemCallFilter");
        assert!(filters.contains(&"@system-service"), "{name}: {filters:?}");
        let denied = filters
            .iter()
            .find(|f| f.starts_with('~'))
            .unwrap_or_else(|| panic!("{name}: no deny list in {filters:?}"));
        for group in ["@privileged", "@resources"] {
            assert!(denied.contains(group), "{name}: {group} not denied");
        }
    }
    for name in NETWORKED {
        let d = directives(&unit_text(name));
        for (key, want) in NETWORKED_HARDENING {
            assert_eq!(one(&d, key), *want, "{name}: {key}=");
        }
        assert!(
            values(&d, "IPAddressAllow").is_empty() && values(&d, "IPAddressDeny").is_empty(),
            "{name}: an IP allowlist would break HTTPS to Epiphan"
        );
    }
}

#[test]
fn the_confirm_page_runs_as_nobody_in_particular_with_loopback_sockets_only() {
    let service = directives(&unit_text("fleetwatch-confirm.service"));
    assert_eq!(
        one(&service, "ExecStart"),
        "/usr/local/bin/fleetwatch-confirm serve --page-origin http://localhost:8767 \
         --policy /etc/fleetwatch/tool_policy.yaml"
    );
    // Nothing it keeps, so nobody it needs to be: a user made for each start.
    assert_eq!(one(&service, "DynamicUser"), "yes");
    assert!(values(&service, "User").is_empty() && values(&service, "Group").is_empty());
    // No network of its own and no socket of any kind: only what the socket unit passes.
    assert_eq!(one(&service, "PrivateNetwork"), "yes");
    assert_eq!(one(&service, "RestrictAddressFamilies"), "none");
    assert_eq!(one(&service, "IPAddressDeny"), "any");
    assert_eq!(one(&service, "IPAddressAllow"), "localhost");
    assert_eq!(one(&service, "PrivateUsers"), "yes");
    // Nothing writable, no secret handed in.
    for key in [
        "StateDirectory",
        "RuntimeDirectory",
        "CacheDirectory",
        "LogsDirectory",
        "ReadWritePaths",
        "LoadCredential",
        "EnvironmentFile",
        "SupplementaryGroups",
    ] {
        assert!(
            values(&service, key).is_empty(),
            "{key}= in the confirm unit"
        );
    }
    assert_eq!(one(&service, "Requires"), "fleetwatch-confirm.socket");

    let socket = directives(&unit_text("fleetwatch-confirm.socket"));
    assert_eq!(
        values(&socket, "ListenStream"),
        ["127.0.0.1:8768", "[::1]:8768"]
    );
    assert_eq!(one(&socket, "BindIPv6Only"), "ipv6-only");
    assert_eq!(one(&socket, "Accept"), "no");
    assert_eq!(one(&socket, "IPAddressDeny"), "any");
    assert_eq!(one(&socket, "IPAddressAllow"), "localhost");
    assert_eq!(one(&socket, "WantedBy"), "sockets.target");
}

/// Whether this host has an IPv6 loopback to bind.
fn host_has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

/// A port nothing listens on at the moment.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A port held for the whole test run, so that binding it fails.
static TAKEN: std::sync::LazyLock<(std::net::TcpListener, u16)> = std::sync::LazyLock::new(|| {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
});

/// `fleetwatch-confirm serve` started as systemd starts it from the socket unit: the unit's own
/// `ListenStream=` addresses (on another port), passed by `systemd-socket-activate`.
fn socket_activated(listen: &[String]) -> std::process::Child {
    let activate = tool("systemd-socket-activate", "systemd");
    let mut cmd = Command::new(activate);
    for address in listen {
        cmd.arg("-l").arg(address);
    }
    cmd.arg(fleetwatch_e2e::binary(
        "fleetwatch-confirm",
        "fleetwatch-confirm",
    ))
    .args(["serve", "--policy"])
    .arg(workspace_root().join("tool_policy.yaml"))
    // A port that is taken: the page must not try to bind it when systemd passed sockets.
    .args(["--port", &TAKEN.1.to_string()])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("systemd-socket-activate starts")
}

/// A GET of `/` at `address` with the page's own `Host`: the whole answer, if one came.
fn get_page(address: &str, port: u16) -> Option<String> {
    use std::io::{Read, Write};
    for _ in 0..100 {
        let Ok(mut stream) = std::net::TcpStream::connect(address) else {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        };
        let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
        let _ = write!(
            stream,
            "GET / HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"
        );
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        return (!answer.is_empty()).then_some(answer);
    }
    None
}

#[test]
fn the_confirm_page_answers_on_the_sockets_the_unit_passes_it() {
    let port = free_port();
    let listen: Vec<String> = values(
        &directives(&unit_text("fleetwatch-confirm.socket")),
        "ListenStream",
    )
    .into_iter()
    .filter(|a| host_has_ipv6_loopback() || !a.starts_with('['))
    .map(|a| a.replace(":8768", &format!(":{port}")))
    .collect();
    let mut child = socket_activated(&listen);
    let mut answers = Vec::new();
    for address in &listen {
        answers.push((address.clone(), get_page(address, port)));
    }
    let _ = child.kill();
    let output = child.wait_with_output().expect("waits");
    let stderr = text(&output.stderr);
    for (address, answer) in answers {
        let answer = answer.unwrap_or_else(|| panic!("nothing answered at {address}:\n{stderr}"));
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("<main id=\"confirm\">"),
            "{address}: {answer}"
        );
    }
    assert!(
        stderr.contains(&format!("socket(s) systemd passed (port {port})")),
        "{stderr}"
    );
}

#[test]
fn the_confirm_page_refuses_a_socket_on_another_address() {
    let port = free_port();
    let mut child = socket_activated(&[format!("0.0.0.0:{port}")]);
    // systemd-socket-activate starts the program on the first connection.
    let answer = get_page(&format!("127.0.0.1:{port}"), port);
    let status = child.wait().expect("waits");
    let mut stderr = String::new();
    use std::io::Read as _;
    let _ = child
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    assert!(answer.is_none(), "it answered: {answer:?}");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("loopback addresses only"), "{stderr}");
}

#[test]
fn executor_unit_keeps_peer_uids_real_and_holds_no_capability() {
    let d = directives(&unit_text("fleetwatch-executor.service"));
    // In a private user namespace SO_PEERCRED reports every foreign uid as the overflow uid,
    // so the assistant could no longer be told apart from anyone else.
    assert!(
        values(&d, "PrivateUsers").is_empty(),
        "the executor unit must not set PrivateUsers="
    );
    assert!(
        values(&d, "DynamicUser").is_empty(),
        "a dynamic user would lose the token slot's owner between restarts"
    );
    for key in ["AmbientCapabilities", "CapabilityBoundingSet"] {
        let v = values(&d, key);
        assert!(
            !v.is_empty() && v.iter().all(|v| v.is_empty()),
            "{key}={v:?}"
        );
    }
    assert_eq!(
        one(&d, "ExecStart"),
        "/usr/local/bin/fleetwatch-executor serve --config /etc/fleetwatch/executor.yaml"
    );
    assert_eq!(one(&d, "User"), "fleetwatch-exec");
    assert_eq!(one(&d, "Group"), "fleetwatch-sock");
    // executor.yaml and approvers.pub are root:fleetwatch-exec 0640; with Group= set the
    // user's own group is not added by itself.
    assert_eq!(one(&d, "SupplementaryGroups"), "fleetwatch-exec");
    assert_eq!(one(&d, "RuntimeDirectory"), "fleetwatch-executor");
    assert_eq!(one(&d, "StateDirectory"), "fleetwatch-executor");
    assert!(values(&d, "LoadCredential").is_empty());
}

#[test]
fn assistant_unit_reaches_the_socket_and_gets_its_key_as_a_credential() {
    let d = directives(&unit_text("fleetwatch.service"));
    assert_eq!(one(&d, "ExecStart"), "/usr/local/bin/fleetwatch serve");
    assert_eq!(one(&d, "User"), "fleetwatch");
    assert_eq!(one(&d, "Group"), "fleetwatch");
    assert_eq!(one(&d, "SupplementaryGroups"), "fleetwatch-sock");
    assert_eq!(one(&d, "StateDirectory"), "fleetwatch");
    assert!(values(&d, "PrivateUsers").is_empty());
    // It may bind the approval page's port and nothing else: never the confirm origin's.
    assert_eq!(one(&d, "SocketBindAllow"), "tcp:8767");
    assert_eq!(one(&d, "SocketBindDeny"), "any");
    assert_eq!(
        one(&d, "LoadCredential"),
        "anthropic-api-key:/etc/fleetwatch/anthropic-api-key"
    );
    let env = values(&d, "Environment");
    assert!(
        env.contains(&"FLEETWATCH_ANTHROPIC_API_KEY_FILE=%d/anthropic-api-key"),
        "{env:?}"
    );
    // The key itself must never sit in the unit.
    assert!(
        env.iter()
            .all(|e| !e.starts_with("FLEETWATCH_ANTHROPIC_API_KEY="))
    );
    assert!(env.contains(&"FLEETWATCH_EXECUTOR_SOCKET=/run/fleetwatch-executor/executor.sock"));
}

#[test]
fn install_script_passes_shellcheck() {
    let shellcheck = tool("shellcheck", "shellcheck");
    let out = run(Command::new(shellcheck)
        .arg("--shell=bash")
        .arg(deploy_dir().join("install.sh")));
    assert!(
        out.status.success(),
        "shellcheck:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let mode = std::fs::metadata(deploy_dir().join("install.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert!(mode & 0o111 != 0, "install.sh is not executable");
}

/// A throwaway install: stub binaries, canaries for system commands, a root folder.
struct Sandbox {
    dir: tempfile::TempDir,
    key: SigningKey,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[42; 32]);
        let sandbox = Sandbox { dir, key };
        let bin = sandbox.bin();
        std::fs::create_dir_all(&bin).unwrap();
        // `keys show` makes the signing key on first use inside the state folder it is given,
        // and prints a chatty line before the key line as a real CLI might.
        let line = key_line(&sandbox.key.verifying_key(), "fleetwatch@test");
        let root = sandbox.root();
        let fleetwatch = format!(
            "#!/bin/sh\nset -eu\n\
             [ \"$1 $2\" = 'keys show' ] || {{ echo \"unexpected: $*\" >&2; exit 2; }}\n\
             case \"$FLEETWATCH_STATE_DIR\" in '{root}'/*) ;; \
             *) echo \"state folder outside the root: $FLEETWATCH_STATE_DIR\" >&2; exit 3;; esac\n\
             k=\"$FLEETWATCH_STATE_DIR/approval-signing.key\"\n\
             [ -e \"$k\" ] || (umask 077; printf seed > \"$k\")\n\
             echo 'Install this line in the executor key file:'\n\
             echo '{line}'\n",
            root = root.display()
        );
        write_exec(&bin.join("fleetwatch"), &fleetwatch);
        write_exec(&bin.join("fleetwatch-executor"), "#!/bin/sh\nexit 0\n");
        write_exec(&bin.join("fleetwatch-confirm"), "#!/bin/sh\nexit 0\n");
        let canaries = sandbox.canaries();
        std::fs::create_dir_all(&canaries).unwrap();
        for name in CANARIES {
            let log = sandbox.canary_log();
            write_exec(
                &canaries.join(name),
                &format!(
                    "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexit 1\n",
                    log.display()
                ),
            );
        }
        sandbox
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }
    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }
    fn canaries(&self) -> PathBuf {
        self.dir.path().join("canaries")
    }
    fn canary_log(&self) -> PathBuf {
        self.dir.path().join("canaries.log")
    }
    fn etc(&self, name: &str) -> PathBuf {
        self.root().join("etc/fleetwatch").join(name)
    }

    fn install(&self, extra: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.canaries().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = run(Command::new(deploy_dir().join("install.sh"))
            .arg("--root")
            .arg(self.root())
            .arg("--bin-dir")
            .arg(self.bin())
            .args(extra)
            .env_clear()
            .env("PATH", path)
            .current_dir(self.dir.path()));
        let called = std::fs::read_to_string(self.canary_log()).unwrap_or_default();
        assert!(
            called.is_empty(),
            "a throwaway-root install ran system commands:\n{called}"
        );
        out
    }

    fn install_ok(&self, extra: &[&str]) -> String {
        let out = self.install(extra);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "install.sh failed:\n{stdout}\n{}",
            text(&out.stderr)
        );
        stdout
    }

    /// A stub user's or group's id from the root's passwd-style files.
    fn id_of(&self, file: &str, name: &str) -> u32 {
        let text = std::fs::read_to_string(self.root().join("etc").join(file)).unwrap();
        text.lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f[0] == name)
            .and_then(|f| f[2].parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from {file}:\n{text}"))
    }

    fn members(&self, group: &str) -> Vec<String> {
        let text = std::fs::read_to_string(self.root().join("etc/group")).unwrap();
        text.lines()
            .map(|l| l.split(':').map(str::to_string).collect::<Vec<_>>())
            .find(|f| f[0] == group)
            .map(|f| f[3].split(',').map(str::to_string).collect())
            .unwrap_or_default()
    }
}

fn write_exec(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every path under `root` with its type, permission bits and (for files) content.
fn listing(root: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                todo.push(path);
                out.insert(rel, ("dir".into(), mode, Vec::new()));
            } else if meta.is_file() {
                out.insert(rel, ("file".into(), mode, std::fs::read(&path).unwrap()));
            } else {
                out.insert(rel, ("other".into(), mode, Vec::new()));
            }
        }
    }
    out
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn install_into_a_throwaway_root_is_complete_and_a_second_run_changes_nothing() {
    let s = Sandbox::new();
    let first = s.install_ok(&[]);
    assert!(first.contains("change(s)"), "{first}");

    let root = s.root();
    let expected: &[(&str, u32)] = &[
        ("usr/local/bin/fleetwatch", 0o755),
        ("usr/local/bin/fleetwatch-executor", 0o755),
        ("usr/local/bin/fleetwatch-confirm", 0o755),
        ("etc/systemd/system/fleetwatch.service", 0o644),
        ("etc/systemd/system/fleetwatch-executor.service", 0o644),
        ("etc/systemd/system/fleetwatch-confirm.service", 0o644),
        ("etc/systemd/system/fleetwatch-confirm.socket", 0o644),
        ("etc/tmpfiles.d/fleetwatch.conf", 0o644),
        ("etc/fleetwatch", 0o755),
        ("etc/fleetwatch/tool_policy.yaml", 0o644),
        ("etc/fleetwatch/executor.yaml", 0o640),
        ("etc/fleetwatch/approvers.pub", 0o640),
        ("etc/fleetwatch/fleetwatch.env", 0o644),
        ("etc/fleetwatch/anthropic-api-key", 0o600),
        ("var/lib/fleetwatch", 0o700),
        ("var/lib/fleetwatch-executor", 0o700),
        ("var/lib/fleetwatch/approval-signing.key", 0o600),
    ];
    for (rel, want) in expected {
        assert_eq!(
            mode(&root.join(rel)),
            *want,
            "{rel}: mode {:o}",
            mode(&root.join(rel))
        );
    }
    // Shipped files are copies of the checkout's, byte for byte.
    for (src, dest) in [
        (
            "deploy/fleetwatch.service",
            "etc/systemd/system/fleetwatch.service",
        ),
        (
            "deploy/fleetwatch-executor.service",
            "etc/systemd/system/fleetwatch-executor.service",
        ),
        (
            "deploy/fleetwatch-confirm.service",
            "etc/systemd/system/fleetwatch-confirm.service",
        ),
        (
            "deploy/fleetwatch.tmpfiles",
            "etc/tmpfiles.d/fleetwatch.conf",
        ),
        ("tool_policy.yaml", "etc/fleetwatch/tool_policy.yaml"),
    ] {
        assert_eq!(
            std::fs::read(workspace_root().join(src)).unwrap(),
            std::fs::read(root.join(dest)).unwrap(),
            "{dest}"
        );
    }
    // Nothing under the configuration folder may be changed by anyone but its owner.
    for (path, (_, m, _)) in listing(&root.join("etc/fleetwatch")) {
        assert_eq!(m & 0o022, 0, "{} is group/world-writable", path.display());
    }
    assert_eq!(
        std::fs::read(s.etc("anthropic-api-key")).unwrap(),
        b"",
        "a fresh key file is empty (no model)"
    );

    // Users: two system users and the socket group with both in it.
    let uid = s.id_of("passwd", "fleetwatch");
    s.id_of("passwd", "fleetwatch-exec");
    s.id_of("group", "fleetwatch-sock");
    let mut members = s.members("fleetwatch-sock");
    members.sort();
    assert_eq!(members, ["fleetwatch", "fleetwatch-exec"]);
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .all(|l| l.ends_with("nologin") || l.ends_with("/bin/false")),
        "{passwd}"
    );

    // The executor serves exactly the assistant's uid and trusts exactly its key.
    let config = std::fs::read_to_string(s.etc("executor.yaml")).unwrap();
    assert!(
        config
            .lines()
            .any(|l| l.starts_with(&format!("allowed_uids: [{uid}]"))),
        "{config}"
    );
    let line = key_line(&s.key.verifying_key(), "fleetwatch@test");
    assert_eq!(
        std::fs::read_to_string(s.etc("approvers.pub")).unwrap(),
        format!("{line}\n")
    );
    // Passkey assertions are accepted from the confirm page's origin only, never the
    // assistant's page.
    assert!(
        config
            .lines()
            .any(|l| l == "  origins: [\"http://localhost:8768\"]"),
        "{config}"
    );

    let before = listing(&root);
    let second = s.install_ok(&[]);
    assert!(second.contains("0 change(s)"), "{second}");
    assert!(!second.contains("changed:"), "{second}");
    assert!(before == listing(&root), "a second run changed the root");
}

#[test]
fn the_confirm_units_take_their_ports_from_the_site_settings() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.etc("")).unwrap();
    std::fs::write(
        s.etc("fleetwatch.env"),
        "FLEETWATCH_APPROVE_PORT=9100\nFLEETWATCH_CONFIRM_ORIGIN=http://localhost:9101\n",
    )
    .unwrap();
    s.install_ok(&[]);
    let units = s.root().join("etc/systemd/system");
    let socket =
        directives(&std::fs::read_to_string(units.join("fleetwatch-confirm.socket")).unwrap());
    let listen = values(&socket, "ListenStream");
    assert_eq!(listen[0], "127.0.0.1:9101", "{listen:?}");
    if host_has_ipv6_loopback() {
        assert_eq!(listen, ["127.0.0.1:9101", "[::1]:9101"]);
    } else {
        assert_eq!(listen, ["127.0.0.1:9101"]);
    }
    let service =
        directives(&std::fs::read_to_string(units.join("fleetwatch-confirm.service")).unwrap());
    assert!(
        one(&service, "ExecStart").contains(" --page-origin http://localhost:9100 "),
        "{}",
        one(&service, "ExecStart")
    );
    // The executor accepts assertions from that same confirm page only.
    let config = std::fs::read_to_string(s.etc("executor.yaml")).unwrap();
    assert!(
        config
            .lines()
            .any(|l| l == "  origins: [\"http://localhost:9101\"]"),
        "{config}"
    );

    // A port that is not one is refused before anything is written from it.
    std::fs::write(s.etc("fleetwatch.env"), "FLEETWATCH_APPROVE_PORT=99999\n").unwrap();
    let out = s.install(&[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("99999"), "{}", text(&out.stderr));
}

#[test]
fn existing_configuration_keys_and_other_approvers_are_kept() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.etc("")).unwrap();
    std::fs::set_permissions(s.etc(""), std::fs::Permissions::from_mode(0o755)).unwrap();
    let other = key_line(
        &SigningKey::from_bytes(&[9; 32]).verifying_key(),
        "second-approver",
    );
    // No final newline: the appended line must not be glued onto it.
    std::fs::write(s.etc("approvers.pub"), &other).unwrap();
    std::fs::set_permissions(
        s.etc("approvers.pub"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let config = "allowed_uids: [4242]\napprover_keys: /srv/keys.pub\n";
    std::fs::write(s.etc("executor.yaml"), config).unwrap();
    std::fs::write(s.etc("anthropic-api-key"), "sk-test-not-real").unwrap();
    let state = s.root().join("var/lib/fleetwatch");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(state.join("approval-signing.key"), "existing").unwrap();
    std::fs::set_permissions(
        state.join("approval-signing.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();

    s.install_ok(&[]);
    let ours = key_line(&s.key.verifying_key(), "fleetwatch@test");
    assert_eq!(
        std::fs::read_to_string(s.etc("approvers.pub")).unwrap(),
        format!("{other}\n{ours}\n")
    );
    assert_eq!(mode(&s.etc("approvers.pub")), 0o640);
    assert_eq!(
        std::fs::read_to_string(s.etc("executor.yaml")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(s.etc("anthropic-api-key")).unwrap(),
        "sk-test-not-real"
    );
    assert_eq!(
        std::fs::read_to_string(state.join("approval-signing.key")).unwrap(),
        "existing"
    );

    // A re-run finds both lines and adds neither again.
    let again = s.install_ok(&[]);
    assert!(again.contains("0 change(s)"), "{again}");
    let keys = std::fs::read_to_string(s.etc("approvers.pub")).unwrap();
    assert_eq!(keys.matches(&ours).count(), 1, "{keys}");

    // A policy edited in place is put back, and the edited copy kept for a person to read.
    std::fs::write(s.etc("tool_policy.yaml"), "version: 1\n").unwrap();
    let fixed = s.install_ok(&[]);
    assert!(fixed.contains("1 change(s)"), "{fixed}");
    assert_eq!(
        std::fs::read(s.etc("tool_policy.yaml")).unwrap(),
        std::fs::read(workspace_root().join("tool_policy.yaml")).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(s.etc("tool_policy.yaml.previous")).unwrap(),
        "version: 1\n"
    );
}

#[test]
fn dry_run_and_uninstall_change_nothing() {
    let s = Sandbox::new();
    let out = s.install_ok(&["--dry-run"]);
    assert!(
        out.contains("would: create system user fleetwatch"),
        "{out}"
    );
    assert!(out.contains("would: install"), "{out}");
    assert!(
        !s.root().exists(),
        "a dry run created {}",
        s.root().display()
    );

    s.install_ok(&[]);
    let before = listing(&s.root());
    let dry = s.install_ok(&["--dry-run"]);
    assert!(dry.contains("0 change(s)"), "{dry}");
    let notes = s.install_ok(&["--uninstall"]);
    assert!(notes.contains("systemctl disable --now"), "{notes}");
    assert!(notes.contains("var/lib/fleetwatch-executor"), "{notes}");
    assert!(
        before == listing(&s.root()),
        "dry run or uninstall notes changed the root"
    );
}

#[test]
fn install_script_refuses_missing_binaries_and_unknown_arguments() {
    let s = Sandbox::new();
    std::fs::remove_file(s.bin().join("fleetwatch-executor")).unwrap();
    let out = s.install(&[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("fleetwatch-executor is missing"));
    assert!(!s.root().join("usr/local/bin").exists());
    let out = s.install(&["--frobnicate"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--frobnicate"));
}

#[test]
fn a_second_person_for_disruptive_changes_is_chosen_by_flag_and_is_off_by_default() {
    // Without a terminal and without the flag: one passkey approves; the line stays a comment.
    let s = Sandbox::new();
    let said = s.install_ok(&[]);
    let config = std::fs::read_to_string(s.etc("executor.yaml")).unwrap();
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("  # quorum_disruptive: 2 ")),
        "{config}"
    );
    assert!(
        !config
            .lines()
            .any(|l| l.starts_with("  quorum_disruptive:")),
        "{config}"
    );
    assert!(
        said.contains("one operator's passkey approves any change"),
        "{said}"
    );

    let s = Sandbox::new();
    let said = s.install_ok(&["--second-person", "yes"]);
    let config = std::fs::read_to_string(s.etc("executor.yaml")).unwrap();
    assert!(
        config
            .lines()
            .any(|l| l.starts_with("  quorum_disruptive: 2 ")),
        "{config}"
    );
    assert!(said.contains("needs two operators' passkeys"), "{said}");
    // A re-run keeps the configuration and says the flag does not rewrite it.
    let again = s.install_ok(&["--second-person", "no"]);
    assert!(
        again.contains("applies to a new executor.yaml only"),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(s.etc("executor.yaml")).unwrap(),
        config
    );

    let out = Sandbox::new().install(&["--second-person", "maybe"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--second-person takes yes or no"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_real_executor_reads_the_installed_configuration_and_key_file() {
    let s = Sandbox::new();
    // With the two-person rule on, so its line is read too (an unknown key would be refused).
    s.install_ok(&["--second-person", "yes"]);
    // The installed file names the system's key file; a copy pointing into the root lets the
    // real binary parse both without touching /etc. Unknown keys would be refused.
    let installed = std::fs::read_to_string(s.etc("executor.yaml")).unwrap();
    let system_keys = "approver_keys: /etc/fleetwatch/approvers.pub";
    assert!(installed.contains(system_keys), "{installed}");
    let copy = s.etc("executor-test.yaml");
    std::fs::write(
        &copy,
        installed.replace(
            system_keys,
            &format!("approver_keys: {}", s.etc("approvers.pub").display()),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mut cmd = Command::new(executor_binary());
    cmd.arg("--config").arg(&copy).args(["keys", "list"]);
    for (name, _) in std::env::vars() {
        if name.starts_with("FLEETWATCH_") {
            cmd.env_remove(name);
        }
    }
    let out = run(&mut cmd);
    assert!(
        out.status.success(),
        "executor refused the installed configuration:\n{}",
        text(&out.stderr)
    );
    let id = KeyId::of(&s.key.verifying_key()).to_hex();
    assert_eq!(text(&out.stdout).trim(), format!("ed25519 {id}"));
}

#[test]
fn tmpfiles_rules_restore_modes_and_name_the_right_groups() {
    let s = Sandbox::new();
    s.install_ok(&[]);
    let tmpfiles = tool("systemd-tmpfiles", "systemd");
    // Files made by this test belong to the effective uid; only root can apply the owners.
    let probe = s.dir.path().join("probe");
    std::fs::write(&probe, "").unwrap();
    let root_user = std::fs::metadata(&probe).unwrap().uid() == 0;
    std::fs::set_permissions(
        s.etc("tool_policy.yaml"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let rules = s.root().join("etc/tmpfiles.d/fleetwatch.conf");
    let out = run(Command::new(tmpfiles)
        .arg(format!("--root={}", s.root().display()))
        .arg("--create")
        .arg(&rules));
    let stderr = text(&out.stderr);
    // A rule it cannot parse is reported as `<file>:<line>: …`.
    assert!(
        !stderr.contains("fleetwatch.conf:"),
        "tmpfiles rules rejected:\n{stderr}"
    );
    if !root_user {
        // Without root the owners cannot be applied; parsing is all that can be checked.
        eprintln!("not root: tmpfiles owners and modes were not applied in this run");
        return;
    }
    assert!(out.status.success(), "systemd-tmpfiles failed:\n{stderr}");
    assert_eq!(mode(&s.etc("tool_policy.yaml")), 0o644);
    let exec_gid = s.id_of("group", "fleetwatch-exec");
    for name in ["executor.yaml", "approvers.pub"] {
        let meta = std::fs::metadata(s.etc(name)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, exec_gid), "{name}");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640, "{name}");
    }
    for name in ["tool_policy.yaml", "anthropic-api-key", "fleetwatch.env"] {
        let meta = std::fs::metadata(s.etc(name)).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (0, 0), "{name}");
    }
    assert_eq!(mode(&s.etc("anthropic-api-key")), 0o600);
}

/// An upgraded `executor.yaml` that still trusts another origin (the approval page's, from
/// before the confirm page) stops the install with the one line to change, and is kept as it
/// is; with that line changed the install goes on.
#[test]
fn an_upgraded_configuration_trusting_another_origin_stops_the_install_with_its_line() {
    let s = Sandbox::new();
    s.install_ok(&["--second-person", "no"]);
    let path = s.etc("executor.yaml");
    let config = std::fs::read_to_string(&path).unwrap();
    let old = config.replace(
        "  origins: [\"http://localhost:8768\"]",
        "  origins: [\"http://localhost:8767\"]",
    );
    assert_ne!(
        old, config,
        "the installed configuration names the confirm origin"
    );
    std::fs::write(&path, &old).unwrap();
    let out = s.install(&[]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let said = text(&out.stderr);
    assert!(
        said.contains("origins: [\"http://localhost:8767\"]")
            && said.contains("change that line to '  origins: [\"http://localhost:8768\"]'"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        old,
        "nothing rewritten"
    );
    std::fs::write(&path, &config).unwrap();
    s.install_ok(&[]);
}
