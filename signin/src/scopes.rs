//! Which OAuth scopes a sign-in asks for. The normal sign-in must not be able to write, so it
//! asks only for scopes whose names say they only read; the sandbox sign-in, the one that
//! writes, asks for every scope the server lists.
//!
//! A scope "only reads" when a word of its name (split at `:`, `.`, `/`, `_`, `-`) is `read`,
//! `readonly` or `view`, and no word names a power beyond reading (`write`, `admin`, `manage`,
//! …): `read`, `devices:read`, `devices.read`, `read:devices` and `fleet.view` do, `read_write`
//! and `devices:manage` do not. The sign-in's own scopes (`openid`, `profile`, `email`,
//! `offline_access`) change nothing on a device, so they count as reading too. Anything else is
//! unknown, and unknown is not read-only.

/// What a sign-in is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The assistant's normal sign-in: reads only.
    Read,
    /// The executor's sandbox sign-in: the one that writes.
    Write,
}

const READ_WORDS: &[&str] = &["read", "readonly", "view", "viewer"];
const POWER_WORDS: &[&str] = &[
    "write", "admin", "manage", "modify", "delete", "create", "update", "edit", "control", "all",
    "full", "owner", "execute", "*",
];
const SIGN_IN_SCOPES: &[&str] = &["openid", "profile", "email", "offline_access"];

/// Whether a scope, by its name, can only read (see the module text).
pub fn is_read_only(scope: &str) -> bool {
    let lower = scope.to_ascii_lowercase();
    if SIGN_IN_SCOPES.contains(&lower.as_str()) {
        return true;
    }
    let words: Vec<&str> = lower
        .split([':', '.', '/', '_', '-'])
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| READ_WORDS.contains(w)) && !words.iter().any(|w| POWER_WORDS.contains(w))
}

/// The scopes to ask for, and a note when the server lists scopes but none could be told to
/// only read (then none are asked for, and the server grants its default).
pub fn requested(access: Access, supported: &[String]) -> (Vec<String>, Option<&'static str>) {
    match access {
        Access::Write => (supported.to_vec(), None),
        Access::Read => {
            let read: Vec<String> = supported
                .iter()
                .filter(|s| is_read_only(s))
                .cloned()
                .collect();
            let note = (!supported.is_empty() && read.is_empty()).then_some(
                "the server lists scopes, but none of them says it only reads, so none is asked for",
            );
            (read, note)
        }
    }
}

/// Scopes as a person reads them: space-separated, or "none".
pub fn shown(scopes: &[String]) -> String {
    if scopes.is_empty() {
        "none".to_owned()
    } else {
        scopes.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn read_only_by_name() {
        for yes in [
            "read",
            "READ",
            "devices:read",
            "devices.read",
            "read:devices",
            "fleet.view",
            "recorders/readonly",
            "offline_access",
            "openid",
        ] {
            assert!(is_read_only(yes), "{yes}");
        }
        for no in [
            "write",
            "read_write",
            "read-write",
            "devices:manage",
            "admin:read",
            "read:all",
            "mcp",
            "readers",
            "",
            "*",
        ] {
            assert!(!is_read_only(no), "{no}");
        }
    }

    #[test]
    fn the_normal_sign_in_asks_only_for_reading() {
        let supported = list(&["read", "write", "offline_access"]);
        assert_eq!(
            requested(Access::Read, &supported),
            (list(&["read", "offline_access"]), None)
        );
        assert_eq!(
            requested(Access::Write, &supported),
            (supported.clone(), None)
        );
        let (asked, note) = requested(Access::Read, &list(&["mcp", "devices:manage"]));
        assert!(asked.is_empty());
        assert!(note.is_some());
        assert_eq!(requested(Access::Read, &[]), (Vec::new(), None));
        assert_eq!(shown(&[]), "none");
    }
}
