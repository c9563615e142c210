//! What the state of a pull request asks for, from what the forge says of it: wait (checks
//! still running, the forge still working out whether it merges), green (every check passed,
//! approved where that is required), or feedback for the agent (failing checks, a review that
//! requests changes, a conflict with the base). A failure the base branch's head has too is
//! inherited: it is said, never sent to the agent, and does not hold the pull request back.

use crate::forge::{Check, CheckState, PullRequest, Review, ReviewComment};

/// Everything eden read of a pull request in one look.
#[derive(Debug, Clone)]
pub(crate) struct Look {
    pub(crate) pull: PullRequest,
    pub(crate) checks: Vec<Check>,
    pub(crate) reviews: Vec<Review>,
    pub(crate) comments: Vec<ReviewComment>,
}

/// What the agent is asked to answer in a round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Feedback {
    /// The head and what fails on it: a round is started once per key.
    pub(crate) key: String,
    pub(crate) failing: Vec<Check>,
    /// Reviews that request changes, each with its inline comments.
    pub(crate) reviews: Vec<(Review, Vec<ReviewComment>)>,
    pub(crate) conflict: bool,
}

impl Feedback {
    /// What started the round, for people and the record.
    pub(crate) fn triggers(&self) -> Vec<String> {
        let mut triggers: Vec<String> =
            self.failing.iter().map(|check| format!("check `{}` {}", check.name, check.conclusion)).collect();
        triggers.extend(self.reviews.iter().map(|(review, _)| format!("@{} requested changes", review.user)));
        if self.conflict {
            triggers.push("conflicts with its base".to_owned());
        }
        triggers
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing to do yet (checks running, mergeability being worked out, feedback answered).
    Wait,
    /// Every check passed (and approved where required); `inherited`: failures the base has too.
    Green {
        inherited: Vec<String>,
    },
    Feedback(Feedback),
}

/// The verdict on `look`: `on_base` says whether a check of that name fails on the base's
/// head too; `answered` holds the keys of the rounds already run.
pub(crate) fn judge(
    look: &Look,
    on_base: &dyn Fn(&str) -> bool,
    answered: &[String],
    require_approval: bool,
) -> Verdict {
    let head = &look.pull.head_sha;
    let pending = look.checks.iter().any(|check| check.state == CheckState::Pending);
    let (inherited, failing): (Vec<&Check>, Vec<&Check>) =
        look.checks.iter().filter(|check| check.state == CheckState::Failed).partition(|check| on_base(&check.name));
    let reviews = changes_requested(look);
    let conflict = look.pull.mergeable == Some(false) || look.pull.mergeable_state.as_deref() == Some("dirty");
    // Checks are answered together, once none is still running; each failure on a head, each
    // review and each conflict on a head is answered once.
    let done: Vec<&str> = answered.iter().flat_map(|key| key.split(',')).collect();
    let fresh = |part: &String| !done.contains(&part.as_str());
    let failing: Vec<Check> = match pending {
        true => Vec::new(),
        false => failing.into_iter().filter(|check| fresh(&format!("{head}:check:{}", check.name))).cloned().collect(),
    };
    let reviews: Vec<_> = reviews.into_iter().filter(|(review, _)| fresh(&format!("review:{}", review.id))).collect();
    let conflict_now = conflict && fresh(&format!("{head}:conflict"));
    if !failing.is_empty() || !reviews.is_empty() || conflict_now {
        let mut parts: Vec<String> = failing.iter().map(|check| format!("{head}:check:{}", check.name)).collect();
        parts.extend(reviews.iter().map(|(review, _)| format!("review:{}", review.id)));
        if conflict_now {
            parts.push(format!("{head}:conflict"));
        }
        parts.sort();
        return Verdict::Feedback(Feedback { key: parts.join(","), failing, reviews, conflict: conflict_now });
    }
    if conflict || look.checks.iter().any(|check| check.state == CheckState::Failed && !on_base(&check.name)) {
        return Verdict::Wait;
    }
    let approved = !require_approval || approved(look);
    if pending || look.pull.mergeable.is_none() || !approved {
        return Verdict::Wait;
    }
    Verdict::Green { inherited: inherited.iter().map(|check| check.name.clone()).collect() }
}

/// Each reviewer's latest review, when it requests changes, with its inline comments.
fn changes_requested(look: &Look) -> Vec<(Review, Vec<ReviewComment>)> {
    latest_by_reviewer(&look.reviews)
        .into_iter()
        .filter(|review| review.state == "CHANGES_REQUESTED")
        .map(|review| {
            let comments = look.comments.iter().filter(|comment| comment.review == Some(review.id)).cloned().collect();
            (review.clone(), comments)
        })
        .collect()
}

/// Approved: some reviewer's latest say is an approval, and none's requests changes.
fn approved(look: &Look) -> bool {
    let latest = latest_by_reviewer(&look.reviews);
    latest.iter().any(|review| review.state == "APPROVED") && !latest.iter().any(|r| r.state == "CHANGES_REQUESTED")
}

/// Each reviewer's last review that says something (a plain comment leaves their say as it was).
fn latest_by_reviewer(reviews: &[Review]) -> Vec<&Review> {
    let mut latest: Vec<&Review> = Vec::new();
    for review in
        reviews.iter().filter(|review| matches!(review.state.as_str(), "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"))
    {
        match latest.iter_mut().find(|known| known.user == review.user) {
            Some(known) => *known = review,
            None => latest.push(review),
        }
    }
    latest.retain(|review| review.state != "DISMISSED");
    latest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull(mergeable: Option<bool>) -> PullRequest {
        PullRequest {
            number: 1,
            url: String::new(),
            head_sha: "h1".into(),
            head_branch: "b".into(),
            base: "main".into(),
            state: "open".into(),
            merged: false,
            mergeable,
            mergeable_state: None,
        }
    }

    fn check(name: &str, state: CheckState) -> Check {
        Check {
            name: name.into(),
            state,
            conclusion: "failure".into(),
            job: None,
            output: String::new(),
            details_url: None,
        }
    }

    fn review(id: u64, user: &str, state: &str) -> Review {
        Review { id, state: state.into(), commit: "h1".into(), user: user.into(), body: String::new() }
    }

    fn look(checks: Vec<Check>, reviews: Vec<Review>) -> Look {
        Look { pull: pull(Some(true)), checks, reviews, comments: Vec::new() }
    }

    const NONE_ON_BASE: &dyn Fn(&str) -> bool = &|_| false;

    #[test]
    fn running_checks_wait_and_failures_are_answered_together_once() {
        let running = look(vec![check("a", CheckState::Failed), check("b", CheckState::Pending)], vec![]);
        assert_eq!(judge(&running, NONE_ON_BASE, &[], false), Verdict::Wait);
        let done = look(vec![check("a", CheckState::Failed), check("b", CheckState::Failed)], vec![]);
        let Verdict::Feedback(feedback) = judge(&done, NONE_ON_BASE, &[], false) else { panic!() };
        assert_eq!(feedback.key, "h1:check:a,h1:check:b");
        assert_eq!(judge(&done, NONE_ON_BASE, &[feedback.key], false), Verdict::Wait, "never twice on one head");
    }

    #[test]
    fn a_failure_the_base_has_too_is_inherited() {
        let done = look(vec![check("lint", CheckState::Failed), check("test", CheckState::Passed)], vec![]);
        let on_base: &dyn Fn(&str) -> bool = &|name| name == "lint";
        assert_eq!(judge(&done, on_base, &[], false), Verdict::Green { inherited: vec!["lint".into()] });
    }

    #[test]
    fn only_a_reviewers_latest_request_for_changes_starts_a_round() {
        let changed = look(vec![], vec![review(1, "ann", "CHANGES_REQUESTED"), review(2, "bob", "COMMENTED")]);
        let Verdict::Feedback(feedback) = judge(&changed, NONE_ON_BASE, &[], false) else { panic!() };
        assert_eq!(feedback.triggers(), ["@ann requested changes"]);
        let mut next_head = changed.clone();
        next_head.pull.head_sha = "h2".into();
        assert_eq!(
            judge(&next_head, NONE_ON_BASE, &[feedback.key], false),
            Verdict::Green { inherited: vec![] },
            "a review is answered once, whatever the head"
        );
        let resolved = look(vec![], vec![review(1, "ann", "CHANGES_REQUESTED"), review(3, "ann", "APPROVED")]);
        assert_eq!(judge(&resolved, NONE_ON_BASE, &[], true), Verdict::Green { inherited: vec![] });
        assert_eq!(judge(&look(vec![], vec![]), NONE_ON_BASE, &[], true), Verdict::Wait, "approval required");
    }

    #[test]
    fn a_conflict_is_feedback_and_an_unknown_mergeability_waits() {
        let mut conflicted = look(vec![], vec![]);
        conflicted.pull.mergeable = Some(false);
        let Verdict::Feedback(feedback) = judge(&conflicted, NONE_ON_BASE, &[], false) else { panic!() };
        assert!(feedback.conflict && feedback.key == "h1:conflict");
        conflicted.pull.mergeable = None;
        assert_eq!(judge(&conflicted, NONE_ON_BASE, &[], false), Verdict::Wait);
    }
}
