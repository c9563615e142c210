//! `eden sessions cost`: tokens and cost totalled by run, manifest, agent, model, branch or day. Cost is
//! what the agent reported; for agents that report tokens only, it comes from a price table the
//! user supplies (`~/.config/eden/prices.toml` or `--prices FILE`), and is unknown otherwise —
//! never guessed.
//!
//! ```toml
//! [models."gpt-5.5"]        # USD per million tokens
//! input = 1.25
//! output = 10.0
//! cache_read = 0.125        # optional, default 0
//! cache_write = 0.0         # optional, default 0
//! ```

use super::history::Light;
use crate::agent::Usage;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Prices {
    #[serde(default)]
    pub(crate) models: BTreeMap<String, Price>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    pub(crate) input: f64,
    pub(crate) output: f64,
    #[serde(default)]
    pub(crate) cache_read: f64,
    #[serde(default)]
    pub(crate) cache_write: f64,
}

impl Price {
    fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// The default price table: `$XDG_CONFIG_HOME/eden/prices.toml` or `~/.config/eden/prices.toml`.
pub(crate) fn default_prices_path() -> Option<PathBuf> {
    let env = |name: &str| std::env::var(name).ok();
    Some(crate::layout::user_config_dir(&env)?.join("prices.toml"))
}

/// Read a price table; a missing default one is an empty table, a missing `--prices` an error.
pub(crate) fn load_prices(path: &Path, explicit: bool) -> Result<Prices, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !explicit => return Ok(Prices::default()),
        Err(err) => {
            return Err(Error::usage(format!("cannot read the price table `{}`: {err}", path.display()))
                .with_hint("`--prices FILE` names a TOML file with `[models.\"<model>\"] input = ..., output = ...`"))
        }
    };
    toml::from_str(&text).map_err(|err| {
        let at = err.span().map(|span| {
            let line = text[..span.start].matches('\n').count() + 1;
            let column = span.start - text[..span.start].rfind('\n').map_or(0, |i| i + 1) + 1;
            format!(":{line}:{column}")
        });
        Error::usage(format!("{}{}: {}", path.display(), at.unwrap_or_default(), err.message())).with_hint(
            "each model is `[models.\"<model>\"]` with `input` and `output` (and optional `cache_read`, `cache_write`) in USD per million tokens",
        )
    })
}

/// How totals are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    Run,
    Manifest,
    Agent,
    Model,
    Branch,
    Day,
}

impl By {
    pub(crate) const NAMES: [&str; 6] = ["run", "manifest", "agent", "model", "branch", "day"];

    pub(crate) fn parse(name: &str) -> Option<By> {
        Some(match name {
            "run" => By::Run,
            "manifest" => By::Manifest,
            "agent" => By::Agent,
            "model" => By::Model,
            "branch" => By::Branch,
            "day" => By::Day,
            _ => return None,
        })
    }
}

/// One line of the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Total {
    pub(crate) key: String,
    pub(crate) runs: usize,
    pub(crate) iterations: usize,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cache_read_tokens: u64,
    pub(crate) cache_write_tokens: u64,
    /// Known cost: reported by the agents or priced from the table.
    pub(crate) cost_usd: f64,
    /// Iterations with tokens but no reported cost and no price for their model.
    pub(crate) unpriced_iterations: usize,
    /// Models with tokens but no price (`unknown` when the model was not recorded).
    pub(crate) unpriced_models: Vec<String>,
}

/// The key of a run's manifest: its path from the repository's `root` when it lies inside,
/// else as recorded; `(flags)` for a run its flags alone described.
pub(crate) fn manifest_key(run: &Light, root: &Path) -> String {
    match &run.manifest {
        Some(path) => path.strip_prefix(root).unwrap_or(path).display().to_string(),
        None => "(flags)".into(),
    }
}

