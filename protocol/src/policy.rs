//! The curated tool registry (`tool_policy.yaml`): what may be read, what may be proposed,
//! with which argument schema, how many targets, whether it is disruptive, and its category.
//!
//! Loading refuses, naming the entry, anything that would let a tool default to calm or reach
//! further than written: see [`PolicyError`]. Both processes load their own copy and must
//! judge a proposal identically, so every decision here is a pure function of the file.
//!
//! # File format
//!
//! ```yaml
//! version: 1                      # the only version this build reads
//! read:                           # tools the assistant may call, once their category is granted
//!   get_devices_in_my_team:       # name starts with get_ or kb_, never a write tool
//!     category: fleet             # required
//!     description: "One plain sentence for the model."   # required
//!     schema: {type: object, properties: {}, additionalProperties: false}   # required
//! write: [batch_recording, …]     # known write tools: never readable, always disruptive if
//!                                 # listed below, never callable through the read path
//! disruptive: [batch_reboot, …]   # a propose entry named here may not say `disruptive: false`
//! propose:                        # tools a person may approve, one card per change
//!   batch_recording:
//!     category: recording         # required
//!     description: "…"            # required
//!     disruptive: true            # required, no default
//!     disruptive_when: {field: action, values: [stop]}   # optional narrowing
//!     stops_recording: {field: action, values: [stop]}   # optional
//!     lead_minutes: 30            # optional, 1..=1440, default 30
//!     max_targets: 1              # required, positive integer
//!     target: device_ids          # required: the argument naming devices or channels
//!     schema_version: 1           # required, positive integer
//!     schema: {…}                 # JSON Schema (the subset), or the marker `pending-live-run`
//! ```
//!
//! Every mapping refuses unknown keys. Duplicate keys are refused by the YAML reader.
//!
//! Schemas (read and propose) use only the JSON Schema subset of [`crate::schema`] (draft
//! 2020-12 meaning; any other keyword is refused, naming it), have `type: object` at the top,
//! say `additionalProperties: false` on every node that could accept an object (a node with no
//! `type`, `enum` or `const` could), and write every `pattern` as a whole-value match (`^…$`,
//! no top-level `|`) in that module's small pattern syntax. Numbers in schemas are integers
//! so every entry has a canonical form to digest. A propose schema's `target` property is
//! required, has no `default`, and carries the master-ID or channel-ID pattern, directly on a
//! string or on the `items` of an array. `disruptive_when` and `stops_recording` name one
//! property with a string `enum` and a non-empty subset of its values.
//!
//! A propose schema declares no argument whose name reads as a secret (`stream_key`,
//! `password`, `apiKey`, …): a card shows every argument in full, and a secret cannot be shown.
//!
//! An entry whose schema is `pending-live-run` is loaded (so its category and flags are
//! checked and it counts as a write tool) but is never proposable.
//!
//! Independently of the file, every Epiphan write tool ([`EPIPHAN_WRITE_TOOLS`]) counts as a
//! write tool, and every one in [`ALWAYS_DISRUPTIVE`] counts as disruptive, so deleting a line
//! from the `write` or `disruptive` list cannot make a tool readable or calm.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::canonical::{self, Canonical};
use crate::ids;
use crate::schema::{self, Problem, Schema, Violation};

/// Every write tool Epiphan's MCP server offers. None of them is ever a read tool.
pub const EPIPHAN_WRITE_TOOLS: &[&str] = &[
    "batch_recording",
    "start_stream_endpoint",
    "stop_stream_endpoint",
    "create_cms_event",
    "update_cms_event",
    "delete_cms_event",
    "cms_event_action",
    "confirm_cms_event_on_device",
    "create_stream_endpoint",
    "update_stream_endpoint",
    "delete_stream_endpoint",
    "apply_team_preset",
    "switch_device_to_cms",
    "batch_reboot",
    "batch_firmware_update",
];

/// Write tools that are disruptive whatever the file's `disruptive` list says. Only
/// `start_stream_endpoint` and `confirm_cms_event_on_device` are calm; `batch_recording` is
/// here because its `stop` ends a recording (its entry narrows with `disruptive_when`).
pub const ALWAYS_DISRUPTIVE: &[&str] = &[
    "batch_recording",
    "stop_stream_endpoint",
    "create_cms_event",
    "update_cms_event",
    "delete_cms_event",
    "cms_event_action",
    "create_stream_endpoint",
    "update_stream_endpoint",
    "delete_stream_endpoint",
    "apply_team_preset",
    "switch_device_to_cms",
    "batch_reboot",
    "batch_firmware_update",
];

/// Read tools that may never be listed: `get_channel_image` returns pictures, and pictures
/// never go to the model.
pub const NEVER_READABLE: &[&str] = &["get_channel_image"];

