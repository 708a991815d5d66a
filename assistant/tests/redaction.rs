//! Redaction as the read path applies it: every case goes through a replay file and the
//! guarded reader, so a reader that forgot to redact fails here. Each case lists what must be
//! gone and what must stay; every output is also checked for idempotence.

mod common;

use fleetwatch::reads::Reader;
use fleetwatch_redact as redact;
use serde_json::{Value, json};

struct Case {
    name: &'static str,
    input: Value,
    gone: &'static [&'static str],
    kept: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let c = |name, input, gone, kept| Case {
        name,
        input,
        gone,
        kept,
    };
    vec![
        c(
            "stream_key field",
            json!({"stream_key": "sk-live-1234abcd"}),
            &["sk-live-1234abcd"],
            &["stream_key"],
        ),
        c(
            "streamKey camel",
            json!({"streamKey": "abcd-efgh-ijkl"}),
            &["abcd-efgh-ijkl"],
            &[],
        ),
        c(
            "streaming key spaced",
            json!({"Streaming Key": "zz99-yy88"}),
            &["zz99-yy88"],
            &[],
        ),
        c(
            "bare key",
            json!({"key": "k3y-v4lue-xx"}),
            &["k3y-v4lue-xx"],
            &[],
        ),
        c(
            "api_key",
            json!({"api_key": "AKIA1234567890"}),
            &["AKIA1234567890"],
            &[],
        ),
        c(
            "apiKey",
            json!({"apiKey": "abc123def456"}),
            &["abc123def456"],
            &[],
        ),
        c(
            "password",
            json!({"password": "hunter2hunter2"}),
            &["hunter2hunter2"],
            &[],
        ),
        c(
            "passphrase",
            json!({"passphrase": "correct horse battery"}),
            &["correct horse battery"],
            &[],
        ),
        c(
            "secret",
            json!({"client_secret": "s3cr3t-value"}),
            &["s3cr3t-value"],
            &[],
        ),
        c(
            "token",
            json!({"access_token": "tok-abcdef-123456"}),
            &["tok-abcdef-123456"],
            &[],
        ),
        c(
            "authorization",
            json!({"Authorization": "Bearer abcdefghijklmnop"}),
            &["abcdefghijklmnop"],
            &[],
        ),
        c(
            "credential",
            json!({"credentials": "user:pw-9876"}),
            &["pw-9876"],
            &[],
        ),
        c(
            "nested secret",
            json!({"a": {"b": {"password": "deepsecret99"}}}),
            &["deepsecret99"],
            &[],
        ),
        c(
            "secret in list",
            json!({"items": [{"token": "listtoken-1"}, {"token": "listtoken-2"}]}),
            &["listtoken-1", "listtoken-2"],
            &[],
        ),
        c(
            "id/value pair",
            json!({"settings": [{"id": "streamkey", "value": "pair-secret-1"}]}),
            &["pair-secret-1"],
            &["streamkey"],
        ),
        c(
            "name/value pair",
            json!({"settings": [{"name": "password", "value": "pair-secret-2"}]}),
            &["pair-secret-2"],
            &[],
        ),
        c(
            "publisher setting",
            json!({"settings": [{"id": "url", "type": {"name": "key"}, "title": "Stream key", "value": "pub-key-55"}]}),
            &[],
            &["url"],
        ),
        c(
            "stream_id uuid kept",
            json!({"stream_id": "0f8fad5b-d9cb-469f-a165-70867728950e"}),
            &[],
            &["0f8fad5b-d9cb-469f-a165-70867728950e"],
        ),
        c(
            "stream_id non-uuid masked",
            json!({"stream_id": "live_abcdefsecret"}),
            &["live_abcdefsecret"],
            &[],
        ),
        c(
            "rtmp path masked",
            json!({"url": "rtmp://a.rtmp.youtube.com/live2/f7k2-9xq4"}),
            &["f7k2-9xq4"],
            &["a.rtmp.youtube.com"],
        ),
        c(
            "rtmps path masked",
            json!({"url": "rtmps://live.example.com:443/app/key-777"}),
            &["key-777"],
            &["live.example.com"],
        ),
        c(
            "srt query masked",
            json!({"url": "srt://srt.example.net:9000?streamid=sid-4242"}),
            &["sid-4242"],
            &["srt.example.net"],
        ),
        c(
            "rtsp credentials",
            json!({"url": "rtsp://admin:campass1@10.1.2.3/stream1"}),
            &["campass1"],
            &["10.1.2.3"],
        ),
        c(
            "rist path",
            json!({"url": "rist://rist.example.org/secretpath99"}),
            &["secretpath99"],
            &["rist.example.org"],
        ),
        c(
            "https query masked",
            json!({"url": "https://cdn.example.com/page?token=qtoken-1"}),
            &["qtoken-1"],
            &["cdn.example.com"],
        ),
        c(
            "https user info dropped",
            json!({"url": "https://bob:pw-in-url-3@host.example.com/x"}),
            &["pw-in-url-3"],
            &["host.example.com"],
        ),
        c(
            "https ingest path masked",
            json!({"url": "https://ingest.example.com/ingest/ingestsecret7"}),
            &["ingestsecret7"],
            &["ingest.example.com"],
        ),
        c(
            "url inside prose",
            json!({"message": "publishing to rtmp://x.example.com/live/prose-key-1 failed"}),
            &["prose-key-1"],
            &["x.example.com", "failed"],
        ),
        c(
            "key=value text",
            json!({"message": "config password=textpw-1 applied"}),
            &["textpw-1"],
            &["applied"],
        ),
        c(
            "key: value text",
            json!({"message": "stream key: textkey-2"}),
            &["textkey-2"],
            &[],
        ),
        c(
            "bearer in text",
            json!({"message": "sent Authorization: Bearer eyJhbGciOi.abc.def"}),
            &["eyJhbGciOi.abc.def"],
            &[],
        ),
        c(
            "basic in text",
            json!({"message": "sent Authorization: Basic dXNlcjpwYXNz"}),
            &["dXNlcjpwYXNz"],
            &[],
        ),
        c(
            "anthropic key",
            json!({"message": "key sk-ant-api03-abcdefghijklmnop"}),
            &["sk-ant-api03-abcdefghijklmnop"],
            &[],
        ),
        c(
            "keyboard stays",
            json!({"name": "Keyboard room"}),
            &[],
            &["Keyboard room"],
        ),
        c(
            "monkey stays",
            json!({"name": "Monkey house"}),
            &[],
            &["Monkey house"],
        ),
        c("hotkey stays", json!({"hotkey": "F5"}), &[], &["F5"]),
        c(
            "bearer of good news stays",
            json!({"title": "a bearer of good news"}),
            &[],
            &["a bearer of good news"],
        ),
        c(
            "device ids stay",
            json!({"device_ids": ["19012341234", "19012341234-2"]}),
            &[],
            &["19012341234", "19012341234-2"],
        ),
        c(
            "event id stays",
            json!({"event_id": "evt_2026-09-24"}),
            &[],
            &["evt_2026-09-24"],
        ),
        c(
            "channel number stays",
            json!({"channel_id": "1"}),
            &[],
            &["\"1\""],
        ),
        c(
            "names with colons stay",
            json!({"Name": "Room 12: Main hall"}),
            &[],
            &["Room 12: Main hall"],
        ),
        c(
            "firmware stays",
            json!({"Firmware": "4.24.6"}),
            &[],
            &["4.24.6"],
        ),
        c(
            "plain http host url",
            json!({"url": "https://www.epiphan.com/products"}),
            &[],
            &["www.epiphan.com"],
        ),
        c(
            "numbers untouched",
            json!({"cpu_load": 18, "cpu_temp_c": 44}),
            &[],
            &["18", "44"],
        ),
    ]
}

