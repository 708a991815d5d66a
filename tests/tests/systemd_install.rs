//! The deployment under a real systemd: a minimal Debian 12 booted in `systemd-nspawn` with
//! systemd as PID 1, `deploy/install.sh` run with the built binaries, the README's deployment
//! steps followed as written against the simulator, and then: every unit active, a person
//! enrolled in a terminal there, both doctors pass as written, an operator asks a question over
//! the chat socket, one change runs end to end (proposed by the model stand-in, approved on the
//! page with the enrolled software passkey, one write) and its receipt verifies as "Prove a
//! change" writes it, the confirm page answers through its socket unit, a unit's address rule
//! is enforced, and a reboot brings everything back.
//!
//! Needs root, `systemd-nspawn` (Debian's systemd-container) and `mmdebstrap`; skipped with a
//! reason without them unless `FLEETWATCH_REQUIRE_SYSTEMD=1` (which `.ci/run` sets where it
//! could install them). The root is built once (about 25 s) into `target/systemd-root/` and
//! copied for each run.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use fleetwatch_e2e::{binary, workspace_root};
use fleetwatch_sim::SimConfig;

/// What the root holds beyond Debian's minimal base.
const PACKAGES: &str = "systemd,systemd-sysv,dbus,iproute2,procps,curl,sudo,ca-certificates";

fn required() -> bool {
    std::env::var("FLEETWATCH_REQUIRE_SYSTEMD").is_ok_and(|v| v == "1")
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// Why this machine cannot run the test, if it cannot.
fn missing() -> Option<String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Some("needs root".into());
    }
    ["systemd-nspawn", "mmdebstrap", "nsenter"]
        .into_iter()
        .find(|tool| !on_path(tool))
        .map(|tool| format!("no {tool} on PATH (apt-get install systemd-container mmdebstrap)"))
}

