//! The `fleetwatch-sim` binary: the first stdout line is the URL to connect to.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// An HTTP client, with the TLS provider the workspace's processes install (reqwest is built
/// without one of its own).
fn http() -> reqwest::Client {
    install_tls();
    reqwest::Client::new()
}

fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(args: &[&str]) -> (Running, Vec<String>, usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetwatch-sim"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn fleetwatch-sim");
    let stdout = child.stdout.take().expect("stdout");
    let mut reader = BufReader::new(stdout);
    let mut lines = Vec::new();
    let wanted = if args.contains(&"--demo") {
        4
    } else if args[0] == "serve" {
        2
    } else {
        1
    };
    for _ in 0..wanted {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a line");
        lines.push(line.trim_end().to_string());
    }
    (Running(child), lines, wanted)
}

async fn mcp_read(url: &str, token: &str, tool: &str) -> Value {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    install_tls();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    let client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("connect");
    let result = client
        .call_tool(
            CallToolRequestParams::new(tool.to_string()).with_arguments(serde_json::Map::new()),
        )
        .await
        .expect("call");
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    serde_json::from_str(&text).expect("JSON result")
}

#[tokio::test]
async fn serve_demo_prints_url_then_tokens() {
    let (_child, lines, _) = spawn(&["serve", "--demo"]);
    let url = &lines[0];
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "first line: {url}"
    );
    assert!(lines[1].starts_with("control token: "));
    assert!(lines[2..].iter().any(|l| l.contains("normal-token")));
    assert!(lines[2..].iter().any(|l| l.contains("sandbox-token")));
    let list = mcp_read(url, "normal-token", "get_devices_in_my_team").await;
    assert!(list["devices"].as_array().unwrap().len() >= 25);

    // The control token printed on line two opens /control.
    let token = lines[1].trim_start_matches("control token: ");
    let base = url.trim_end_matches("/mcp");
    let calls: Value = http()
        .get(format!("{base}/control/calls"))
        .header("x-control-token", token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(calls.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn serve_replay_with_clock_and_extra_team() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/replay/example");
    let team = format!("second=second-token:{example}");
    let (_child, lines, _) = spawn(&[
        "serve",
        "--replay",
        example,
        "--token",
        "first-token",
        "--team",
        &team,
        "--now",
        "2026-09-24T20:08:00Z",
    ]);
    let url = &lines[0];
    assert!(url.starts_with("http://127.0.0.1:"), "first line: {url}");
    for token in ["first-token", "second-token"] {
        let list = mcp_read(url, token, "get_devices_in_my_team").await;
        assert_eq!(list["devices"][0]["StateTime"], "2026-09-22T20:08:00Z");
    }
}

#[test]
fn serve_without_a_team_fails_and_says_why() {
    let output = Command::new(env!("CARGO_BIN_EXE_fleetwatch-sim"))
        .arg("serve")
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--demo"), "{stderr}");
    let output = Command::new(env!("CARGO_BIN_EXE_fleetwatch-sim"))
        .args(["serve", "--team", "broken"])
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("NAME=TOKEN:DIR"));
}

#[tokio::test]
async fn model_command_serves_the_script_file() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let body = fleetwatch_sim::model::text_reply("hola");
    std::fs::write(&script, serde_json::to_string(&json!([body])).unwrap()).unwrap();
    let (_child, lines, _) = spawn(&["model", "--script", script.to_str().unwrap()]);
    let base = &lines[0];
    assert!(base.starts_with("http://127.0.0.1:"), "first line: {base}");
    let reply: Value = http()
        .post(format!("{base}/v1/messages"))
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["content"][0]["text"], "hola");
}

#[tokio::test]
async fn model_offline_answers_from_rules() {
    let (_child, lines, _) = spawn(&["model", "--offline"]);
    let base = &lines[0];
    assert!(base.starts_with("http://127.0.0.1:"), "first line: {base}");
    let reply: Value = http()
        .post(format!("{base}/v1/messages"))
        .json(&json!({
            "model": "m",
            "max_tokens": 100,
            "tools": [{"name": "get_devices_in_my_team", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "What's offline?"}],
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["stop_reason"], "tool_use");
    assert_eq!(reply["content"][0]["name"], "get_devices_in_my_team");
    assert_eq!(reply["model"], fleetwatch_sim::model::OFFLINE_MODEL);
}

#[test]
fn model_needs_exactly_one_of_script_and_offline() {
    for args in [
        &["model"][..],
        &["model", "--offline", "--script", "x.json"][..],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_fleetwatch-sim"))
            .args(args)
            .output()
            .expect("run");
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--script") || stderr.contains("--offline"),
            "{stderr}"
        );
    }
}
