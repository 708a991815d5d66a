//! The curated tool registry (`tool_policy.yaml`): what may be read, what may be proposed,
//! with which argument schema, how many targets, whether it is disruptive, and its category.
//!
//! Loading refuses, naming the entry, anything that would let a tool default to calm or reach
//! further than written: see [`PolicyError`]. Both processes load their own copy and must
//! judge a proposal identically, so every decision here is a pure function of the file.

use std::collections::BTreeMap;

use crate::canonical::Canonical;

/// Why `tool_policy.yaml` was refused. The message names the entry and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool_policy.yaml: {entry}: {problem}")]
pub struct PolicyError {
    /// The entry (tool name or section) at fault.
    pub entry: String,
    /// What is wrong, in plain words.
    pub problem: String,
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

/// A loaded, checked registry.
#[derive(Debug)]
pub struct Policy {
    read: BTreeMap<String, ReadTool>,
    write: Vec<String>,
    propose: BTreeMap<String, ProposeEntry>,
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
    /// Channel IDs named by the target field (`<device>-N`), sorted.
    pub channels: Vec<String>,
    /// A `stream_id` argument, if present.
    pub stream_id: Option<String>,
    /// An `event_id` argument with its `device_id`, if present.
    pub event: Option<(String, String)>,
    /// A `channel_id` argument (channel number) with its `device_id`, if present.
    pub channel_number: Option<(String, String)>,
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
        todo!()
    }
}

impl Policy {
    /// Parses and checks `tool_policy.yaml` text.
    pub fn from_yaml(text: &str) -> Result<Policy, PolicyError> {
        let _ = text;
        todo!()
    }
    /// A read tool, if listed.
    pub fn read_tool(&self, name: &str) -> Option<&ReadTool> {
        self.read.get(name)
    }
    /// All read tools, sorted by name.
    pub fn read_tools(&self) -> impl Iterator<Item = &ReadTool> {
        self.read.values()
    }
    /// True for a known write tool: the policy's `write` list or any Epiphan write tool name.
    pub fn is_write_tool(&self, name: &str) -> bool {
        let _ = name;
        todo!()
    }
    /// A proposable entry, if listed with a schema.
    pub fn propose_entry(&self, name: &str) -> Option<&ProposeEntry> {
        self.propose.get(name)
    }
    /// All proposable entries, sorted by name.
    pub fn propose_entries(&self) -> impl Iterator<Item = &ProposeEntry> {
        self.propose.values()
    }
    /// Validates proposal arguments: fills schema defaults, checks the schema, canonicalises,
    /// resolves targets (channel → device), refuses duplicates and more than `max_targets`.
    pub fn validate(&self, tool: &str, arguments: &serde_json::Value) -> Result<Validated, ArgumentError> {
        let _ = (tool, arguments);
        todo!()
    }
    /// Whether a change is disruptive; an unknown tool or a missing/unknown action counts as
    /// disruptive.
    pub fn is_disruptive(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        let _ = (tool, arguments);
        todo!()
    }
    /// The lead window in minutes (default 30).
    pub fn lead_minutes(&self, tool: &str) -> u32 {
        let _ = tool;
        todo!()
    }
    /// Whether these arguments end a recording.
    pub fn stops_recording(&self, tool: &str, arguments: &serde_json::Value) -> bool {
        let _ = (tool, arguments);
        todo!()
    }
    /// SHA-256 of the tool's canonical policy entry.
    pub fn digest(&self, tool: &str) -> Option<[u8; 32]> {
        let _ = tool;
        todo!()
    }
    /// SHA-256 over every entry (for `Status`).
    pub fn whole_digest(&self) -> [u8; 32] {
        todo!()
    }
}
