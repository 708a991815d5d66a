//! Known-answer tables for redaction: every row is an input and the exact output expected, so a
//! rule that is weakened or removed turns a named row red. Idempotence is checked over every
//! row, and a property test covers arbitrary JSON.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fleetwatch_protocol::redact::{MASK, is_secret_key, redact_text, redact_value};
use proptest::prelude::*;
use serde_json::{Value, json};

const UUID: &str = "3f2b9c1e-8a7d-4e6f-9b0a-1c2d3e4f5a6b";

/// A text row: name, input, exact expected output.
type TextRow = (&'static str, &'static str, &'static str);

const TEXT_ROWS: &[TextRow] = &[
    // --- stream URLs keep scheme and host(:port), mask path, query and user info
    (
        "rtmp_path_masked",
        "rtmp://live.example.com/app/abcd-1234-efgh",
        "rtmp://live.example.com/[redacted]",
    ),
    (
        "rtmps_port_kept",
        "rtmps://ingest.example.net:443/live/sk_9f8e7d",
        "rtmps://ingest.example.net:443/[redacted]",
    ),
    (
        "srt_query_masked",
        "srt://srt.example.org:9000?streamid=publish/live/abc&passphrase=hunter22",
        "srt://srt.example.org:9000?[redacted]",
    ),
    (
        "rtsp_user_info_and_path",
        "rtsp://admin:hunter2@10.0.0.5:554/stream1",
        "rtsp://[redacted]@10.0.0.5:554/[redacted]",
    ),
    (
        "rist_query_masked",
        "rist://203.0.113.9:5000?secret=abc",
        "rist://203.0.113.9:5000?[redacted]",
    ),
    (
        "rtmp_path_and_query",
        "rtmp://live.example.com/live/key1?auth=xyz",
        "rtmp://live.example.com/[redacted]?[redacted]",
    ),
    (
        "rtmp_fragment_masked",
        "rtmp://live.example.com/app#frag",
        "rtmp://live.example.com/[redacted]#[redacted]",
    ),
    (
        "rtmp_host_only_unchanged",
        "rtmp://live.example.com",
        "rtmp://live.example.com",
    ),
    (
        "rtmp_root_slash_unchanged",
        "rtmp://live.example.com/",
        "rtmp://live.example.com/",
    ),
    (
        "upper_case_scheme",
        "RTMP://Live.Example.com/App/Key",
        "RTMP://Live.Example.com/[redacted]",
    ),
    (
        "prefixed_scheme_cannot_dodge",
        "xrtmp://live.example.com/k",
        "xrtmp://live.example.com/[redacted]",
    ),
    (
        "ipv6_host_kept",
        "rtmp://[2001:db8::1]:1935/live/k",
        "rtmp://[2001:db8::1]:1935/[redacted]",
    ),
    (
        "url_inside_sentence",
        "Publishing to rtmp://a.example.com/live/KEY123 failed: timeout",
        "Publishing to rtmp://a.example.com/[redacted] failed: timeout",
    ),
    (
        "url_in_markdown_link_eats_paren",
        "[watch](rtmp://a.example.com/live/k)",
        "[watch](rtmp://a.example.com/[redacted]",
    ),
    (
        "two_urls_one_line",
        "primary rtmp://a.example.com/x/1 backup srt://b.example.com:7001?streamid=2",
        "primary rtmp://a.example.com/[redacted] backup srt://b.example.com:7001?[redacted]",
    ),
    // --- web URLs
    (
        "https_user_info_dropped",
        "https://alice:pw123@portal.example.com/dashboard",
        "https://portal.example.com/dashboard",
    ),
    (
        "https_query_masked",
        "https://portal.example.com/devices?page=2&sig=abc",
        "https://portal.example.com/devices?[redacted]",
    ),
    (
        "https_ingest_path_masked",
        "https://ingest.example.com/live/abcd1234",
        "https://ingest.example.com/[redacted]",
    ),
    (
        "https_whip_path_masked",
        "https://media.example.com/whip/endpoint/9f8e",
        "https://media.example.com/[redacted]",
    ),
    (
        "https_app_segment_masked",
        "http://10.1.2.3:8080/app/room7",
        "http://10.1.2.3:8080/[redacted]",
    ),
    (
        "https_plain_path_kept",
        "https://docs.example.com/guides/pearl-2/recording",
        "https://docs.example.com/guides/pearl-2/recording",
    ),
    (
        "https_fragment_masked",
        "https://app.example.com/cb#access_token=xyz",
        "https://app.example.com/cb#[redacted]",
    ),
    (
        "wss_query_masked",
        "wss://events.example.com/feed?token=abc",
        "wss://events.example.com/feed?[redacted]",
    ),
    (
        "other_scheme_user_info_masked",
        "ftp://user:pw@files.example.com/pub",
        "ftp://[redacted]@files.example.com/pub",
    ),
    (
        "other_scheme_query_masked",
        "smb://files.example.com/share?ticket=abc",
        "smb://files.example.com/share?[redacted]",
    ),
    (
        "url_in_json_text",
        r#"{"url":"rtmp://a.example.com/live/k1"}"#,
        r#"{"url":"rtmp://a.example.com/[redacted]"}"#,
    ),
    // --- name/value assignments in text
    (
        "equals_stream_key",
        "stream_key=abc123",
        "stream_key=[redacted]",
    ),
    (
        "colon_two_word_name",
        "Stream key: live_abc123",
        "Stream key: [redacted]",
    ),
    (
        "streaming_key_phrase",
        "Streaming key = 9f8e-7d6c",
        "Streaming key = [redacted]",
    ),
    (
        "json_text_string_value",
        r#"{"password": "hunter2", "user": "ops"}"#,
        r#"{"password": "[redacted]", "user": "ops"}"#,
    ),
    (
        "json_text_number_value_stays_json",
        r#"{"api_key": 12345, "n": 1}"#,
        r#"{"api_key": "[redacted]", "n": 1}"#,
    ),
    (
        "json_text_null_kept",
        r#"{"token": null}"#,
        r#"{"token": null}"#,
    ),
    (
        "json_text_nested_object_left_to_members",
        r#"{"credentials": {"user": "a", "pass": "b"}}"#,
        r#"{"credentials": {"user": "a", "pass": "[redacted]"}}"#,
    ),
    (
        "escaped_json_inside_string",
        r#"{\"stream_key\":\"abc\",\"n\":1}"#,
        r#"{\"stream_key\":\"[redacted]\",\"n\":1}"#,
    ),
    (
        "query_string_pairs",
        "a=1&token=xyz&b=2",
        "a=1&token=[redacted]&b=2",
    ),
    (
        "several_pairs_one_line",
        "user=ops password=hunter2 host=pearl-7",
        "user=ops password=[redacted] host=pearl-7",
    ),
    (
        "single_quoted_value",
        "passphrase='correct horse'",
        "passphrase='[redacted]'",
    ),
    (
        "header_x_api_key",
        "X-Api-Key: 0123abcd",
        "X-Api-Key: [redacted]",
    ),
    (
        "client_secret_form",
        "client_secret=s3cr3t&grant_type=client_credentials",
        "client_secret=[redacted]&grant_type=client_credentials",
    ),
    ("camel_api_key", "apiKey=AIzaXYZ", "apiKey=[redacted]"),
    ("passwd", "passwd=abc", "passwd=[redacted]"),
    (
        "refresh_token_colon",
        "refresh_token: r-1",
        "refresh_token: [redacted]",
    ),
    (
        "value_with_colon_masked_whole",
        "credentials=alice:pw",
        "credentials=[redacted]",
    ),
    (
        "key_naming_a_secret_is_a_label",
        "key: stream_key",
        "key: stream_key",
    ),
    ("empty_value_unchanged", "password=", "password="),
    (
        "value_on_next_line_not_reached",
        "password:\nhunter2",
        "password:\nhunter2",
    ),
    ("key_alone_is_secret", "Key: West", "Key: [redacted]"),
    // --- Bearer / Basic
    (
        "authorization_bearer",
        "Authorization: Bearer abc.def.ghi",
        "Authorization: Bearer [redacted]",
    ),
    (
        "authorization_basic",
        "authorization=Basic dXNlcjpwYXNz",
        "authorization=Basic [redacted]",
    ),
    (
        "bare_bearer_in_sentence",
        "sent Bearer 4f9a8b7c6d5e in header",
        "sent Bearer [redacted] in header",
    ),
    ("bare_basic", "Basic YWxpY2U6czNjcmV0", "Basic [redacted]"),
    (
        "bearer_prose_unchanged",
        "She was a bearer of good news.",
        "She was a bearer of good news.",
    ),
    (
        "basic_prose_unchanged",
        "Basic information about the room",
        "Basic information about the room",
    ),
    // --- key shapes
    (
        "anthropic_key",
        "using sk-ant-api03-AbC_dEf-123 now",
        "using [redacted] now",
    ),
    (
        "jwt",
        "got eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-abc today",
        "got [redacted] today",
    ),
    // --- unchanged: errors, look-alikes, IDs, non-ASCII, masks
    (
        "in_band_401_unchanged",
        "Error: 401 Unauthorized",
        "Error: 401 Unauthorized",
    ),
    ("device_named_401", "401 Unauthorized", "401 Unauthorized"),
    (
        "unauthorized_token_expired",
        "Error: 401 Unauthorized: token expired",
        "Error: 401 Unauthorized: token expired",
    ),
    ("keyboard", "keyboard: connected", "keyboard: connected"),
    ("monkey", "monkey=3", "monkey=3"),
    ("hotkey", "hotkey: F5", "hotkey: F5"),
    ("turkey", "Turkey: roasted", "Turkey: roasted"),
    (
        "keynote_with_time",
        "Keynote starts at 10:30",
        "Keynote starts at 10:30",
    ),
    (
        "keynote_title_colon",
        "Keynote: Budget review",
        "Keynote: Budget review",
    ),
    (
        "token_ring_prose",
        "The token ring network was retired",
        "The token ring network was retired",
    ),
    (
        "key_west_room",
        "Key West: Room 4 is ready",
        "Key West: Room 4 is ready",
    ),
    (
        "quoted_key_west_room",
        r#"Room "Key West": ready"#,
        r#"Room "Key West": ready"#,
    ),
    ("keys_count", "keys_count=4", "keys_count=4"),
    (
        "keyframe_interval",
        "keyframe_interval=2",
        "keyframe_interval=2",
    ),
    ("key_frame", "key_frame: 60", "key_frame: 60"),
    (
        "state_time",
        "StateTime: 2026-09-24T20:08Z",
        "StateTime: 2026-09-24T20:08Z",
    ),
    ("channel_id", "19012341234-1", "19012341234-1"),
    ("uuid", UUID, UUID),
    ("event_id", "evt_2026-ABC", "evt_2026-ABC"),
    (
        "non_ascii_unchanged",
        "Sala de conferencias — cámara 2 está grabando 🎥 会议室",
        "Sala de conferencias — cámara 2 está grabando 🎥 会议室",
    ),
    (
        "non_ascii_around_secret",
        "clé rtmp://a.example.com/ключ/ñ fin",
        "clé rtmp://a.example.com/[redacted] fin",
    ),
    (
        "already_masked_pair",
        "stream_key=[redacted]",
        "stream_key=[redacted]",
    ),
    (
        "already_masked_url",
        "rtmp://[redacted]@live.example.com/[redacted]?[redacted]",
        "rtmp://[redacted]@live.example.com/[redacted]?[redacted]",
    ),
    (
        "already_masked_bearer",
        "Bearer [redacted]",
        "Bearer [redacted]",
    ),
    (
        "masked_key_exposes_url_behind_it",
        "sk-ant-abc://rtmp://h.example.com/x",
        "[redacted]://rtmp://h.example.com/[redacted]",
    ),
    (
        "jwt_mask_exposes_url_behind_it",
        "eyJhbGciOiJIUzI1NiJ9.h.example.comhttps://rtmp://https://",
        "[redacted]://rtmp://https:/[redacted]",
    ),
    ("empty", "", ""),
];

/// A JSON row: name, input, exact expected output.
fn json_rows() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "device_list_publisher_settings",
            json!({"devices": [{
                "Id": "19012341234", "Name": "Key West", "Model": "Pearl-2",
                "GroupId": UUID, "GroupName": "Campus", "Firmware": "4.24.6",
                "Status": "online", "StateTime": "2026-09-24T20:08Z",
                "Channels": [{
                    "channel_id": "1", "name": "Main",
                    "recording_status": {"state": "recording", "timestamp": "1790000000", "description": ""},
                    "Publishers": [{
                        "type": "rtmp", "status": {"state": "started"},
                        "settings": [
                            {"id": "url", "type": {"name": "string"}, "title": "URL", "value": "rtmp://live.example.com/app"},
                            {"id": "key", "type": {"name": "string"}, "title": "Stream key", "value": "abcd-efgh-ijkl"}
                        ]
                    }]
                }]
            }]}),
            json!({"devices": [{
                "Id": "19012341234", "Name": "Key West", "Model": "Pearl-2",
                "GroupId": UUID, "GroupName": "Campus", "Firmware": "4.24.6",
                "Status": "online", "StateTime": "2026-09-24T20:08Z",
                "Channels": [{
                    "channel_id": "1", "name": "Main",
                    "recording_status": {"state": "recording", "timestamp": "1790000000", "description": ""},
                    "Publishers": [{
                        "type": "rtmp", "status": {"state": "started"},
                        "settings": [
                            {"id": "url", "type": {"name": "string"}, "title": "URL", "value": "rtmp://live.example.com/[redacted]"},
                            {"id": "key", "type": {"name": "string"}, "title": "Stream key", "value": "[redacted]"}
                        ]
                    }]
                }]
            }]}),
        ),
        (
            "srt_publisher_passphrase_setting",
            json!({"type": "srt", "settings": [
                {"id": "passphrase", "type": {"name": "password"}, "title": "Passphrase", "value": "longsecret99"},
                {"id": "latency", "type": {"name": "int"}, "title": "Latency", "value": 120},
                {"id": "url", "type": {"name": "string"}, "title": "URL", "value": "srt://srt.example.org:9000?streamid=abc"}
            ]}),
            json!({"type": "srt", "settings": [
                {"id": "passphrase", "type": {"name": "password"}, "title": "Passphrase", "value": "[redacted]"},
                {"id": "latency", "type": {"name": "int"}, "title": "Latency", "value": 120},
                {"id": "url", "type": {"name": "string"}, "title": "URL", "value": "srt://srt.example.org:9000?[redacted]"}
            ]}),
        ),
        (
            "setting_title_with_remark",
            json!({"id": "opt7", "title": "Stream key (optional)", "value": "zzz"}),
            json!({"id": "opt7", "title": "Stream key (optional)", "value": "[redacted]"}),
        ),
        (
            "name_value_pair",
            json!({"name": "api_key", "value": "abc"}),
            json!({"name": "api_key", "value": "[redacted]"}),
        ),
        (
            "key_value_pair_keeps_label",
            json!({"key": "stream_key", "value": "abc"}),
            json!({"key": "stream_key", "value": "[redacted]"}),
        ),
        (
            "key_value_pair_ordinary_setting",
            json!({"key": "resolution", "value": "1080p"}),
            json!({"key": "resolution", "value": "1080p"}),
        ),
        (
            "pair_value_object_replaced_whole",
            json!({"title": "Credentials", "value": {"user": "a", "pw": "b"}}),
            json!({"title": "Credentials", "value": "[redacted]"}),
        ),
        (
            "pair_value_null_kept",
            json!({"id": "streamkey", "value": null}),
            json!({"id": "streamkey", "value": null}),
        ),
        (
            "pair_label_not_secret",
            json!({"id": "bitrate", "title": "Bitrate", "value": "6000"}),
            json!({"id": "bitrate", "title": "Bitrate", "value": "6000"}),
        ),
        (
            "stream_endpoints_result",
            json!({"stream_endpoints": [
                {"id": UUID, "name": "Main hall", "url": "rtmp://a.rtmp.example.com/live2/xxxx-yyyy", "stream_key": "xxxx-yyyy"},
                {"id": UUID, "name": "Backup", "url": "rtmps://b.example.com:443/app?key=q", "streamKey": "qqq"}
            ]}),
            json!({"stream_endpoints": [
                {"id": UUID, "name": "Main hall", "url": "rtmp://a.rtmp.example.com/[redacted]", "stream_key": "[redacted]"},
                {"id": UUID, "name": "Backup", "url": "rtmps://b.example.com:443/[redacted]?[redacted]", "streamKey": "[redacted]"}
            ]}),
        ),
        (
            "nested_object_under_secret_replaced_whole",
            json!({"credentials": {"user": "a", "password": "b"}, "ok": true}),
            json!({"credentials": "[redacted]", "ok": true}),
        ),
        (
            "array_under_secret_replaced_whole",
            json!({"api_keys": ["a", "b"]}),
            json!({"api_keys": "[redacted]"}),
        ),
        (
            "scalars_under_secret_masked",
            json!({"password": true, "access_token": 1234, "Authorization": "Bearer abc"}),
            json!({"password": "[redacted]", "access_token": "[redacted]", "Authorization": "[redacted]"}),
        ),
        (
            "null_under_secret_kept",
            json!({"stream_key": null}),
            json!({"stream_key": null}),
        ),
        (
            "key_alone_masked",
            json!({"key": "abc123"}),
            json!({"key": "[redacted]"}),
        ),
        (
            "stream_id_uuid_kept",
            json!({"stream_id": UUID}),
            json!({"stream_id": UUID}),
        ),
        (
            "stream_id_not_uuid_masked",
            json!({"stream_id": "live_abc123", "streamId": "x", "publisher_stream_id": 7, "StreamID": null}),
            json!({"stream_id": "[redacted]", "streamId": "[redacted]", "publisher_stream_id": "[redacted]", "StreamID": null}),
        ),
        (
            "stream_ids_elementwise",
            json!({"stream_ids": [UUID, "abc"]}),
            json!({"stream_ids": [UUID, "[redacted]"]}),
        ),
        (
            "proposal_batch_recording",
            json!({"action": "stop", "device_ids": ["19012341234-1"]}),
            json!({"action": "stop", "device_ids": ["19012341234-1"]}),
        ),
        (
            "proposal_stream_endpoint",
            json!({"stream_id": UUID, "device_id": "19012341234", "channel_id": "2"}),
            json!({"stream_id": UUID, "device_id": "19012341234", "channel_id": "2"}),
        ),
        (
            "proposal_confirm_event",
            json!({"device_id": "19012341234", "event_id": "evt_2026-ABC"}),
            json!({"device_id": "19012341234", "event_id": "evt_2026-ABC"}),
        ),
        (
            "proposal_reboot",
            json!({"device_ids": ["19012341234"]}),
            json!({"device_ids": ["19012341234"]}),
        ),
        (
            "look_alike_member_names",
            json!({"Id": "19012341234", "GroupId": UUID, "keyframe_interval": 2, "key_frame": true,
                   "hotkey": "F5", "monkey": "x", "keyboard": "us", "keys_count": 3, "key_id": "k1",
                   "TeamId": "t-1", "Keynote": "yes"}),
            json!({"Id": "19012341234", "GroupId": UUID, "keyframe_interval": 2, "key_frame": true,
                   "hotkey": "F5", "monkey": "x", "keyboard": "us", "keys_count": 3, "key_id": "k1",
                   "TeamId": "t-1", "Keynote": "yes"}),
        ),
        (
            "in_band_401_error_result",
            json!({"isError": true, "content": [{"type": "text", "text": "Error: 401 Unauthorized"}]}),
            json!({"isError": true, "content": [{"type": "text", "text": "Error: 401 Unauthorized"}]}),
        ),
        (
            "text_member_with_url",
            json!({"message": "push to rtmp://h.example.com/live/k failed"}),
            json!({"message": "push to rtmp://h.example.com/[redacted] failed"}),
        ),
        (
            "member_name_holding_url",
            json!({"rtmp://h.example.com/live/k": 1}),
            json!({"rtmp://h.example.com/[redacted]": 1}),
        ),
        (
            "warnings_unchanged",
            json!({"Warnings": [{"id": "disk_space_error", "data": {}, "label": "Disk", "message": "Disk almost full"}]}),
            json!({"Warnings": [{"id": "disk_space_error", "data": {}, "label": "Disk", "message": "Disk almost full"}]}),
        ),
        (
            "recorder_status_unchanged",
            json!({"devices": {"19012341234": {"channels": {"1": {"name": "Key West", "recording_status": {"state": "recording"}}}}}}),
            json!({"devices": {"19012341234": {"channels": {"1": {"name": "Key West", "recording_status": {"state": "recording"}}}}}}),
        ),
        (
            "cms_event_titles_unchanged",
            json!({"devices": {"19012341234": {"event": {"id": "evt-1", "title": "Keynote: token economics", "start": "2026-09-24T20:00:00Z", "end": "2026-09-24T21:00:00Z"}}}}),
            json!({"devices": {"19012341234": {"event": {"id": "evt-1", "title": "Keynote: token economics", "start": "2026-09-24T20:00:00Z", "end": "2026-09-24T21:00:00Z"}}}}),
        ),
        (
            "bare_device_list",
            json!([{"Id": "19012341234", "Name": "Aula Magna ñ", "Status": "offline", "Channels": []}]),
            json!([{"Id": "19012341234", "Name": "Aula Magna ñ", "Status": "offline", "Channels": []}]),
        ),
        (
            "token_names_mask_counts_too",
            json!({"token_type": "Bearer", "input_tokens": 12, "expires_in": 3600}),
            json!({"token_type": "[redacted]", "input_tokens": "[redacted]", "expires_in": 3600}),
        ),
        (
            "name_holding_secret_text",
            json!({"Name": "Room 5 password=hunter2", "Model": "Pearl Mini"}),
            json!({"Name": "Room 5 password=[redacted]", "Model": "Pearl Mini"}),
        ),
        (
            "anthropic_key_in_any_string",
            json!(["sk-ant-api03-XYZ", "ok"]),
            json!(["[redacted]", "ok"]),
        ),
        (
            "scalars_untouched",
            json!([1, 2.5, true, null, "plain"]),
            json!([1, 2.5, true, null, "plain"]),
        ),
    ]
}

