//! `fleetwatch-confirm serve` for the tests that need the confirm page: the real binary on a
//! free port of the loopback addresses, returning assertions to the page origin given, stopped
//! when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running confirm page.
pub struct ConfirmPage {
    child: Child,
    /// Its port.
    pub port: u16,
}

impl Drop for ConfirmPage {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ConfirmPage {
    /// Starts the confirm page for the approval page at `page_origin`, with the repository's
    /// policy, and waits until it answers.
    pub async fn start(page_origin: &str) -> ConfirmPage {
        let port = crate::page::free_port();
        let child = Command::new(crate::binary("fleetwatch-confirm", "fleetwatch-confirm"))
            .args([
                "serve",
                "--port",
                &port.to_string(),
                "--page-origin",
                page_origin,
            ])
            .arg("--policy")
            .arg(crate::workspace_root().join("tool_policy.yaml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("fleetwatch-confirm serve starts");
        // Held at once, so the process is stopped on every path.
        let page = ConfirmPage { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if crate::http_get(format!("{}/", page.origin())).await.is_ok() {
                return page;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the confirm page did not answer");
    }

    /// `http://localhost:<port>`.
    pub fn origin(&self) -> String {
        format!("http://localhost:{}", self.port)
    }
}
