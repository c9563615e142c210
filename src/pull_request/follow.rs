//! Following a pull request until it is green: polling the forge (conditional requests; the
//! wait grows from `poll` to five minutes while nothing changes), answering failures with a
//! round (`Rounds`: a run on the pull request's branch, its commits pushed), once per head and
//! failure set, at most `max_rounds` times; at the end merging through the API when asked, or
//! giving up with a label and a comment that says what happened. Ctrl-C stops the following;
//! the pull request stays as it is.

use super::feedback::{self, About};
use super::judge::{judge, Feedback, Look, Verdict};
use crate::error::Error;
use crate::forge::{CheckState, Forge};
use crate::manifest::pull_request_plan::PullRequestPlan;
use crate::record::{PullRequestRecord, RoundRecord, RunRecord};
use std::time::{Duration, Instant};

/// The longest wait between two looks while nothing changes: ten polls, at most five minutes
/// (the default `poll` of 30 s backs off to 5 min), never less than one poll.
fn longest_poll(poll: Duration) -> Duration {
    (poll * 10).min(Duration::from_secs(300)).max(poll)
}
/// The most of a job's log read.
const LOG_BYTES: usize = 4 << 20;

/// Runs a round: a run on the pull request's branch with `prompt`, after saving `files` where
/// the agent reads them. Its record (its push in it), or why it could not run.
pub(crate) trait Rounds {
    fn run(&mut self, prompt: &str, files: &[(String, Vec<u8>)]) -> Result<RunRecord, Error>;
}

/// How following ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    Green {
        merged: bool,
        inherited: Vec<String>,
    },
    /// Merged on the forge by someone else meanwhile.
    MergedElsewhere,
}

/// What following needs besides the forge.
pub(crate) struct Following<'a> {
    pub(crate) settings: &'a PullRequestPlan,
    /// The task, and the completion signals a round's prompt must not carry.
    pub(crate) task: &'a str,
    pub(crate) signals: &'a [String],
    pub(crate) say: &'a mut dyn FnMut(&str),
    /// Called whenever the record changes, to keep it.
    pub(crate) save: &'a mut dyn FnMut(&PullRequestRecord),
}

/// Follow `pull` until it ends; its record is updated as rounds go.
pub(crate) fn follow(
    forge: &mut dyn Forge,
    pull: &mut PullRequestRecord,
    rounds: &mut dyn Rounds,
    with: &mut Following<'_>,
) -> Result<Ended, Error> {
    let deadline = Instant::now() + with.settings.timeout.0;
    let mut wait = with.settings.poll.0;
    let mut last: Option<String> = None;
    loop {
        let look = look(forge, pull.number)?;
        if look.pull.head_branch != pull.head {
            return Err(Error::forge(format!(
                "the forge says pull request #{} is of `{}`, not of the run's `{}`: not followed",
                pull.number, look.pull.head_branch, pull.head
            ))
            .with_hint("follow a pull request eden opened, from the record of the run that opened it"));
        }
        if look.pull.merged {
            return Ok(Ended::MergedElsewhere);
        }
        if look.pull.state != "open" {
            return Err(Error::forge(format!("pull request #{} was closed on the forge", pull.number))
                .with_hint("reopen it and run `eden pr follow RUN`, or leave it closed"));
        }
        let answered: Vec<String> = pull.rounds.iter().map(|round| round.key.clone()).collect();
        let base_failures = base_failures(forge, &look)?;
        let on_base = |name: &str| base_failures.iter().any(|failing| failing == name);
        match judge(&look, &on_base, &answered, with.settings.require_approval) {
            Verdict::Green { inherited } => return green(forge, pull, &look, inherited, with),
            Verdict::Feedback(feedback) if pull.rounds.len() as u32 >= with.settings.max_rounds => {
                let why = format!("{} round(s) spent and {}", pull.rounds.len(), feedback.triggers().join(", "));
                return Err(give_up(forge, pull, why, with));
            }
            Verdict::Feedback(feedback) => {
                answer(forge, pull, &look, &feedback, rounds, with)?;
                (wait, last) = (with.settings.poll.0, None);
                continue;
            }
            Verdict::Wait => {}
        }
        if Instant::now() >= deadline {
            let why = format!("not green within {}", crate::values::format_duration(with.settings.timeout.0));
            return Err(give_up(forge, pull, why, with));
        }
        // Nothing changed since the last look: ask less often, up to five minutes.
        let now = fingerprint(&look);
        let poll = with.settings.poll.0;
        wait = if last.as_ref() == Some(&now) { (wait * 2).min(longest_poll(poll)) } else { poll };
        last = Some(now);
        crate::process::sleep_unless_stopped(wait.min(deadline.saturating_duration_since(Instant::now())))?;
    }
}

/// One look at the pull request, its head's checks, its reviews and their comments.
fn look(forge: &mut dyn Forge, number: u64) -> Result<Look, Error> {
    let pull = forge.pull(number)?;
    let checks = forge.checks(&pull.head_sha)?;
    let reviews = forge.reviews(number)?;
    let comments = if reviews.iter().any(|review| review.state == "CHANGES_REQUESTED") {
        forge.review_comments(number)?
    } else {
        Vec::new()
    };
    Ok(Look { pull, checks, reviews, comments })
}

