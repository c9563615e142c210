//! A run's pull request after the run: opened (or found open) and, with `follow`, followed until
//! it is green, each round of feedback answered by a run on the pull request's branch: the
//! first step's agent, its session resumed where it can be, the feedback as its prompt.

use crate::cli::{PrArgs, PrCommand, PrRunArgs, RunArgs};
use crate::error::Error;
use crate::manifest::plan::Plan;
use crate::manifest::schema::Strategy;
use crate::pull_request::follow::{self, Ended, Following, Rounds};
use crate::record::{PullRequestRecord, RunRecord};

/// `eden pr RUN` and `eden pr follow RUN`.
pub(crate) fn pr(args: PrArgs) -> Result<i32, Error> {
    let (following, given) = match args.command {
        Some(PrCommand::Follow(given)) => (true, given),
        None => (false, args.open),
    };
    // Ctrl-C while following stops it at the next look, the pull request left as it is.
    crate::process::note_signals().map_err(|err| Error::internal("cannot listen for signals").with_source(err))?;
    let (run_args, plan, mut record) = load(&given)?;
    let result = match following {
        true => follow_again(&run_args, &plan, &mut record),
        false => open_again(&run_args, &plan, &mut record),
    };
    if run_args.json {
        crate::ui::print_data(&serde_json::to_string_pretty(&record).expect("records serialize"));
    }
    result.map(|()| 0)
}

/// The run `given` names, and the plan of its manifest (which must have a `[pull_request]`).
fn load(given: &PrRunArgs) -> Result<(RunArgs, Plan, RunRecord), Error> {
    let layout = super::layout(given.repo.as_ref())?;
    let (runs, _) = crate::sessions::history::load(&layout);
    let light = crate::sessions::history::find(&runs, given.run.as_deref().unwrap_or("last"))?;
    let record = RunRecord::load(&light.record_path)?;
    let manifest = match &given.manifest {
        Some(manifest) => Some(manifest.clone()),
        None => super::recorded::record_manifest(light, &layout).map_err(|error| {
            let manifest = light.manifest.as_ref().map(|path| path.display().to_string()).unwrap_or_default();
            error.with_hint(format!("name it yourself if it is yours: `eden pr {} --manifest {manifest}`", light.id))
        })?,
    };
    let Some(manifest) = manifest else {
        return Err(Error::usage(format!("run `{}` has no manifest eden can read again", record.id))
            .with_hint(format!("name the one with its `[pull_request]`: `eden pr {} --manifest FILE`", record.id)));
    };
    let set = super::recorded::carried_overrides(light);
    let run_args = RunArgs {
        json: given.json,
        quiet: given.quiet,
        ..RunArgs::of_manifest(vec![manifest.clone()], set, layout.root.clone())
    };
    let settings = super::settings::RunSettings::from_args(&run_args);
    let current = super::current_dir()?;
    let loaded = super::settings::load(&settings, Some(&manifest), &[], super::settings::Purpose::Run, &current)?;
    let plan = loaded.plan;
    crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));
    if plan.pull_request.is_none() {
        return Err(Error::usage(format!(
            "`{}` has no `[pull_request]`: eden does not know where to open one",
            manifest.display()
        ))
        .with_hint(
            "add `[pull_request]` (and `[forge]` if the defaults do not fit) to the manifest, or pass `--manifest`",
        ));
    }
    Ok((run_args, plan, record))
}

/// `eden pr RUN`: the run's kept branch pushed, its pull request opened or found.
fn open_again(args: &RunArgs, plan: &Plan, record: &mut RunRecord) -> Result<(), Error> {
    if record.merged_into.is_some() {
        return Err(Error::usage(format!("run `{}` was merged here already: there is nothing to open", record.id))
            .with_hint("open a pull request for a run that kept its branch"));
    }
    let repo = crate::git::Git::new(&record.repo);
    let branch = record.preserved_branch.clone().unwrap_or_else(|| record.branch.clone());
    let tip = repo.branch_commit(&branch)?.filter(|tip| *tip != record.base_commit);
    let Some(tip) = tip.filter(|_| repo.made_for(&branch, &record.id)) else {
        return Err(Error::usage(format!("run `{}` left no branch of its own with commits", record.id))
            .with_hint("`eden sessions show RUN` says what the run kept"));
    };
    record.push = Some(push_branch(plan, &repo, &branch, &tip)?);
    save(record)?;
    after_run(args, plan, record)
}

