//! What a person may approve: the team's own rule, held where the power is. An approver line
//! may carry a scope after its backup field,
//!
//! ```text
//! approver ana es256 <credential ID> <SPKI> synced may=calm,batch_reboot@team Ana Gómez
//! ```
//!
//! `may=TOOLS@ROOMS`: the tools as a comma-separated list of tool names and the words `calm`
//! (every change the policy does not call disruptive), `disruptive` and `all`; the rooms as
//! `team` (every room of the fenced team) or a comma-separated list of device IDs. A line
//! without one may approve everything, as before scopes. The executor counts a person toward a
//! change's quorum only when their scope covers its tool and every one of its targets.

use std::fmt;

use super::RecordError;

/// The word that starts a scope field.
pub const PREFIX: &str = "may=";

/// At most this many tools or rooms in one scope.
pub const MAX_ITEMS: usize = 64;

/// One item of a scope's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tools {
    All,
    Calm,
    Disruptive,
    Tool(String),
}

/// What one person may approve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    tools: Vec<Tools>,
    /// `None`: every room of the fenced team.
    rooms: Option<Vec<String>>,
}

impl Scope {
    /// Parses `TOOLS@ROOMS` (without the `may=`). Tool names are `a-z`, `0-9` and `_`; rooms
    /// are device IDs; nothing is repeated and neither side is empty.
    pub fn parse(text: &str) -> Result<Scope, RecordError> {
        let (tools, rooms) = text.split_once('@').ok_or(RecordError::ScopeInvalid)?;
        let items = |side: &str| -> Result<Vec<String>, RecordError> {
            let items: Vec<String> = side.split(',').map(str::to_owned).collect();
            let mut seen = std::collections::BTreeSet::new();
            if items.is_empty()
                || items.len() > MAX_ITEMS
                || items
                    .iter()
                    .any(|i| i.is_empty() || !seen.insert(i.clone()))
            {
                return Err(RecordError::ScopeInvalid);
            }
            Ok(items)
        };
        let tools = items(tools)?
            .into_iter()
            .map(|t| match t.as_str() {
                "all" => Ok(Tools::All),
                "calm" => Ok(Tools::Calm),
                "disruptive" => Ok(Tools::Disruptive),
                name if name.len() <= 64
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
                {
                    Ok(Tools::Tool(t))
                }
                _ => Err(RecordError::ScopeInvalid),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rooms = match rooms {
            "team" => None,
            rooms => {
                let rooms = items(rooms)?;
                if !rooms.iter().all(|r| crate::ids::is_master_id(r)) {
                    return Err(RecordError::ScopeInvalid);
                }
                Some(rooms)
            }
        };
        Ok(Scope { tools, rooms })
    }

    /// Whether this scope covers a change: its tool (by name, or by being calm or disruptive)
    /// and every one of its targets.
    pub fn covers(&self, tool: &str, disruptive: bool, targets: &[String]) -> bool {
        let tool_ok = self.tools.iter().any(|t| match t {
            Tools::All => true,
            Tools::Calm => !disruptive,
            Tools::Disruptive => disruptive,
            Tools::Tool(name) => name == tool,
        });
        let rooms_ok = match &self.rooms {
            None => true,
            Some(rooms) => targets.iter().all(|t| rooms.contains(t)),
        };
        tool_ok && rooms_ok
    }

    /// The scope in words, for `approvers list` and the page: "calm changes and batch_reboot,
    /// in every room of the fenced team".
    pub fn words(&self) -> String {
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|t| match t {
                Tools::All => "every change".to_owned(),
                Tools::Calm => "calm changes".to_owned(),
                Tools::Disruptive => "disruptive changes".to_owned(),
                Tools::Tool(name) => name.clone(),
            })
            .collect();
        let rooms = match &self.rooms {
            None => "in every room of the fenced team".to_owned(),
            Some(rooms) => format!("in {}", rooms.join(", ")),
        };
        format!("{}, {rooms}", tools.join(" and "))
    }
}

impl fmt::Display for Scope {
    /// `TOOLS@ROOMS`, as [`Scope::parse`] reads it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self
            .tools
            .iter()
            .map(|t| match t {
                Tools::All => "all",
                Tools::Calm => "calm",
                Tools::Disruptive => "disruptive",
                Tools::Tool(name) => name,
            })
            .collect();
        let rooms = self
            .rooms
            .as_ref()
            .map_or_else(|| "team".to_owned(), |r| r.join(","));
        write!(f, "{}@{rooms}", tools.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_scope_covers_its_tools_and_every_target_only() {
        let calm = Scope::parse("calm,batch_reboot@team").unwrap_or_else(|_| unreachable!());
        assert!(calm.covers("batch_recording", false, &targets(&["abcdef0123"])));
        assert!(calm.covers("batch_reboot", true, &targets(&["abcdef0123"])));
        assert!(!calm.covers("firmware_update", true, &targets(&["abcdef0123"])));
        let rooms = Scope::parse("all@abcdef0123,abcdef0124").unwrap_or_else(|_| unreachable!());
        assert!(rooms.covers("batch_reboot", true, &targets(&["abcdef0124"])));
        assert!(!rooms.covers(
            "batch_reboot",
            true,
            &targets(&["abcdef0124", "abcdef0999"])
        ));
        assert_eq!(rooms.to_string(), "all@abcdef0123,abcdef0124");
        assert_eq!(
            calm.words(),
            "calm changes and batch_reboot, in every room of the fenced team"
        );
    }

    #[test]
    fn malformed_scopes_are_refused() {
        for bad in [
            "",
            "calm",
            "@team",
            "calm@",
            "calm,,x@team",
            "calm,calm@team",
            "Calm@team",
            "calm@room-1",
            "calm@team,abcdef0123",
            "calm@abcdef0123,abcdef0123",
            "x y@team",
        ] {
            assert_eq!(Scope::parse(bad), Err(RecordError::ScopeInvalid), "{bad:?}");
        }
    }
}
