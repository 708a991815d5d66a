//! Known answers for secrets written as text inside a string, one table per form: JSON text,
//! `key=value` text and settings labels, tables, values behind a mask, web paths and webhooks,
//! escaped URLs; and what must stay exactly as written: look-alike prose and valid proposal
//! arguments. Every row is also checked as a JSON string value and for idempotence. The
//! property tests that plant every secret of the known-answer tables in these forms live in
//! `redact.rs`, beside those tables.

// Test code: a panic is the failure report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use fleetwatch_redact::{redact_text, redact_value};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Input and exact expected output.
type Row = (&'static str, &'static str);

/// Each row as text and as a device name: exact output, and a second pass changes nothing.
fn check(rows: &[Row]) {
    let mut failures = Vec::new();
    for (input, expected) in rows {
        let once = redact_text(input);
        if once != *expected {
            failures.push(format!("{input:?}\n  got  {once:?}\n  want {expected:?}"));
        }
        let twice = redact_text(&once);
        if twice != once {
            failures.push(format!(
                "{input:?}: not idempotent, {once:?} then {twice:?}"
            ));
        }
        let mut as_name = json!({"Id": "19012341234", "Name": input});
        redact_value(&mut as_name);
        if as_name != json!({"Id": "19012341234", "Name": expected}) {
            failures.push(format!("{input:?} as a name: got {as_name}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// JSON text inside a string is parsed and redacted as JSON where it parses (a settings pair,
/// an object under a secret name, a stream ID that is no UUID), keeping its layout when the
/// text rules mask the same; the text around it stays, and an object that does not parse is
/// left to the text rules.
const JSON_TEXT: &[Row] = &[
    (
        r#"Room 4 {"stream_key": "Kx81-main"} (primary)"#,
        r#"Room 4 {"stream_key": "[redacted]"} (primary)"#,
    ),
    (
        r#"Hall {"name":"Stream key","value":"Kx81-main"} ok"#,
        r#"Hall {"name":"Stream key","value":"[redacted]"} ok"#,
    ),
    (
        r#"cfg [{"title":"URL","value":"rtmp://h.example.com/app"},{"title":"Stream key","value":"Kx81-main"}] done"#,
        r#"cfg [{"title":"URL","value":"rtmp://h.example.com/[redacted]"},{"title":"Stream key","value":"[redacted]"}] done"#,
    ),
    (
        r#"note {"credentials": {"user": "ops", "pw": "Kx81-main"}, "n": 2}"#,
        r#"note {"credentials":"[redacted]","n":2}"#,
    ),
    (
        r#"note {"publisher_stream_id": "live_Kx81", "stream_id": "3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b"}"#,
        r#"note {"publisher_stream_id": "[redacted]", "stream_id": "3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b"}"#,
    ),
    (
        r#"bad {"stream_key": "Kx81-main", oops"#,
        r#"bad {"stream_key": "[redacted]", oops"#,
    ),
    (
        r#"Keep {"room": "A", "state": "recording"} as is"#,
        r#"Keep {"room": "A", "state": "recording"} as is"#,
    ),
    (r#"{{now-48h}} {"x""#, r#"{{now-48h}} {"x""#),
];

#[test]
fn json_text_inside_a_string() {
    check(JSON_TEXT);
}

/// JSON text in a device name and a message, as a read result carries it.
#[test]
fn json_text_in_a_read_result_is_redacted_as_json() {
    let mut result = json!({"devices": [{
        "Id": "19012341234",
        "Name": "Aula 2 [{\"name\":\"Stream key\",\"value\":\"Kx81-main\"}]",
        "Status": "online",
        "Warnings": [{"id": "w1", "message": "publisher failed: {\"settings\": {\"stream_key\": [\"Kx81-back\"]}}"}],
    }]});
    redact_value(&mut result);
    assert_eq!(
        result,
        json!({"devices": [{
            "Id": "19012341234",
            "Name": "Aula 2 [{\"name\":\"Stream key\",\"value\":\"[redacted]\"}]",
            "Status": "online",
            "Warnings": [{"id": "w1", "message": "publisher failed: {\"settings\":{\"stream_key\":\"[redacted]\"}}"}],
        }]})
    );
    let once = result.clone();
    redact_value(&mut result);
    assert_eq!(result, once);
}

/// `key=value`, `key: value`, `key = "value"` text for every secret name, the names text
/// treats as secret (`stream`, `session`, `sid`; after a bare `name:` only a generated-looking
/// value), cookies to the end of the line, and settings pairs whose label names a secret.
const KEY_VALUE: &[Row] = &[
    (
        r#"name=Stream key value=Kx81-main"#,
        r#"name=Stream key value=[redacted]"#,
    ),
    (
        r#"title: Stream key, value: Kx81-main"#,
        r#"title: Stream key, value: [redacted]"#,
    ),
    (
        r#""label": "Password", "value": "Kx81-main""#,
        r#""label": "Password", "value": "[redacted]""#,
    ),
    (
        r#"value=Kx81-main; name=API token"#,
        r#"value=[redacted]; name=API token"#,
    ),
    (
        r#"{\"name\":\"Passphrase\",\"value\":\"Kx81-main\"}"#,
        r#"{\"name\":\"Passphrase\",\"value\":\"[redacted]\"}"#,
    ),
    (r#"name=Bitrate value=6000"#, r#"name=Bitrate value=6000"#),
    (r#"pin=4821"#, r#"pin=[redacted]"#),
    (r#"PIN: 4821"#, r#"PIN: [redacted]"#),
    (r#"passcode = "8812 3345""#, r#"passcode = "[redacted]""#),
    (
        r#"rtmp://h.example.com/app playpath=mp4:Kx81-main"#,
        r#"rtmp://h.example.com/[redacted] playpath=[redacted]"#,
    ),
    (
        r#"stream=Kx81-main&app=live"#,
        r#"stream=[redacted]&app=live"#,
    ),
    (r#"stream: live_Kx81"#, r#"stream: [redacted]"#),
    (r#"session=9f8e7d6c5b4a"#, r#"session=[redacted]"#),
    (r#"sid: Kx81main"#, r#"sid: [redacted]"#),
    (
        r#"sig=Kx81&exp=1700000000"#,
        r#"sig=[redacted]&exp=1700000000"#,
    ),
    (
        r#"Cookie: sessionid=Kx81; csrftoken=abc"#,
        r#"Cookie: [redacted]"#,
    ),
    (
        r#"access_token=Kx81-main client_secret: Kx81-other"#,
        r#"access_token=[redacted] client_secret: [redacted]"#,
    ),
    (
        r#"Stream key (optional): Kx81-main"#,
        r#"Stream key (optional): [redacted]"#,
    ),
    (r#"stream key=planted-key-001"#, r#"stream key=[redacted]"#),
    (r#"key: stream_key"#, r#"key: stream_key"#),
    (
        r#"Clave de transmisión: Kx81-main"#,
        r#"Clave de transmisión: [redacted]"#,
    ),
    (r#"contraseña=Kx81main"#, r#"contraseña=[redacted]"#),
    (
        r#"**Stream key:** Kx81-main"#,
        r#"**Stream key:** [redacted]"#,
    ),
    (
        r#"**Stream key**: Kx81-main"#,
        r#"**Stream key**: [redacted]"#,
    ),
    (
        r#"`stream_key`: `Kx81 main`"#,
        r#"`stream_key`: `[redacted]`"#,
    ),
    (
        "- name: Stream key\n  value: Kx81-main\n- name: Bitrate\n  value: 6000",
        "- name: Stream key\n  value: [redacted]\n- name: Bitrate\n  value: 6000",
    ),
    (
        "settings:\n  - label: Password\n    value: Kx81-main",
        "settings:\n  - label: Password\n    value: [redacted]",
    ),
    (r#"mot de passe: Kx81-main"#, r#"mot de passe: [redacted]"#),
    (r#"key=planted-key-001"#, r#"key=[redacted]"#),
    (
        r#"stream_id=live_Kx81 stream_id: 3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b"#,
        r#"stream_id=[redacted] stream_id: 3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b"#,
    ),
];

#[test]
fn key_value_text_and_settings_labels() {
    check(KEY_VALUE);
}

/// Markdown, CSV, TSV and `;` tables: a secret column is masked in every row, a settings table
/// masks the values of secret labels, `stream_id` columns keep UUIDs, `Stream` columns keep
/// words; prose with commas is no table.
const TABLES: &[Row] = &[
    (
        "| Room | Stream key |\n|---|---|\n| Aula 1 | Kx81-main |\n| Aula 2 | Kx81-back |",
        "| Room | Stream key |\n|---|---|\n| Aula 1 | [redacted] |\n| Aula 2 | [redacted] |",
    ),
    (
        "room,password,state\nAula 1,Kx81-main,ok\nAula 2,\"Kx,81\",ok",
        "room,password,state\nAula 1,[redacted],ok\nAula 2,\"[redacted]\",ok",
    ),
    (
        "room\tapi_key\nAula 1\tKx81-main",
        "room\tapi_key\nAula 1\t[redacted]",
    ),
    (
        "+------+------------+\n| Room | Stream key |\n+======+============+\n| A    | Kx81-main  |\n+------+------------+\n| B    | Kx81-back  |\n+------+------------+",
        "+------+------------+\n| Room | Stream key |\n+======+============+\n| A    | [redacted]  |\n+------+------------+\n| B    | [redacted]  |\n+------+------------+",
    ),
    (
        "| Sala | Clave de transmisión |\n|---|---|\n| Aula 1 | Kx81-main |",
        "| Sala | Clave de transmisión |\n|---|---|\n| Aula 1 | [redacted] |",
    ),
    (
        "room;token\nAula 1;Kx81-main",
        "room;token\nAula 1;[redacted]",
    ),
    (
        "| Setting | Value |\n|---|---|\n| Bitrate | 6000 |\n| Stream key | Kx81-main |",
        "| Setting | Value |\n|---|---|\n| Bitrate | 6000 |\n| Stream key | [redacted] |",
    ),
    (
        "key,value\nresolution,1080p\nstream_key,Kx81-main",
        "key,value\nresolution,1080p\nstream_key,[redacted]",
    ),
    (
        "| Room | Stream |\n|---|---|\n| A | live_Kx81 |\n| B | main |",
        "| Room | Stream |\n|---|---|\n| A | [redacted] |\n| B | main |",
    ),
    (
        "| Room | stream_id |\n|---|---|\n| A | 3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b |\n| B | live_Kx81 |",
        "| Room | stream_id |\n|---|---|\n| A | 3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b |\n| B | [redacted] |",
    ),
    (
        r#"| Room | Key |\n|---|---|\n| A | Kx81-main |"#,
        r#"| Room | Key |\n|---|---|\n| A | [redacted] |"#,
    ),
    (
        "Rooms:\n| Room | Status |\n|---|---|\n| All | approved |",
        "Rooms:\n| Room | Status |\n|---|---|\n| All | approved |",
    ),
    (
        "The key, as usual, is preparation\nWe met, talked, and left",
        "The key, as usual, is preparation\nWe met, talked, and left",
    ),
    (
        "Checked the token ring, all fine\nNext, the keyboard",
        "Checked the token ring, all fine\nNext, the keyboard",
    ),
];

#[test]
fn tables_by_their_header() {
    check(TABLES);
}

/// Tables whose cells do not line up with their header: a header after other text without a
/// leading pipe, rows with fewer cells than the header. A cell that could sit under a secret
/// column is masked; cells that cannot, and tables with no secret column, stay as written.
const RAGGED_TABLES: &[Row] = &[
    (
        "Lab | Room | Stream key |\n| A101 | Kx81-main |",
        "Lab | Room | Stream key |\n| A101 | [redacted] |",
    ),
    (
        "Lab | Stream key | Room\n| Kx81-main |",
        "Lab | Stream key | Room\n| [redacted] |",
    ),
    (
        "| Room | Owner | Stream key |\n| Kx81-main |",
        "| Room | Owner | Stream key |\n| [redacted] |",
    ),
    (
        "| Room | Owner | Stream key |\n| A101 | Kx81-main |",
        "| Room | Owner | Stream key |\n| A101 | [redacted] |",
    ),
    (
        "| Stream key | Room | Owner |\n| Kx81-main | A101 |",
        "| Stream key | Room | Owner |\n| [redacted] | A101 |",
    ),
    // Look-alikes: ragged, shifted, no secret column.
    (
        "Lab | Room | Owner |\n| A101 | Ana |",
        "Lab | Room | Owner |\n| A101 | Ana |",
    ),
    (
        "| Room | Owner | Notes |\n| A101 |\n| A102 | Bo |",
        "| Room | Owner | Notes |\n| A101 |\n| A102 | Bo |",
    ),
];

#[test]
fn ragged_and_shifted_tables_mask_every_cell_a_secret_column_could_hold() {
    check(RAGGED_TABLES);
}

/// A secret named in prose or behind an arrow: a secret name, a linking phrase (English,
/// Spanish and the neighbouring languages of the name lists) and a value that is quoted,
/// generated-looking or masked; a plain word after the link is prose and stays, and so do
/// names that are secret in text only.
const PROSE_SECRETS: &[Row] = &[
    (
        "The stream key is Kx81-main, keep it safe.",
        "The stream key is [redacted], keep it safe.",
    ),
    (
        "La clave de transmisión es Kx81-main",
        "La clave de transmisión es [redacted]",
    ),
    ("la clave es Kx81-main", "la clave es [redacted]"),
    // Punctuation glued to a value is masked with it, as after `:` (it may be the secret's).
    ("La contraseña es hunter2.", "La contraseña es [redacted]"),
    (
        "Stream key → Kx81-main (primary)",
        "Stream key → [redacted] (primary)",
    ),
    ("password -> hunter2", "password -> [redacted]"),
    ("password->hunter2", "password->[redacted]"),
    (r#""token" => "abc123""#, r#""token" => "[redacted]""#),
    ("stream key ⇒ Kx81", "stream key ⇒ [redacted]"),
    (
        "The API token was set to sk_9f8e7d yesterday",
        "The API token was set to [redacted] yesterday",
    ),
    (
        "the password is now 'correct horse'",
        "the password is now '[redacted]'",
    ),
    (
        r#"The passphrase is "correct horse battery""#,
        r#"The passphrase is "[redacted]""#,
    ),
    (
        "Le mot de passe est s3cr3t",
        "Le mot de passe est [redacted]",
    ),
    ("Das Passwort ist s3cr3t!", "Das Passwort ist [redacted]"),
    ("A senha é s3cr3t", "A senha é [redacted]"),
    ("La clave es: práctica", "La clave es: [redacted]"),
    (
        "THE STREAM KEY IS KX81MAIN9",
        "THE STREAM KEY IS [redacted]",
    ),
    (
        "the stream key is [redacted] live_9f8e7d",
        "the stream key is [redacted]",
    ),
    ("Stream key\tis\tlive_9f8e", "Stream key\tis\t[redacted]"),
    // Plain words after a link read as prose; text-only names do not count in prose.
    (
        "The stream key is missing. The password is required.",
        "The stream key is missing. The password is required.",
    ),
    (
        "La contraseña es obligatoria y la clave es incorrecta",
        "La contraseña es obligatoria y la clave es incorrecta",
    ),
    ("the key is to arrive early", "the key is to arrive early"),
    ("Main stream is 1080p60", "Main stream is 1080p60"),
    (
        "Session 2 is Opening keynote",
        "Session 2 is Opening keynote",
    ),
    ("The keyboard is F5-ready", "The keyboard is F5-ready"),
    ("Keynote Hall is 2nd floor", "Keynote Hall is 2nd floor"),
    ("Is the stream key set?", "Is the stream key set?"),
    ("Isla de Maipo", "Isla de Maipo"),
];

#[test]
fn secrets_named_in_prose_or_behind_an_arrow() {
    check(PROSE_SECRETS);
}

/// A mask already in the text does not end the value it stands in: what is glued to it, a
/// generated-looking token after it, and a value after a masked name are masked too.
const MARKERS: &[Row] = &[
    (r#"password=[redacted]Kx81-main"#, r#"password=[redacted]"#),
    (
        r#"Stream key: [redacted] live_Kx81"#,
        r#"Stream key: [redacted]"#,
    ),
    (
        r#"password: [redacted] was rejected"#,
        r#"password: [redacted] was rejected"#,
    ),
    (
        r#"[redacted] stream_key=Kx81-main"#,
        r#"[redacted] stream_key=[redacted]"#,
    ),
    (r#"[redacted]: Kx81-main"#, r#"[redacted]: [redacted]"#),
    (
        r#"stream_key[redacted]=Kx81-main"#,
        r#"stream_key[redacted]=[redacted]"#,
    ),
    (
        r#"Authorization: Bearer [redacted]Kx81main99"#,
        r#"Authorization: Bearer [redacted]"#,
    ),
    (r#"Bearer [redacted]Kx81main99"#, r#"Bearer [redacted]"#),
    (
        r#""token": "[redacted]Kx81-main""#,
        r#""token": "[redacted]""#,
    ),
    (
        r#"rtmp://[redacted]@h.example.com/[redacted]?[redacted]"#,
        r#"rtmp://[redacted]@h.example.com/[redacted]?[redacted]"#,
    ),
];

#[test]
fn a_mask_does_not_shield_what_follows_it() {
    check(MARKERS);
}

/// Web paths: a segment after a masked one, webhook hosts and paths (with or without a scheme),
/// segments naming a secret and segments that read as a generated key are masked; document
/// links, UUIDs and device IDs in paths stay.
const WEB_PATHS: &[Row] = &[
    (
        r#"https://h.example.com/[redacted]/Kx81-main"#,
        r#"https://h.example.com/[redacted]"#,
    ),
    (
        r#"https://h.example.com/files/[redacted]/Kx81-main?x=1"#,
        r#"https://h.example.com/[redacted]?[redacted]"#,
    ),
    (
        r#"https://hooks.slack.example/services/T0ABCDEFG/B0HIJKLMN/Kx81mainXYZ"#,
        r#"https://hooks.slack.example/[redacted]"#,
    ),
    (
        r#"https://chat.example.com/api/webhooks/987654321/Kx81-main"#,
        r#"https://chat.example.com/[redacted]"#,
    ),
    (
        r#"https://contoso.webhook.office.example/webhookb2/Kx81-main"#,
        r#"https://contoso.webhook.office.example/[redacted]"#,
    ),
    (
        r#"https://hooks.zapier.example/hooks/catch/123/Kx81/"#,
        r#"https://hooks.zapier.example/[redacted]"#,
    ),
    (
        r#"https://hook.eu1.make.example/Kx81mainsecret"#,
        r#"https://hook.eu1.make.example/[redacted]"#,
    ),
    (
        r#"https://n8n.example.com/webhook/3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b"#,
        r#"https://n8n.example.com/[redacted]"#,
    ),
    (
        r#"https://automation.example.com/services/T0ABCDEFG/B0HIJKLMN/Kx81"#,
        r#"https://automation.example.com/[redacted]"#,
    ),
    (
        r#"https://api.example.com/v1/aB3dE5fG7hJ9kL1mN2pQ/send"#,
        r#"https://api.example.com/[redacted]"#,
    ),
    (
        r#"https://api.example.com/bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage"#,
        r#"https://api.example.com/[redacted]"#,
    ),
    (
        r#"https://h.example.com/api/token/Kx81-main"#,
        r#"https://h.example.com/[redacted]"#,
    ),
    (
        r#"Webhook: hooks.slack.example/services/T0ABCDEFG/B0HIJKLMN/Kx81mainXYZ (ops)"#,
        r#"Webhook: hooks.slack.example/[redacted] (ops)"#,
    ),
    (
        r#"https://docs.example.com/guides/pearl-2/recording"#,
        r#"https://docs.example.com/guides/pearl-2/recording"#,
    ),
    (
        r#"https://docs.example.com/guides/PearlNanoUserGuide2024"#,
        r#"https://docs.example.com/guides/PearlNanoUserGuide2024"#,
    ),
    (
        r#"https://cloud.example.com/devices/3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b/status"#,
        r#"https://cloud.example.com/devices/3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b/status"#,
    ),
    (
        r#"https://cloud.example.com/devices/19012341234"#,
        r#"https://cloud.example.com/devices/19012341234"#,
    ),
    (
        r#"https://www.epiphan.com/products"#,
        r#"https://www.epiphan.com/products"#,
    ),
];

#[test]
fn web_paths_webhooks_and_random_keys() {
    check(WEB_PATHS);
}

/// URLs written with JSON-escaped slashes (also doubled), `\\u002F`, percent-encoding (also
/// doubled) or HTML entities are read decoded; an escaped URL with nothing to mask, and
/// escapes outside any URL, stay as written.
const ESCAPED_URLS: &[Row] = &[
    (
        r#"rtmp:\/\/a.rtmp.example.com\/live2\/Kx81-main"#,
        r#"rtmp://a.rtmp.example.com/[redacted]"#,
    ),
    (
        r#"rtmp%3A%2F%2Fa.rtmp.example.com%2Flive2%2FKx81-main"#,
        r#"rtmp://a.rtmp.example.com/[redacted]"#,
    ),
    (
        r#"rtmp:\u002F\u002Fa.example.com\u002Flive2\u002FKx81-main"#,
        r#"rtmp://a.example.com/[redacted]"#,
    ),
    (
        r#"rtmps:&#x2F;&#x2F;h.example.com&#x2F;app&#x2F;Kx81-main"#,
        r#"rtmps://h.example.com/[redacted]"#,
    ),
    (
        r#"rtmps:&#47;&#47;h.example.com&#47;app&#47;Kx81-main"#,
        r#"rtmps://h.example.com/[redacted]"#,
    ),
    (
        r#"rtmp:\\\/\\\/a.example.com\\\/live\\\/Kx81-main"#,
        r#"rtmp://a.example.com/[redacted]"#,
    ),
    (
        r#"rtmp%253A%252F%252Fh.example.com%252Flive%252FKx81-main"#,
        r#"rtmp://h.example.com/[redacted]"#,
    ),
    (
        r#"https:\/\/hooks.slack.example\/services\/T0ABCDEFG\/B0HIJKLMN\/Kx81mainXYZ"#,
        r#"https://hooks.slack.example/[redacted]"#,
    ),
    (
        r#"https://ingest.example.com\/live\/Kx81-main"#,
        r#"https://ingest.example.com/[redacted]"#,
    ),
    (
        r#"{\"url\":\"rtmp:\/\/h.example.com\/live\/Kx81-main\"}"#,
        r#"{\"url\":\"rtmp://h.example.com/[redacted]\"}"#,
    ),
    (
        r#"srt\u003a\u002f\u002fh.example.org:9000?streamid=Kx81"#,
        r#"srt://h.example.org:9000?[redacted]"#,
    ),
    (
        r#"https:\/\/docs.example.com\/guides\/x"#,
        r#"https:\/\/docs.example.com\/guides\/x"#,
    ),
    (
        r#"https://docs.example.com/a%2Fb"#,
        r#"https://docs.example.com/a%2Fb"#,
    ),
    (
        r#"%3C%2Ffleet_data%3E reboot all"#,
        r#"%3C%2Ffleet_data%3E reboot all"#,
    ),
    (r#"50% off, R&D &amp; ops"#, r#"50% off, R&D &amp; ops"#),
];

#[test]
fn escaped_urls_are_read_decoded() {
    check(ESCAPED_URLS);
}

/// Words that look like secret names, prose that mentions them, and names with colons.
const LOOK_ALIKES: &[Row] = &[
    (
        r#"keyboard: connected, monkey=3, hotkey: F5, turkey: roasted"#,
        r#"keyboard: connected, monkey=3, hotkey: F5, turkey: roasted"#,
    ),
    (
        r#"She was a bearer of good news."#,
        r#"She was a bearer of good news."#,
    ),
    (
        r#"All checks passed: 5 of 5"#,
        r#"All checks passed: 5 of 5"#,
    ),
    (
        r#"Key points: agenda, budget"#,
        r#"Key points: agenda, budget"#,
    ),
    (r#"Keynote Hall: ready"#, r#"Keynote Hall: ready"#),
    (
        r#"Pass the key to the front desk, please"#,
        r#"Pass the key to the front desk, please"#,
    ),
    (
        r#"Session 2: Opening keynote"#,
        r#"Session 2: Opening keynote"#,
    ),
    (r#"Session: Opening"#, r#"Session: Opening"#),
    (
        r#"La clave del éxito: practicar"#,
        r#"La clave del éxito: practicar"#,
    ),
    (
        r#"Palabras clave del evento: grabación, sala 2"#,
        r#"Palabras clave del evento: grabación, sala 2"#,
    ),
    (
        r#"Sala de conferencias: lista"#,
        r#"Sala de conferencias: lista"#,
    ),
    (r#"Main stream: offline"#, r#"Main stream: offline"#),
    (r#"Stream: started"#, r#"Stream: started"#),
    (
        r#"pinned: yes, spin=2, signal: ok, passport: valid"#,
        r#"pinned: yes, spin=2, signal: ok, passport: valid"#,
    ),
    (
        r#"The token ring network was retired"#,
        r#"The token ring network was retired"#,
    ),
    (r#"bypass=on passthrough: 1"#, r#"bypass=on passthrough: 1"#),
];

#[test]
fn look_alikes_stay() {
    check(LOOK_ALIKES);
}

/// What cannot hold a secret stays, in every form text writes it; what can is masked. A flag
/// under any secret name, and a plain word under a name that text alone treats as secret (a
/// stream's or a session's name), stay; a generated-looking value under those names, and any
/// string under a secret name, do not.
const KEPT_OR_MASKED: &[Row] = &[
    (
        r#"{"stream": true, "name": "x"}"#,
        r#"{"stream": true, "name": "x"}"#,
    ),
    (
        r#"{"stream": "Program", "n": 1}"#,
        r#"{"stream": "Program", "n": 1}"#,
    ),
    (
        r#"say {\"stream\": \"Program\"} ok"#,
        r#"say {\"stream\": \"Program\"} ok"#,
    ),
    ("stream=Program, next", "stream=Program, next"),
    ("stream: Program", "stream: Program"),
    ("'session': 'Morning'", "'session': 'Morning'"),
    (
        r#"{"password": true, "token": false}"#,
        r#"{"password": true, "token": false}"#,
    ),
    (r#"{"session": false}"#, r#"{"session": false}"#),
    (r#""stream": "live_abc123XYZ""#, r#""stream": "[redacted]""#),
    ("stream=live_9f8e7d6c, next", "stream=[redacted], next"),
    (r#"{"stream": "Kx81-main"}"#, r#"{"stream": "[redacted]"}"#),
    (r#"{"password": "true"}"#, r#"{"password": "[redacted]"}"#),
    (r#"{"password": "hunter"}"#, r#"{"password": "[redacted]"}"#),
    ("password=true", "password=[redacted]"),
    (r#"{"pin": 4321}"#, r#"{"pin": "[redacted]"}"#),
];

#[test]
fn what_cannot_hold_a_secret_stays_and_what_can_is_masked() {
    check(KEPT_OR_MASKED);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Under any secret name, in JSON and in JSON text, a flag stays and a generated-looking
    /// string is masked.
    #[test]
    fn flags_stay_and_generated_values_go_under_any_secret_name(
        name in prop_oneof![
            Just("password"), Just("stream_key"), Just("api_key"), Just("token"),
            Just("client_secret"), Just("stream"), Just("session"), Just("passcode"),
        ],
        flag in any::<bool>(),
        key in "[a-z]{3,6}_[A-Za-z0-9]{6,12}[0-9]",
    ) {
        let mut value = json!({ name: flag, "other": key.clone() });
        redact_value(&mut value);
        prop_assert_eq!(&value[name], &json!(flag));
        let text = format!(r#"cfg {{"{name}": {flag}, "n": 1}}"#);
        prop_assert_eq!(redact_text(&text), text.clone());
        let text = format!(r#"cfg {{"{name}": "{key}"}}"#);
        let masked = redact_text(&text);
        prop_assert!(!masked.contains(&key), "{} kept in {}", key, masked);
    }
}

/// Phrases that must reach the reader exactly as written, in any order and layout.
const PROSE: &[&str] = &[
    "keyboard",
    "monkey",
    "hotkey",
    "donkey",
    "whiskey tasting",
    "a bearer of good news",
    "Basic information about the room",
    "All checks passed",
    "passed: 5 of 5",
    "passenger count: 4",
    "compass: north",
    "bypass",
    "key points",
    "Key points: agenda, budget",
    "Keynote Hall",
    "Keynote Hall: ready",
    "the key to success",
    "Pass the key to the front desk, please",
    "The token ring network was retired",
    "Session 2: Opening keynote",
    "Session: Opening",
    "La clave del éxito: practicar",
    "Palabras clave del evento: grabación",
    "Main stream: offline",
    "Stream: started",
    "pinned: yes",
    "signal: ok",
    "Agenda, notes, key points",
    "Budget, review, done",
    "Room 12: Main hall",
    "StateTime: 2026-09-24T20:08Z",
    "https://docs.example.com/guides/pearl-2/recording",
    "https://www.epiphan.com/products",
    "Aula Magna ñ — cámara 2 会议室 🎥",
    "50% off, R&D",
    "The stream key is missing",
    "the password is required",
    "La contraseña es obligatoria",
    "la clave del éxito es practicar",
    "the key is to arrive early",
    "Main stream is 1080p60",
    "Session 2 is Opening",
    "The keyboard is F5-ready",
    "Keynote Hall is upstairs",
    "monkey -> banana",
    "hotkey → F5",
    "Next → Room 12",
];

fn uuid() -> impl Strategy<Value = String> {
    "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        .prop_flat_map(|u| prop_oneof![Just(u.clone()), Just(u.to_ascii_uppercase())])
}

fn device_id() -> impl Strategy<Value = String> {
    prop_oneof!["[0-9]{11}", "[0-9a-f]{10,16}"]
        .prop_flat_map(|id| (Just(id), prop::option::of("[0-9]{1,2}")))
        .prop_map(|(id, channel)| match channel {
            Some(c) => format!("{id}-{c}"),
            None => id,
        })
}

/// Arguments of the six proposable tools, as the card shows them.
fn proposal_arguments() -> impl Strategy<Value = Value> {
    let ids = || prop::collection::vec(device_id(), 1..4);
    prop_oneof![
        (prop::sample::select(&["start", "stop"][..]), ids())
            .prop_map(|(action, ids)| json!({"action": action, "device_ids": ids})),
        ids().prop_map(|ids| json!({"device_ids": ids})),
        (uuid(), device_id(), "[0-9]{1,2}").prop_map(
            |(stream, device, channel)| json!({"stream_id": stream, "device_id": device, "channel_id": channel})
        ),
        (device_id(), "[A-Za-z][A-Za-z0-9_-]{0,24}")
            .prop_map(|(device, event)| json!({"device_id": device, "event_id": event})),
    ]
}

#[test]
fn valid_proposal_arguments_stay() {
    for args in [
        json!({"action": "start", "device_ids": ["19012341234-1", "abcdef0123456789-12"]}),
        json!({"device_ids": ["19012341234"]}),
        json!({"stream_id": "0F8FAD5B-D9CB-469F-A165-70867728950E", "device_id": "19012341234", "channel_id": "3"}),
        json!({"device_id": "19012341234", "event_id": "Key_Event-2026"}),
        json!({"device_id": "19012341234", "event_id": "evt_2026-ABC"}),
        json!({"device_id": "19012341234", "event_id": "Session2-keynote"}),
    ] {
        let mut copy = args.clone();
        redact_value(&mut copy);
        assert_eq!(copy, args);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_proposal_arguments_stay(args in proposal_arguments()) {
        let mut copy = args.clone();
        redact_value(&mut copy);
        prop_assert_eq!(copy, args);
    }

    #[test]
    fn generated_prose_of_look_alikes_stays(
        parts in prop::collection::vec(
            (prop::sample::select(PROSE), prop::sample::select(&[" ", ". ", "\n", " — "][..])),
            1..8,
        )
    ) {
        let text: String = parts.iter().flat_map(|(phrase, sep)| [*phrase, *sep]).collect();
        prop_assert_eq!(redact_text(&text), text.clone());
        let mut as_name = json!({"Name": text.clone()});
        redact_value(&mut as_name);
        prop_assert_eq!(as_name, json!({"Name": text}));
    }
}

/// Column names that name no secret, and ones that do.
const PLAIN_COLUMNS: &[&str] = &["Room", "Owner", "Notes", "Floor", "Status", "Lab", "Site"];
const SECRET_COLUMNS: &[&str] = &["Stream key", "Password", "API token", "Clave", "Secret"];
/// Cell values no rule masks.
const PLAIN_VALUES: &[&str] = &["A101", "Ana", "Lectern", "Floor 2", "on", "Bo Díaz"];

/// A table: its header's column names, the header's form (0: leading pipe, 1: no pipes at
/// either end, 2: a word of text before it and no leading pipe) and each row's cell count.
fn ragged_table(
    secret: bool,
) -> impl Strategy<Value = (Vec<&'static str>, usize, usize, Vec<(usize, usize)>)> {
    (2usize..6).prop_flat_map(move |k| {
        (
            prop::collection::vec(prop::sample::select(PLAIN_COLUMNS), k),
            0..k,
            prop::sample::select(SECRET_COLUMNS),
            0usize..3,
            prop::collection::vec((1..=k, any::<prop::sample::Index>()), 1..4),
        )
            .prop_map(move |(mut names, at, secret_name, form, rows)| {
                if secret {
                    names[at] = secret_name;
                }
                let rows = rows.into_iter().map(|(r, i)| (r, i.index(r))).collect();
                (names, form, at, rows)
            })
    })
}

fn header_line(names: &[&str], form: usize) -> String {
    let cells = names.join(" | ");
    match form {
        0 => format!("| {cells} |"),
        1 => cells,
        _ => format!("Lab {cells} |"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A secret in any cell of a row that could sit under the secret column is masked,
    /// whatever the header's form and however many cells the row left out.
    #[test]
    fn a_cell_that_could_sit_under_a_secret_column_is_masked(
        (names, form, at, rows) in ragged_table(true),
    ) {
        let k = names.len();
        let mut text = header_line(&names, form);
        let mut planted = Vec::new();
        for (n, (r, pick)) in rows.iter().enumerate() {
            // The cells this row's cells could sit under the secret column from.
            let first = at.saturating_sub(k - r);
            let last = at.min(r - 1);
            let j = first + pick % (last - first + 1);
            let secret = format!("Zq{n}x-Kx81");
            let cells: Vec<String> = (0..*r)
                .map(|i| if i == j { secret.clone() } else { PLAIN_VALUES[(i + n) % PLAIN_VALUES.len()].to_owned() })
                .collect();
            text.push_str(&format!("\n| {} |", cells.join(" | ")));
            planted.push(secret);
        }
        let out = redact_text(&text);
        for secret in &planted {
            prop_assert!(!out.contains(secret.as_str()), "{} survived:\n{}\n→\n{}", secret, text, out);
        }
    }

    /// The same tables with no secret column, ragged or shifted, stay exactly as written.
    #[test]
    fn ragged_tables_without_a_secret_column_stay(
        (names, form, _at, rows) in ragged_table(false),
    ) {
        let mut text = header_line(&names, form);
        for (n, (r, _)) in rows.iter().enumerate() {
            let cells: Vec<&str> = (0..*r).map(|i| PLAIN_VALUES[(i + n) % PLAIN_VALUES.len()]).collect();
            text.push_str(&format!("\n| {} |", cells.join(" | ")));
        }
        prop_assert_eq!(redact_text(&text), text);
    }
}
