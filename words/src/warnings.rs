//! What a warning is about, and how it reads.
//!
//! Warning IDs are Epiphan's (`disk_space_error`, `channel_no_signal`, …) and new ones appear
//! without notice, so they are judged by what they mention rather than by a closed list: any
//! ID about a disk or storage is a storage problem, any about a missing signal a signal
//! problem. [`phrase`] is the one place a warning becomes words, for every answerer.

use fleetwatch_protocol::fleet::{Channel, Device, Warning};

use crate::lang::Lang;
use crate::shown::{quoted, shown};
use crate::state;

/// Storage problems lose recordings whenever they happen.
pub fn is_storage(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    id.contains("storage") || id.contains("disk")
}

/// A missing signal only matters when something is about to be recorded.
pub fn is_signal(id: &str) -> bool {
    id.to_ascii_lowercase().contains("no_signal")
}

/// A warning with the channel it was reported on (`None` for the device itself).
#[derive(Debug, Clone, Copy)]
pub struct Located<'a> {
    /// The channel, for a channel warning.
    pub channel: Option<&'a Channel>,
    /// The warning.
    pub warning: &'a Warning,
}

impl Located<'_> {
    /// See [`phrase`].
    pub fn phrase(&self, lang: Lang) -> String {
        phrase(self.warning, self.channel, lang)
    }
}

/// Every warning of a device: its own first, then each channel's, in the order reported.
pub fn of_device(device: &Device) -> Vec<Located<'_>> {
    let own = device.warnings.iter().map(|warning| Located {
        channel: None,
        warning,
    });
    let channels = device.channels.iter().flat_map(|c| {
        c.warnings.iter().map(move |warning| Located {
            channel: Some(c),
            warning,
        })
    });
    own.chain(channels).collect()
}

/// A warning in words: "channel 1: channel_no_signal “No signal”", or for the device itself
/// "disk_space_error “Disk almost full”". The label is Epiphan's short text; when it is blank
/// the longer message stands in, and with neither the ID stands alone.
pub fn phrase(warning: &Warning, channel: Option<&Channel>, lang: Lang) -> String {
    let text = if !warning.label.trim().is_empty() {
        format!("{} {}", shown(&warning.id), quoted(&warning.label, lang))
    } else if !warning.message.trim().is_empty() {
        format!("{} {}", shown(&warning.id), quoted(&warning.message, lang))
    } else {
        shown(&warning.id)
    };
    match channel {
        None => text,
        Some(c) => format!("{} {}: {text}", state::channel(lang), shown(&c.number)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warning(id: &str, label: &str, message: &str) -> Warning {
        Warning {
            id: id.to_owned(),
            label: label.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn warnings_are_judged_by_what_they_mention() {
        assert!(is_storage("disk_space_error"));
        assert!(is_storage("NO_STORAGE_DETECTED"));
        assert!(is_signal("source_no_signal"));
        assert!(!is_signal("disk_space_error"));
    }

    #[test]
    fn a_warning_reads_the_same_for_every_answerer() {
        let channel = Channel {
            number: "2".to_owned(),
            name: "Camera".to_owned(),
            recording: false,
            doubtful: false,
            publishers: Vec::new(),
            warnings: Vec::new(),
        };
        let w = warning("channel_no_signal", "No signal", "The input has no signal");
        assert_eq!(
            phrase(&w, Some(&channel), Lang::En),
            "channel 2: channel_no_signal “No signal”"
        );
        assert_eq!(
            phrase(&w, Some(&channel), Lang::Es),
            "canal 2: channel_no_signal «No signal»"
        );
        let bare = warning("disk_space_error", " ", "Less than 1 GB left");
        assert_eq!(
            phrase(&bare, None, Lang::En),
            "disk_space_error “Less than 1 GB left”"
        );
        assert_eq!(
            phrase(&warning("x\n", "", ""), None, Lang::En),
            "x\\u{000A}"
        );
    }
}
