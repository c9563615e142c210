//! `[budget]` and a step's `budget`: what the run (and the step) has spent against its caps.
//! Tokens and cost are checked as the agent's usage events arrive (the agent is stopped at
//! once, `Flow::Stop`), the duration by a deadline the supervisor keeps, and all of them again
//! before an iteration starts.

use crate::agent::Usage;
use crate::error::{BudgetCap, BudgetExceeded, BudgetScope, Error, ErrorKind};
use crate::manifest::plan::BudgetPlan;
use std::time::Instant;

/// The caps in force for one invocation of the agent, with what was spent before it.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    scopes: Vec<Scope>,
    /// Of several attempts, whose `[budget]` counts them all together: where they note what
    /// each has spent.
    attempts: Option<(crate::layout::Layout, crate::record::AttemptRecord)>,
}

#[derive(Debug, Clone)]
struct Scope {
    /// The step whose own `budget` this is; `None` for the run's `[budget]`.
    step: Option<String>,
    caps: BudgetPlan,
    /// Spent before this invocation.
    before: Usage,
    started: Instant,
}

impl Budget {
    /// The run's caps and the step's, each with its own spending so far and its start.
    pub(crate) fn new(run: (&BudgetPlan, Usage, Instant), step: (&str, &BudgetPlan, Usage, Instant)) -> Budget {
        let mut scopes = Vec::new();
        if !run.0.is_empty() {
            scopes.push(Scope { step: None, caps: run.0.clone(), before: run.1, started: run.2 });
        }
        if !step.1.is_empty() {
            scopes.push(Scope { step: Some(step.0.to_owned()), caps: step.1.clone(), before: step.2, started: step.3 });
        }
        Budget { scopes, attempts: None }
    }

    /// One of several attempts: the run's caps count what the others spent too, as each last
    /// noted it (this one notes its own at every look).
    pub(crate) fn counting_attempts(
        mut self,
        layout: crate::layout::Layout,
        attempt: Option<crate::record::AttemptRecord>,
    ) -> Budget {
        self.attempts = attempt.map(|attempt| (layout, attempt));
        self
    }

    /// What a scope has spent: its own `total`, and for the run's, the other attempts'.
    fn with_others(&self, scope: &Scope, total: Usage) -> Usage {
        match (&self.attempts, &scope.step) {
            (Some((layout, attempt)), None) => with_other_attempts(total, layout, Some(attempt)),
            _ => total,
        }
    }

    /// The first moment a duration cap ends, for the supervisor.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.scopes.iter().filter_map(|scope| Some(scope.started + scope.caps.max_duration?.0)).min()
    }

    /// A cap this invocation's usage so far (`current`) has gone over.
    pub(crate) fn crossed(&self, current: &Usage) -> Option<BudgetExceeded> {
        self.scopes.iter().find_map(|scope| {
            let mut total = scope.before;
            total.add(current);
            scope.over(&self.with_others(scope, total), |spent, cap| spent > cap)
        })
    }

    /// Before an iteration: a cap already reached (another iteration could only go over it).
    pub(crate) fn reached(&self) -> Option<BudgetExceeded> {
        self.scopes.iter().find_map(|scope| {
            scope.over(&self.with_others(scope, scope.before), |spent, cap| spent >= cap).or_else(|| scope.late())
        })
    }

    /// After the supervisor's deadline stopped the agent: the duration cap that ended.
    pub(crate) fn timed_out(&self) -> Option<BudgetExceeded> {
        self.scopes.iter().find_map(Scope::late)
    }
}

impl Scope {
    fn over(&self, total: &Usage, past: impl Fn(f64, f64) -> bool) -> Option<BudgetExceeded> {
        if let Some(cap) = self.caps.max_tokens {
            if past(total.total_tokens() as f64, cap as f64) {
                let tokens = |n: u64| format!("{} tokens", crate::values::thousands(n));
                return Some(self.exceeded(BudgetCap::MaxTokens, tokens(cap), tokens(total.total_tokens())));
            }
        }
        if let Some(cap) = self.caps.max_cost_usd {
            let spent = total.cost_usd.unwrap_or(0.0);
            if past(spent, cap) {
                return Some(self.exceeded(BudgetCap::MaxCostUsd, format!("${cap:.4}"), format!("${spent:.4}")));
            }
        }
        None
    }

    fn late(&self) -> Option<BudgetExceeded> {
        let cap = self.caps.max_duration?;
        let elapsed = self.started.elapsed();
        (elapsed >= cap.0).then(|| {
            self.exceeded(
                BudgetCap::MaxDuration,
                crate::values::format_duration(cap.0),
                crate::values::format_duration(elapsed),
            )
        })
    }

