//! Prompt templates: `{{KEY}}` placeholders filled from `[prompt_args]` and the built-ins eden
//! knows per iteration. Every placeholder is checked when the manifest loads, so a typo fails
//! before anything is created.

use std::collections::BTreeMap;

/// The structured output of the step before, in `[[step]]` manifests.
pub(crate) const PREVIOUS_STEP_RESULT: &str = "PREVIOUS_STEP_RESULT";

/// What the checks reported when they last failed (`[[check]]`): empty until one fails. A
/// prompt that does not use it gets it appended when there is something to say.
pub(crate) const CHECK_FAILURES: &str = "CHECK_FAILURES";

/// Keys eden fills in itself.
pub(crate) const BUILT_INS: [&str; 8] =
    ["BRANCH", "BASE_BRANCH", "ITERATION", "MAX_ITERATIONS", "RUN_ID", "NAME", "ATTEMPT", CHECK_FAILURES];

/// The placeholders a template uses, in order of appearance (`{{ KEY }}` may have spaces).
pub(crate) fn placeholders(template: &str) -> Vec<&str> {
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

pub(crate) fn is_key(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replace every `{{KEY}}` with its value. Callers validate keys first with `placeholders`;
/// a key without a value is left as written.
pub(crate) fn render(template: &str, values: &BTreeMap<String, String>) -> String {
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

/// A prompt template split into text and `` !`command` `` blocks, whose output replaces them.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    Command(&'a str),
}

/// Split out the `` !`command` `` blocks. An unclosed or empty block stays text.
pub(crate) fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut pieces = Vec::new();
    let mut rest = template;
    let mut text_start = 0;
    let mut offset = 0;
    while let Some(found) = rest.find("!`") {
        let after = &rest[found + 2..];
        match after.find('`') {
            Some(end) if !after[..end].trim().is_empty() => {
                let start = offset + found;
                if start > text_start {
                    pieces.push(Piece::Text(&template[text_start..start]));
                }
                pieces.push(Piece::Command(&after[..end]));
                offset = start + 2 + end + 1;
                text_start = offset;
                rest = &template[offset..];
            }
            _ => {
                offset += found + 2;
                rest = &template[offset..];
            }
        }
    }
    if text_start < template.len() {
        pieces.push(Piece::Text(&template[text_start..]));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_command_blocks() {
        assert_eq!(
            pieces("Recent: !`git log -3` and !`date` done"),
            vec![
                Piece::Text("Recent: "),
                Piece::Command("git log -3"),
                Piece::Text(" and "),
                Piece::Command("date"),
                Piece::Text(" done")
            ]
        );
        assert_eq!(pieces("no blocks, a ! and a `tick`"), vec![Piece::Text("no blocks, a ! and a `tick`")]);
        assert_eq!(pieces("empty !`` and !`unclosed"), vec![Piece::Text("empty !`` and !`unclosed")]);
        assert_eq!(pieces("!`only`"), vec![Piece::Command("only")]);
    }

    #[test]
    fn renders_known_keys_and_keeps_other_braces() {
        let values = BTreeMap::from([("ISSUE".to_owned(), "42".to_owned()), ("N".to_owned(), "1".to_owned())]);
        assert_eq!(render("fix #{{ISSUE}} ({{ N }}) {x} {{ not a key }}", &values), "fix #42 (1) {x} {{ not a key }}");
        assert_eq!(placeholders("{{A}} {{ B }} {{}} {{c d}} {{D"), vec!["A", "B"]);
    }
}