#[tokio::test]
async fn every_case_through_the_read_path() {
    let all = cases();
    assert!(all.len() >= 40, "at least 40 cases");
    let mut failures = Vec::new();
    for case in all {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("get_stream_endpoints.json"),
            case.input.to_string(),
        )
        .unwrap();
        let reader = Reader::replay(
            dir.path().to_path_buf(),
            jiff::Timestamp::now(),
            common::policy(),
        );
        let out = reader
            .read("get_stream_endpoints", json!({}))
            .await
            .unwrap();
        let text = out.to_string();
        for secret in case.gone {
            if text.contains(secret) {
                failures.push(format!("{}: {secret:?} survived in {text}", case.name));
            }
        }
        for kept in case.kept {
            if !text.contains(kept) {
                failures.push(format!("{}: {kept:?} was lost in {text}", case.name));
            }
        }
        let mut again = out.clone();
        redact::redact_value(&mut again);
        if again != out {
            failures.push(format!("{}: redacting twice changed the result", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn valid_proposal_arguments_survive_untouched() {
    for args in [
        json!({"action": "start", "device_ids": ["19012341234-1"]}),
        json!({"action": "stop", "device_ids": ["abcdef0123456789-12"]}),
        json!({"stream_id": "0F8FAD5B-D9CB-469F-A165-70867728950E", "device_id": "19012341234", "channel_id": "3"}),
        json!({"device_id": "19012341234", "event_id": "Key_Event-2026"}),
        json!({"device_ids": ["19012341234"]}),
    ] {
        let mut copy = args.clone();
        redact::redact_value(&mut copy);
        assert_eq!(copy, args);
    }
}
