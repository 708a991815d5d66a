//! `get_devices_in_my_team` decoded from its text one device at a time.
//!
//! A team of 10,000 rooms is about 27 MB of JSON. Parsing it whole builds a tree several times
//! that size before a single device is read; here the text is walked once, each device entry
//! is built as a small JSON object, handed to the caller's redaction, read by the same
//! [`super::parse_device`] the whole-tree parser uses, and dropped. Only the typed devices are
//! kept. The result is the one [`super::parse_device_list`] gives for the same text redacted
//! whole (a property test holds the two together), including its choices where a document is
//! odd: the top-level members are judged in the order a parsed object holds them (sorted by
//! name, a repeated name's last value), and the same texts are errors.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{DEVICES_TOOL, Device, DeviceList, ReadError, describe, fail, field, squashes_to};

/// The caller's redaction, run on every device entry and on the team ID before they are read.
pub type Redact<'r> = &'r mut dyn FnMut(&mut Value);

/// Decodes `get_devices_in_my_team` from its text (an object with `devices`, or a bare list),
/// running `redact` on each device entry before it is read. Lone surrogate escapes are read as
/// [`crate::lenient`] reads them.
pub fn decode_device_list(text: &str, redact: Redact<'_>) -> Result<DeviceList, ReadError> {
    let text = crate::lenient::lone_surrogates_replaced(text.trim());
    let mut deserializer = serde_json::Deserializer::from_str(&text);
    let top = deserializer
        .deserialize_any(TopVisitor { redact })
        .and_then(|top| deserializer.end().map(|()| top))
        .map_err(|e| fail(DEVICES_TOOL, format!("the answer is not JSON ({e})")))?;
    match top {
        Top::List(list) => Ok(DeviceList {
            team_id: None,
            devices: list?,
        }),
        Top::Object {
            mut team_ids,
            devices,
        } => {
            // As the whole-tree parser sees the object: members sorted by name, the first whose
            // name squashes to `devices`, and `teamid` by the same rule as any field.
            let devices = match devices.into_iter().next() {
                Some((_, part)) => part?,
                None => return Err(fail(DEVICES_TOOL, "the result has no devices field")),
            };
            let ids: Map<String, Value> = std::mem::take(&mut team_ids).into_iter().collect();
            let team_id = field(&ids, &["teamid"]).and_then(super::text_of);
            Ok(DeviceList { team_id, devices })
        }
        Top::Other(what) => Err(fail(DEVICES_TOOL, what)),
    }
}

enum Top {
    List(Result<Vec<Device>, ReadError>),
    Object {
        /// Members whose name squashes to `teamid`, redacted.
        team_ids: BTreeMap<String, Value>,
        /// Members whose name squashes to `devices`, decoded.
        devices: BTreeMap<String, Result<Vec<Device>, ReadError>>,
    },
    Other(&'static str),
}

struct TopVisitor<'r> {
    redact: Redact<'r>,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a device list")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        Ok(Top::List(visit_devices(seq, self.redact)?))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut team_ids = BTreeMap::new();
        let mut devices = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if squashes_to(&key, "devices") {
                let part = map.next_value_seed(Part {
                    redact: &mut *self.redact,
                })?;
                devices.insert(key, part);
            } else if squashes_to(&key, "teamid") {
                let mut value: Value = map.next_value()?;
                (self.redact)(&mut value);
                team_ids.insert(key, value);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Top::Object { team_ids, devices })
    }

    fn visit_str<E>(self, _: &str) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::String(String::new()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::Bool(false))))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::Bool(false))))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::Bool(false))))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::Bool(false))))
    }

    fn visit_unit<E>(self) -> Result<Top, E> {
        Ok(Top::Other(describe(&Value::Null)))
    }
}

/// The value of a `devices` member: a list of devices, or what it is instead.
struct Part<'r> {
    redact: Redact<'r>,
}

impl<'de> DeserializeSeed<'de> for Part<'_> {
    type Value = Result<Vec<Device>, ReadError>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Part<'_> {
    type Value = Result<Vec<Device>, ReadError>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of devices")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        visit_devices(seq, self.redact)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Err(not_a_list(&Value::Object(Map::new()))))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Err(not_a_list(&Value::String(String::new()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Err(not_a_list(&Value::Bool(false))))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Err(not_a_list(&Value::Bool(false))))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Err(not_a_list(&Value::Bool(false))))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Err(not_a_list(&Value::Bool(false))))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Err(fail(DEVICES_TOOL, "devices is null")))
    }
}

fn not_a_list(what: &Value) -> ReadError {
    fail(DEVICES_TOOL, format!("devices is {}", describe(what)))
}

/// The device entries of a list, one at a time: built, redacted, read, dropped.
fn visit_devices<'de, A: SeqAccess<'de>>(
    mut seq: A,
    redact: Redact<'_>,
) -> Result<Result<Vec<Device>, ReadError>, A::Error> {
    let mut devices = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
    let mut entries = 0_usize;
    let mut problem = None;
    while let Some(mut entry) = seq.next_element::<Value>()? {
        entries = entries.saturating_add(1);
        if problem.is_some() {
            continue;
        }
        redact(&mut entry);
        let Value::Object(object) = entry else {
            problem = Some(fail(DEVICES_TOOL, "a device entry is not an object"));
            continue;
        };
        // As the whole-tree parser: an entry without an ID cannot be targeted or fenced.
        if let Some(id) = field(&object, &["id"]).and_then(super::text_of) {
            devices.push(super::parse_device(&object, id));
        }
    }
    if let Some(problem) = problem {
        return Ok(Err(problem));
    }
    if entries > 0 && devices.is_empty() {
        return Ok(Err(fail(DEVICES_TOOL, "no device in the list has an Id")));
    }
    Ok(Ok(devices))
}