/// Total the iterations of `runs` grouped `by`, in key order (`run` and `day`: newest first);
/// `root` is the repository's, which manifests are named from.
pub(crate) fn totals(runs: &[&Light], by: By, prices: &Prices, root: &Path) -> Vec<Total> {
    let mut groups: BTreeMap<String, (Total, std::collections::BTreeSet<String>)> = BTreeMap::new();
    for run in runs {
        for iteration in &run.iterations {
            let step = run.step_of(iteration);
            let model = iteration
                .model
                .clone()
                .or_else(|| step.and_then(|s| s.model.clone()))
                .unwrap_or_else(|| "unknown".into());
            let key = match by {
                By::Run => run.id.clone(),
                By::Manifest => manifest_key(run, root),
                By::Agent => step.map_or_else(|| "unknown".into(), |s| s.agent.as_str().to_owned()),
                By::Model => model.clone(),
                By::Branch => run.branch.clone(),
                By::Day => iteration.started_at.get(..10).unwrap_or("unknown").to_owned(),
            };
            let (total, seen_runs) = groups.entry(key.clone()).or_insert_with(|| {
                (
                    Total {
                        key,
                        runs: 0,
                        iterations: 0,
                        input_tokens: 0,
                        output_tokens: 0,
                        cache_read_tokens: 0,
                        cache_write_tokens: 0,
                        cost_usd: 0.0,
                        unpriced_iterations: 0,
                        unpriced_models: Vec::new(),
                    },
                    Default::default(),
                )
            });
            if seen_runs.insert(run.id.clone()) {
                total.runs += 1;
            }
            total.iterations += 1;
            let Some(usage) = &iteration.usage else { continue };
            total.input_tokens += usage.input_tokens;
            total.output_tokens += usage.output_tokens;
            total.cache_read_tokens += usage.cache_read_tokens;
            total.cache_write_tokens += usage.cache_write_tokens;
            let tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
            match (usage.cost_usd, prices.models.get(&model)) {
                (Some(cost), _) => total.cost_usd += cost,
                (None, Some(price)) => total.cost_usd += price.cost(usage),
                (None, None) if tokens > 0 => {
                    total.unpriced_iterations += 1;
                    if !total.unpriced_models.contains(&model) {
                        total.unpriced_models.push(model);
                    }
                }
                (None, None) => {}
            }
        }
    }
    let mut totals: Vec<Total> = groups.into_values().map(|(total, _)| total).collect();
    if matches!(by, By::Run | By::Day) {
        totals.reverse();
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, model: Option<&str>, usage: &str) -> Light {
        let model = model.map_or("null".to_owned(), |m| format!("\"{m}\""));
        serde_json::from_str(&format!(
            r#"{{"id":"{id}","name":"n","status":"finished","process":{{"pid":1,"start":0}},"sandbox":"none",
            "branch":"b","base_branch":null,"steps":[{{"name":"main","agent":"codex","model":{model}}}],
            "iterations":[{{"step":"main","iteration":1,"started_at":"2026-11-23T10:00:00Z","usage":{usage},"session_id":"s"}}],
            "started_at":"2026-11-23T10:00:00Z","duration_ms":1,"exit_reason":"completed","exit_code":0,
            "merged_into":null,"preserved_branch":null,"log":null,"worktree":"/w","record_path":"/r"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn reported_costs_count_prices_fill_in_and_the_rest_stays_unknown() {
        let prices: Prices = toml::from_str("[models.\"gpt-5.5\"]\ninput = 1.0\noutput = 10.0\n").unwrap();
        let reported = run(
            "2",
            Some("opus"),
            r#"{"input_tokens":10,"output_tokens":5,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.5}"#,
        );
        let priced = run(
            "1",
            Some("gpt-5.5"),
            r#"{"input_tokens":1000000,"output_tokens":100000,"cache_read_tokens":0,"cache_write_tokens":0}"#,
        );
        let unknown =
            run("0", None, r#"{"input_tokens":7,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0}"#);
        let all = [&reported, &priced, &unknown];
        let by_model = totals(&all, By::Model, &prices, Path::new("/repo"));
        let keys: Vec<&str> = by_model.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["gpt-5.5", "opus", "unknown"]);
        assert!((by_model[0].cost_usd - 2.0).abs() < 1e-9);
        assert!((by_model[1].cost_usd - 0.5).abs() < 1e-9);
        assert_eq!((by_model[2].unpriced_iterations, by_model[2].unpriced_models.clone()), (1, vec!["unknown".into()]));
        let by_agent = totals(&all, By::Agent, &prices, Path::new("/repo"));
        assert_eq!(by_agent.len(), 1);
        assert_eq!((by_agent[0].runs, by_agent[0].input_tokens), (3, 1_000_017));
        let by_run = totals(&all, By::Run, &prices, Path::new("/repo"));
        assert_eq!(by_run.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), ["2", "1", "0"]);
    }

    #[test]
    fn by_manifest_names_it_from_the_repository_and_flags_alone_apart() {
        let usage =
            r#"{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0,"cost_usd":0.25}"#;
        let mut inside = run("2", None, usage);
        inside.manifest = Some("/repo/plans/fix.toml".into());
        let mut again = run("1", None, usage);
        again.manifest = Some("/repo/plans/fix.toml".into());
        let mut outside = run("0", None, usage);
        outside.manifest = Some("/elsewhere/review.toml".into());
        let flags = run("3", None, usage);
        let all = [&inside, &again, &outside, &flags];
        let by = totals(&all, By::Manifest, &Prices::default(), Path::new("/repo"));
        let keys: Vec<(&str, usize)> = by.iter().map(|t| (t.key.as_str(), t.runs)).collect();
        assert_eq!(keys, [("(flags)", 1), ("/elsewhere/review.toml", 1), ("plans/fix.toml", 2)]);
        assert!((by[2].cost_usd - 0.5).abs() < 1e-9);
    }
}
