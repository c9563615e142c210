//! `attempts`, `attempts_pick` and `attempts_score`: several attempts at one task, and which lands.

use super::branch_plan::BranchPlan;
use super::load::{KeyPath, Source};
use super::schema::{Manifest, Strategy};
use super::steps_plan::StepPlan;
use crate::error::Error;
use serde::Serialize;

/// `attempts = N` and `attempts_pick`, resolved (`--attempts` wins over the key).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AttemptsPlan {
    pub(crate) count: u32,
    pub(crate) pick: crate::manifest::schema::AttemptsPick,
    /// `attempts_score`, for `"best"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) score: Option<String>,
    /// What the choice goes by: the completion signal and the checks, or the signal alone
    /// (no `[[check]]`), as `--dry-run` says.
    pub(crate) chosen_by: &'static str,
}

/// The most attempts of one manifest at once.
pub(crate) const MAX_ATTEMPTS: u32 = 16;

/// `attempts` and `attempts_pick`: a number from 1 to `MAX_ATTEMPTS`, each attempt on a branch
/// of its own (`merge-to-head`), and what is not built yet refused.
pub(crate) fn resolve_attempts(
    manifest: &Manifest,
    branch: &BranchPlan,
    steps: &[StepPlan],
    source: &Source,
) -> Result<AttemptsPlan, Error> {
    use crate::manifest::schema::AttemptsPick;
    let at = |key: &str| KeyPath::parse(key);
    let count = manifest.attempts.unwrap_or(1);
    if !(1..=MAX_ATTEMPTS).contains(&count) {
        return Err(source
            .error_at(&at("attempts"), format!("`attempts = {count}`: give a number from 1 to {MAX_ATTEMPTS}"))
            .with_hint("e.g. `attempts = 3` (or `--attempts 3`)"));
    }
    let pick = manifest.attempts_pick.unwrap_or_default();
    let score = manifest.attempts_score.clone().filter(|score| !score.trim().is_empty());
    match (pick, &score, manifest.attempts_score.is_some()) {
        (AttemptsPick::Best, None, _) => {
            return Err(source
                .error_at(&at("attempts_pick"), "`attempts_pick = \"best\"` needs `attempts_score`")
                .with_hint("a command run in each attempt's sandbox that prints a number, the lower the better: `attempts_score = \"cargo clippy 2>&1 | grep -c warning\"`"));
        }
        (AttemptsPick::First, _, true) => {
            return Err(source
                .error_at(&at("attempts_score"), "`attempts_score` applies to `attempts_pick = \"best\"` only")
                .with_hint("set `attempts_pick = \"best\"`, or remove `attempts_score`"));
        }
        _ => {}
    }
    if count > 1 && branch.strategy != Strategy::MergeToHead {
        return Err(source
            .error_at(
                &at("attempts"),
                format!("attempts need branches of their own: strategy `{}` shares one", branch.strategy.as_str()),
            )
            .with_hint("use `branch.strategy = \"merge-to-head\"` (the default) with `attempts`"));
    }
    let checked = steps.iter().any(|step| !step.checks.is_empty());
    let chosen_by = match (count, pick, checked) {
        (1, _, _) => "the one attempt",
        (_, AttemptsPick::First, true) => "the first to finish with its completion signal and every check passing",
        (_, AttemptsPick::First, false) => {
            "the first to finish with its completion signal (no `[[check]]`: the signal alone)"
        }
        (_, AttemptsPick::Best, true) => {
            "of those that finish with their completion signal and every check passing, the lowest `attempts_score` (ties: fewer changed lines)"
        }
        (_, AttemptsPick::Best, false) => {
            "of those that finish with their completion signal (no `[[check]]`: the signal alone), the lowest `attempts_score` (ties: fewer changed lines)"
        }
    };
    Ok(AttemptsPlan { count, pick, score, chosen_by })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempts(text: &str) -> Result<AttemptsPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        let branch = super::super::branch_plan::resolve_branch(&manifest.branch, &source).unwrap();
        resolve_attempts(&manifest, &branch, &[], &source).map_err(|err| err.message)
    }

    #[test]
    fn how_many_and_how_chosen() {
        assert_eq!(attempts("").unwrap().count, 1);
        let three = attempts("attempts = 3").unwrap();
        assert_eq!(three.count, 3);
        assert!(three.chosen_by.contains("no `[[check]]`"), "{}", three.chosen_by);
        assert!(attempts("attempts = 0").unwrap_err().contains("from 1 to 16"));
        assert!(attempts("attempts = 17").is_err());
        assert!(attempts("attempts_pick = \"best\"").unwrap_err().contains("needs `attempts_score`"));
        assert!(attempts("attempts_score = \"wc -l\"").unwrap_err().contains("applies to"));
        let named = "attempts = 2\n[branch]\nstrategy = \"named\"\nname = \"x\"\n";
        assert!(attempts(named).unwrap_err().contains("branches of their own"));
    }
}
