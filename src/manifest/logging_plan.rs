//! `[logging]`: every run writes its events as JSON lines, by default to
//! `.eden/logs/<run-id>.jsonl`. `file` moves the log (a template with `{name}`, `{branch}`,
//! `{run_id}`), `file = false` turns it off. Everything a run would refuse is refused here, at
//! load (so `--dry-run` refuses it too): a relative file must stay inside the repository's
//! `.eden/` (the only folder git is told to ignore), placeholders must be known and closed, and
//! every part of the path must be a name the filesystem accepts.

use super::load::{KeyPath, Source};
use super::schema::LogFileSetting;
use crate::error::Error;
use serde::Serialize;
use std::path::{Component, Path};

/// Where a run's log goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LogFile {
    /// `.eden/logs/<run-id>.jsonl`.
    Default,
    /// A template relative to the repository root (inside `.eden/`), or an absolute one.
    Template(String),
    Off,
}

pub(crate) const PLACEHOLDERS: [&str; 3] = ["name", "branch", "run_id"];

/// Longest name one part of a path may have (most filesystems: 255 bytes).
const MAX_NAME: usize = 255;

pub(super) fn resolve_log_file(
    setting: Option<&LogFileSetting>,
    name: &str,
    source: &Source,
) -> Result<LogFile, Error> {
    let template = match setting {
        None | Some(LogFileSetting::Enabled(true)) => return Ok(LogFile::Default),
        Some(LogFileSetting::Enabled(false)) => return Ok(LogFile::Off),
        Some(LogFileSetting::Template(template)) => template,
    };
    let at = KeyPath::parse("logging.file");
    let refuse = |why: String, hint: &str| Err(source.error_at(&at, why).with_hint(hint));
    if template.trim().is_empty() {
        return refuse("`logging.file` is empty".into(), "give a file name, or `file = false` for no log");
    }
    if let Some(problem) = placeholder_problem(template) {
        return refuse(problem, "the log file name may use {name}, {branch} and {run_id}");
    }
    let path = Path::new(template);
    if path.is_relative() {
        let mut parts = path.components();
        let inside = parts.next() == Some(Component::Normal(crate::layout::EDEN_DIR.as_ref()))
            && parts.all(|part| matches!(part, Component::Normal(_)));
        if !inside {
            return refuse(
                format!("`logging.file = \"{template}\"` is outside the repository's `{}/`", crate::layout::EDEN_DIR),
                "a relative log file goes under `.eden/` (the folder git ignores), e.g. `.eden/logs/{name}-{run_id}.jsonl`; or give an absolute path",
            );
        }
    }
    // The longest a placeholder can become: a run id, the longest branch name eden makes.
    let run_id = "20261123-180000-abcdef";
    let expanded = template
        .replace("{name}", name)
        .replace("{run_id}", run_id)
        .replace("{branch}", &format!("eden-{name}-{run_id}"));
    if let Some(part) = Path::new(&expanded).components().find(|part| part.as_os_str().len() > MAX_NAME) {
        let length = part.as_os_str().len();
        return refuse(
            format!("a part of `logging.file` would be {length} bytes long, over the {MAX_NAME} a file name may have"),
            "use a shorter name",
        );
    }
    Ok(LogFile::Template(template.clone()))
}

/// An unknown placeholder, or a brace that opens or closes none.
fn placeholder_problem(template: &str) -> Option<String> {
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        if rest[at..].starts_with('}') {
            return Some("`logging.file` has a `}` that closes no placeholder".into());
        }
        let Some(end) = rest[at..].find('}') else {
            return Some("`logging.file` has a `{` that is never closed".into());
        };
        let key = &rest[at + 1..at + end];
        if !PLACEHOLDERS.contains(&key) {
            return Some(format!("unknown placeholder `{{{key}}}` in the log file name"));
        }
        rest = &rest[at + end + 1..];
    }
    None
}

impl LogFile {
    /// The log's path for a run, or `None` when off. `default_dir` is `.eden/logs` of the
    /// repository (`Layout::logs`); templates are relative to `root`.
    pub(crate) fn path(
        &self,
        root: &Path,
        default_dir: &Path,
        name: &str,
        branch_slug: &str,
        run_id: &str,
    ) -> Option<std::path::PathBuf> {
        match self {
            LogFile::Off => None,
            LogFile::Default => Some(default_dir.join(format!("{run_id}.jsonl"))),
            LogFile::Template(template) => {
                Some(root.join(
                    template.replace("{name}", name).replace("{branch}", branch_slug).replace("{run_id}", run_id),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::placeholder_problem;

    #[test]
    fn placeholders_must_be_known_and_closed() {
        assert_eq!(placeholder_problem(".eden/logs/{name}-{run_id}.jsonl"), None);
        assert_eq!(placeholder_problem("{").unwrap(), "`logging.file` has a `{` that is never closed");
        assert_eq!(placeholder_problem("a}b").unwrap(), "`logging.file` has a `}` that closes no placeholder");
        assert_eq!(placeholder_problem("{who}").unwrap(), "unknown placeholder `{who}` in the log file name");
    }
}