/// `branch` at `tip` pushed to the pull request's remote with the token eden holds, under a
/// lease taken now: what someone else pushed there meanwhile is never overwritten.
fn push_branch(
    plan: &Plan,
    repo: &crate::git::Git,
    branch: &str,
    tip: &str,
) -> Result<crate::record::PushRecord, Error> {
    use crate::orchestrator::push;
    let settings = plan.pull_request.as_ref().ok_or_else(|| Error::internal("no pull request"))?;
    let credential = crate::pull_request::credential(plan, repo)?;
    let lease = push::take_lease(repo, (&settings.remote, branch), credential.as_ref(), true);
    let record = push::push(repo, &lease, tip, None, credential.as_ref());
    match record.pushed {
        true => Ok(record),
        false => Err(push::error(&record, Some(branch), true)),
    }
}

/// `eden pr follow RUN`: following taken up again, the rounds answered before kept.
fn follow_again(args: &RunArgs, plan: &Plan, record: &mut RunRecord) -> Result<(), Error> {
    match &record.pull_request {
        None => Err(Error::usage(format!("run `{}` has no pull request", record.id))
            .with_hint(format!("open it with `eden pr {}` (a round's run: follow the run that opened it)", record.id))),
        Some(pull) if pull.state == "merged" => {
            note(args, &format!("pull request #{} is merged already: {}", pull.number, pull.url));
            Ok(())
        }
        Some(_) => follow_pull(args, plan, record),
    }
}

/// `[pull_request]`, after a run that ended well: open it, say it, and follow it when asked.
pub(super) fn after_run(args: &RunArgs, plan: &Plan, record: &mut RunRecord) -> Result<(), Error> {
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
    follow_pull(args, plan, record)
}

/// Follow the record's pull request; the record keeps its rounds and how it ended.
fn follow_pull(args: &RunArgs, plan: &Plan, record: &mut RunRecord) -> Result<(), Error> {
    let (Some(settings), Some(mut pull)) = (&plan.pull_request, record.pull_request.clone()) else { return Ok(()) };
    let repo = crate::git::Git::new(&record.repo);
    check_own(record, &repo)?;
    let destination = crate::pull_request::destination(plan, &repo)?.ok_or_else(|| Error::internal("no forge"))?;
    let mut forge = crate::forge::open(&destination.target)?;
    let about = crate::notify::About {
        run_id: record.id.clone(),
        name: plan.name.clone(),
        repository: record.repo.clone(),
        branch: pull.head.clone(),
        base_branch: Some(pull.base.clone()),
    };
    let notifier = crate::notify::Notifier::new(&plan.notify, about);
    let mut rounds = RunRounds {
        args,
        plan,
        branch: pull.head.clone(),
        last: record.clone(),
        told: Told { notifier: &notifier, number: pull.number, url: pull.url.clone(), round: pull.rounds.len() as u32 },
    };
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
    drop(rounds);
    tell_end(&notifier, &pull, ended.as_ref().ok());
    for warning in notifier.settle() {
        note(args, &warning);
    }
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

/// `[notify]`: how following ended (green, merged elsewhere, or given up).
fn tell_end(notifier: &crate::notify::Notifier, pull: &PullRequestRecord, ended: Option<&Ended>) {
    use crate::manifest::schema::NotifyOn;
    let Some(about) = notifier.about() else { return };
    let (event, merged, text) = match ended {
        Some(Ended::Green { merged, .. }) => {
            let how = if *merged { "green and merged" } else { "green" };
            (NotifyOn::PullRequestGreen, *merged, format!("eden: pull request #{} is {how}: {}", pull.number, pull.url))
        }
        Some(Ended::MergedElsewhere) => {
            (NotifyOn::PullRequestGreen, true, format!("eden: pull request #{} was merged on the forge", pull.number))
        }
        None if pull.state == "gave_up" => (
            NotifyOn::PullRequestGaveUp,
            false,
            format!("eden: pull request #{} needs a person: {}", pull.number, pull.url),
        ),
        None => return,
    };
    let mut notice = crate::notify::Notice::new(event, about, text);
    notice.pull_request = Some(crate::notify::PullRequest {
        number: pull.number,
        url: pull.url.clone(),
        round: None,
        merged: Some(merged),
    });
    notifier.send(notice);
}

/// `[notify]`: each round as it begins.
struct Told<'a> {
    notifier: &'a crate::notify::Notifier,
    number: u64,
    url: String,
    /// Rounds begun so far.
    round: u32,
}