/// The pattern a master (device) ID property must carry.
pub const MASTER_ID_PATTERN: &str = "^[0-9a-f]{8,32}$";
/// The pattern a channel ID property must carry.
pub const CHANNEL_ID_PATTERN: &str = "^[0-9a-f]{8,32}-[1-9][0-9]{0,2}$";
/// The schema marker for an entry whose arguments are not yet confirmed against a live server.
pub const PENDING_LIVE_RUN: &str = "pending-live-run";
/// Lead window for a disruptive change when the entry names none.
pub const DEFAULT_LEAD_MINUTES: u32 = 30;
/// The largest lead window an entry may name (one day).
pub const MAX_LEAD_MINUTES: u32 = 1440;
/// The only file version this build reads.
pub const POLICY_VERSION: u64 = 1;

// What only the assistant asks of a loaded registry: its read tools, the write list and every
// listed entry. Behind the `assistant` feature, which the executor does not enable, so it does
// not link them; the executor still loads and checks the whole file, read section included.
#[cfg(feature = "assistant")]
mod assistant;

/// Why `tool_policy.yaml` was refused. The message names the entry and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool_policy.yaml: {entry}: {problem}")]
pub struct PolicyError {
    /// The entry (tool name or section) at fault.
    pub entry: String,
    /// What is wrong, in plain words.
    pub problem: String,
}

fn refuse(entry: &str, problem: impl Into<String>) -> PolicyError {
    PolicyError {
        entry: entry.to_owned(),
        problem: problem.into(),
    }
}

/// A read tool the assistant may call once its category is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTool {
    /// Tool name (starts with `get_` or `kb_`).
    pub name: String,
    /// Permission category.
    pub category: String,
    /// What it returns, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an empty object schema when it takes none).
    pub schema: serde_json::Value,
    /// It answers for the whole team whatever its arguments (`team_wide: true`): the
    /// assistant reads it into a question's snapshot and never shows it to the model, which
    /// asks the fleet tools instead.
    pub team_wide: bool,
}

/// A fleet tool: an answer the assistant's own code computes from the snapshot of a
/// question's reads (an overview, a search, one room). Never sent to Epiphan, it adds no
/// authority: it shows the model only what those reads already returned, redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetTool {
    /// Tool name (starts with `fleet_`).
    pub name: String,
    /// The read tools whose answers it is computed from; the first is required, and its
    /// category decides whether the model is shown the tool. The others are used when their
    /// categories are open.
    pub reads: Vec<String>,
    /// What it returns, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub schema: serde_json::Value,
}

/// A named enum field and some of its values (`disruptive_when`, `stops_recording`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldValues {
    /// The argument field.
    pub field: String,
    /// The values that trigger the rule.
    pub values: Vec<String>,
}

/// A write tool that may be proposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposeEntry {
    /// Tool name.
    pub name: String,
    /// Permission category.
    pub category: String,
    /// What it does, for the model.
    pub description: String,
    /// At most this many resolved targets.
    pub max_targets: u32,
    /// Disruptive (before `disruptive_when` narrows it).
    pub disruptive: bool,
    /// If set, only these values of this field are disruptive.
    pub disruptive_when: Option<FieldValues>,
    /// If set, these values of this field end a recording (not refused for the one they end).
    pub stops_recording: Option<FieldValues>,
    /// Lead window in minutes for a disruptive change (default 30).
    pub lead_minutes: Option<u32>,
    /// The argument naming the devices or channels.
    pub target: String,
    /// Argument schema version.
    pub schema_version: u32,
    /// The argument schema, or `None` for the `pending-live-run` marker (never proposable).
    pub schema: Option<serde_json::Value>,
}

/// What loading derived from an entry that the entry itself does not spell out.
#[derive(Debug, Clone)]
struct Compiled {
    /// `None` for a `pending-live-run` entry.
    validator: Option<Schema>,
    /// Every value the `disruptive_when` field's enum allows.
    when_enum: Vec<String>,
    digest: [u8; 32],
}

/// A loaded, checked registry.
#[derive(Debug)]
// Without the `assistant` feature the read tools, the write list and the disruptive list are
// loaded and checked (they are in the digest) but not asked for again.
#[cfg_attr(not(feature = "assistant"), allow(dead_code))]
pub struct Policy {
    read: BTreeMap<String, ReadTool>,
    fleet: BTreeMap<String, FleetTool>,
    write: Vec<String>,
    propose: BTreeMap<String, ProposeEntry>,
    disruptive: BTreeSet<String>,
    compiled: BTreeMap<String, Compiled>,
    whole: [u8; 32],
}

