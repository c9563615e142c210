//! `[notify]` at work: a run's events (`finished`, `failed`, `kept`, `budget`,
//! `usage_limit_wait`, and its pull request's rounds) told to a command on the host and to
//! webhooks, each once, in the background: a delivery that fails is a warning, never the run's
//! failure, and the run's end waits for the last ones no longer than their timeout.
//!
//! What a notice carries is eden's own account of the run. The few texts that come from the
//! agent (an error it printed, its usage-limit message) are neutralized first (`plain`):
//! secrets redacted, escape sequences and control characters dropped, markup that a chat
//! would act on (`<!channel>`, `@here`) broken, and cut short.

mod deliver;
mod notice;

pub(crate) use notice::{plain, About, Notice, PullRequest, UsageLimit};

use crate::manifest::notify_plan::{NotifyPlan, NotifyTarget};
use crate::manifest::schema::NotifyOn;
use crate::record::{ExitReason, RunRecord};
use crate::report::{Event, Reporter};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Tells a run's notices to its targets. Cheap to clone; without targets it does nothing.
#[derive(Clone, Default)]
pub(crate) struct Notifier {
    shared: Option<Arc<Shared>>,
}

struct Shared {
    targets: Vec<NotifyTarget>,
    about: About,
    /// Deliveries under way.
    pending: Mutex<usize>,
    done: Condvar,
    warnings: Mutex<Vec<String>>,
}

impl Notifier {
    pub(crate) fn new(plan: &NotifyPlan, about: About) -> Notifier {
        if plan.targets.is_empty() {
            return Notifier::default();
        }
        let shared = Shared {
            targets: plan.targets.clone(),
            about,
            pending: Mutex::new(0),
            done: Condvar::new(),
            warnings: Mutex::default(),
        };
        Notifier { shared: Some(Arc::new(shared)) }
    }

    pub(crate) fn about(&self) -> Option<&About> {
        self.shared.as_ref().map(|shared| &shared.about)
    }

    /// The reporter that tells the events a run reports as it goes (a usage limit's wait).
    pub(crate) fn reporter(&self) -> Option<Box<dyn Reporter>> {
        self.shared.as_ref().map(|_| Box::new(Watching(self.clone())) as Box<dyn Reporter>)
    }

    /// Tell `notice` to every target that wants it, each on a thread of its own.
    pub(crate) fn send(&self, notice: Notice) {
        let Some(shared) = &self.shared else { return };
        let json = serde_json::to_string(&notice).expect("notices serialize");
        let body = Arc::new(crate::redact::apply(&json).into_owned().into_bytes());
        for target in shared.targets.iter().filter(|target| target.on.contains(&notice.event)) {
            *shared.pending.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            let (shared, target, body) = (Arc::clone(shared), target.clone(), Arc::clone(&body));
            let event = notice.event;
            std::thread::spawn(move || {
                let warnings = deliver::deliver(&target, event, &shared.about, &body);
                shared.warnings.lock().unwrap_or_else(|e| e.into_inner()).extend(warnings);
                *shared.pending.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                shared.done.notify_all();
            });
        }
    }

    /// Wait for the deliveries under way, no longer than the longest timeout from now; the
    /// warnings of those that failed (or are not done) since the last call.
    pub(crate) fn settle(&self) -> Vec<String> {
        let Some(shared) = &self.shared else { return Vec::new() };
        let longest = shared.targets.iter().map(|target| target.timeout.0).max().unwrap_or_default();
        let deadline = Instant::now() + longest + Duration::from_millis(200);
        let mut pending = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        while *pending > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) else {
                break;
            };
            pending = shared.done.wait_timeout(pending, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        let still = *pending;
        drop(pending);
        let mut warnings = std::mem::take(&mut *shared.warnings.lock().unwrap_or_else(|e| e.into_inner()));
        if still > 0 {
            warnings.push(format!(
                "{still} notification(s) not delivered within {}: left behind as eden ends",
                crate::values::format_duration(longest)
            ));
        }
        warnings
    }

