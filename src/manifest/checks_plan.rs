//! `[[check]]` (and a step's `[[step.check]]`) resolved: commands that must pass before the
//! work merges, each with its name, working directory and timeout.

use super::load::{name_problem, KeyPath, Source};
use super::schema::CheckSection;
use crate::error::Error;
use crate::values::Duration;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckPlan {
    pub(crate) name: String,
    pub(crate) cmd: String,
    /// Relative to the worktree.
    pub(crate) cwd: Option<String>,
    pub(crate) timeout: Duration,
    /// Also after every iteration, not only once the agent signals completion.
    pub(crate) every_iteration: bool,
}

/// The checks of `sections` (at `path`), each timed out after `default_timeout` unless it says.
pub(super) fn resolve_checks(
    sections: &[CheckSection],
    path: &KeyPath,
    default_timeout: std::time::Duration,
    source: &Source,
) -> Result<Vec<CheckPlan>, Error> {
    let mut checks: Vec<CheckPlan> = Vec::new();
    for (index, section) in sections.iter().enumerate() {
        let at = path.index(index);
        if section.cmd.trim().is_empty() {
            return Err(source
                .error_at(&at.child("cmd"), "a check's `cmd` is empty")
                .with_hint("give the command that must pass, e.g. `cmd = \"cargo test --quiet\"`"));
        }
        let name = section.name.clone().unwrap_or_else(|| format!("check-{}", index + 1));
        if let Some(problem) = name_problem(&name) {
            return Err(source
                .error_at(&at.child("name"), format!("invalid check name `{name}`: {problem}"))
                .with_hint("use letters, digits, `.`, `_` and `-`"));
        }
        if checks.iter().any(|known| known.name == name) {
            return Err(source
                .error_at(&at.child("name"), format!("two checks are named `{name}`"))
                .with_hint("give each check a name of its own: the failures the agent is shown are named by it"));
        }
        if let Some(cwd) = &section.cwd {
            if std::path::Path::new(cwd).is_absolute() || cwd.split('/').any(|part| part == "..") {
                return Err(source
                    .error_at(&at.child("cwd"), format!("a check's `cwd` must be inside the worktree, not `{cwd}`"))
                    .with_hint("give a path relative to the repository's root, e.g. `cwd = \"crates/core\"`"));
            }
        }
        checks.push(CheckPlan {
            name,
            cmd: section.cmd.clone(),
            cwd: section.cwd.clone(),
            timeout: section.timeout.unwrap_or(Duration(default_timeout)),
            every_iteration: section.every_iteration.unwrap_or(false),
        });
    }
    Ok(checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(text: &str) -> Result<Vec<CheckPlan>, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_checks(&manifest.check, &KeyPath::parse("check"), std::time::Duration::from_secs(60), &source)
            .map_err(|err| err.message)
    }

    #[test]
    fn checks_are_named_timed_and_refused_when_empty() {
        let plan = checks(
            "[[check]]\ncmd = \"cargo test\"\n[[check]]\nname = \"lint\"\ncmd = \"cargo clippy\"\ntimeout = \"2m\"\n",
        )
        .unwrap();
        assert_eq!(plan.iter().map(|check| check.name.as_str()).collect::<Vec<_>>(), ["check-1", "lint"]);
        assert_eq!((plan[0].timeout.0.as_secs(), plan[1].timeout.0.as_secs()), (60, 120));
        assert!(checks("[[check]]\ncmd = \" \"\n").unwrap_err().contains("a check's `cmd` is empty"));
        assert!(checks("[[check]]\nname = \"a b\"\ncmd = \"x\"\n").unwrap_err().contains("invalid check name"));
    }
}