/// A channel of a device, as the arguments name it: by a channel ID (`<device>-N`) in the
/// target field, or by a `channel_id` number beside a `device_id`. The two halves are kept
/// apart by type, so nothing downstream has to guess which one is the device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChannelRef {
    /// The device's master ID.
    pub device: String,
    /// The channel number as Epiphan writes it (`"1"`).
    pub number: String,
}

impl ChannelRef {
    /// The channel ID, `<device>-<number>`.
    pub fn id(&self) -> String {
        format!("{}-{}", self.device, self.number)
    }
}

/// An event on a device, as the arguments name it (`event_id` beside `device_id`). An event
/// ID may look exactly like a device ID (an all-digit CMS ID), so it is never told apart by
/// its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef {
    /// The device's master ID.
    pub device: String,
    /// The event ID.
    pub event: String,
}

/// Arguments that passed the schema, in canonical form, with what they name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validated {
    /// The tool.
    pub tool: String,
    /// Canonical arguments, defaults filled.
    pub arguments: Canonical,
    /// Device IDs the target field resolves to, sorted.
    pub targets: Vec<String>,
    /// Channels named by channel IDs (`<device>-N`) in the target field, sorted.
    pub channels: Vec<ChannelRef>,
    /// A `stream_id` argument, if present.
    pub stream_id: Option<String>,
    /// An `event_id` argument with its `device_id`, if both are present.
    pub event: Option<EventRef>,
    /// A `channel_id` argument (a channel number) with its `device_id`, if both are present.
    pub channel: Option<ChannelRef>,
}

/// Why arguments were refused. The message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    /// The tool is not in the `propose` section (or is marked `pending-live-run`).
    #[error("{0} is not a proposable tool")]
    NotProposable(String),
    /// The arguments fail the schema.
    #[error("argument {field}: {problem}")]
    Schema {
        /// JSON pointer or field name.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The arguments are not a JSON object or not canonicalisable.
    #[error("arguments: {0}")]
    Canonical(#[from] crate::canonical::CanonicalError),
    /// The target list is empty.
    #[error("argument {0}: no target")]
    NoTarget(String),
    /// Two targets resolve to the same device.
    #[error("argument {0}: a device appears twice")]
    DuplicateTarget(String),
    /// More targets than `max_targets`.
    #[error("argument {field}: at most {max} target(s)")]
    TooManyTargets {
        /// The target field.
        field: String,
        /// The limit.
        max: u32,
    },
}

impl ArgumentError {
    /// The refusal the executor reports for this error.
    pub fn refusal(&self) -> crate::Refusal {
        match self {
            ArgumentError::NotProposable(_) => crate::Refusal::ToolNotProposable,
            ArgumentError::TooManyTargets { .. } => crate::Refusal::TooManyTargets,
            ArgumentError::Schema { .. }
            | ArgumentError::Canonical(_)
            | ArgumentError::NoTarget(_)
            | ArgumentError::DuplicateTarget(_) => crate::Refusal::ArgumentsInvalid,
        }
    }
}

// ---- the file as written -------------------------------------------------------------------

/// The top level. Entries stay as JSON values here so each one is decoded on its own and a
/// decoding error can name the entry it came from.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    version: Value,
    read: BTreeMap<String, Value>,
    #[serde(default)]
    fleet: BTreeMap<String, Value>,
    write: Vec<String>,
    disruptive: Vec<String>,
    propose: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRead {
    category: String,
    description: String,
    schema: Value,
    #[serde(default)]
    team_wide: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFleet {
    reads: Vec<String>,
    description: String,
    schema: Value,
}

/// `category`, `disruptive`, `max_targets`, `target` and `schema_version` have no serde
/// default on purpose: an entry that forgets one must not load as calm or unlimited.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPropose {
    category: String,
    description: String,
    disruptive: bool,
    #[serde(default)]
    disruptive_when: Option<RawFieldValues>,
    #[serde(default)]
    stops_recording: Option<RawFieldValues>,
    #[serde(default)]
    lead_minutes: Option<Value>,
    max_targets: Value,
    target: String,
    schema_version: Value,
    schema: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFieldValues {
    field: String,
    values: Vec<String>,
}

fn decode<T: serde::de::DeserializeOwned>(entry: &str, value: Value) -> Result<T, PolicyError> {
    serde_json::from_value(value).map_err(|e| refuse(entry, e.to_string()))
}

fn positive_u32(entry: &str, key: &str, value: &Value, max: u32) -> Result<u32, PolicyError> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| refuse(entry, format!("{key} must be an integer from 1 to {max}")))
}

fn non_blank(entry: &str, key: &str, text: &str) -> Result<(), PolicyError> {
    if text.trim().is_empty() {
        return Err(refuse(entry, format!("{key} must not be empty")));
    }
    Ok(())
}