/// The cached minimal root, built when absent.
fn cached_root() -> Result<PathBuf, String> {
    let cache = workspace_root().join("target/systemd-root");
    // A new package list makes a new root.
    let digest = <sha2::Sha256 as sha2::Digest>::digest(PACKAGES.as_bytes());
    let root = cache.join(format!(
        "bookworm-{}",
        digest
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ));
    if root.join("usr/lib/systemd/systemd").exists() {
        return Ok(root);
    }
    std::fs::create_dir_all(&cache).expect("cache folder");
    let building = cache.join("bookworm.building");
    let _ = std::fs::remove_dir_all(&building);
    let started = Instant::now();
    let out = Command::new("mmdebstrap")
        .args([
            "--variant=minbase",
            &format!("--include={PACKAGES}"),
            "bookworm",
        ])
        .arg(&building)
        .output()
        .expect("mmdebstrap runs");
    if !out.status.success() {
        return Err(format!(
            "mmdebstrap could not build a root: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    std::fs::rename(&building, &root).expect("root in place");
    eprintln!("built the root in {:.0?}", started.elapsed());
    Ok(root)
}

/// A booted container.
struct Machine {
    root: PathBuf,
    nspawn: Option<Child>,
    leader: u32,
    _dir: tempfile::TempDir,
}

impl Machine {
    /// Copies the cached root and puts the build in `/root/src`.
    fn prepare(cached: &std::path::Path) -> Machine {
        let dir = tempfile::tempdir_in(workspace_root().join("target")).expect("work folder");
        let root = dir.path().join("root");
        let copied = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(cached)
            .arg(&root)
            .status()
            .expect("cp");
        assert!(copied.success());
        // A minimal root has no hosts file; without it nothing resolves `localhost`.
        let host = std::fs::read_to_string(root.join("etc/hostname")).unwrap_or_default();
        std::fs::write(
            root.join("etc/hosts"),
            format!(
                "127.0.0.1 localhost\n::1 localhost ip6-localhost\n127.0.1.1 {}\n",
                host.trim()
            ),
        )
        .expect("hosts");
        let src = root.join("root/src");
        std::fs::create_dir_all(src.join("bin")).expect("src");
        for (package, name) in [
            ("fleetwatch", "fleetwatch"),
            ("fleetwatch-executor", "fleetwatch-executor"),
            ("fleetwatch-confirm", "fleetwatch-confirm"),
        ] {
            std::fs::copy(binary(package, name), src.join("bin").join(name)).expect("binary");
        }
        let copied = Command::new("cp")
            .arg("-a")
            .arg(workspace_root().join("deploy"))
            .arg(workspace_root().join("tool_policy.yaml"))
            .arg(workspace_root().join("README.md"))
            .arg(&src)
            .status()
            .expect("cp");
        assert!(copied.success());
        Machine {
            root,
            nspawn: None,
            leader: 0,
            _dir: dir,
        }
    }

    /// Boots it and waits until systemd says it is up; why not, if it does not come up.
    fn boot(&mut self) -> Result<(), String> {
        let log = std::fs::File::create(self.root.with_extension("log")).expect("log");
        let child = Command::new("systemd-nspawn")
            // No systemd on the host to register with; IP and device rules need bpf().
            .args([
                "--register=no",
                "--keep-unit",
                "--system-call-filter=bpf",
                "-q",
            ])
            .arg("-D")
            .arg(&self.root)
            .arg("--boot")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("systemd-nspawn starts");
        let pid = child.id();
        self.nspawn = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        self.leader = loop {
            let children = std::fs::read_dir(format!("/proc/{pid}/task"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
                .flat_map(|c| {
                    c.split_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok())
                        .collect::<Vec<_>>()
                })
                .next();
            // The first child sets the container up and becomes its PID 1: systemd.
            if let Some(leader) = children
                && std::fs::read_to_string(format!("/proc/{leader}/comm"))
                    .is_ok_and(|c| c.trim() == "systemd")
            {
                break leader;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "systemd-nspawn started no systemd: {}",
                    std::fs::read_to_string(self.root.with_extension("log")).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // Until systemd has made its own socket, systemctl cannot reach it.
        let up = loop {
            let up = self.sh("systemctl is-system-running --wait");
            let said = String::from_utf8_lossy(&up.stdout);
            if !(said.trim().is_empty() || said.contains("offline")) || Instant::now() > deadline {
                break up;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let state = String::from_utf8_lossy(&up.stdout);
        if state.contains("running") || state.contains("degraded") {
            Ok(())
        } else {
            Err(format!(
                "systemd did not come up ({state}): {}{}",
                String::from_utf8_lossy(&up.stderr),
                std::fs::read_to_string(self.root.with_extension("log")).unwrap_or_default()
            ))
        }
    }

    /// Runs a shell script inside, as root, in the shell's own working folder /root.
    fn sh(&self, script: &str) -> Output {
        self.command(script)
            .stdin(Stdio::null())
            .output()
            .expect("nsenter runs")
    }

    /// The command that runs `script` inside, as root, for a caller that starts it itself.
    fn command(&self, script: &str) -> Command {
        let mut command = Command::new("nsenter");
        command
            .args(["--target", &self.leader.to_string()])
            .args([
                "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wd",
            ])
            .args(["--", "/bin/bash", "-c"])
            .arg(format!("cd /root && {script}"))
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("HOME", "/root");
        command
    }

    /// [`Machine::sh`], which must succeed; its standard output.
    fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{script}\n{said}\n{}", self.journal());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn journal(&self) -> String {
        let out = self.sh("journalctl --no-pager -n 60 -u 'fleetwatch*'");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Reboots: nspawn ends with the container, and starts it again.
    fn reboot(&mut self) {
        let _ = self.sh("systemctl reboot");
        if let Some(mut child) = self.nspawn.take() {
            let deadline = Instant::now() + Duration::from_secs(60);
            while child.try_wait().ok().flatten().is_none() {
                assert!(Instant::now() < deadline, "the container did not stop");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        self.boot().expect("the container boots again");
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if let Some(mut child) = self.nspawn.take() {
            let _ = self.sh("systemctl poweroff");
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn assert_active(m: &Machine, units: &[&str]) {
    for unit in units {
        let out = m.sh(&format!("systemctl is-active {unit}"));
        assert!(
            out.status.success(),
            "{unit}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            m.journal()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readmes_deployment_runs_under_a_real_systemd() {
    let skip = |why: &str| {
        assert!(!required(), "FLEETWATCH_REQUIRE_SYSTEMD=1 but {why}");
        eprintln!("SKIPPED the_readmes_deployment_runs_under_a_real_systemd: {why}");
    };
    if let Some(why) = missing() {
        return skip(&why);
    }
    let cached = match cached_root() {
        Ok(root) => root,
        Err(why) => return skip(&why),
    };
    let started = Instant::now();
    // Epiphan is the simulator on the host's loopback, which the container shares.
    let sim = fleetwatch_sim::start(SimConfig::demo())
        .await
        .expect("simulator");
    let sandbox = sim.team_devices("sandbox").join(",");
    let url = sim.mcp_url();
    let mut m = Machine::prepare(&cached);
    // A machine that cannot boot a container at all is said, not failed (unless required);
    // once it has booted, everything after is the deployment's to get right.
    if let Err(why) = m.boot() {
        return skip(&why);
    }
    let booted = started.elapsed();

    // Step 1: install with the built binaries.
    m.ok("src/deploy/install.sh --bin-dir /root/src/bin --second-person no");
    // Step 2: the fence, the same in both files; and the simulator as Epiphan, which speaks
    // http on loopback (a real install leaves these at Epiphan's https address).
    m.ok(&format!(
        "printf 'write_device_ids: [{sandbox}]\\n' >> /etc/fleetwatch/executor.yaml && \
         printf 'FLEETWATCH_ALLOW_LOOPBACK_HTTP=1\\nFLEETWATCH_EPIPHAN_URL={url}\\n' >> /etc/fleetwatch/fleetwatch-executor.env && \
         printf 'FLEETWATCH_WRITE_DEVICE_IDS={sandbox}\\nFLEETWATCH_ALLOW_LOOPBACK_HTTP=1\\nFLEETWATCH_EPIPHAN_URL={url}\\n' >> /etc/fleetwatch/fleetwatch.env"
    ));
    // Step 4: the sign-ins, static tokens piped in (the simulator's). Commands run by hand are
    // given the site's environment, as the README says.
    let env = "set -a; . /etc/fleetwatch/fleetwatch.env; . /etc/fleetwatch/fleetwatch-executor.env; set +a;";
    m.ok(&format!(
        "{env} echo normal-token | sudo -E runuser -u fleetwatch -- fleetwatch login && \
         sudo -E runuser -u fleetwatch -- fleetwatch export-devices && \
         sudo install -o fleetwatch-exec -m 0600 /var/lib/fleetwatch/known-devices.json /var/lib/fleetwatch-executor/known-devices.json && \
         echo sandbox-token | sudo -E runuser -u fleetwatch-exec -- fleetwatch-executor login --sandbox --known-devices /var/lib/fleetwatch-executor/known-devices.json"
    ));
    // Step 5, as written.
    m.ok("echo 'autonomy: propose' | sudo runuser -u fleetwatch -- tee /var/lib/fleetwatch/settings.yaml \
          && sudo runuser -u fleetwatch -- fleetwatch grants list \
          && sudo runuser -u fleetwatch -- fleetwatch grants open fleet");
    // Step 6: start; the assistant's doctor as written reads the unit and fleetwatch.env itself.
    m.ok("sudo systemctl enable --now fleetwatch-executor.service fleetwatch.service");
    assert_active(
        &m,
        &[
            "fleetwatch-executor.service",
            "fleetwatch.service",
            "fleetwatch-confirm.socket",
        ],
    );
    let doctor = m.sh("sudo runuser -u fleetwatch -- fleetwatch doctor");
    let said = String::from_utf8_lossy(&doctor.stdout);
    // Nobody is enrolled yet, so "approved by a person" fails as the README says it does;
    // everything else the service runs with passes.
    for line in said.lines().filter(|l| l.starts_with("FAIL")) {
        assert!(line.contains("approved by a person"), "{said}");
    }
    assert!(said.contains("fence:"), "{said}");
    assert!(!said.contains("FAIL fence"), "{said}");

    // Step 7: a person enrolled in a terminal of the machine (the one-shot page answered by a
    // software passkey, as a browser there would), installed with the README's pipe.
    let ana = fleetwatch_e2e::authenticator::SoftPasskey::es256(61);
    let enrolment = fleetwatch_e2e::enrol::from_command(m.command(
        "fleetwatch-confirm enrol --person ana --name 'Ana Gómez' --port 8769 \
         | sudo fleetwatch-executor approvers add -",
    ));
    let html = fleetwatch_e2e::enrol::page(&enrolment).await;
    let body = fleetwatch_e2e::enrol::answer(&html, &enrolment.origin(), &ana, &ana);
    let (status, reply) = fleetwatch_e2e::enrol::post(&enrolment, &body).await;
    assert_eq!(status, 200, "{reply}");
    let (ok, added, err) = enrolment.finish();
    assert!(ok, "{added}{err}");
    assert!(added.contains("fingerprint:"), "{added}{err}");
    let listed = m.ok("sudo fleetwatch-executor approvers list");
    assert!(listed.contains("person ana  Ana Gómez"), "{listed}");

    // Step 6's checks again, as written: with a person enrolled both pass.
    let doctor = m.sh("sudo runuser -u fleetwatch -- fleetwatch doctor");
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(doctor.status.success(), "{said}");
    let exec_doctor = m.sh(&format!(
        "{env} sudo -E runuser -u fleetwatch-exec -- fleetwatch-executor doctor"
    ));
    let exec_said = String::from_utf8_lossy(&exec_doctor.stdout).into_owned();
    assert!(exec_doctor.status.success(), "{exec_said}");
    assert!(
        exec_said.contains("OK   confirm origin held"),
        "{exec_said}"
    );
    eprintln!(
        "--- fleetwatch-executor doctor\n{exec_said}--- fleetwatch doctor\n{said}--- approvers list\n{listed}---"
    );
    // Step 3 and one change end to end: the simulator's offline stand-in as the model (its key
    // in the root-owned file the unit passes as a credential), a question that proposes, the
    // page approving it with the enrolled passkey, and one write.
    let model = fleetwatch_sim::model::start_offline()
        .await
        .expect("model stand-in");
    let room = sim.team_devices("sandbox")[0].clone();
    assert!(sim.set_recording("sandbox", &format!("{room}-1"), false));
    m.ok(&format!(
        "printf 'test-key' > /etc/fleetwatch/anthropic-api-key && \
         printf 'FLEETWATCH_ANTHROPIC_BASE_URL={}\\n' >> /etc/fleetwatch/fleetwatch.env && \
         sudo runuser -u fleetwatch -- fleetwatch grants open recording && \
         useradd -m -G fleetwatch bob && \
         printf 'autonomy: propose\\noperator_uids: [%s]\\n' \"$(id -u bob)\" | sudo runuser -u fleetwatch -- tee /var/lib/fleetwatch/settings.yaml && \
         systemctl restart fleetwatch.service",
        model.url()
    ));
    let secret_file = m.root.join("var/lib/fleetwatch/approval-page.secret");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !secret_file.exists() || std::net::TcpStream::connect(("127.0.0.1", 8767)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the page did not start\n{}",
            m.journal()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let said = m.ok("sudo runuser -u bob -- fleetwatch ask 'start recording in Test Room A'");
    assert!(said.contains("#1"), "a proposal waits: {said}");
    let secret = std::fs::read_to_string(&secret_file).expect("secret");
    let session =
        fleetwatch_e2e::page::Session::sign_in("http://127.0.0.1:8767", secret.trim()).await;
    let mut ana = ana;
    let body = session.approve_form_with(&mut ana).await;
    let (status, page) = session.post_text("/approve", &body).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(sim.writes().len(), 1, "one write: {page}");

    // "Prove a change", as written: the receipt and the key as root, checked with public
    // inputs alone.
    let verified = m.sh(
        "sudo fleetwatch-executor receipt 1 > receipt-1.json && \
         KEY=$(sudo fleetwatch-executor receipt --key) && \
         cp /etc/fleetwatch/approvers.pub /etc/fleetwatch/tool_policy.yaml . && \
         fleetwatch-confirm verify receipt-1.json --receipt-key \"$KEY\" --approvers approvers.pub --policy tool_policy.yaml",
    );
    let said = String::from_utf8_lossy(&verified.stdout);
    assert!(
        verified.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    assert!(said.contains("Verified"), "{said}");

    // The commands the README gives as root work as written.
    m.ok(&format!(
        "{env} sudo -E fleetwatch-executor receipt --key && sudo -E fleetwatch-executor approvers list | head -1"
    ));

    // An operator asks over the chat socket.
    m.ok("useradd -m -G fleetwatch alice && \
          printf 'autonomy: propose\\noperator_uids: [%s]\\n' \"$(id -u alice)\" | sudo runuser -u fleetwatch -- tee /var/lib/fleetwatch/settings.yaml");
    let answer = m.ok("sudo runuser -u alice -- fleetwatch ask \"what's offline?\"");
    assert!(answer.to_lowercase().contains("offline"), "{answer}");

    // The confirm page answers through its socket unit.
    let page = m.ok("curl -s -m 5 http://localhost:8768/");
    assert!(page.contains("<main id=\"confirm\">"), "{page}");
    // A unit's address rule is enforced: the same request under IPAddressDeny=any times out
    // (curl 28) where without it the page answers.
    let denied = m.sh(
        "systemd-run --quiet --wait --pipe -p IPAddressDeny=any curl -s -m 3 http://127.0.0.1:8768/",
    );
    assert_eq!(denied.status.code(), Some(28), "{denied:?}");

    // A reboot brings everything back.
    m.reboot();
    assert_active(
        &m,
        &[
            "fleetwatch-executor.service",
            "fleetwatch.service",
            "fleetwatch-confirm.socket",
        ],
    );
    let answer = m.ok("sudo runuser -u alice -- fleetwatch ask \"what's offline?\"");
    assert!(answer.to_lowercase().contains("offline"), "{answer}");
    eprintln!(
        "booted in {booted:.1?}; the whole deployment, a change, its receipt and a reboot in {:.1?}",
        started.elapsed()
    );
    drop(m);
    sim.shutdown().await;
}
