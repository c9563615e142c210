//! An iteration's tool calls as its record keeps them: the latest `TOOL_CALLS_KEPT`, each with
//! its result once the agent reports it, and a count of the earlier ones. A session of hours
//! makes tens of thousands of calls; the record (written at every phase) and eden's memory stay
//! the same size, and the run's log has every call.

use crate::record::ToolCallRecord;
use std::collections::VecDeque;

/// How many of an iteration's calls the record keeps, the latest.
pub(crate) const TOOL_CALLS_KEPT: usize = 500;

/// How many calls may wait for their result at once; an agent that never reports results
/// cannot grow the list (the oldest is given up: its result, if it comes, answers nothing).
const WAITING_KEPT: usize = 256;

#[derive(Default)]
pub(super) struct ToolCalls {
    kept: VecDeque<ToolCallRecord>,
    /// Calls made so far: the first kept one is number `made - kept.len()`.
    made: u64,
    /// Calls still waiting for their result, oldest first: their number and tool.
    waiting: VecDeque<(u64, String)>,
}

impl ToolCalls {
    pub(super) fn call(&mut self, call: ToolCallRecord) {
        if self.waiting.len() == WAITING_KEPT {
            self.waiting.pop_front();
        }
        self.waiting.push_back((self.made, call.name.clone()));
        if self.kept.len() == TOOL_CALLS_KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back(call);
        self.made += 1;
    }

    /// A result: it answers the oldest waiting call of its tool (of any tool when it names
    /// none, as Claude's do). That call's tool, if one was waiting.
    pub(super) fn result(&mut self, tool: Option<&str>, ok: bool, reason: Option<String>) -> Option<String> {
        let at = self.waiting.iter().position(|(_, called)| tool.is_none_or(|tool| tool == called))?;
        let (number, called) = self.waiting.remove(at)?;
        let first_kept = self.made - self.kept.len() as u64;
        if let Some(call) = number.checked_sub(first_kept).and_then(|index| self.kept.get_mut(index as usize)) {
            call.ok = Some(ok);
            call.error = reason;
        }
        Some(called)
    }

    /// The calls kept, and how many earlier ones were not.
    pub(super) fn into_record(self) -> (Vec<ToolCallRecord>, u64) {
        let omitted = self.made - self.kept.len() as u64;
        (self.kept.into(), omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, summary: &str) -> ToolCallRecord {
        ToolCallRecord { name: name.into(), summary: summary.into(), ok: None, subagent: false, error: None }
    }

    /// Results answer the oldest waiting call of their tool, or the oldest of any when unnamed.
    #[test]
    fn results_answer_the_oldest_waiting_call() {
        let mut calls = ToolCalls::default();
        calls.call(call("Bash", "ls"));
        calls.call(call("Read", "a.rs"));
        calls.call(call("Bash", "make"));
        assert_eq!(calls.result(Some("Read"), false, Some("gone".into())).as_deref(), Some("Read"));
        assert_eq!(calls.result(None, true, None).as_deref(), Some("Bash"));
        assert_eq!(calls.result(Some("Read"), true, None), None, "no Read call waits");
        let (kept, omitted) = calls.into_record();
        assert_eq!(omitted, 0);
        let outcomes: Vec<_> = kept.iter().map(|c| (c.summary.as_str(), c.ok, c.error.as_deref())).collect();
        assert_eq!(outcomes, [("ls", Some(true), None), ("a.rs", Some(false), Some("gone")), ("make", None, None)]);
    }

    /// A long session keeps the latest calls and counts the rest; a result for a call no longer
    /// kept still names its tool.
    #[test]
    fn a_long_session_keeps_the_latest_calls() {
        let mut calls = ToolCalls::default();
        calls.call(call("Bash", "first"));
        for n in 0..TOOL_CALLS_KEPT + 99 {
            calls.call(call("Read", &n.to_string()));
            calls.result(Some("Read"), true, None);
        }
        assert_eq!(calls.result(Some("Bash"), false, None).as_deref(), Some("Bash"));
        let (kept, omitted) = calls.into_record();
        assert_eq!((kept.len(), omitted), (TOOL_CALLS_KEPT, 100));
        assert_eq!(kept[0].summary, "99");
        assert_eq!(kept.last().unwrap().summary, (TOOL_CALLS_KEPT + 98).to_string());
        assert!(kept.iter().all(|c| c.ok == Some(true)), "the failed call was not kept, the answered ones were");
    }

    /// Calls that are never answered cannot grow the waiting list.
    #[test]
    fn unanswered_calls_are_bounded() {
        let mut calls = ToolCalls::default();
        for n in 0..WAITING_KEPT * 4 {
            calls.call(call("Bash", &n.to_string()));
        }
        assert_eq!(calls.waiting.len(), WAITING_KEPT);
        assert_eq!(calls.kept.len(), TOOL_CALLS_KEPT.min(WAITING_KEPT * 4));
    }
}