impl Policy {
    /// Parses and checks `tool_policy.yaml` text.
    pub fn from_yaml(text: &str) -> Result<Policy, PolicyError> {
        // A first pass into the YAML crate's own value refuses duplicate keys, which a decode
        // straight into maps would silently resolve to the last one written.
        let tree: yaml_serde::Value =
            yaml_serde::from_str(text).map_err(|e| refuse("(file)", e.to_string()))?;
        let raw: RawPolicy =
            yaml_serde::from_value(tree).map_err(|e| refuse("(file)", e.to_string()))?;
        if raw.version.as_u64() != Some(POLICY_VERSION) {
            return Err(refuse(
                "version",
                format!("must be {POLICY_VERSION}, the only version this build reads"),
            ));
        }

        let mut write: Vec<String> = raw.write;
        write.sort();
        write.dedup();
        let is_write =
            |name: &str| write.iter().any(|w| w == name) || EPIPHAN_WRITE_TOOLS.contains(&name);

        let mut read = BTreeMap::new();
        for (name, value) in raw.read {
            if is_write(&name) {
                return Err(refuse(
                    &name,
                    "is a write tool and cannot be listed under read",
                ));
            }
            if !(name.starts_with("get_") || name.starts_with("kb_")) {
                return Err(refuse(
                    &name,
                    "a read tool's name must start with get_ or kb_",
                ));
            }
            if NEVER_READABLE.contains(&name.as_str()) {
                return Err(refuse(
                    &name,
                    "returns pictures, which never go to the model",
                ));
            }
            let entry: RawRead = decode(&name, value)?;
            non_blank(&name, "category", &entry.category)?;
            non_blank(&name, "description", &entry.description)?;
            check_schema(&name, &entry.schema, None)?;
            read.insert(
                name.clone(),
                ReadTool {
                    name,
                    category: entry.category,
                    description: entry.description,
                    schema: entry.schema,
                    team_wide: entry.team_wide,
                },
            );
        }

        let mut fleet = BTreeMap::new();
        for (name, value) in raw.fleet {
            if is_write(&name) || !name.starts_with("fleet_") {
                return Err(refuse(
                    &name,
                    "a fleet tool's name must start with fleet_ and not be a write tool",
                ));
            }
            let entry: RawFleet = decode(&name, value)?;
            non_blank(&name, "description", &entry.description)?;
            if entry.reads.is_empty() {
                return Err(refuse(&name, "reads must name the read tools it uses"));
            }
            if let Some(unknown) = entry.reads.iter().find(|r| !read.contains_key(*r)) {
                return Err(refuse(
                    &name,
                    format!("reads names {unknown:?}, which is not under read"),
                ));
            }
            check_schema(&name, &entry.schema, None)?;
            fleet.insert(
                name.clone(),
                FleetTool {
                    name,
                    reads: entry.reads,
                    description: entry.description,
                    schema: entry.schema,
                },
            );
        }

        let mut disruptive: BTreeSet<String> =
            ALWAYS_DISRUPTIVE.iter().map(|s| (*s).to_owned()).collect();
        for name in raw.disruptive {
            if read.contains_key(&name) {
                return Err(refuse(
                    &name,
                    "is listed under read and cannot be disruptive",
                ));
            }
            disruptive.insert(name);
        }

        let mut propose = BTreeMap::new();
        let mut compiled = BTreeMap::new();
        for (name, value) in raw.propose {
            if name.starts_with("get_") || name.starts_with("kb_") {
                return Err(refuse(&name, "a read tool never raises an approval"));
            }
            if !is_write(&name) {
                return Err(refuse(
                    &name,
                    "is not a known write tool; add it to the write list first",
                ));
            }
            let raw_entry: RawPropose = decode(&name, value)?;
            let (entry, when_enum, validator) = check_propose(&name, raw_entry, &disruptive)?;
            let digest = digest_of(&name, &entry_value(&entry))?;
            compiled.insert(
                name.clone(),
                Compiled {
                    validator,
                    when_enum,
                    digest,
                },
            );
            propose.insert(name, entry);
        }

        let whole_value = json!({
            "version": POLICY_VERSION,
            "read": read.values().map(|r| (r.name.clone(), read_value(r))).collect::<Map<String, Value>>(),
            "fleet": fleet.values().map(|f| (f.name.clone(), fleet_value(f))).collect::<Map<String, Value>>(),
            "write": write,
            "disruptive": disruptive,
            "propose": propose.values().map(|p| (p.name.clone(), entry_value(p))).collect::<Map<String, Value>>(),
        });
        let whole = digest_of("(file)", &whole_value)?;

        Ok(Policy {
            read,
            fleet,
            write,
            propose,
            disruptive,
            compiled,
            whole,
        })
    }
    /// A proposable entry, if listed with a schema.
    pub fn propose_entry(&self, name: &str) -> Option<&ProposeEntry> {
        self.propose.get(name).filter(|e| e.schema.is_some())
    }
    /// All proposable entries, sorted by name.
    pub fn propose_entries(&self) -> impl Iterator<Item = &ProposeEntry> {
        self.propose.values().filter(|e| e.schema.is_some())
    }
    /// Validates proposal arguments: fills schema defaults, checks the schema, canonicalises,
    /// resolves targets (channel → device), refuses duplicates and more than `max_targets`.
    pub fn validate(
        &self,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> Result<Validated, ArgumentError> {
        let not_proposable = || ArgumentError::NotProposable(tool.to_owned());
        let entry = self.propose.get(tool).ok_or_else(not_proposable)?;
        let schema = entry.schema.as_ref().ok_or_else(not_proposable)?;
        let validator = self
            .compiled
            .get(tool)
            .and_then(|c| c.validator.as_ref())
            .ok_or_else(not_proposable)?;

        let filled = fill_defaults(schema, arguments);
        validator.validate(&filled).map_err(schema_error)?;
        let canonical = canonical::from_value(&filled)?;

        let field = entry.target.as_str();
        let named: Vec<&str> = match filled.get(field) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(item.as_str().ok_or_else(|| ArgumentError::Schema {
                        field: field.to_owned(),
                        problem: "every target must be a string".to_owned(),
                    })?);
                }
                out
            }
            _ => {
                return Err(ArgumentError::Schema {
                    field: field.to_owned(),
                    problem: "is required".to_owned(),
                });
            }
        };
        if named.is_empty() {
            return Err(ArgumentError::NoTarget(field.to_owned()));
        }
        let mut targets = BTreeSet::new();
        let mut channels = BTreeSet::new();
        for target in &named {
            let device = ids::device_of(target).ok_or_else(|| ArgumentError::Schema {
                field: field.to_owned(),
                problem: "is not a device or channel ID".to_owned(),
            })?;
            if !targets.insert(device.to_owned()) {
                return Err(ArgumentError::DuplicateTarget(field.to_owned()));
            }
            if let Some((device, number)) = target.split_once('-')
                && ids::is_channel_id(target)
            {
                channels.insert(ChannelRef {
                    device: device.to_owned(),
                    number: number.to_owned(),
                });
            }
        }
        let count = u32::try_from(targets.len()).unwrap_or(u32::MAX);
        if count > entry.max_targets {
            return Err(ArgumentError::TooManyTargets {
                field: field.to_owned(),
                max: entry.max_targets,
            });
        }

        let text = |key: &str| filled.get(key).and_then(Value::as_str).map(str::to_owned);
        let device_id = text("device_id");
        let event = match (&device_id, text("event_id")) {
            (Some(device), Some(event)) => Some(EventRef {
                device: device.clone(),
                event,
            }),
            _ => None,
        };
        let channel = match (&device_id, text("channel_id")) {
            (Some(device), Some(number)) => Some(ChannelRef {
                device: device.clone(),
                number,
            }),
            _ => None,
        };
        Ok(Validated {
            tool: tool.to_owned(),
            arguments: canonical,
            targets: targets.into_iter().collect(),
            channels: channels.into_iter().collect(),
            stream_id: text("stream_id"),
            event,
            channel,
        })
    }
    /// Whether a write of `tool` acts on the device itself, so it cannot reach an offline one.
    /// Every tool does but confirming an event, which Epiphan's CMS records; an unknown tool
    /// counts as acting on the device.
    pub fn needs_device_online(tool: &str) -> bool {
        tool != "confirm_cms_event_on_device"
    }

    /// Whether a change is disruptive; an unknown tool or a missing/unknown action counts as
    /// disruptive.
    pub fn is_disruptive(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        let Some(entry) = self.propose.get(tool) else {
            return true;
        };
        if !entry.disruptive {
            return false;
        }
        let Some(rule) = &entry.disruptive_when else {
            return true;
        };
        let when_enum = self
            .compiled
            .get(tool)
            .map(|c| c.when_enum.as_slice())
            .unwrap_or_default();
        match arguments.get(&rule.field).and_then(Value::as_str) {
            // Only a value the schema knows and the rule leaves out is calm; anything the
            // rule did not foresee is treated as the disruptive case.
            Some(value) => {
                rule.values.iter().any(|v| v == value) || !when_enum.iter().any(|v| v == value)
            }
            None => true,
        }
    }
    /// The lead window in minutes (default 30).
    pub fn lead_minutes(&self, tool: &str) -> u32 {
        self.propose
            .get(tool)
            .and_then(|e| e.lead_minutes)
            .unwrap_or(DEFAULT_LEAD_MINUTES)
    }
    /// Whether these arguments end a recording.
    pub fn stops_recording(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        // The relaxation applies only to a value the rule names exactly: a recording blocks
        // every other disruptive change.
        self.propose
            .get(tool)
            .and_then(|e| e.stops_recording.as_ref())
            .is_some_and(|rule| {
                arguments
                    .get(&rule.field)
                    .and_then(Value::as_str)
                    .is_some_and(|value| rule.values.iter().any(|v| v == value))
            })
    }
    /// SHA-256 of the tool's canonical policy entry.
    pub fn digest(&self, tool: &str) -> Option<[u8; 32]> {
        self.compiled.get(tool).map(|c| c.digest)
    }
    /// SHA-256 over every entry (for `Status`).
    pub fn whole_digest(&self) -> [u8; 32] {
        self.whole
    }
}

