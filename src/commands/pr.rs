//! A run's pull request after the run: opened (or found open) and, with `follow`, followed until
//! it is green, each round of feedback answered by a run on the pull request's branch: the
//! first step's agent, its session resumed where it can be, the feedback as its prompt.

use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::plan::Plan;
use crate::manifest::schema::Strategy;
use crate::pull_request::follow::{self, Ended, Following, Rounds};
use crate::record::{PullRequestRecord, RunRecord};

/// How a round's plan is run: as `eden run` runs one, reported the same way.
pub(super) type RunPlan<'a> = &'a dyn Fn(&Plan) -> Result<RunRecord, Error>;

/// `[pull_request]`, after a run that ended well: open it, say it, and follow it when asked.
pub(super) fn after_run(
    args: &RunArgs,
    plan: &Plan,
    record: &mut RunRecord,
    run_plan: RunPlan<'_>,
) -> Result<(), Error> {
    let Some(settings) = &plan.pull_request else { return Ok(()) };
    let Some(pull) = crate::pull_request::open_for(plan, record)? else {
        note(args, "no commits were pushed: no pull request to open");
        return Ok(());
    };
    note(args, &format!("pull request #{} {}: {}", pull.number, pull.action, pull.url));
    record.pull_request = Some(pull);
    save(record)?;
    if !settings.follow {
        return Ok(());
    }
    follow_pull(args, plan, record, run_plan)
}

/// Follow the record's pull request; the record keeps its rounds and how it ended.
fn follow_pull(args: &RunArgs, plan: &Plan, record: &mut RunRecord, run_plan: RunPlan<'_>) -> Result<(), Error> {
    let (Some(settings), Some(mut pull)) = (&plan.pull_request, record.pull_request.clone()) else { return Ok(()) };
    let repo = crate::git::Git::new(&record.repo);
    let destination = crate::pull_request::destination(plan, &repo)?.ok_or_else(|| Error::internal("no forge"))?;
    let mut forge = crate::forge::open(&destination.target)?;
    let mut rounds = RunRounds { args, plan, run_plan, branch: pull.head.clone(), last: record.clone() };
    let first = plan.steps.first().ok_or_else(|| Error::internal("a plan without a step"))?;
    let task = crate::manifest::prompt::render(&first.prompt.template, &first.prompt.args);
    let signals = first.loop_.completion_signal.clone();
    let mut said = |line: &str| note(args, line);
    let mut saving = record.clone();
    let mut keep = |pull: &PullRequestRecord| {
        saving.pull_request = Some(pull.clone());
        let _ = saving.save();
    };
    let mut with = Following { settings, task: &task, signals: &signals, say: &mut said, save: &mut keep };
    note(args, &format!("pull request #{}: following its checks and reviews", pull.number));
    let ended = follow::follow(forge.as_mut(), &mut pull, &mut rounds, &mut with);
    record.pull_request = Some(pull.clone());
    save(record)?;
    let requests = forge.requests();
    note(
        args,
        &format!(
            "{} request(s) to the forge, {} of them answered `not modified`",
            requests.sent, requests.not_modified
        ),
    );
    match ended? {
        Ended::Green { merged: true, .. } => {
            note(args, &format!("pull request #{} is green and merged: {}", pull.number, pull.url))
        }
        Ended::Green { .. } => note(args, &format!("pull request #{} is green: {}", pull.number, pull.url)),
        Ended::MergedElsewhere => note(args, &format!("pull request #{} was merged on the forge", pull.number)),
    }
    Ok(())
}

/// Rounds as runs of the plan's first step on the pull request's branch.
struct RunRounds<'a> {
    args: &'a RunArgs,
    plan: &'a Plan,
    run_plan: RunPlan<'a>,
    branch: String,
    /// The run before this round: its session is resumed.
    last: RunRecord,
}

impl Rounds for RunRounds<'_> {
    fn run(&mut self, prompt: &str, files: &[(String, Vec<u8>)]) -> Result<RunRecord, Error> {
        let checkout = crate::git::Git::new(&self.last.repo);
        let mut plan = self.round_plan(prompt);
        for (path, bytes) in files {
            let full = self.last.repo.join(path);
            if let Some(dir) = full.parent() {
                fs_err::create_dir_all(dir)
                    .map_err(|err| Error::internal("cannot save a round's feedback").with_source(err))?;
            }
            fs_err::write(&full, bytes)
                .map_err(|err| Error::internal("cannot save a round's feedback").with_source(err))?;
            plan.copy_to_worktree.push(path.into());
        }
        fetch_base(&plan, &checkout, &self.last)?;
        let layout = super::layout(Some(&self.last.repo))?;
        let mut notes = Vec::new();
        super::from::resume(&self.last, None, &mut plan, &layout, &mut notes);
        for line in notes {
            note(self.args, &line);
        }
        let record = (self.run_plan)(&plan)?;
        self.last = record.clone();
        Ok(record)
    }
}

impl RunRounds<'_> {
    /// The plan's first step, prompted with the feedback, on the pull request's branch.
    fn round_plan(&self, prompt: &str) -> Plan {
        let mut plan = self.plan.clone();
        plan.steps.truncate(1);
        if let Some(step) = plan.steps.first_mut() {
            step.prompt.template = prompt.to_owned();
            step.prompt.file = None;
            step.prompt.args.clear();
        }
        plan.branch.strategy = Strategy::Named;
        plan.branch.name = Some(self.branch.clone());
        plan.branch.reuse_worktree = true;
        plan
    }
}

/// The base as the forge has it now, so a round can merge it to end a conflict.
fn fetch_base(plan: &Plan, repo: &crate::git::Git, last: &RunRecord) -> Result<(), Error> {
    let (Some(settings), Some(pull)) = (&plan.pull_request, &last.pull_request) else { return Ok(()) };
    let refspec =
        format!("+refs/heads/{base}:refs/remotes/{remote}/{base}", base = pull.base, remote = settings.remote);
    let command = repo.command(["fetch", "--quiet", "--no-tags", &settings.remote, &refspec]);
    let output = match crate::pull_request::credential(plan, repo)? {
        Some(credential) => credential.output(command),
        None => command.env("GIT_TERMINAL_PROMPT", "0").output(),
    };
    match output {
        Ok(output) if output.success() => Ok(()),
        _ => Err(Error::forge(format!("cannot fetch `{}` from `{}` for the next round", pull.base, settings.remote))
            .with_hint("check the remote and the token's access, then `eden pr follow RUN`")),
    }
}

fn save(record: &RunRecord) -> Result<(), Error> {
    record.save().map_err(|err| Error::internal("cannot save the run's record").with_source(err))
}

fn note(args: &RunArgs, line: &str) {
    if !args.quiet {
        crate::ui::print_note(line);
    }
}
