//! Known-answer tables for redaction: every row is an input and the exact output expected, so a
//! rule that is weakened or removed turns a named row red. Idempotence is checked over every
//! row, and a property test covers arbitrary JSON.

// Test code: a panic is the failure report.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use fleetwatch_redact::{MASK, is_secret_key, redact_text, redact_value};
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
        "json_text_nested_object_under_secret_replaced_whole",
        r#"{"credentials": {"user": "a", "pass": "b"}}"#,
        r#"{"credentials":"[redacted]"}"#,
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
            json!({"pin": 4321, "access_token": 1234, "Authorization": "Bearer abc"}),
            json!({"pin": "[redacted]", "access_token": "[redacted]", "Authorization": "[redacted]"}),
        ),
        (
            "null_under_secret_kept",
            json!({"stream_key": null}),
            json!({"stream_key": null}),
        ),
        (
            // A flag says whether, never what: it can hold no secret.
            "booleans_under_secret_kept",
            json!({"password": true, "token": false, "stream_key": [true]}),
            json!({"password": true, "token": false, "stream_key": "[redacted]"}),
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
    ("pin", true),
    ("device_pin", true),
    ("passcode", true),
    ("playpath", true),
    ("sig", true),
    ("otp", true),
    ("Contraseña", true),
    ("contrasena_admin", true),
    ("clave de transmisión", true),
    ("Clave", true),
    ("clé de flux", true),
    ("mot de passe", true),
    ("Passwort", true),
    ("Kennwort", true),
    ("senha", true),
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
    ("spin", false),
    ("pinned", false),
    ("signal", false),
    ("passenger", false),
    ("compass", false),
    ("enclave", false),
    ("clavel", false),
    ("la clave del éxito en la sala", false),
    ("stream", false),
    ("session", false),
    ("sidebar", false),
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

/// The text forms at length: units that once made a rule read to the end of the text from
/// every label, brace or separator. Each must come out a fixed point; a rule gone quadratic
/// shows up as this test taking minutes.
#[test]
fn long_repetitive_text_forms() {
    let units: &[(&str, usize)] = &[
        ("{\"a\":", 20_000),
        ("{\"a\":{\"b\":", 20_000),
        ("{\"", 20_000),
        ("[{\"name\":\"Stream key\",\"value\":\"x\"},", 2_000),
        ("name=Stream key value=", 20_000),
        ("key: ", 20_000),
        ("stream: x ", 20_000),
        ("label=\"", 20_000),
        ("stream_id='", 20_000),
        ("| a | key |\n|---|---|\n", 20_000),
        ("a,key\n", 20_000),
        ("\\/", 20_000),
        ("%2F", 20_000),
        ("&amp;", 20_000),
        ("hooks.a/", 20_000),
        ("rtmp:\\/\\/", 20_000),
        ("[redacted]:", 20_000),
        ("password=[redacted] ", 20_000),
        ("https://h/[redacted]/", 20_000),
        ("clave de ", 20_000),
        ("(a) ", 20_000),
    ];
    for (unit, times) in units {
        let once = redact_text(&unit.repeat(*times));
        assert_eq!(redact_text(&once), once, "{unit}");
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
        Just("{\"".to_owned()),
        Just("\":\"".to_owned()),
        Just("\"}".to_owned()),
        Just("|".to_owned()),
        Just(",".to_owned()),
        Just("\t".to_owned()),
        Just("\\n".to_owned()),
        Just("\\/".to_owned()),
        Just("%2F".to_owned()),
        Just("&#x2F;".to_owned()),
        Just("\\u002F".to_owned()),
        Just("name".to_owned()),
        Just("value".to_owned()),
        Just("label".to_owned()),
        Just("pin".to_owned()),
        Just("stream".to_owned()),
        Just("session".to_owned()),
        Just("hooks.".to_owned()),
        Just("webhooks".to_owned()),
        Just("aB3dE5fG7hJ9kL1mN2pQ".to_owned()),
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

// ---------------------------------------------------------------------------------------------
// Every secret of the tables above, in every text form
//
// Secrets reach redaction written as text as often as under a member name: JSON text inside a
// name, `key=value` text, a table cell, a URL path, an escaped URL, behind a mask already
// there. Each form below is tried with every secret the rows above plant, inside generated
// surrounding text, as text and as a JSON string; the secret must be gone verbatim, escaped
// and with the escaping undone, and redacting twice must equal redacting once.

/// The secrets the rows above (and the hostile-name corpus) plant and expect masked. The two
/// tests after the list hold it to the rows: every entry is planted in a row and masked there,
/// and every token a row's redaction removes is either here or in [`NOT_SECRETS`].
const SECRETS: &[&str] = &[
    "0123abcd",
    "12345",
    "4f9a8b7c6d5e",
    "KEY123",
    "9f8e-7d6c",
    "AIzaXYZ",
    "YWxpY2U6czNjcmV0",
    "abc.def.ghi",
    "abc123",
    "abcd-1234-efgh",
    "abcd-efgh-ijkl",
    "abcd1234",
    "correct horse",
    "dXNlcjpwYXNz",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-abc",
    "eyJhbGciOiJIUzI1NiJ9.h.example.comhttps",
    "hunter2",
    "hunter22",
    "live_9f8e7d6c5b4a",
    "live_abc123",
    "longsecret99",
    "planted-key-001",
    "pw123",
    "room7",
    "s3cr3t",
    "sk-ant-abc",
    "sk-ant-api03-AbC_dEf-123",
    "sk-ant-api03-XYZ",
    "sk_9f8e7d",
    "xxxx-yyyy",
];

/// Tokens a row's redaction removes that are not secrets themselves, and why they go.
const NOT_SECRETS: &[(&str, &str)] = &[
    (
        "Bearer",
        "the scheme word of an Authorization value masked whole",
    ),
    ("admin", "the user name of masked user info"),
    ("alice", "the user name of dropped user info"),
    ("endpoint", "a word of an ingest path masked whole"),
    ("publish", "a word of an SRT stream ID masked whole"),
    ("live2", "a word of an ingest path masked whole"),
    ("stream1", "a word of a stream path masked whole"),
    ("streamid", "the parameter name of a masked query"),
    ("ticket", "the parameter name of a masked query"),
    ("system_prompt", "a template word in a masked query"),
    ("passphrase", "the parameter name of a masked query"),
    ("secret", "the parameter name of a masked query"),
    ("token", "the parameter name of a masked query"),
    ("access_token", "the parameter name of a masked fragment"),
    (
        "correct",
        "part of the passphrase `correct horse`, listed whole",
    ),
    (
        "horse",
        "part of the passphrase `correct horse`, listed whole",
    ),
];

/// The parts a row's text falls into when its secrets are read out of it.
fn row_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "/?#&=:,'\"@{}()[];|".contains(c))
        .filter(|t| t.chars().count() >= 5)
}

fn string_leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| string_leaves(v, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Every row as (input text, expected output): text rows, the string values of JSON rows
/// against the whole expected document, and the corpus names that change.
fn all_rows() -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = TEXT_ROWS
        .iter()
        .map(|(_, input, expected)| ((*input).to_owned(), (*expected).to_owned()))
        .collect();
    for (_, input, expected) in json_rows() {
        let mut leaves = Vec::new();
        string_leaves(&input, &mut leaves);
        let expected = expected.to_string();
        rows.extend(leaves.into_iter().map(|leaf| (leaf, expected.clone())));
    }
    let corpus = injection_corpus();
    for (id, want) in CORPUS_CHANGES {
        let text = corpus
            .iter()
            .find(|e| e.get("id").and_then(Value::as_str) == Some(id))
            .and_then(|e| e.get("text"))
            .and_then(Value::as_str)
            .expect("corpus entry");
        rows.push((text.to_owned(), (*want).to_owned()));
    }
    rows
}

#[test]
fn every_token_the_rows_mask_is_a_listed_secret_or_explained() {
    let mut unlisted = Vec::new();
    for (input, output) in all_rows() {
        for token in row_tokens(&input).filter(|t| !output.contains(t)) {
            let listed = SECRETS
                .iter()
                .any(|s| *s == token || s.split_whitespace().any(|part| part == token));
            if !listed && !NOT_SECRETS.iter().any(|(word, _)| *word == token) {
                unlisted.push(format!("{token:?} (from {input:?})"));
            }
        }
    }
    assert!(unlisted.is_empty(), "\n{}", unlisted.join("\n"));
}

#[test]
fn every_listed_secret_is_planted_in_a_row_and_masked_there() {
    let rows = all_rows();
    for secret in SECRETS {
        assert!(
            rows.iter()
                .any(|(input, output)| input.contains(secret) && !output.contains(secret)),
            "{secret:?} is planted and masked in no row"
        );
    }
}

/// Every name of the name table that is secret, and the names only text forms use.
fn form_secret_names() -> Vec<&'static str> {
    NAME_ROWS
        .iter()
        .filter(|(_, secret)| *secret)
        .map(|(name, _)| *name)
        .chain([
            "pin",
            "PIN",
            "passcode",
            "playpath",
            "sig",
            "otp",
            "Set-Cookie",
        ])
        .collect()
}