// ---- checks --------------------------------------------------------------------------------

fn check_propose(
    name: &str,
    raw: RawPropose,
    disruptive_list: &BTreeSet<String>,
) -> Result<(ProposeEntry, Vec<String>, Option<Schema>), PolicyError> {
    non_blank(name, "category", &raw.category)?;
    non_blank(name, "description", &raw.description)?;
    non_blank(name, "target", &raw.target)?;
    if !raw.disruptive && disruptive_list.contains(name) {
        return Err(refuse(
            name,
            "is on the disruptive list and cannot say disruptive: false",
        ));
    }
    if !raw.disruptive && raw.disruptive_when.is_some() {
        return Err(refuse(
            name,
            "disruptive_when narrows a disruptive tool; it needs disruptive: true",
        ));
    }
    let max_targets = positive_u32(name, "max_targets", &raw.max_targets, u32::MAX)?;
    let schema_version = positive_u32(name, "schema_version", &raw.schema_version, u32::MAX)?;
    let lead_minutes = match &raw.lead_minutes {
        Some(v) => Some(positive_u32(name, "lead_minutes", v, MAX_LEAD_MINUTES)?),
        None => None,
    };

    let (schema, validator) = match &raw.schema {
        Value::String(marker) if marker == PENDING_LIVE_RUN => (None, None),
        Value::String(other) => {
            return Err(refuse(
                name,
                format!("schema must be a JSON Schema or {PENDING_LIVE_RUN:?}, not {other:?}"),
            ));
        }
        schema => {
            let validator = check_schema(name, schema, Some(&raw.target))?;
            check_no_secret_arguments(name, schema)?;
            (Some(schema.clone()), Some(validator))
        }
    };

    let mut when_enum = Vec::new();
    if let Some(rule) = &raw.disruptive_when {
        when_enum = check_field_values(name, "disruptive_when", rule, schema.as_ref())?;
    }
    if let Some(rule) = &raw.stops_recording {
        check_field_values(name, "stops_recording", rule, schema.as_ref())?;
    }
    let to_rule = |r: RawFieldValues| FieldValues {
        field: r.field,
        values: r.values,
    };
    let entry = ProposeEntry {
        name: name.to_owned(),
        category: raw.category,
        description: raw.description,
        max_targets,
        disruptive: raw.disruptive,
        disruptive_when: raw.disruptive_when.map(to_rule),
        stops_recording: raw.stops_recording.map(to_rule),
        lead_minutes,
        target: raw.target,
        schema_version,
        schema,
    };
    Ok((entry, when_enum, validator))
}