    fn exceeded(&self, cap: BudgetCap, limit: String, used: String) -> BudgetExceeded {
        let scope = self.step.clone().map_or(BudgetScope::Run, BudgetScope::Step);
        BudgetExceeded { scope, cap, limit, used }
    }
}

/// Of several attempts at the same task (`--attempts`), whose `[budget]` counts them all
/// together: `own` spending noted for the others (`Layout::attempt_spend`), and theirs, as they
/// last noted it, added to it. One run alone: `own`.
fn with_other_attempts(
    own: Usage,
    layout: &crate::layout::Layout,
    attempt: Option<&crate::record::AttemptRecord>,
) -> Usage {
    let Some(attempt) = attempt else { return own };
    let _ = crate::record::save_json(&layout.attempt_spend(&attempt.group, attempt.number), &own);
    let mut total = own;
    for number in (1..=attempt.of).filter(|number| *number != attempt.number) {
        let theirs = std::fs::read_to_string(layout.attempt_spend(&attempt.group, number)).ok();
        if let Some(theirs) = theirs.and_then(|text| serde_json::from_str::<Usage>(&text).ok()) {
            total.add(&theirs);
        }
    }
    total
}

/// The run's error for a crossed cap: work is kept as on any failure.
pub(crate) fn error(exceeded: BudgetExceeded, iteration: u32) -> Error {
    let scope = match &exceeded.scope {
        BudgetScope::Run => "the run's `[budget]`".to_owned(),
        BudgetScope::Step(step) => format!("step `{step}`'s `budget`"),
    };
    let message = format!(
        "{scope} `{}` of {} was reached in iteration {iteration} ({} spent); the agent was stopped",
        exceeded.cap.key(),
        exceeded.limit,
        exceeded.used
    );
    Error::new(ErrorKind::Budget { exceeded: Box::new(exceeded) }, message).with_hint(
        "the work so far is kept on the branch; raise the cap in `[budget]` (or the step's `budget`) to let it go on",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(tokens: u64, cost: Option<f64>) -> Usage {
        Usage { input_tokens: tokens, cost_usd: cost, ..Usage::default() }
    }

    #[test]
    fn caps_are_crossed_over_the_run_and_the_step() {
        let now = Instant::now();
        let run = BudgetPlan { max_tokens: Some(1000), ..BudgetPlan::default() };
        let step = BudgetPlan { max_cost_usd: Some(0.5), ..BudgetPlan::default() };
        let budget = Budget::new((&run, usage(900, None), now), ("review", &step, usage(0, Some(0.25)), now));
        assert_eq!(budget.crossed(&usage(100, None)), None, "exactly at the cap is not over it");
        let over = budget.crossed(&usage(101, None)).unwrap();
        assert_eq!(
            (over.scope, over.cap, over.used.as_str()),
            (BudgetScope::Run, BudgetCap::MaxTokens, "1,001 tokens")
        );
        let over = budget.crossed(&usage(1, Some(0.3))).unwrap();
        assert_eq!((over.scope, over.cap), (BudgetScope::Step("review".into()), BudgetCap::MaxCostUsd));
        assert_eq!(budget.reached(), None);
        let spent = Budget::new((&run, usage(1000, None), now), ("s", &BudgetPlan::default(), Usage::default(), now));
        assert_eq!(spent.reached().unwrap().cap, BudgetCap::MaxTokens, "at the cap, no new iteration starts");
    }

    #[test]
    fn durations_end_at_the_earliest_deadline() {
        let start = Instant::now() - std::time::Duration::from_secs(10);
        let run = BudgetPlan {
            max_duration: Some(crate::values::Duration(std::time::Duration::from_secs(60))),
            ..BudgetPlan::default()
        };
        let step = BudgetPlan {
            max_duration: Some(crate::values::Duration(std::time::Duration::from_secs(5))),
            ..BudgetPlan::default()
        };
        let budget = Budget::new((&run, Usage::default(), start), ("s", &step, Usage::default(), start));
        assert_eq!(budget.deadline(), Some(start + std::time::Duration::from_secs(5)));
        assert_eq!(budget.timed_out().unwrap().scope, BudgetScope::Step("s".into()));
        assert!(Budget::new(
            (&BudgetPlan::default(), Usage::default(), start),
            ("s", &BudgetPlan::default(), Usage::default(), start)
        )
        .deadline()
        .is_none());
    }
}
