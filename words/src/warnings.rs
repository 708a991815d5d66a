//! What a warning is about, and how it reads.
//!
//! Warning IDs are Epiphan's (`disk_space_error`, `channel_no_signal`, …) and new ones appear
//! without notice, so they are judged by what they mention rather than by a closed list: any
//! ID about a disk or storage is a storage problem, any about a missing signal a signal
//! problem. [`phrase`] is the one place a warning becomes words, for every answerer.

use fleetwatch_protocol::fleet::{Channel, Device, Warning};

use crate::lang::Lang;
use crate::shown::{shown, shown_capped};
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

/// Longest piece of Epiphan's own message shown for a warning this module has no phrase for.
pub const MESSAGE_CAP: usize = 120;

/// A warning in words, as a person says it: "Lectern (channel 2) has no signal", "the
/// recording storage is 93 % full". Known kinds (a missing signal, storage that is full or
/// missing) get a phrase naming the channel and source Epiphan mentions; any other warning
/// reads as Epiphan's own message (or label), shown safely and capped — never as the bare ID.
pub fn phrase(warning: &Warning, channel: Option<&Channel>, lang: Lang) -> String {
    phrase_at(
        warning,
        channel.map(|c| c.number.as_str()),
        channel.map(|c| c.name.as_str()),
        lang,
    )
}