/// Names that are secret in text only: not JSON members, and not before a bare word.
const TEXT_ONLY_NAMES: &[&str] = &["stream", "Stream", "session", "sid", "sessionid"];

/// Settings labels that name a secret.
const SECRET_LABELS: &[&str] = &[
    "Stream key",
    "Password",
    "API token",
    "Passphrase",
    "Secret",
    "Stream key (optional)",
    "streamkey",
    "PIN",
    "RTMP key",
];

/// Words and phrases around a planted form: look-alikes, IDs, masks, punctuation.
const AROUND: &[&str] = &[
    "Room 4",
    "Aula Magna ñ",
    "Sala 3 — cámara 2",
    "keyboard",
    "monkey",
    "hotkey: F5",
    "a bearer of good news",
    "All checks passed",
    "key points",
    "Keynote Hall",
    "note",
    "status ok",
    "会议室",
    "🎥",
    "[redacted]",
    "(",
    ")",
    "—",
    "Error: 401 Unauthorized",
    "see",
    "Pearl-2",
    "19012341234",
    "-",
    ".",
    "!",
];

#[derive(Clone, Copy, Debug)]
enum Form {
    JsonText,
    KeyValue,
    TableCell,
    UrlPath,
    EscapedUrl,
    AfterMarker,
    Prose,
}