/// Checks a `disruptive_when`/`stops_recording` rule against the schema and returns the
/// field's whole enum.
fn check_field_values(
    name: &str,
    key: &str,
    rule: &RawFieldValues,
    schema: Option<&Value>,
) -> Result<Vec<String>, PolicyError> {
    let schema = schema.ok_or_else(|| {
        refuse(
            name,
            format!("{key} cannot be checked against a {PENDING_LIVE_RUN} schema"),
        )
    })?;
    let options = schema
        .get("properties")
        .and_then(|p| p.get(&rule.field))
        .and_then(|p| p.get("enum"))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            refuse(
                name,
                format!(
                    "{key} must name a property with an enum, not {:?}",
                    rule.field
                ),
            )
        })?;
    let mut allowed = Vec::with_capacity(options.len());
    for option in options {
        let text = option.as_str().ok_or_else(|| {
            refuse(
                name,
                format!("{key}: the enum of {:?} must hold strings", rule.field),
            )
        })?;
        allowed.push(text.to_owned());
    }
    if rule.values.is_empty() {
        return Err(refuse(name, format!("{key} must list at least one value")));
    }
    let mut seen = BTreeSet::new();
    for value in &rule.values {
        if !allowed.contains(value) {
            return Err(refuse(
                name,
                format!("{key}: {value:?} is not a value of {:?}", rule.field),
            ));
        }
        if !seen.insert(value) {
            return Err(refuse(name, format!("{key}: {value:?} is listed twice")));
        }
    }
    Ok(allowed)
}

