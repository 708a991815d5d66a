//! Firmware: version order, firmware lines, the newest version seen per line and who is
//! behind it.
//!
//! "Newest" means the newest this fleet runs, not the newest Epiphan has published: the reads
//! say nothing about releases, so a fleet that is uniformly old reads as up to date. Both
//! answerers say "newest seen" for that reason.

use std::collections::BTreeMap;

use fleetwatch_protocol::fleet::Device;

use crate::lang;

/// A firmware version as numbers for ordering ("4.24.6" is `[4, 24, 6]`, so 4.24 is newer
/// than 4.3); `None` when it has no digits at all.
pub fn version_key(version: &str) -> Option<Vec<u64>> {
    let parts: Vec<u64> = version
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse::<u64>().unwrap_or(u64::MAX))
        .collect();
    if parts.is_empty() { None } else { Some(parts) }
}

/// The firmware line a model belongs to, as shown. Every Pearl (Mini, Nano, Nexus, Pearl-2)
/// runs the same numbered firmware, so they are measured against each other; any other model
/// (EC20, Venue, …) has its own numbering and is only compared with itself.
pub fn firmware_line(model: &str) -> String {
    if lang::normalize(model).trim_start().starts_with("pearl") {
        "Pearl".to_owned()
    } else {
        model.trim().to_owned()
    }
}

/// Lines compare without case or accents: "EC20" and "ec20" are one line.
fn line_key(model: &str) -> String {
    lang::words(&firmware_line(model)).join(" ")
}

/// The newest version of one line.
#[derive(Debug, Clone)]
struct Line {
    shown: String,
    version: String,
    key: Vec<u64>,
}

/// The newest firmware seen per line in a fleet.
#[derive(Debug, Clone, Default)]
pub struct Newest {
    lines: BTreeMap<String, Line>,
}

impl Newest {
    /// The newest version per line among `devices`; the first device to report a version
    /// names it.
    pub fn of(devices: &[Device]) -> Newest {
        let mut lines: BTreeMap<String, Line> = BTreeMap::new();
        for d in devices {
            let Some(key) = version_key(&d.firmware) else {
                continue;
            };
            let entry = lines.entry(line_key(&d.model));
            let line = entry.or_insert_with(|| Line {
                shown: firmware_line(&d.model),
                version: d.firmware.clone(),
                key: key.clone(),
            });
            if key > line.key {
                line.version = d.firmware.clone();
                line.key = key;
            }
        }
        Newest { lines }
    }

    /// The newest version of the device's line when the device runs an older one.
    pub fn behind(&self, d: &Device) -> Option<&str> {
        let key = version_key(&d.firmware)?;
        let line = self.lines.get(&line_key(&d.model))?;
        (key < line.key).then_some(line.version.as_str())
    }

    /// Every line with its newest version, in line order: `(line, version)`.
    pub fn lines(&self) -> impl Iterator<Item = (&str, &str)> {
        self.lines
            .values()
            .map(|l| (l.shown.as_str(), l.version.as_str()))
    }
}

/// The devices behind the newest firmware of their line, each with that newest version, in
/// the fleet's order.
pub fn stragglers(devices: &[Device]) -> Vec<(&Device, String)> {
    let newest = Newest::of(devices);
    devices
        .iter()
        .filter_map(|d| newest.behind(d).map(|v| (d, v.to_owned())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, model: &str, firmware: &str) -> Device {
        Device {
            id: name.to_owned(),
            name: name.to_owned(),
            model: model.to_owned(),
            group: String::new(),
            firmware: firmware.to_owned(),
            online: true,
            state_time: None,
            warnings: Vec::new(),
            channels: Vec::new(),
        }
    }

    #[test]
    fn versions_order_by_number_not_text() {
        assert!(version_key("4.24.6") > version_key("4.3.9"));
        assert!(version_key("4.24") < version_key("4.24.1"));
        assert_eq!(version_key("unknown"), None);
    }

    #[test]
    fn pearls_share_a_line_and_other_models_keep_their_own() {
        let fleet = [
            device("a", "Pearl-2", "4.24.6"),
            device("b", "Pearl Mini", "4.22.0"),
            device("c", "EC20", "1.2.0"),
            device("d", "ec20", "1.1.0"),
            device("e", "Pearl Nano", "garbled"),
        ];
        let newest = Newest::of(&fleet);
        assert_eq!(
            newest.lines().collect::<Vec<_>>(),
            vec![("EC20", "1.2.0"), ("Pearl", "4.24.6")]
        );
        let behind: Vec<(&str, String)> = stragglers(&fleet)
            .into_iter()
            .map(|(d, v)| (d.name.as_str(), v))
            .collect();
        assert_eq!(
            behind,
            vec![("b", "4.24.6".to_owned()), ("d", "1.2.0".to_owned())]
        );
    }
}