const FORMS: &[Form] = &[
    Form::JsonText,
    Form::KeyValue,
    Form::TableCell,
    Form::UrlPath,
    Form::EscapedUrl,
    Form::AfterMarker,
    Form::Prose,
];

/// What a form is written with: a secret name, a text-only name and a settings label.
struct Names<'a> {
    name: &'a str,
    text_name: &'a str,
    label: &'a str,
}

impl Form {
    fn variants(self) -> usize {
        match self {
            Form::JsonText => 10,
            Form::KeyValue => 15,
            Form::TableCell => 13,
            Form::UrlPath => 13,
            Form::EscapedUrl => 11,
            Form::AfterMarker => 11,
            Form::Prose => 12,
        }
    }

    /// Tables need their own lines; every other form sits inside a line of text.
    fn joiner(self, variant: usize) -> &'static str {
        match (self, variant) {
            (Form::TableCell, 7) => "\\n",
            (Form::TableCell, _) => "\n",
            (Form::AfterMarker, 9) => "\n",
            _ => " ",
        }
    }

    fn render(self, variant: usize, secret: &str, n: &Names<'_>) -> String {
        let (name, text_name, label) = (n.name, n.text_name, n.label);
        let js = json_string(secret);
        let jn = json_string(name);
        let jl = json_string(label);
        // A secret with a space is quoted wherever text is cut at spaces, as writers do.
        let bare = if secret.contains(char::is_whitespace) {
            format!("\"{secret}\"")
        } else {
            secret.to_owned()
        };
        let p = percent_path(secret);
        let hook = "hooks.chat.example/services/T0ABCDEFG/B0HIJKLMN";
        match (self, variant) {
            (Form::JsonText, 0) => format!("{{{jn}:{js}}}"),
            (Form::JsonText, 1) => format!(r#"[{{"name":{jl},"value":{js}}}]"#),
            (Form::JsonText, 2) => {
                format!(r#"{{"id":"opt7","type":{{"name":"string"}},"title":{jl},"value":{js}}}"#)
            }
            (Form::JsonText, 3) => format!(r#"{{{jn}: {{"primary": {js}, "backup": "none"}}}}"#),
            (Form::JsonText, 4) => format!("{{{jn}: [{js}]}}"),
            (Form::JsonText, 5) => format!(r#"{{"streamId": {js}, "state": "started"}}"#),
            (Form::JsonText, 6) => {
                format!(r#"{{"settings":[{{"label":{jl},"value":{js}}}],"count":1}}"#)
            }
            (Form::JsonText, 7) => format!(r#"{{"value": {js}, "label": {jl}}}"#),
            (Form::JsonText, 8) => json_inner(&format!("{{{jn}:{js}}}")),
            (Form::JsonText, _) => json_inner(&format!(r#"[{{"name":{jl},"value":{js}}}]"#)),
            (Form::KeyValue, 0) => format!("{name}={bare}"),
            (Form::KeyValue, 1) => format!("{name}: {bare}"),
            (Form::KeyValue, 2) => format!("{name} = \"{secret}\""),
            (Form::KeyValue, 3) => format!("{name}: '{secret}'"),
            (Form::KeyValue, 4) => format!("\"{name}\": \"{secret}\""),
            (Form::KeyValue, 5) => format!("name={label} value={bare}"),
            (Form::KeyValue, 6) => format!("title: {label}, value: {bare}"),
            (Form::KeyValue, 7) => format!("\"label\": \"{label}\", \"value\": \"{secret}\""),
            (Form::KeyValue, 8) => format!("value={bare}; name={label}"),
            (Form::KeyValue, 9) => format!("{text_name}={bare}"),
            (Form::KeyValue, 10) => format!("\"{text_name}\": \"{secret}\""),
            (Form::KeyValue, 11) => format!("a=1&{name}={bare}&b=2"),
            (Form::KeyValue, 12) => format!("**{name}:** {bare}"),
            (Form::KeyValue, 13) => format!("`{name}`: `{secret}`"),
            (Form::KeyValue, _) => format!("- name: {label}\n  value: {bare}\n- name: Bitrate"),
            (Form::TableCell, 0) => format!("| Room | {name} |\n|---|---|\n| Aula 1 | {secret} |"),
            (Form::TableCell, 1) => format!(
                "| Room | {name} | State |\n| --- | :---: | --- |\n| A | other | ok |\n| B | {secret} | ok |"
            ),
            (Form::TableCell, 2) => format!("room,{name}\nAula 1,{}", csv_cell(secret)),
            (Form::TableCell, 3) => format!("room\t{name}\nAula 1\t{secret}"),
            (Form::TableCell, 4) => format!("room;{name};state\nAula 1;{secret};ok"),
            (Form::TableCell, 5) => format!(
                "| Setting | Value |\n|---|---|\n| Bitrate | 6000 |\n| {label} | {secret} |"
            ),
            (Form::TableCell, 6) => {
                format!("name,value\nbitrate,6000\n{label},{}", csv_cell(secret))
            }
            (Form::TableCell, 7) => format!("| Room | {name} |\\n|---|---|\\n| A | {secret} |"),
            (Form::TableCell, 8) => format!("| Room | **{name}** |\n|---|---|\n| A | {secret} |"),
            (Form::TableCell, 9) => {
                format!("+---+---+\n| Room | {name} |\n+===+===+\n| A | {secret} |\n+---+---+")
            }
            // A header row after other text on its line: the row is judged by its cells.
            (Form::TableCell, 11) => {
                format!("Current settings: | Room | {name} |\n|---|---|\n| Aula 1 | {secret} |")
            }
            (Form::TableCell, 12) => {
                format!("Keys below. | Room | {name} | State |\n| A | {secret} | ok |")
            }
            (Form::TableCell, _) => format!("\"room\",\"{name}\"\n\"A\",\"{secret}\""),
            (Form::UrlPath, 0) => format!("rtmp://live.example.com/app/{p}"),
            (Form::UrlPath, 1) => format!("rtmps://ingest.example.net:443/live/{p}?x=1"),
            (Form::UrlPath, 2) => format!("srt://srt.example.org:9000?streamid={p}"),
            (Form::UrlPath, 3) => format!("https://ingest.example.com/live/{p}"),
            (Form::UrlPath, 4) => format!("https://{hook}/{p}"),
            (Form::UrlPath, 5) => format!("https://chat.example.com/api/webhooks/987654321/{p}"),
            (Form::UrlPath, 6) => format!("https://automation.example.com/webhook/{p}"),
            (Form::UrlPath, 7) => format!("https://h.example.com/files/[redacted]/{p}"),
            (Form::UrlPath, 8) => format!("https://h.example.com/cb?token={p}"),
            (Form::UrlPath, 9) => format!("rtsp://ops:{p}@10.0.0.5:554/cam"),
            (Form::UrlPath, 10) => format!("{hook}/{p}"),
            (Form::UrlPath, 11) => format!("https://hook.eu1.automation.example/{p}"),
            (Form::UrlPath, _) => format!("https://h.example.com/api/token/{p}"),
            (Form::EscapedUrl, 0) => format!(r"rtmp:\/\/a.rtmp.example.com\/live\/{p}"),
            (Form::EscapedUrl, 1) => format!("rtmp%3A%2F%2Fa.rtmp.example.com%2Flive%2F{p}"),
            (Form::EscapedUrl, 2) => format!(r"rtmp:\u002F\u002Fa.example.com\u002Flive\u002F{p}"),
            (Form::EscapedUrl, 3) => format!("rtmp:&#x2F;&#x2F;a.example.com&#x2F;live&#x2F;{p}"),
            (Form::EscapedUrl, 4) => format!(r"rtmp:\\\/\\\/a.example.com\\\/live\\\/{p}"),
            (Form::EscapedUrl, 5) => format!(r"https:\/\/{}\/{p}", hook.replace('/', r"\/")),
            (Form::EscapedUrl, 6) => format!("rtmp%253A%252F%252Fh.example.com%252Flive%252F{p}"),
            (Form::EscapedUrl, 7) => format!(r"https://ingest.example.com\/live\/{p}"),
            (Form::EscapedUrl, 8) => format!("rtmps:&#47;&#47;h.example.com&#47;app&#47;{p}"),
            (Form::EscapedUrl, 9) => {
                format!(r"srt\u003a\u002f\u002fh.example.org:9000?streamid={p}")
            }
            (Form::EscapedUrl, _) => {
                format!(r#"{{\"url\":\"rtmp:\/\/h.example.com\/live\/{p}\"}}"#)
            }
            (Form::AfterMarker, 0) => format!("{name}={}", glued(secret)),
            (Form::AfterMarker, 1) => format!("{name}: {}", glued(secret)),
            (Form::AfterMarker, 2) => format!("[redacted] {name}={bare}"),
            (Form::AfterMarker, 3) => format!("{name}=[redacted], {name}: {bare}"),
            (Form::AfterMarker, 4) => format!("\"{name}\": \"[redacted]{secret}\""),
            (Form::AfterMarker, 5) => format!("[redacted]={bare}"),
            (Form::AfterMarker, 6) => format!("[redacted]: {bare}"),
            (Form::AfterMarker, 7) if secret.contains(char::is_whitespace) => {
                format!("Authorization: \"Bearer [redacted]{secret}\"")
            }
            (Form::AfterMarker, 7) => format!("Authorization: Bearer [redacted]{secret}"),
            (Form::AfterMarker, 8) => format!("name={label} value={}", glued(secret)),
            (Form::AfterMarker, 9) => {
                format!("| Room | {name} |\n|---|---|\n| A | [redacted]{secret} |")
            }
            (Form::AfterMarker, _) => format!("https://h.example.com/[redacted]/{p}"),
            // A secret named in prose, or behind an arrow, in the languages of the name lists.
            (Form::Prose, 0) => format!("the {name} is {bare}"),
            (Form::Prose, 1) => format!("la {name} es {bare}"),
            (Form::Prose, 2) => format!("{name} → {bare}"),
            (Form::Prose, 3) => format!("{name} -> {bare}"),
            (Form::Prose, 4) => format!("The {label} was set to {bare}."),
            (Form::Prose, 5) => format!("Your {name} is now \"{secret}\", keep it"),
            (Form::Prose, 6) => format!("le {name} est {bare}"),
            (Form::Prose, 7) => format!("La {label} es: {bare}"),
            (Form::Prose, 8) => format!("{name} IS {bare}!"),
            (Form::Prose, 9) => format!("the {name} is {}", glued(secret)),
            (Form::Prose, 10) => format!("{label} => '{secret}'"),
            (Form::Prose, _) => format!("the {name}\tis\t{bare}"),
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// JSON text as it sits inside a JSON string that was not decoded: `{\"name\":…}`.
fn json_inner(text: &str) -> String {
    let quoted = json_string(text);
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .expect("quoted")
        .to_owned()
}

/// A secret glued to a mask already in front of it; quoted when it holds a space.
fn glued(secret: &str) -> String {
    if secret.contains(char::is_whitespace) {
        format!("\"[redacted]{secret}\"")
    } else {
        format!("[redacted]{secret}")
    }
}

fn csv_cell(secret: &str) -> String {
    if secret.contains([',', '"']) {
        format!("\"{}\"", secret.replace('"', "\"\""))
    } else {
        secret.to_owned()
    }
}

/// A secret as a URL path segment: everything but unreserved characters percent-encoded.
fn percent_path(secret: &str) -> String {
    secret
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The text with every escaping a reader might undo undone, repeatedly: JSON (`\/`, `\"`,
/// `\\`, `\uXXXX`), percent-encoding and HTML entities.
fn undo_escapes(text: &str) -> String {
    let mut current = text.to_owned();
    for _ in 0..4 {
        let next = undo_once(&current);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

fn undo_once(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let hex = |from: usize, len: usize| -> Option<u32> {
        let digits: String = chars.get(from..from + len)?.iter().collect();
        u32::from_str_radix(&digits, 16).ok()
    };
    let mut bytes: Vec<u8> = Vec::new();
    let push = |c: char, bytes: &mut Vec<u8>| {
        let mut buf = [0u8; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' && matches!(next, Some('/' | '"' | '\\')) {
            push(next.expect("checked"), &mut bytes);
            i += 2;
        } else if c == '\\' && next == Some('u') && hex(i + 2, 4).is_some() {
            let code = hex(i + 2, 4).expect("checked");
            push(char::from_u32(code).unwrap_or('\u{FFFD}'), &mut bytes);
            i += 6;
        } else if c == '%' && hex(i + 1, 2).is_some() {
            bytes.push(u8::try_from(hex(i + 1, 2).expect("checked")).expect("two hex digits"));
            i += 3;
        } else if c == '&' {
            let rest: String = chars[i..].iter().take(12).collect();
            let entity = rest.find(';').map(|end| &rest[1..end]);
            let decoded = entity.and_then(|e| match e {
                "amp" => Some('&'),
                "sol" => Some('/'),
                "colon" => Some(':'),
                "quot" => Some('"'),
                _ if e.starts_with("#x") || e.starts_with("#X") => u32::from_str_radix(&e[2..], 16)
                    .ok()
                    .and_then(char::from_u32),
                _ if e.starts_with('#') => e[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            });
            match (decoded, entity) {
                (Some(d), Some(e)) => {
                    push(d, &mut bytes);
                    i += e.chars().count() + 2;
                }
                _ => {
                    push(c, &mut bytes);
                    i += 1;
                }
            }
        } else {
            push(c, &mut bytes);
            i += 1;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Parts of a secret that must not survive on their own: the whole secret and each run of
/// five or more letters and digits in it.
fn secret_parts(secret: &str) -> Vec<&str> {
    let mut parts = vec![secret];
    parts.extend(
        secret
            .split(|c: char| !c.is_alphanumeric())
            .filter(|p| p.chars().count() >= 5 && *p != secret),
    );
    parts
}

/// A stand-in for the secret with no part in common with any secret, used to count how often a
/// part occurs in the form's own text.
const PLACEHOLDER: &str = "Qz9Xw8Vy7Ut6";

/// Checks that no part of `secret` survives redaction of `text` as text and as a JSON name,
/// counting a part only beyond what the same form around [`PLACEHOLDER`] leaves, and that
/// redaction is idempotent on both.
fn check_gone(text: &str, baseline: &str, secret: &str) -> Result<(), TestCaseError> {
    let as_text = |t: &str| {
        let once = redact_text(t);
        (once.clone(), redact_text(&once))
    };
    let as_json = |t: &str| {
        let mut value = json!([{"Id": "19012341234", "Name": t, "message": {"text": t}}]);
        redact_value(&mut value);
        let once = value.clone();
        redact_value(&mut value);
        (once.to_string(), value.to_string())
    };
    for (how, redact) in [
        ("text", &as_text as &dyn Fn(&str) -> (String, String)),
        ("json", &as_json),
    ] {
        let (once, twice) = redact(text);
        prop_assert_eq!(&twice, &once, "{} not idempotent for {:?}", how, text);
        let (base, _) = redact(baseline);
        let (out, base) = (undo_escapes(&once), undo_escapes(&base));
        for part in secret_parts(secret) {
            let leaked = out.matches(part).count() > base.matches(part).count();
            prop_assert!(
                !leaked,
                "{} of {:?}: {:?} survived\n in: {:?}\nout: {:?}",
                how,
                secret,
                part,
                text,
                once
            );
        }
    }
    Ok(())
}

/// Plants every secret of [`SECRETS`] in one variant of a form, written with the names
/// `names_for` gives for the secret's index, between `before` and `after`.
fn check_form<'a>(
    form: Form,
    variant: usize,
    names_for: impl Fn(usize) -> Names<'a>,
    before: &str,
    after: &str,
) -> Result<(), TestCaseError> {
    let join = form.joiner(variant);
    let place = |secret: &str, names: &Names<'_>| {
        let body = form.render(variant, secret, names);
        match (before.is_empty(), after.is_empty()) {
            (true, true) => body,
            (true, false) => format!("{body}{join}{after}"),
            (false, true) => format!("{before}{join}{body}"),
            (false, false) => format!("{before}{join}{body}{join}{after}"),
        }
    };
    for (idx, secret) in SECRETS.iter().enumerate() {
        let names = names_for(idx);
        let baseline = place(PLACEHOLDER, &names);
        check_gone(&place(secret, &names), &baseline, secret)
            .map_err(|e| TestCaseError::fail(format!("{form:?} variant {variant}: {e}")))?;
    }
    Ok(())
}

fn around() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(AROUND), 0..4).prop_map(|words| words.join(" "))
}

fn form_names() -> impl Strategy<Value = (&'static str, &'static str, &'static str)> {
    (
        prop::sample::select(form_secret_names()),
        prop::sample::select(TEXT_ONLY_NAMES),
        prop::sample::select(SECRET_LABELS),
    )
}

/// One proptest per form: the variant, the names and the surrounding text are generated;
/// every secret of [`SECRETS`] is planted in each generated case.
macro_rules! form_property {
    ($test:ident, $form:expr) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]

            #[test]
            fn $test(
                variant in 0..$form.variants(),
                (name, text_name, label) in form_names(),
                before in around(),
                after in around(),
            ) {
                let names = |_| Names { name, text_name, label };
                check_form($form, variant, names, &before, &after)?;
            }
        }
    };
}

form_property!(secrets_in_json_text_never_survive, Form::JsonText);
form_property!(secrets_in_key_value_text_never_survive, Form::KeyValue);
form_property!(secrets_in_table_cells_never_survive, Form::TableCell);
form_property!(secrets_in_url_paths_never_survive, Form::UrlPath);
form_property!(secrets_in_escaped_urls_never_survive, Form::EscapedUrl);
form_property!(secrets_after_a_mask_never_survive, Form::AfterMarker);
form_property!(secrets_named_in_prose_never_survive, Form::Prose);

/// Every secret in every variant of every form, the names turning over from one secret and
/// variant to the next so each secret name, text-only name and label is used: the proptests
/// above sample, this covers the whole product once.
#[test]
fn every_secret_in_every_variant_of_every_form() {
    let names = form_secret_names();
    let mut failures = Vec::new();
    let mut turn = 0_usize;
    for form in FORMS {
        for variant in 0..form.variants() {
            turn += SECRETS.len();
            let names_for = |idx: usize| Names {
                name: names[(turn + idx) % names.len()],
                text_name: TEXT_ONLY_NAMES[(turn + idx) % TEXT_ONLY_NAMES.len()],
                label: SECRET_LABELS[(turn + idx) % SECRET_LABELS.len()],
            };
            if let Err(e) = check_form(*form, variant, names_for, "Room 4", "ok") {
                failures.push(e.to_string());
            }
        }
    }
    assert!(
        turn >= 2 * form_secret_names().len(),
        "the turns cover every name twice"
    );
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