/// Checks a schema's shape, compiles it, and (for a propose entry) checks its target field.
fn check_schema(name: &str, schema: &Value, target: Option<&str>) -> Result<Schema, PolicyError> {
    let top = schema
        .as_object()
        .ok_or_else(|| refuse(name, "schema must be a mapping"))?;
    if top.get("type") != Some(&Value::String("object".to_owned())) {
        return Err(refuse(name, "schema must say type: object at the top"));
    }
    if let Some(declared) = top.get("$schema")
        && declared.as_str() != Some(schema::DRAFT_2020_12)
    {
        return Err(refuse(
            name,
            format!("schema must be draft 2020-12 ({})", schema::DRAFT_2020_12),
        ));
    }
    walk_schema(schema, "", &mut |path, problem| {
        refuse(name, format!("schema at {}: {problem}", display_path(path)))
    })?;
    // The subset validator refuses every keyword it does not implement, naming it, so no
    // part of a schema can load and then be ignored.
    let validator = Schema::compile(schema)
        .map_err(|e| refuse(name, format!("schema does not compile: {e}")))?;
    if let Some(field) = target {
        check_target(name, top, field)?;
    }
    Ok(validator)
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "the top" } else { path }
}

fn check_target(name: &str, top: &Map<String, Value>, field: &str) -> Result<(), PolicyError> {
    let required = top
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v.as_str() == Some(field)));
    if !required {
        return Err(refuse(
            name,
            format!("target field {field:?} must be listed under required"),
        ));
    }
    let property = top
        .get("properties")
        .and_then(|p| p.get(field))
        .and_then(Value::as_object)
        .ok_or_else(|| refuse(name, format!("target field {field:?} is not a property")))?;
    // A default would pick a device the model never named.
    if property.contains_key("default") {
        return Err(refuse(
            name,
            format!("target field {field:?} must not have a default"),
        ));
    }
    let is_id_pattern = |node: &Map<String, Value>| {
        // `pattern` constrains strings only: without `type: string` a number would pass.
        node.get("type").and_then(Value::as_str) == Some("string")
            && matches!(
                node.get("pattern").and_then(Value::as_str),
                Some(MASTER_ID_PATTERN | CHANNEL_ID_PATTERN)
            )
    };
    let direct = is_id_pattern(property);
    let on_items = property.get("type").and_then(Value::as_str) == Some("array")
        && property
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(is_id_pattern);
    if !(direct || on_items) {
        return Err(refuse(
            name,
            format!(
                "target field {field:?} must be a string (or array of strings) with the pattern \
                 {MASTER_ID_PATTERN} or {CHANNEL_ID_PATTERN}"
            ),
        ));
    }
    Ok(())
}

/// Word parts of an argument name that mark it as a secret.
const SECRET_WORDS: &[&str] = &[
    "key",
    "apikey",
    "streamkey",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "credentials",
    "authorization",
];

/// A card must show every argument in full, and a secret cannot be shown: a propose schema
/// may not declare an argument whose name reads as a secret (`stream_key`, `apiKey`, …).
fn check_no_secret_arguments(name: &str, schema: &Value) -> Result<(), PolicyError> {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Object(properties)) = object.get("properties") {
                for key in properties.keys() {
                    if is_secret_name(key) {
                        return Err(refuse(
                            name,
                            format!(
                                "argument {key:?} reads as a secret, and a card cannot show a \
                                 secret in full"
                            ),
                        ));
                    }
                }
            }
            object
                .values()
                .try_for_each(|v| check_no_secret_arguments(name, v))
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|v| check_no_secret_arguments(name, v)),
        _ => Ok(()),
    }
}

/// Splits `stream_key`, `streamKey`, `stream-key` into words and looks for a secret word;
/// `keyboard` or `monkey` are single words and do not match.
fn is_secret_name(name: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in name.chars() {
        let boundary = !c.is_alphanumeric() || c.is_uppercase();
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    let joined = words.concat();
    words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
        || SECRET_WORDS.contains(&joined.as_str())
}

/// Walks every subschema (`properties` and `items`, the only keywords of the subset that hold
/// one; [`Schema::compile`] refuses the others), refusing object nodes that allow unlisted
/// properties and non-integer numbers.
fn walk_schema(
    node: &Value,
    path: &str,
    fail: &mut dyn FnMut(&str, &str) -> PolicyError,
) -> Result<(), PolicyError> {
    let object = match node {
        Value::Bool(true) => return Err(fail(path, "the schema `true` accepts anything")),
        Value::Bool(false) => return Ok(()),
        Value::Object(object) => object,
        _ => return Err(fail(path, "a subschema must be a mapping")),
    };
    let restricted = object.contains_key("enum") || object.contains_key("const");
    let may_be_object = match object.get("type") {
        Some(Value::String(t)) => t == "object",
        // A list of types is refused by the compiler; judge it as possibly an object here.
        Some(_) => true,
        None => !restricted,
    };
    if may_be_object && object.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(fail(path, "needs additionalProperties: false"));
    }
    if object.contains_key("patternProperties") {
        return Err(fail(
            path,
            "patternProperties is not allowed (it opens names additionalProperties closes)",
        ));
    }
    for (key, value) in object {
        let here = format!("{path}/{key}");
        match key.as_str() {
            "items" => walk_schema(value, &here, fail)?,
            "additionalProperties" => {}
            "properties" => {
                let map = value
                    .as_object()
                    .ok_or_else(|| fail(&here, "must map names to subschemas"))?;
                for (name, sub) in map {
                    walk_schema(sub, &format!("{here}/{name}"), fail)?;
                }
            }
            _ => check_integers(value, &here, fail)?,
        }
    }
    Ok(())
}

