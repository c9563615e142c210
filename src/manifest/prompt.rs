//! Prompt templates: `{{KEY}}` placeholders filled from `[prompt_args]` and the built-ins eden
//! knows per iteration. Every placeholder is checked when the manifest loads, so a typo fails
//! before anything is created.

use std::collections::BTreeMap;

/// Keys eden fills in itself.
pub const BUILT_INS: [&str; 6] = ["BRANCH", "BASE_BRANCH", "ITERATION", "MAX_ITERATIONS", "RUN_ID", "NAME"];

/// The placeholders a template uses, in order of appearance (`{{ KEY }}` may have spaces).
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let key = after[..end].trim();
        if is_key(key) {
            found.push(key);
        }
        rest = &after[end + 2..];
    }
    found
}

fn is_key(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replace every `{{KEY}}` with its value. Callers validate keys first with `placeholders`;
/// a key without a value is left as written.
pub fn render(template: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let key = after[..end].trim();
        out.push_str(&rest[..start]);
        match values.get(key) {
            Some(value) if is_key(key) => out.push_str(value),
            _ => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_known_keys_and_keeps_other_braces() {
        let values = BTreeMap::from([("ISSUE".to_owned(), "42".to_owned()), ("N".to_owned(), "1".to_owned())]);
        assert_eq!(render("fix #{{ISSUE}} ({{ N }}) {x} {{ not a key }}", &values), "fix #42 (1) {x} {{ not a key }}");
        assert_eq!(placeholders("{{A}} {{ B }} {{}} {{c d}} {{D"), vec!["A", "B"]);
    }
}