/// Member names and whether they name a secret.
const NAME_ROWS: &[(&str, bool)] = &[
    ("stream key", true),
    ("streaming key", true),
    ("streamkey", true),
    ("stream_key", true),
    ("StreamKey", true),
    ("stream-key", true),
    ("STREAM_KEY", true),
    ("key", true),
    ("Key", true),
    ("keys", true),
    ("api key", true),
    ("api_key", true),
    ("apiKey", true),
    ("APIKey", true),
    ("x-api-key", true),
    ("secret_key", true),
    ("private key", true),
    ("privateKey", true),
    ("stream_key_2", true),
    ("key_value", true),
    ("password", true),
    ("Password", true),
    ("admin_password", true),
    ("passwd", true),
    ("passphrase", true),
    ("pass", true),
    ("pwd", true),
    ("secret", true),
    ("client_secret", true),
    ("clientSecret", true),
    ("token", true),
    ("access_token", true),
    ("refresh_token", true),
    ("accesstoken", true),
    ("authorization", true),
    ("Authorization", true),
    ("credential", true),
    ("credentials", true),
    ("basic_auth", true),
    ("session_cookie", true),
    ("Id", false),
    ("id", false),
    ("device_id", false),
    ("channel_id", false),
    ("GroupId", false),
    ("event_id", false),
    ("stream_id", false),
    ("keyframe_interval", false),
    ("keyframe", false),
    ("key_frame", false),
    ("KeyFrame", false),
    ("key_id", false),
    ("key_name", false),
    ("keys_count", false),
    ("keyboard", false),
    ("monkey", false),
    ("hotkey", false),
    ("turkey", false),
    ("donkey", false),
    ("Keynote", false),
    ("Key West", false),
    ("bypass", false),
    ("passthrough", false),
    ("auth_type", false),
    ("name", false),
    ("url", false),
    ("unauthorized", false),
    ("", false),
];

