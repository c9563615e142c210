//! `[budget]` (the run's) and a step's `budget`: caps on tokens, cost and time.

use super::load::{KeyPath, Source};
use super::schema::BudgetSection;
use crate::agent::spec::{adapters_where, spoken};
use crate::agent::AgentPlan;
use crate::error::Error;
use crate::values::Duration;
use serde::Serialize;

/// Caps on spending; `None` is no cap.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub(crate) struct BudgetPlan {
    pub(crate) max_tokens: Option<u64>,
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) max_duration: Option<Duration>,
}

impl BudgetPlan {
    pub(crate) fn is_empty(&self) -> bool {
        self == &BudgetPlan::default()
    }
}

/// A budget's caps, each checked against what the agents it covers report: a cap on tokens
/// needs agents that report tokens, one on cost agents that report their cost.
pub(crate) fn resolve_budget(
    section: &BudgetSection,
    path: &KeyPath,
    agents: &[&AgentPlan],
    source: &Source,
) -> Result<BudgetPlan, Error> {
    use crate::agent::Reports;
    let needs = [
        ("max_tokens", section.max_tokens.is_some(), Reports::Tokens, "tokens"),
        ("max_cost_usd", section.max_cost_usd.is_some(), Reports::TokensAndCost, "cost"),
    ];
    for (key, set, needed, what) in needs {
        let Some(agent) = agents.iter().find(|agent| set && agent.reports() < needed) else { continue };
        let kind = agent.kind();
        let why = match agent {
            AgentPlan::Cli(cli) => format!("a `cli` agent with parser `{}` reports no {what}", cli.parser.as_str()),
            _ => format!("`{}` reports no {what}", kind.as_str()),
        };
        let reporting = spoken(&adapters_where(|spec| spec.reports >= needed));
        let hint = match key {
            "max_tokens" => format!("tokens are reported by {reporting} (and `cli` agents with their parsers); cap this agent with `max_duration`"),
            _ => format!("cost is reported by {reporting}; cap this agent with `max_tokens` or `max_duration`"),
        };
        return Err(source.error_at_key(&path.child(key), format!("`{key}` cannot be checked: {why}")).with_hint(hint));
    }
    if section.max_tokens == Some(0) {
        return Err(source
            .error_at(&path.child("max_tokens"), "`max_tokens` must be at least 1")
            .with_hint("leave it out for no cap"));
    }
    if let Some(cost) = section.max_cost_usd {
        if !(cost.is_finite() && cost > 0.0) {
            return Err(source
                .error_at(&path.child("max_cost_usd"), format!("`max_cost_usd` must be a positive amount, not {cost}"))
                .with_hint("in US dollars, e.g. `max_cost_usd = 2.5`"));
        }
    }
    if section.max_duration.is_some_and(|duration| duration.0.is_zero()) {
        return Err(source
            .error_at(&path.child("max_duration"), "`max_duration` must be longer than 0")
            .with_hint("e.g. `max_duration = \"2h\"`"));
    }
    Ok(BudgetPlan {
        max_tokens: section.max_tokens,
        max_cost_usd: section.max_cost_usd,
        max_duration: section.max_duration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(text: &str) -> Result<BudgetPlan, String> {
        let (manifest, source) = super::super::load::from_text(text).unwrap();
        resolve_budget(&manifest.budget, &KeyPath::parse("budget"), &[], &source).map_err(|err| err.message)
    }

    #[test]
    fn caps_are_checked() {
        assert!(budget("").unwrap().is_empty());
        assert_eq!(budget("[budget]\nmax_duration = \"2h\"\n").unwrap().max_duration, Some(Duration::from_secs(7200)));
        let negative = budget("[budget]\nmax_cost_usd = -1.0\n").unwrap_err();
        assert!(negative.contains("positive amount"), "{negative}");
        assert!(budget("[budget]\nmax_tokens = 0\n").unwrap_err().contains("at least 1"));
        // A cap the agent cannot report is refused.
        let (manifest, source) = super::super::load::from_text("[budget]\nmax_cost_usd = 1.0\n").unwrap();
        let agent = AgentPlan::Simulated { lines: Vec::new(), line_delay: None, exit_code: 0 };
        let unreported = resolve_budget(&manifest.budget, &KeyPath::parse("budget"), &[&agent], &source).unwrap_err();
        assert!(unreported.message.contains("`simulated` reports no cost"), "{}", unreported.message);
    }
}