/// [`phrase`] for a warning reported on channel `number` named `name` (both `None` for the
/// device itself), for callers that hold a channel in another shape.
pub fn phrase_at(
    warning: &Warning,
    number: Option<&str>,
    name: Option<&str>,
    lang: Lang,
) -> String {
    let blank = |t: &&str| !t.trim().is_empty();
    let number = number
        .filter(blank)
        .or(warning.channel.as_deref().filter(blank));
    let name = name
        .filter(blank)
        .or(warning.channel_name.as_deref().filter(blank));
    let place = match (name, number) {
        (Some(n), Some(k)) => Some(format!(
            "{} ({} {})",
            shown(n),
            state::channel(lang),
            shown(k)
        )),
        (None, Some(k)) => Some(format!("{} {}", state::channel(lang), shown(k))),
        (Some(n), None) => Some(shown(n)),
        (None, None) => None,
    };
    let source = warning.source.as_deref().filter(blank).map(shown);
    let id = warning.id.to_ascii_lowercase();
    if is_signal(&id) {
        return match (lang, place, source) {
            (Lang::En, Some(p), Some(s)) => format!("{p}: source {s} has no signal"),
            (Lang::En, Some(p), None) => format!("{p} has no signal"),
            (Lang::En, None, Some(s)) => format!("source {s} has no signal"),
            (Lang::En, None, None) => "an input has no signal".to_owned(),
            (Lang::Es, Some(p), Some(s)) => format!("{p}: la fuente {s} no tiene señal"),
            (Lang::Es, Some(p), None) => format!("{p} no tiene señal"),
            (Lang::Es, None, Some(s)) => format!("la fuente {s} no tiene señal"),
            (Lang::Es, None, None) => "una entrada no tiene señal".to_owned(),
        };
    }
    if is_storage(&id) {
        let missing = ["no_storage", "not_detected", "missing", "not_found"]
            .iter()
            .any(|w| id.contains(w));
        let full = ["space", "full", "low"].iter().any(|w| id.contains(w));
        let text = if missing {
            Some(
                lang.pick(
                    "no recording storage is detected",
                    "no se detecta almacenamiento de grabación",
                )
                .to_owned(),
            )
        } else if let Some(p) = warning.used_percent {
            Some(match lang {
                Lang::En => format!("the recording storage is {p} % full"),
                Lang::Es => format!("el almacenamiento de grabación está lleno al {p} %"),
            })
        } else if full {
            Some(
                lang.pick(
                    "the recording storage is almost full",
                    "el almacenamiento de grabación está casi lleno",
                )
                .to_owned(),
            )
        } else {
            None
        };
        if let Some(text) = text {
            return text;
        }
    }
    // Epiphan's own words: the message, else the label.
    let said = [&warning.message, &warning.label]
        .into_iter()
        .map(|t| t.trim())
        .find(|t| !t.is_empty());
    let text = match said {
        Some(t) => match lang {
            Lang::En => format!("Epiphan reports “{}”", shown_capped(t, MESSAGE_CAP)),
            Lang::Es => format!("Epiphan avisa: «{}»", shown_capped(t, MESSAGE_CAP)),
        },
        None => lang
            .pick(
                "a warning Epiphan did not describe",
                "un aviso que Epiphan no describe",
            )
            .to_owned(),
    };
    match place {
        Some(p) => format!("{p}: {text}"),
        None => text,
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
            source: None,
            channel: None,
            channel_name: None,
            used_percent: None,
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
    fn a_warning_reads_as_a_sentence_in_both_languages() {
        let channel = Channel {
            number: "2".to_owned(),
            name: "Lectern cam".to_owned(),
            recording: false,
            doubtful: false,
            publishers: Vec::new(),
            warnings: Vec::new(),
        };
        let w = warning("channel_no_signal", "No signal", "The input has no signal");
        assert_eq!(
            phrase(&w, Some(&channel), Lang::En),
            "Lectern cam (channel 2) has no signal"
        );
        assert_eq!(
            phrase(&w, Some(&channel), Lang::Es),
            "Lectern cam (canal 2) no tiene señal"
        );
        let source = Warning {
            source: Some("HDMI-B".to_owned()),
            ..warning("source_no_signal", "No signal", "")
        };
        assert_eq!(
            phrase(&source, Some(&channel), Lang::En),
            "Lectern cam (channel 2): source HDMI-B has no signal"
        );
        assert_eq!(
            phrase(&source, None, Lang::Es),
            "la fuente HDMI-B no tiene señal"
        );
        // A device-level warning that names its channel in `data`.
        let named = Warning {
            channel: Some("3".to_owned()),
            channel_name: Some("Wide".to_owned()),
            ..warning("channel_no_signal", "", "")
        };
        assert_eq!(
            phrase(&named, None, Lang::En),
            "Wide (channel 3) has no signal"
        );
        let full = Warning {
            used_percent: Some(93),
            ..warning("disk_space_error", "Disk space", "Less than 7% free")
        };
        assert_eq!(
            phrase(&full, None, Lang::En),
            "the recording storage is 93 % full"
        );
        assert_eq!(
            phrase(&full, None, Lang::Es),
            "el almacenamiento de grabación está lleno al 93 %"
        );
        assert_eq!(
            phrase(&warning("disk_space_error", "", ""), None, Lang::En),
            "the recording storage is almost full"
        );
        assert_eq!(
            phrase(&warning("no_storage_detected", "", ""), None, Lang::Es),
            "no se detecta almacenamiento de grabación"
        );
    }

    #[test]
    fn an_unknown_warning_reads_as_epiphans_message_never_its_id() {
        let fan = warning("fan_rpm_low_7", "Fan", "Fan speed is below 800 rpm");
        let line = phrase(&fan, None, Lang::En);
        assert_eq!(line, "Epiphan reports “Fan speed is below 800 rpm”");
        assert!(!line.contains("fan_rpm_low_7"));
        let only_label = warning("x_unknown", "Check the fan", " ");
        assert_eq!(
            phrase(&only_label, None, Lang::Es),
            "Epiphan avisa: «Check the fan»"
        );
        let nothing = warning("x_unknown", "", "");
        assert_eq!(
            phrase(&nothing, None, Lang::En),
            "a warning Epiphan did not describe"
        );
        let long = warning("x", "", &"m".repeat(500));
        assert!(phrase(&long, None, Lang::En).chars().count() < MESSAGE_CAP + 30);
    }
}