#[test]
fn text_rows_give_exact_output() {
    let failures: Vec<String> = TEXT_ROWS
        .iter()
        .filter_map(|(name, input, expected)| {
            let got = redact_text(input);
            (got != *expected).then(|| format!("{name}: {input:?} -> {got:?}, want {expected:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn text_rows_are_idempotent() {
    for (name, input, _) in TEXT_ROWS {
        let once = redact_text(input);
        assert_eq!(redact_text(&once), once, "{name}");
    }
}

#[test]
fn text_row_names_are_unique_and_plenty() {
    let mut names: Vec<&str> = TEXT_ROWS.iter().map(|r| r.0).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), TEXT_ROWS.len());
    assert!(TEXT_ROWS.len() + json_rows().len() >= 60);
}

#[test]
fn json_rows_give_exact_output() {
    let failures: Vec<String> = json_rows()
        .into_iter()
        .filter_map(|(name, mut input, expected)| {
            redact_value(&mut input);
            (input != expected).then(|| format!("{name}: got {input}, want {expected}"))
        })
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn json_rows_are_idempotent() {
    for (name, mut value, _) in json_rows() {
        redact_value(&mut value);
        let once = value.clone();
        redact_value(&mut value);
        assert_eq!(value, once, "{name}");
    }
}

#[test]
fn secret_names() {
    let failures: Vec<String> = NAME_ROWS
        .iter()
        .filter(|(name, want)| is_secret_key(name) != *want)
        .map(|(name, want)| format!("{name:?}: want {want}"))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_secret_name_masks_its_value_in_json_and_text() {
    for (name, secret) in NAME_ROWS.iter().filter(|r| r.1) {
        let mut value = json!({ *name: "Zq7-planted-42" });
        redact_value(&mut value);
        assert_eq!(
            value,
            json!({ *name: MASK }),
            "json {name:?} (secret: {secret})"
        );
        let text = redact_text(&format!("{name}=Zq7-planted-42"));
        assert!(!text.contains("Zq7-planted-42"), "text {name:?}: {text}");
    }
}

/// Long repetitive inputs that once made a rule rescan the rest of the text at every word. The
/// assertions are about output; a quadratic rule shows up as this test taking minutes.
#[test]
fn long_repetitive_inputs() {
    let rows: &[(&str, &str)] = &[
        ("sk-ant-", MASK),
        ("rtmp://u:p@h/", "rtmp://[redacted]@h/[redacted]"),
        ("password=", "password=[redacted]"),
    ];
    for (unit, want) in rows {
        assert_eq!(redact_text(&unit.repeat(20_000)), *want, "{unit}");
    }
    for unit in [
        "eyJ.",
        "Basic a.",
        "basic.",
        "a:",
        "\"x\":",
        "[redacted]",
        "Bearer ",
    ] {
        let big = unit.repeat(20_000);
        assert_eq!(redact_text(&big), big, "{unit}");
    }
}

/// Strings built from fragments that exercise every rule and the seams between them.
fn tricky_string() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("rtmp://".to_owned()),
        Just("https://".to_owned()),
        Just("srt://".to_owned()),
        Just("u:p@".to_owned()),
        Just("h.example.com".to_owned()),
        Just("/live/".to_owned()),
        Just("?".to_owned()),
        Just("#".to_owned()),
        Just("key".to_owned()),
        Just("stream_key".to_owned()),
        Just("password".to_owned()),
        Just("token".to_owned()),
        Just("Bearer ".to_owned()),
        Just("Basic ".to_owned()),
        Just("abc123XYZ456".to_owned()),
        Just("sk-ant-".to_owned()),
        Just("eyJhbGciOiJIUzI1NiJ9.".to_owned()),
        Just(MASK.to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(": ".to_owned()),
        Just("=".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("\\\"".to_owned()),
        Just("\\".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("&".to_owned()),
        Just("{".to_owned()),
        Just("null".to_owned()),
        Just("ñ会\u{202E}\u{200B}".to_owned()),
        "[a-zA-Z0-9:/@?#=._ -]{0,6}",
        any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ];
    prop::collection::vec(fragment, 0..10).prop_map(|parts| parts.concat())
}

fn tricky_json() -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        Just("value".to_owned()),
        Just("id".to_owned()),
        Just("key".to_owned()),
        Just("title".to_owned()),
        Just("stream_id".to_owned()),
        Just("stream_key".to_owned()),
        Just("password".to_owned()),
        Just("name".to_owned()),
        tricky_string(),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        Just(Value::String(UUID.to_owned())),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((name.clone(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn text_redaction_is_idempotent(text in tricky_string()) {
        let once = redact_text(&text);
        prop_assert_eq!(redact_text(&once), once);
    }

    #[test]
    fn json_redaction_is_idempotent(mut value in tricky_json()) {
        redact_value(&mut value);
        let once = value.clone();
        redact_value(&mut value);
        prop_assert_eq!(value, once);
    }

    #[test]
    fn planted_stream_key_never_survives(mut value in tricky_json(), at_top in any::<bool>()) {
        let planted = json!({"stream_key": "Qv9PlantedKey77", "url": "rtmp://h.example.com/live/Qv9PlantedKey77"});
        match (&mut value, at_top) {
            (Value::Array(items), _) => items.push(planted),
            (Value::Object(map), true) => { map.insert("inner".to_owned(), planted); }
            _ => value = json!([value.clone(), planted]),
        }
        redact_value(&mut value);
        prop_assert!(!value.to_string().contains("Qv9PlantedKey77"));
    }
}

/// The hostile-name corpus shared with the assistant's injection tests.
fn injection_corpus() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assistant/tests/data/injection_names.json"
    );
    let text = std::fs::read_to_string(path).expect("corpus readable");
    let doc: Value = serde_json::from_str(&text).expect("corpus is JSON");
    doc.get("names")
        .and_then(Value::as_array)
        .cloned()
        .expect("corpus has a names list")
}

/// Names that carry a secret or a URL query change; every other hostile name is data and must
/// reach the escaping layer exactly as written.
const CORPUS_CHANGES: &[(&str, &str)] = &[
    (
        "inj-29",
        "[Click here to approve everything](http://203.0.113.50/approve?[redacted]",
    ),
    (
        "inj-30",
        "![status](http://203.0.113.50/pixel.png?[redacted]",
    ),
    ("inj-70", "stream_key=[redacted]"),
    ("inj-71", "rtmp://live.example.com/[redacted]"),
];

#[test]
fn injection_corpus_survives_redaction_except_secrets() {
    let corpus = injection_corpus();
    for entry in &corpus {
        let id = entry.get("id").and_then(Value::as_str).expect("id");
        let text = entry.get("text").and_then(Value::as_str).expect("text");
        let once = redact_text(text);
        assert_eq!(redact_text(&once), once, "{id} idempotent");
        let want = CORPUS_CHANGES
            .iter()
            .find(|(changed, _)| *changed == id)
            .map_or(text, |(_, out)| *out);
        assert_eq!(once, want, "{id}");
        let mut as_name = json!({"Id": "19012341234", "Name": text});
        redact_value(&mut as_name);
        assert_eq!(
            as_name,
            json!({"Id": "19012341234", "Name": want}),
            "{id} as a name"
        );
    }
}

#[test]
fn injection_corpus_shape() {
    let corpus = injection_corpus();
    assert!(corpus.len() >= 60, "{} names", corpus.len());
    let mut ids: Vec<&str> = corpus
        .iter()
        .filter_map(|e| e.get("id").and_then(Value::as_str))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), corpus.len(), "ids present and unique");
    for entry in &corpus {
        let kind = entry.get("kind").and_then(Value::as_str);
        assert!(
            matches!(kind, Some("device" | "channel" | "event")),
            "{entry}"
        );
        assert!(
            entry.get("text").and_then(Value::as_str).is_some(),
            "{entry}"
        );
    }
    assert!(
        corpus.iter().any(|e| e
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.chars().count() >= 2000)),
        "a very long name"
    );
    let raw: Vec<&str> = corpus
        .iter()
        .filter(|e| e.get("raw_json") == Some(&Value::Bool(true)))
        .filter_map(|e| e.get("raw").and_then(Value::as_str))
        .collect();
    assert!(raw.len() >= 3, "lone-surrogate entries");
    for body in raw {
        // The raw form must really be hostile: a strict parser refuses it inside a document.
        let doc = format!("{{\"Name\": \"{body}\"}}");
        assert!(serde_json::from_str::<Value>(&doc).is_err(), "{body}");
    }
}
