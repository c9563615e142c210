//! `[output]` resolved: what to extract from the agent's answer, the schema it must meet, and
//! how many times to ask again. Checked at load: one iteration, the tag named in the prompt, a
//! schema file that exists and compiles.

use super::load::{KeyPath, Source};
use super::schema::{OutputKind, OutputSection};
use crate::error::Error;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct OutputPlan {
    pub(crate) kind: OutputKind,
    pub(crate) tag: String,
    pub(crate) schema_file: Option<PathBuf>,
    #[serde(skip)]
    pub(crate) schema: Option<serde_json::Value>,
    pub(crate) max_retries: u32,
}

pub(crate) const DEFAULT_TAG: &str = "result";
/// Retries when the agent can resume its session; agents that cannot get none.
const DEFAULT_RETRIES: u32 = 2;

/// `path` is where the section sits (`output`, or `step[1].output`); `prompt` the template the
/// agent gets; `max_iterations` the section's own setting if written, and its key path.
pub(super) fn resolve_output(
    section: &OutputSection,
    path: &KeyPath,
    prompt: &str,
    max_iterations: (Option<u32>, KeyPath),
    can_resume: bool,
    source: &Source,
) -> Result<OutputPlan, Error> {
    let tag = section.tag.clone().unwrap_or_else(|| DEFAULT_TAG.to_owned());
    if tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        return Err(source
            .error_at(&path.child("tag"), format!("`{tag}` cannot be a tag name"))
            .with_hint("use letters, digits, `_`, `-` or `.`, e.g. `result`"));
    }
    if let (Some(n), at) = &max_iterations {
        if *n != 1 {
            return Err(source
                .error_at(at, format!("structured output needs exactly one iteration, not {n}"))
                .with_hint("set `max_iterations = 1` (the default with `[output]`), or remove `[output]`"));
        }
    }
    let open = format!("<{tag}>");
    if !prompt.contains(&open) {
        let at = if section.tag.is_some() { path.child("tag") } else { path.clone() };
        return Err(source
            .error_at(&at, format!("the prompt never mentions `{open}`, so the agent cannot know where to answer"))
            .with_hint(format!("tell the agent in the prompt: \"answer inside {open}...</{tag}>\"")));
    }
    let (schema_file, schema) = match &section.schema {
        None => (None, None),
        Some(file) => {
            let at = path.child("schema");
            let file = source.base_dir.join(file);
            let text = std::fs::read_to_string(&file).map_err(|err| {
                source
                    .error_at(&at, format!("schema file `{}` cannot be read: {err}", file.display()))
                    .with_hint("schema files are resolved against the manifest's folder")
            })?;
            let schema: serde_json::Value = serde_json::from_str(&text).map_err(|err| {
                source
                    .error_at(&at, format!("schema file `{}` is not JSON: {err}", file.display()))
                    .with_hint("a JSON Schema is a JSON document")
            })?;
            if let Err(err) = jsonschema::validator_for(&schema) {
                return Err(source
                    .error_at(&at, format!("schema file `{}` is not a valid JSON Schema: {err}", file.display()))
                    .with_hint("check it against the JSON Schema specification (draft 2020-12 by default)"));
            }
            (Some(file), Some(schema))
        }
    };
    let kind = section.kind.unwrap_or(if schema.is_some() { OutputKind::Object } else { OutputKind::String });
    let max_retries = match section.max_retries {
        Some(n) if n > 0 && !can_resume => {
            return Err(source
                .error_at(&path.child("max_retries"), "retries resume the agent's session, which this agent cannot do")
                .with_hint(format!(
                    "use an agent adapter ({}), or set it to 0",
                    crate::agent::spec::adapters_where(|spec| spec.resume).join(", ")
                )));
        }
        Some(n) => n,
        None if can_resume => DEFAULT_RETRIES,
        None => 0,
    };
    Ok(OutputPlan { kind, tag, schema_file, schema, max_retries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(text: &str, prompt: &str, can_resume: bool) -> Result<OutputPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        let section = manifest.output.as_ref().expect("an [output] table");
        let iterations = (None, KeyPath::parse("loop.max_iterations"));
        resolve_output(section, &KeyPath::parse("output"), prompt, iterations, can_resume, &source)
            .map_err(|err| err.message)
    }

    #[test]
    fn an_output_is_tagged_and_its_retries_need_a_resumable_agent() {
        let plan = output("[output]\nkind = \"object\"\n", "answer in <result>", true).unwrap();
        assert_eq!(plan.tag, DEFAULT_TAG);
        assert!(output("[output]\nkind = \"object\"\ntag = \"a b\"\n", "p", true)
            .unwrap_err()
            .contains("cannot be a tag name"));
        assert!(output("[output]\nkind = \"object\"\n", "p", true).unwrap_err().contains("never mentions `<result>`"));
        let retries =
            output("[output]\nkind = \"object\"\nmax_retries = 2\n", "answer in <result>", false).unwrap_err();
        assert!(retries.contains("retries resume the agent's session"), "{retries}");
    }
}
