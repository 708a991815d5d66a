//! What only the assistant asks of a loaded registry (the `assistant` feature).

use super::{EPIPHAN_WRITE_TOOLS, FleetTool, Policy, ProposeEntry, ReadTool};

impl Policy {
    /// A read tool, if listed.
    pub fn read_tool(&self, name: &str) -> Option<&ReadTool> {
        self.read.get(name)
    }
    /// All read tools, sorted by name.
    pub fn read_tools(&self) -> impl Iterator<Item = &ReadTool> {
        self.read.values()
    }
    /// A fleet tool, if listed.
    pub fn fleet_tool(&self, name: &str) -> Option<&FleetTool> {
        self.fleet.get(name)
    }
    /// All fleet tools, sorted by name.
    pub fn fleet_tools(&self) -> impl Iterator<Item = &FleetTool> {
        self.fleet.values()
    }
    /// True for a known write tool: the policy's `write` list or any Epiphan write tool name.
    pub fn is_write_tool(&self, name: &str) -> bool {
        self.write.iter().any(|w| w == name)
            || EPIPHAN_WRITE_TOOLS.contains(&name)
            || self.propose.contains_key(name)
    }
    /// Every entry of the `propose` section, including `pending-live-run` ones, sorted by name.
    pub fn listed_propose_entries(&self) -> impl Iterator<Item = &ProposeEntry> {
        self.propose.values()
    }
    /// Whether a tool counts as disruptive by name: on the file's `disruptive` list or on
    /// [`super::ALWAYS_DISRUPTIVE`].
    pub fn on_disruptive_list(&self, name: &str) -> bool {
        self.disruptive.contains(name)
    }
}
