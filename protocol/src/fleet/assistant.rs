//! The fleet reads only the assistant and the simulator make: system status and replay
//! templates (see the `assistant` feature).

use std::collections::BTreeMap;

use serde_json::Value;

use super::{ReadError, devices_part, field, format_time, keyed_entries, number_of, parse_time};

/// System status of one device.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemStatus {
    /// CPU load percent.
    pub cpu_load: Option<f64>,
    /// CPU temperature in °C.
    pub cpu_temp_c: Option<f64>,
    /// Up since (RFC 3339 UTC).
    pub up_since: Option<String>,
}

// ---- system status -------------------------------------------------------------------------

const SYSTEM_TOOL: &str = "get_system_status_for_devices";

/// Parses `get_system_status_for_devices`.
pub fn parse_system_status(
    value: &serde_json::Value,
) -> Result<BTreeMap<String, SystemStatus>, ReadError> {
    let part = devices_part(SYSTEM_TOOL, value, "devices")?;
    let mut out = BTreeMap::new();
    for (id, entry) in keyed_entries(SYSTEM_TOOL, part)? {
        let cpu_load =
            field(entry, &["cpuload", "cpu", "load", "cpuusage", "cpupercent"]).and_then(number_of);
        let cpu_temp_c = field(
            entry,
            &[
                "cputempc",
                "cputemp",
                "cputemperature",
                "temperature",
                "tempc",
                "temp",
            ],
        )
        .and_then(number_of);
        // `uptime` is sometimes a duration in seconds rather than a start time; only values
        // that read as a time after 2001 are taken as the start.
        let up_since = field(entry, &["upsince", "uptime", "bootedat", "boottime"])
            .and_then(|v| match v {
                Value::Number(n) if n.as_f64().is_some_and(|f| f < 1e9) => None,
                _ => parse_time(v),
            })
            .map(format_time);
        out.insert(
            id,
            SystemStatus {
                cpu_load,
                cpu_temp_c,
                up_since,
            },
        );
    }
    Ok(out)
}

// ---- replay templates ----------------------------------------------------------------------

/// Why a replay template did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("replay template {template:?}: {problem}")]
pub struct TemplateError {
    /// The template text.
    pub template: String,
    /// What is wrong.
    pub problem: &'static str,
}

/// Longest template text quoted back in an error.
const TEMPLATE_QUOTE_MAX: usize = 40;

fn template_error(template: &str, problem: &'static str) -> TemplateError {
    TemplateError {
        template: template.chars().take(TEMPLATE_QUOTE_MAX).collect(),
        problem,
    }
}

fn resolve_one(inner: &str, whole: &str, now: jiff::Timestamp) -> Result<String, TemplateError> {
    let Some(rest) = inner.strip_prefix("now") else {
        return Err(template_error(
            whole,
            "only now, now+N, now-N (m or h) are known",
        ));
    };
    if rest.is_empty() {
        return Ok(format_time(now));
    }
    let (sign, rest) = match rest.split_at_checked(1) {
        Some(("+", r)) => (1_i64, r),
        Some(("-", r)) => (-1_i64, r),
        _ => return Err(template_error(whole, "expected + or - after now")),
    };
    let (digits, unit_seconds) = if let Some(d) = rest.strip_suffix('m') {
        (d, 60_i64)
    } else if let Some(d) = rest.strip_suffix('h') {
        (d, 3600_i64)
    } else {
        return Err(template_error(whole, "the offset must end in m or h"));
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(template_error(whole, "the offset must be a whole number"));
    }
    let seconds = digits
        .parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(unit_seconds))
        .and_then(|s| s.checked_mul(sign))
        .ok_or_else(|| template_error(whole, "the offset is too large"))?;
    let shifted = now
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .map_err(|_| template_error(whole, "the offset is too large"))?;
    Ok(format_time(shifted))
}

/// Resolves `{{now}}`, `{{now+25m}}`, `{{now-48h}}` (minutes `m`, hours `h`) against `now`,
/// written as RFC 3339 UTC. Other `{{…}}` text is an error.
pub fn resolve_templates(text: &str, now: jiff::Timestamp) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let (before, from_open) = rest.split_at(open);
        out.push_str(before);
        let after_open = from_open.get(2..).unwrap_or_default();
        let Some(close) = after_open.find("}}") else {
            return Err(template_error(from_open, "no closing }}"));
        };
        let inner = after_open.get(..close).unwrap_or_default();
        let whole = from_open.get(..close + 4).unwrap_or(from_open);
        out.push_str(&resolve_one(inner, whole, now)?);
        rest = after_open.get(close + 2..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(out)
}
