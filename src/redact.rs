//! Secret values are replaced by `***` in everything eden writes for people or files: the
//! display, the log file, `--json`/`--json-events`, run records and error messages. The values
//! are registered once the manifest is resolved; every writer passes its text through `apply`.
//!
//! A secret is the value of an environment variable whose name looks secret (`*_KEY`,
//! `*_TOKEN`, `*_SECRET`, `*PASSWORD*`), whose value refers to such a variable
//! (`"${API_KEY}"`), or that is named in the manifest's `redact = [...]`.

use std::borrow::Cow;
use std::sync::RwLock;

/// Shorter values are not treated as secrets: replacing every `1` or `yes` would garble all
/// output while protecting nothing.
pub(crate) const MIN_SECRET_LEN: usize = 4;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Does this variable name look like it holds a secret?
pub(crate) fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    name.ends_with("_KEY") || name.ends_with("_TOKEN") || name.ends_with("_SECRET") || name.contains("PASSWORD")
}

/// Add values to redact from now on. Their JSON-escaped forms are added too, so a value with a
/// quote or a newline is also found inside serialized JSON.
pub(crate) fn register<I: IntoIterator<Item = String>>(values: I) {
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    for value in values {
        if value.chars().count() < MIN_SECRET_LEN {
            continue;
        }
        let escaped = serde_json::to_string(&value).expect("strings serialize");
        let escaped = escaped[1..escaped.len() - 1].to_owned();
        for form in [value, escaped] {
            if !secrets.contains(&form) {
                secrets.push(form);
            }
        }
    }
    // Longest first: a secret that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// The text with every registered secret replaced by `***`.
pub(crate) fn apply(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), "***"));
        }
    }
    out
}

/// `text` as one plain line: secrets redacted, every escape sequence (`ESC [ …`, `ESC ] … BEL`,
/// the other string sequences) dropped whole, bidirectional overrides and control characters
/// dropped, line breaks and tabs made spaces. For places that draw text themselves (`eden top`)
/// or hand it on (`[notify]`), where no sequence of the agent's may act, not even a colour.
pub(crate) fn plain_line(text: &str) -> String {
    let text = apply(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => while chars.next().is_some_and(|c| !('@'..='~').contains(&c)) {},
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\r' | '\t' => out.push(' '),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in ["ANTHROPIC_API_KEY", "GITHUB_TOKEN", "aws_secret", "DB_PASSWORD_FILE", "PASSWORD"] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["KEYBOARD", "TOKENS", "PATH", "MONKEY"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn replaces_raw_and_json_forms() {
        register(["s3cr3t-\"quoted\"-value".to_owned(), "abc".to_owned()]);
        assert_eq!(apply("key=s3cr3t-\"quoted\"-value!"), "key=***!");
        let json = serde_json::to_string("s3cr3t-\"quoted\"-value").unwrap();
        assert_eq!(apply(&json), "\"***\"");
        // Too short to be treated as a secret.
        assert_eq!(apply("abc"), "abc");
    }
}

/// An environment value: never printed or logged (`***` in `Debug`); serialized with its
/// secrets redacted.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Serialized (`--dry-run`'s plan) with every registered secret replaced: a key shows as
/// `***`, a base URL or a `1` as itself.
impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&apply(&self.0))
    }
}
