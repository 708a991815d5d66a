//! A device's state in words.

use fleetwatch_protocol::fleet::Device;

use crate::lang::Lang;
use crate::shown::shown;

/// "offline" / "desconectada" (a room, in Spanish, is feminine: la sala).
pub fn offline(lang: Lang) -> &'static str {
    lang.pick("offline", "desconectada")
}

/// "channel" / "canal".
pub fn channel(lang: Lang) -> &'static str {
    lang.pick("channel", "canal")
}

/// "offline since T" / "desconectada desde T" when the device reports when it went down,
/// else just [`offline`].
pub fn offline_since(device: &Device, lang: Lang) -> String {
    match device.state_time.as_deref() {
        Some(t) => match lang {
            Lang::En => format!("offline since {}", shown(t)),
            Lang::Es => format!("desconectada desde {}", shown(t)),
        },
        None => offline(lang).to_owned(),
    }
}

/// The numbers of the channels recording now, shown.
pub fn recording_channels(device: &Device) -> Vec<String> {
    device
        .channels
        .iter()
        .filter(|c| c.recording)
        .map(|c| shown(&c.number))
        .collect()
}
