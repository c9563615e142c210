//! `[loop]`: how many iterations, the completion signal, and the watchdogs' times.

use super::load::{KeyPath, Source};
use super::schema::LoopSection;
use super::DEFAULT_SIGNAL;
use crate::error::Error;
use crate::values::Duration;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoopPlan {
    pub(crate) max_iterations: u32,
    pub(crate) completion_signal: Vec<String>,
    pub(crate) idle_timeout: Duration,
    pub(crate) idle_warning_interval: Duration,
    pub(crate) completion_timeout: Duration,
    pub(crate) require_completion: bool,
    /// `[loop] usage_limit_wait`: the most time a run waits for usage limits to reset.
    pub(crate) usage_limit_wait: crate::values::MaybeZeroDuration,
}

pub(crate) fn resolve_loop(section: &LoopSection, source: &Source) -> Result<LoopPlan, Error> {
    let path = KeyPath::parse("loop");
    let max_iterations = section.max_iterations.unwrap_or(10);
    if max_iterations == 0 {
        return Err(source
            .error_at(&path.child("max_iterations"), "`loop.max_iterations` must be at least 1")
            .with_hint("the agent runs at most this many times"));
    }
    let completion_signal = match &section.completion_signal {
        None => vec![DEFAULT_SIGNAL.to_owned()],
        Some(list) => {
            if list.0.is_empty() {
                return Err(source
                    .error_at(&path.child("completion_signal"), "`loop.completion_signal` is an empty list")
                    .with_hint(format!("give at least one signal, e.g. \"{DEFAULT_SIGNAL}\"")));
            }
            if let Some(index) = list.0.iter().position(|s| s.trim().is_empty()) {
                return Err(source
                    .error_at(&path.child("completion_signal").index(index), "a completion signal is empty")
                    .with_hint("an empty signal would match any output; give the text the agent prints when done"));
            }
            list.0.clone()
        }
    };
    Ok(LoopPlan {
        max_iterations,
        completion_signal,
        idle_timeout: section.idle_timeout.unwrap_or(Duration::from_secs(600)),
        idle_warning_interval: section.idle_warning_interval.unwrap_or(Duration::from_secs(120)),
        completion_timeout: section.completion_timeout.unwrap_or(Duration::from_secs(60)),
        require_completion: section.require_completion.unwrap_or(true),
        usage_limit_wait: section
            .usage_limit_wait
            .unwrap_or(crate::values::MaybeZeroDuration(std::time::Duration::from_secs(6 * 3600))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Result<LoopPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_loop(&manifest.loop_, &source).map_err(|err| err.message)
    }

    #[test]
    fn defaults_and_refusals() {
        let plan = resolved("").unwrap();
        assert_eq!(
            (plan.max_iterations, plan.completion_signal.as_slice()),
            (10, [DEFAULT_SIGNAL.to_owned()].as_slice())
        );
        assert!(plan.require_completion);
        assert!(resolved("[loop]\nmax_iterations = 0\n").unwrap_err().starts_with("plan.toml:2:18:"));
        assert!(resolved("[loop]\ncompletion_signal = []\n").unwrap_err().contains("empty list"));
        assert!(resolved("[loop]\ncompletion_signal = [\"done\", \" \"]\n").unwrap_err().contains("is empty"));
        assert_eq!(resolved("[loop]\ncompletion_signal = \"done\"\n").unwrap().completion_signal, ["done"]);
    }
}