/// The names of the checks that fail on the base branch's head, asked only when the head has a
/// failing check.
fn base_failures(forge: &mut dyn Forge, look: &Look) -> Result<Vec<String>, Error> {
    if !look.checks.iter().any(|check| check.state == CheckState::Failed) {
        return Ok(Vec::new());
    }
    let Some(base) = forge.branch_tip(&look.pull.base)? else { return Ok(Vec::new()) };
    let failing = forge.checks(&base)?.into_iter().filter(|check| check.state == CheckState::Failed);
    Ok(failing.map(|check| check.name).collect())
}

/// What changed between two looks: the head, each check's state, the reviews, mergeability.
fn fingerprint(look: &Look) -> String {
    let checks: Vec<String> = look.checks.iter().map(|check| format!("{}={:?}", check.name, check.state)).collect();
    let reviews: Vec<String> = look.reviews.iter().map(|review| format!("{}={}", review.id, review.state)).collect();
    format!("{} {:?} {} {}", look.pull.head_sha, look.pull.mergeable, checks.join(","), reviews.join(","))
}

/// A round: the feedback told to a run on the branch, which pushes what it commits.
fn answer(
    forge: &mut dyn Forge,
    pull: &mut PullRequestRecord,
    look: &Look,
    feedback: &Feedback,
    rounds: &mut dyn Rounds,
    with: &mut Following<'_>,
) -> Result<(), Error> {
    let number = pull.rounds.len() + 1;
    let triggers = feedback.triggers();
    (with.say)(&format!("pull request #{}: round {number}: {}", pull.number, triggers.join(", ")));
    let mut logs = Vec::new();
    for check in &feedback.failing {
        if let Some(log) = forge.job_log(check, LOG_BYTES)? {
            logs.push((check.name.clone(), log));
        }
    }
    let folder = format!("{}/pr-{}-round-{number}", super::FEEDBACK_DIR, pull.number);
    let about = About {
        url: &pull.url,
        base: &look.pull.base,
        remote: &with.settings.remote,
        task: with.task,
        signals: with.signals,
        folder: &folder,
    };
    let round = feedback::round(feedback, &logs, &about);
    let record = rounds.run(&round.prompt, &round.files)?;
    let pushed = record.push.as_ref().filter(|push| push.pushed && push.commit != look.pull.head_sha);
    pull.rounds.push(RoundRecord {
        key: feedback.key.clone(),
        trigger: triggers,
        head: look.pull.head_sha.clone(),
        run: record.id.clone(),
        pushed: pushed.map(|push| push.commit.clone()),
    });
    if let Some(push) = pushed {
        pull.head_sha = push.commit.clone();
    }
    (with.save)(pull);
    match pushed {
        Some(_) => Ok(()),
        None => {
            let why = format!("round {number} ({}) pushed nothing", record.id);
            Err(give_up(forge, pull, why, with))
        }
    }
}

/// Every check passed: merged through the API when asked.
fn green(
    forge: &mut dyn Forge,
    pull: &mut PullRequestRecord,
    look: &Look,
    inherited: Vec<String>,
    with: &mut Following<'_>,
) -> Result<Ended, Error> {
    if !inherited.is_empty() {
        let names = inherited.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ");
        (with.say)(&format!(
            "pull request #{}: {names} fail(s) on the base too: inherited, not the agent's",
            pull.number
        ));
    }
    let merged = match with.settings.merge {
        Some(method) => {
            forge.merge(pull.number, method, &look.pull.head_sha)?;
            true
        }
        None => false,
    };
    pull.state = if merged { "merged" } else { "green" }.to_owned();
    (with.save)(pull);
    Ok(Ended::Green { merged, inherited })
}

/// The end without green: the give-up label, a comment that says what happened, the pull
/// request left open. The error the run ends with (exit 9), or the forge's.
fn give_up(forge: &mut dyn Forge, pull: &mut PullRequestRecord, why: String, with: &mut Following<'_>) -> Error {
    if let Err(error) = forge.add_labels(pull.number, std::slice::from_ref(&with.settings.give_up_label)) {
        return error;
    }
    let mut comment = format!("eden stopped following this pull request: {why}.\n");
    for (n, round) in pull.rounds.iter().enumerate() {
        let pushed = round
            .pushed
            .as_deref()
            .map_or("nothing pushed".to_owned(), |sha| format!("pushed `{}`", &sha[..sha.len().min(10)]));
        comment.push_str(&format!("\n- round {}: {} → run `{}`, {pushed}", n + 1, round.trigger.join(", "), round.run));
    }
    if let Err(error) = forge.comment(pull.number, &crate::redact::apply(&comment)) {
        return error;
    }
    pull.state = "gave_up".to_owned();
    (with.save)(pull);
    Error::new(crate::error::ErrorKind::ChecksFailed, format!("pull request #{} is not green: {why}", pull.number))
        .with_hint(format!("it is labelled `{}` and left open: {}", with.settings.give_up_label, pull.url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_poll_backs_off_to_five_minutes() {
        assert_eq!(longest_poll(Duration::from_secs(30)), Duration::from_secs(300));
        assert_eq!(longest_poll(Duration::from_millis(300)), Duration::from_secs(3), "scaled alike");
        assert_eq!(longest_poll(Duration::from_secs(600)), Duration::from_secs(600));
    }
}