/// Canonical JSON has no floats, and every entry must have a canonical form to be digested.
fn check_integers(
    value: &Value,
    path: &str,
    fail: &mut dyn FnMut(&str, &str) -> PolicyError,
) -> Result<(), PolicyError> {
    match value {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            Err(fail(path, "numbers must be integers"))
        }
        Value::Array(items) => items.iter().try_for_each(|v| check_integers(v, path, fail)),
        Value::Object(map) => map.values().try_for_each(|v| check_integers(v, path, fail)),
        _ => Ok(()),
    }
}

// ---- validation helpers --------------------------------------------------------------------

/// Fills missing top-level properties that have a `default` in the schema.
fn fill_defaults(schema: &Value, arguments: &Value) -> Value {
    let mut filled = arguments.clone();
    if let (Some(object), Some(properties)) = (
        filled.as_object_mut(),
        schema.get("properties").and_then(Value::as_object),
    ) {
        for (key, property) in properties {
            if let Some(default) = property.get("default")
                && !object.contains_key(key)
            {
                object.insert(key.clone(), default.clone());
            }
        }
    }
    filled
}

/// Names the field an error is about; never echoes the value (it may be long or secret).
fn schema_error(violation: Violation) -> ArgumentError {
    let pointer = violation.pointer();
    let prefix = |name: &str| {
        if pointer.is_empty() {
            name.to_owned()
        } else {
            format!("{pointer}/{name}")
        }
    };
    let field = match &violation.problem {
        Problem::Unexpected(name) | Problem::Required(name) => prefix(name),
        _ if pointer.is_empty() => "arguments".to_owned(),
        _ => pointer.clone(),
    };
    ArgumentError::Schema {
        field,
        problem: violation.problem.to_string(),
    }
}

// ---- digests -------------------------------------------------------------------------------

fn rule_value(rule: &Option<FieldValues>) -> Value {
    match rule {
        Some(r) => json!({"field": r.field, "values": r.values}),
        None => Value::Null,
    }
}

/// Every judgement-relevant part of an entry, so that any edit changes its digest.
fn entry_value(entry: &ProposeEntry) -> Value {
    json!({
        "name": entry.name,
        "category": entry.category,
        "description": entry.description,
        "max_targets": entry.max_targets,
        "disruptive": entry.disruptive,
        "disruptive_when": rule_value(&entry.disruptive_when),
        "stops_recording": rule_value(&entry.stops_recording),
        "lead_minutes": entry.lead_minutes,
        "target": entry.target,
        "schema_version": entry.schema_version,
        "schema": entry.schema.clone().unwrap_or_else(|| Value::String(PENDING_LIVE_RUN.to_owned())),
    })
}

fn read_value(tool: &ReadTool) -> Value {
    json!({
        "name": tool.name,
        "category": tool.category,
        "description": tool.description,
        "schema": tool.schema,
        "team_wide": tool.team_wide,
    })
}

fn fleet_value(tool: &FleetTool) -> Value {
    json!({
        "name": tool.name,
        "reads": tool.reads,
        "description": tool.description,
        "schema": tool.schema,
    })
}

fn digest_of(entry: &str, value: &Value) -> Result<[u8; 32], PolicyError> {
    let canonical = canonical::from_value(value)
        .map_err(|e| refuse(entry, format!("has no canonical form: {e}")))?;
    Ok(Sha256::digest(canonical.as_bytes()).into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn secret_names() {
        use super::is_secret_name;
        for name in [
            "stream_key",
            "streamKey",
            "stream-key",
            "key",
            "apiKey",
            "password",
            "auth_token",
            "StreamKey",
            "streamkey",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "keyboard",
            "monkey",
            "device_ids",
            "hotkey_label",
            "action",
            "stream_id",
            "channel_id",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