impl Told<'_> {
    fn round_begins(&mut self) {
        self.round += 1;
        let Some(about) = self.notifier.about() else { return };
        let (number, url) = (self.number, self.url.clone());
        let text = format!("eden: pull request #{number}: round {} sends the agent back to fix it: {url}", self.round);
        let mut notice = crate::notify::Notice::new(crate::manifest::schema::NotifyOn::PullRequestRound, about, text);
        notice.pull_request = Some(crate::notify::PullRequest { number, url, round: Some(self.round), merged: None });
        self.notifier.send(notice);
    }
}

/// Rounds as runs of the plan's first step on the pull request's branch.
struct RunRounds<'a> {
    args: &'a RunArgs,
    plan: &'a Plan,
    branch: String,
    /// The run before this round: its session is resumed.
    last: RunRecord,
    told: Told<'a>,
}

impl Rounds for RunRounds<'_> {
    fn run(&mut self, prompt: &str, files: &[(String, Vec<u8>)]) -> Result<RunRecord, Error> {
        self.told.round_begins();
        let checkout = crate::git::Git::new(&self.last.repo);
        let mut plan = self.round_plan(prompt);
        let common_dir = crate::git::Git::discover(&self.last.repo)?.common_dir;
        crate::git::Git::exclude_folder(&common_dir, crate::pull_request::FEEDBACK_DIR)?;
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
        fetch_pull(&plan, &checkout, &self.last)?;
        let layout = super::layout(Some(&self.last.repo))?;
        let mut notes = Vec::new();
        super::from::resume(&self.last, None, &mut plan, &layout, &mut notes);
        for line in notes {
            note(self.args, &line);
        }
        let record = round(self.args, &plan, &self.last.repo)?;
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

/// The base as the forge has it now, so a round can merge it to end a conflict, and the pull
/// request's branch moved forward to its head there when someone added to it (never forced:
/// when it went another way, the round's push is refused and says so).
fn fetch_pull(plan: &Plan, repo: &crate::git::Git, last: &RunRecord) -> Result<(), Error> {
    let (Some(settings), Some(pull)) = (&plan.pull_request, &last.pull_request) else { return Ok(()) };
    let remote = &settings.remote;
    let base = format!("+refs/heads/{base}:refs/remotes/{remote}/{base}", base = pull.base);
    let fetch = |refspec: &str| -> Result<bool, Error> {
        let command = repo.command(["fetch", "--quiet", "--no-tags", remote, refspec]);
        let output = match crate::pull_request::credential(plan, repo)? {
            Some(credential) => credential.output(command),
            None => command.env("GIT_TERMINAL_PROMPT", "0").output(),
        };
        Ok(output.is_ok_and(|output| output.success()))
    };
    if !fetch(&base)? {
        return Err(Error::forge(format!("cannot fetch `{}` from `{remote}` for the next round", pull.base))
            .with_hint("check the remote and the token's access, then `eden pr follow RUN`"));
    }
    fetch(&format!("refs/heads/{head}:refs/heads/{head}", head = pull.head))?;
    Ok(())
}

/// The record's pull request is the run's own: its branch is the one eden made for that run,
/// and both branch names are plain (a record is data, and these go into git's refspecs).
fn check_own(record: &RunRecord, repo: &crate::git::Git) -> Result<(), Error> {
    let Some(pull) = &record.pull_request else { return Ok(()) };
    let branch = record.preserved_branch.as_deref().unwrap_or(&record.branch);
    let plain =
        |name: &str| !name.starts_with('-') && repo.check(["check-ref-format", "--branch", name]).unwrap_or(false);
    if pull.head != branch || !repo.made_for(branch, &record.id) || !plain(&pull.head) || !plain(&pull.base) {
        return Err(Error::usage(format!(
            "the record of run `{}` names a pull request of `{}`, not a branch eden made for that run: nothing was done",
            record.id, pull.head
        ))
        .with_hint("follow a pull request eden opened for a run of this repository"));
    }
    Ok(())
}

/// A pull request's round: `plan` (the feedback as its prompt, on the pull request's branch)
/// run in the repository at `root`, reported as a run is. Its record, or its error.
fn round(args: &RunArgs, plan: &Plan, root: &std::path::Path) -> Result<crate::record::RunRecord, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::internal("cannot start the async runtime").with_source(err))?;
    let repo = crate::git::Git::discover(root);
    let options = super::launch::options(plan, repo, Vec::new(), None, None, Default::default());
    let result = runtime.block_on(crate::orchestrator::run(plan, &options, super::launch::reporters(args, false)));
    runtime.shutdown_background();
    match (result.record, result.error) {
        (_, Some(error)) => Err(error),
        (Some(record), None) => Ok(record),
        (None, None) => Err(Error::internal("a round ended without a record")),
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