    /// The run ended as `record` says: its end told (and its budget, when that stopped it),
    /// then the deliveries waited for; the warnings to show.
    pub(crate) fn ended(&self, record: &RunRecord) -> Vec<String> {
        let Some(about) = self.about() else { return Vec::new() };
        let mut about = about.clone();
        about.branch = record.branch.clone();
        if let Some(budget) = record.error.as_ref().and_then(|error| error.budget.clone()) {
            let text = format!("eden: `{}` was stopped by its budget: {} of {}", about.name, budget.used, budget.limit);
            let mut notice = end_notice(NotifyOn::Budget, &about, record, text);
            notice.budget = Some(budget);
            self.send(notice);
        }
        if let Some(event) = end_of(record) {
            let text = end_text(event, &about.name, record);
            self.send(end_notice(event, &about, record, text));
        }
        self.settle()
    }
}

/// Which end a record tells: `None` for an attempt another attempt beat (that one tells).
pub(crate) fn end_of(record: &RunRecord) -> Option<NotifyOn> {
    let beaten = record.attempt.as_ref().is_some_and(|attempt| !attempt.chosen)
        && (record.exit_code == Some(0)
            || (record.exit_reason == Some(ExitReason::Interrupted) && crate::process::stop_requested()));
    if beaten {
        return None;
    }
    Some(match (record.exit_code, &record.merged_into, &record.preserved_branch) {
        (Some(0), Some(_), _) => NotifyOn::Finished,
        (Some(0), None, Some(_)) => NotifyOn::Kept,
        (Some(0), None, None) => NotifyOn::Finished,
        _ if record.failed_for_review() => NotifyOn::Kept,
        _ => NotifyOn::Failed,
    })
}

fn end_notice(event: NotifyOn, about: &About, record: &RunRecord, text: String) -> Notice {
    let mut notice = Notice::new(event, about, text);
    notice.exit_code = record.exit_code;
    notice.exit_reason = record.exit_reason;
    notice.merged_into = record.merged_into.clone();
    notice.preserved_branch = record.preserved_branch.clone();
    notice.commits = Some(record.commits.len());
    notice.cost_usd = record.usage.as_ref().and_then(|usage| usage.cost_usd);
    notice.duration_ms = Some(record.duration_ms);
    notice.error = record.error.as_ref().map(|error| plain(&error.message));
    notice.attempt = record.attempt.clone();
    notice
}

fn end_text(event: NotifyOn, name: &str, record: &RunRecord) -> String {
    let cost = record.usage.as_ref().and_then(|usage| usage.cost_usd).map(crate::values::dollars);
    let took = crate::values::format_duration(Duration::from_millis(record.duration_ms));
    let spent = match cost {
        Some(cost) => format!(" ({cost}, {took})"),
        None => format!(" ({took})"),
    };
    match event {
        NotifyOn::Failed => {
            let reason = record.exit_reason.map_or("unknown", ExitReason::as_str);
            let why = record.error.as_ref().map(|error| format!(": {}", plain(&error.message))).unwrap_or_default();
            format!("eden: `{name}` failed ({reason}){spent}{why}")
        }
        NotifyOn::Kept => {
            let why = match record.exit_reason {
                Some(reason @ (ExitReason::Protected | ExitReason::UncommittedWork | ExitReason::GitError)) => {
                    format!(" ({})", reason.as_str())
                }
                _ => String::new(),
            };
            let kept = record.preserved_branch.as_deref().unwrap_or(&record.branch);
            format!("eden: `{name}` needs review: its work is kept on `{kept}`{why}{spent}")
        }
        _ => match &record.merged_into {
            Some(target) => {
                format!("eden: `{name}` finished: {} commit(s) merged into `{target}`{spent}", record.commits.len())
            }
            None => format!("eden: `{name}` finished with nothing to merge{spent}"),
        },
    }
}

/// The events a run reports that are told as they happen.
struct Watching(Notifier);

impl Reporter for Watching {
    fn report(&mut self, _run_id: &str, event: &Event<'_>) {
        let Event::UsageLimit { message, wait_secs, until, .. } = event else { return };
        let Some(about) = self.0.about() else { return };
        let text = format!("eden: `{}` hit its provider's usage limit; it waits until {until} and goes on", about.name);
        let mut notice = Notice::new(NotifyOn::UsageLimitWait, about, text);
        notice.usage_limit =
            Some(UsageLimit { until: until.to_string(), wait_secs: *wait_secs, message: plain(message) });
        self.0.send(notice);
    }
}
