//! `eden sessions`: the run history from the terminal and from scripts. Tables and replays on
//! stdout (a pager for long replays on a terminal), `--json` for scripts, warnings on stderr.

use crate::agent::AgentKind;
use crate::cli::{
    RunArgs, SessionsCommand, SessionsCostArgs, SessionsListArgs, SessionsResumeArgs, SessionsRmArgs, SessionsShowArgs,
    SessionsTransferArgs,
};
use crate::error::Error;
use crate::layout::Layout;
use crate::record::RunStatus;
use crate::sessions::cost::{self, By};
use crate::sessions::history::{self, Filter, Light, RunSummary};
use crate::ui::{print_data, print_note};
use crate::values::{format_duration, parse_duration};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

pub(crate) fn sessions(command: SessionsCommand) -> Result<i32, Error> {
    match command {
        SessionsCommand::List(args) => list(args),
        SessionsCommand::Show(args) => show(args),
        SessionsCommand::Cost(args) => cost(args),
        SessionsCommand::Rm(args) => rm(args),
        SessionsCommand::Transfer(args) => transfer(args),
        SessionsCommand::Resume(args) => resume(*args),
    }
}

/// The runs, newest first, with unreadable records reported and skipped.
fn runs(layout: &Layout) -> Vec<Light> {
    let (runs, warnings) = history::load(layout);
    for warning in warnings {
        print_note(&format!("warning: {warning}"));
    }
    runs
}

fn since(text: Option<&String>) -> Result<Option<Duration>, Error> {
    text.map(|text| {
        parse_duration(text).map_err(|why| {
            Error::usage(format!("`--since {text}`: {why}")).with_hint("write a duration such as `7d`, `12h` or `90m`")
        })
    })
    .transpose()
}

fn list(args: SessionsListArgs) -> Result<i32, Error> {
    let agent = match args.agent.as_deref() {
        Some(name) => Some(AgentKind::from_name(name).ok_or_else(|| {
            Error::usage(format!("`--agent {name}` is not an agent kind"))
                .with_hint(format!("agent kinds: {}", AgentKind::names().join(", ")))
        })?),
        None => None,
    };
    if let Some(status) = args.status.as_deref().filter(|status| !history::STATUS_WORDS.contains(status)) {
        return Err(Error::usage(format!("`--status {status}` is not a status or an exit reason"))
            .with_hint(format!("give one of: {}", history::STATUS_WORDS.join(", "))));
    }
    let filter =
        Filter { since: since(args.since.as_ref())?, name: args.name, agent, status: args.status, branch: args.branch };
    let layout = super::layout(args.repo.as_ref())?;
    let summaries: Vec<RunSummary> =
        runs(&layout).iter().map(Light::summary).filter(|summary| filter.keeps(summary)).collect();
    let summaries = attempts_together(summaries);
    if args.json {
        print_data(&serde_json::to_string_pretty(&summaries).expect("summaries serialize"));
    } else if summaries.is_empty() {
        print_note("no runs (`eden run <manifest>` records its runs in `.eden/runs/`)");
    } else {
        print_data(&list_table(&summaries));
    }
    Ok(0)
}

/// The attempts of one invocation of `--attempts` next to each other, in their order, where
/// the first of them would be.
fn attempts_together(summaries: Vec<RunSummary>) -> Vec<RunSummary> {
    let mut ordered: Vec<RunSummary> = Vec::with_capacity(summaries.len());
    let mut rest: Vec<Option<RunSummary>> = summaries.into_iter().map(Some).collect();
    for index in 0..rest.len() {
        let Some(summary) = rest[index].take() else { continue };
        let Some(group) = summary.attempt.as_ref().map(|attempt| attempt.group.clone()) else {
            ordered.push(summary);
            continue;
        };
        let mut members = vec![summary];
        for later in rest.iter_mut().skip(index + 1) {
            if later.as_ref().and_then(|s| s.attempt.as_ref()).is_some_and(|attempt| attempt.group == group) {
                members.extend(later.take());
            }
        }
        members.sort_by_key(|member| member.attempt.as_ref().map_or(0, |attempt| attempt.number));
        ordered.extend(members);
    }
    ordered
}

fn list_table(summaries: &[RunSummary]) -> String {
    let hosts = summaries.iter().any(|run| run.host.is_some());
    let mut header = vec![
        "RUN",
        "NAME",
        "AGENT",
        "SANDBOX",
        "BRANCH",
        "STATUS",
        "ITER",
        "TOKENS in/out/cache",
        "COST",
        "STARTED",
        "TOOK",
    ];
    if hosts {
        header.insert(4, "HOST");
    }
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|run| {
            let agents: Vec<&str> = run.agents.iter().map(|a| a.as_str()).collect();
            let status = match (run.status, run.exit_reason) {
                // What was done with it since, over how it ended.
                (_, _) if run.later.is_some() => match run.later {
                    Some(crate::record::LaterAction::Merged) => "merged later".to_owned(),
                    _ => "discarded".to_owned(),
                },
                (RunStatus::Finished, Some(reason)) => reason.as_str().to_owned(),
                (status, _) => {
                    serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
                }
            };
            // An attempt: its number, and which landed.
            let name = match &run.attempt {
                Some(attempt) if attempt.chosen => format!("{} #{} (chosen)", run.name, attempt.number),
                Some(attempt) => format!("{} #{}", run.name, attempt.number),
                None => run.name.clone(),
            };
            let mut row = vec![
                run.id.clone(),
                name,
                // A run killed before its steps were noted does not know its agent.
                if agents.is_empty() { "-".to_owned() } else { agents.join(",") },
                run.sandbox.clone(),
                run.branch.clone(),
                status,
                run.iterations.to_string(),
                format!(
                    "{}/{}/{}",
                    tokens(run.input_tokens),
                    tokens(run.output_tokens),
                    tokens(run.cache_read_tokens + run.cache_write_tokens)
                ),
                run.cost_usd.map_or_else(|| "-".into(), crate::values::dollars),
                run.started_at.get(..16).unwrap_or(&run.started_at).replace('T', " "),
                format_duration(Duration::from_secs(run.duration_ms / 1000)),
            ];
            if hosts {
                row.insert(4, run.host.clone().unwrap_or_else(|| "-".into()));
            }
            row
        })
        .collect();
    table(&header, &rows)
}

/// Aligned columns, the last one unpadded.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len() - 1;
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| if i == last { cell.clone() } else { format!("{cell:<width$}", width = widths[i]) })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.pop();
    out
}

/// `1234567` as `1.2M`: token counts at a glance.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

fn show(args: SessionsShowArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let runs = runs(&layout);
    let run = history::find(&runs, &args.run)?;
    let session = (!run.id.starts_with(&args.run) && args.run != "last").then_some(args.run.as_str());
    if args.raw {
        return raw(run, session);
    }
    let log = run.log.as_ref().filter(|log| log.is_file());
    if args.follow {
        let Some(log) = log else {
            return Err(Error::usage(format!("run `{}` has no log to follow", run.id))
                .with_hint("runs log to `.eden/logs/<run-id>.jsonl` unless `[logging] file = false`"));
        };
        return follow(run, log, args.json);
    }
    if args.json {
        let Some(log) = log else {
            return Err(Error::usage(format!("run `{}` has no log to print events from", run.id))
                .with_hint("runs log to `.eden/logs/<run-id>.jsonl` unless `[logging] file = false`; its record is `eden sessions show --raw` or the file itself"));
        };
        let text =
            fs_err::read_to_string(log).map_err(|err| Error::internal("cannot read the run's log").with_source(err))?;
        print_data(text.trim_end());
        return Ok(0);
    }
    let record = crate::record::RunRecord::load(&run.record_path)?;
    let text = match log {
        Some(log) => {
            let text = fs_err::read_to_string(log)
                .map_err(|err| Error::internal("cannot read the run's log").with_source(err))?;
            crate::ui::replay::from_log(&text, &record, args.full)
        }
        None => crate::ui::replay::from_record(&record, args.full),
    };
    // What the agent printed, neutralized in every mode (a pager, `--no-pager`, a file).
    page(&crate::ui::for_terminal(&text), args.no_pager);
    Ok(0)
}

/// Follow a run's log as it grows: each event shown as `eden run` shows it (or, with `json`,
/// each line as logged) until the run ends — its `run_finished`, or its record no longer
/// `running`, or its eden gone. Exits with the run's exit code.
fn follow(run: &Light, log: &Path, json: bool) -> Result<i32, Error> {
    use std::io::{Read, Seek};
    let mut file =
        fs_err::File::open(log).map_err(|err| Error::internal("cannot read the run's log").with_source(err))?;
    let mut display = if json { None } else { crate::ui::Display::detect(false).reporter() };
    let (mut pending, mut offset) = (Vec::new(), 0u64);
    let mut quiet_since = std::time::Instant::now();
    let mut ended: Option<i32> = None;
    loop {
        let mut chunk = Vec::new();
        let _ = file.seek(std::io::SeekFrom::Start(offset));
        let read = file.read_to_end(&mut chunk).unwrap_or(0);
        offset += read as u64;
        pending.extend_from_slice(&chunk);
        // Whole lines only: the last may still be being written.
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let Some(logged) = crate::report::Logged::parse(line.trim_end()) else { continue };
            if logged.run_id != run.id {
                continue;
            }
            match &mut display {
                Some(display) => display.report_at(&logged.run_id, logged.event.as_ref(), &logged.ts),
                None => print_data(line.trim_end()),
            }
            if let crate::report::Event::RunFinished { record } = logged.event.as_ref() {
                return Ok(record.exit_code.unwrap_or(0));
            }
        }
        if let Some(code) = ended {
            return Ok(code);
        }
        if read > 0 {
            quiet_since = std::time::Instant::now();
        } else if quiet_since.elapsed() > std::time::Duration::from_secs(1) {
            // Nothing new for a while: has the run ended without saying so?
            quiet_since = std::time::Instant::now();
            if let Ok(record) = crate::record::RunRecord::load(&run.record_path) {
                let alive = record.process.is_alive();
                if record.status != crate::record::RunStatus::Running || !alive {
                    let code = record.exit_code.unwrap_or(crate::exit::Exit::Internal.code());
                    if !alive && record.status == crate::record::RunStatus::Running {
                        print_note(&format!("run `{}` is over: its eden (pid {}) is gone", run.id, record.process.pid));
                    }
                    // One more read: what it logged as it ended.
                    ended = Some(code);
                    continue;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The captured transcripts of a run (or of one of its sessions), as stored.
fn raw(run: &Light, session: Option<&str>) -> Result<i32, Error> {
    let mut paths: Vec<&Path> = run
        .iterations
        .iter()
        .filter(|it| session.is_none_or(|s| it.session_id.as_deref().is_some_and(|id| id.starts_with(s))))
        .filter_map(|it| it.transcript.as_ref().map(|t| t.path.as_path()))
        .collect();
    // Retries in one session write the same copy again: list each once, in order.
    let mut seen = std::collections::HashSet::new();
    paths.retain(|path| seen.insert(*path));
    if paths.is_empty() {
        let agents: Vec<&str> = run.steps.iter().map(|s| s.agent.as_str()).collect();
        return Err(Error::usage(format!("run `{}` has no captured transcript", run.id)).with_hint(format!(
            "its agent ({}) wrote none that eden found (Cursor, `cli` and `simulated` agents write none); `eden sessions show {}` replays it from its log",
            agents.join(", "),
            run.id
        )));
    }
    for path in paths {
        let text = fs_err::read_to_string(path).map_err(|err| {
            Error::usage(format!("cannot read the captured transcript `{}`", path.display()))
                .with_source(err)
                .with_hint("it may have been removed (`eden clean --older-than`)")
        })?;
        print_data(text.trim_end());
    }
    Ok(0)
}

/// Long text through `$PAGER` (default `less -FRX`) when stdout is a terminal.
fn page(text: &str, no_pager: bool) {
    use std::io::{IsTerminal, Write};
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".into());
    if no_pager || !std::io::stdout().is_terminal() || pager.trim().is_empty() || pager.trim() == "cat" {
        print_data(text);
        return;
    }
    let child = crate::process::ProcessBuilder::new("sh").args(["-c", &pager]).env_default("LESS", "FRX").spawn_pager();
    match child {
        Ok(mut child) => {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes()).and_then(|()| stdin.write_all(b"\n"));
            }
            let _ = child.wait();
        }
        Err(_) => print_data(text),
    }
}

fn cost(args: SessionsCostArgs) -> Result<i32, Error> {
    let by = By::parse(&args.by).ok_or_else(|| {
        Error::usage(format!("`--by {}`: totals go by run, manifest, agent, model, branch or day", args.by))
            .with_hint(format!("give one of: {}", By::NAMES.join(", ")))
    })?;
    let since = since(args.since.as_ref())?;
    let prices = match (&args.prices, cost::default_prices_path()) {
        (Some(path), _) => {
            let current = crate::commands::current_dir()?;
            cost::load_prices(&current.join(path), true)?
        }
        (None, Some(path)) => cost::load_prices(&path, false)?,
        (None, None) => cost::Prices::default(),
    };
    let layout = super::layout(args.repo.as_ref())?;
    let runs = runs(&layout);
    let kept: Vec<&Light> = runs
        .iter()
        .filter(|run| since.is_none_or(|since| history::since(&run.started_at).is_some_and(|ago| ago <= since)))
        .collect();
    let totals = cost::totals(&kept, by, &prices, &layout.root);
    if args.json {
        print_data(&serde_json::to_string_pretty(&totals).expect("totals serialize"));
        return Ok(0);
    }
    if totals.is_empty() {
        print_note("no runs to total");
        return Ok(0);
    }
    let mut rows: Vec<Vec<String>> = totals.iter().map(cost_row).collect();
    let mut all = cost::Total { key: "total".into(), ..totals[0].clone() };
    for t in &totals[1..] {
        all.runs += t.runs;
        all.iterations += t.iterations;
        all.input_tokens += t.input_tokens;
        all.output_tokens += t.output_tokens;
        all.cache_read_tokens += t.cache_read_tokens;
        all.cache_write_tokens += t.cache_write_tokens;
        all.cost_usd += t.cost_usd;
        all.unpriced_iterations += t.unpriced_iterations;
        for model in &t.unpriced_models {
            if !all.unpriced_models.contains(model) {
                all.unpriced_models.push(model.clone());
            }
        }
    }
    // A run may fall in several groups; the total counts each once.
    all.runs = kept.iter().filter(|run| !run.iterations.is_empty()).count();
    if totals.len() > 1 {
        rows.push(cost_row(&all));
    }
    let header = [by_header(by), "RUNS", "ITER", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST"];
    print_data(&table(&header, &rows));
    if all.unpriced_iterations > 0 {
        print_note(&format!(
            "{} iteration(s) reported tokens but no cost, and the price table has no price for: {} (add them to `{}`, or pass `--prices FILE`)",
            all.unpriced_iterations,
            all.unpriced_models.join(", "),
            cost::default_prices_path().map_or_else(|| "prices.toml".into(), |p| p.display().to_string())
        ));
    }
    Ok(0)
}

fn by_header(by: By) -> &'static str {
    match by {
        By::Run => "RUN",
        By::Manifest => "MANIFEST",
        By::Agent => "AGENT",
        By::Model => "MODEL",
        By::Branch => "BRANCH",
        By::Day => "DAY",
    }
}

fn cost_row(total: &cost::Total) -> Vec<String> {
    let mut cost = crate::values::dollars(total.cost_usd);
    if total.unpriced_iterations > 0 {
        let _ = write!(cost, " + unpriced ({})", total.unpriced_iterations);
    }
    vec![
        total.key.clone(),
        total.runs.to_string(),
        total.iterations.to_string(),
        total.input_tokens.to_string(),
        total.output_tokens.to_string(),
        total.cache_read_tokens.to_string(),
        total.cache_write_tokens.to_string(),
        cost,
    ]
}

fn rm(args: SessionsRmArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let runs = runs(&layout);
    // Resolve every name first: one that matches nothing removes nothing.
    let mut chosen: Vec<&Light> = Vec::new();
    for wanted in &args.runs {
        let run = history::find(&runs, wanted)?;
        if run.status.observed(&run.process) == RunStatus::Running {
            return Err(Error::usage(format!("run `{}` is still going (eden pid {})", run.id, run.process.pid))
                .with_hint("wait for it to end, or stop it (Ctrl-C, or `kill` that pid) first"));
        }
        if !chosen.iter().any(|c| c.id == run.id) {
            chosen.push(run);
        }
    }
    for run in chosen {
        let mut removed = Vec::new();
        let sessions = layout.sessions().join(&run.id);
        let patch = layout.patches().join(format!("{}.patch", run.id));
        // A log shared by several runs (a `[logging] file` without `{run_id}`) stays, and so
        // does one outside eden's folder: what eden removes is its own.
        let in_eden = |log: &std::path::PathBuf| crate::values::normalize_path(log).starts_with(layout.eden_dir());
        let own_log = run
            .log
            .clone()
            .filter(|log| log.file_name().is_some_and(|n| n.to_string_lossy().contains(&run.id)) && in_eden(log));
        if let Some(log) = run.log.as_ref().filter(|log| !in_eden(log) && log.is_file()) {
            print_note(&format!("kept its log `{}`: eden removes only what is in its own folder", log.display()));
        }
        for path in [Some(run.record_path.clone()), own_log, Some(patch)].into_iter().flatten() {
            if path.is_file() {
                fs_err::remove_file(&path)
                    .map_err(|err| Error::internal("cannot remove a run's file").with_source(err))?;
                removed.push(path);
            }
        }
        if sessions.is_dir() {
            fs_err::remove_dir_all(&sessions)
                .map_err(|err| Error::internal("cannot remove a run's transcripts").with_source(err))?;
            removed.push(sessions);
        }
        let artifacts = layout.artifacts(&run.id);
        if artifacts.is_dir() {
            crate::safe_fs::remove_tree(&artifacts)
                .map_err(|err| Error::internal("cannot remove a run's artifacts").with_source(err))?;
            removed.push(artifacts);
        }
        print_note(&format!("removed run {} ({} file(s) and folders)", run.id, removed.len()));
    }
    Ok(0)
}

/// The branch a resume goes on in: the run's, when eden made it for that run (or it is gone and
/// is made again).
fn resumed_branch(run: &Light, layout: &crate::layout::Layout) -> Result<String, Error> {
    let branch = run.preserved_branch.clone().unwrap_or_else(|| run.branch.clone());
    let git = crate::git::Git::new(&layout.root);
    if git.branch_commit(&branch)?.is_some() && !git.made_for(&branch, &run.id) {
        return Err(Error::usage(format!(
            "run `{}` names `{branch}`, which eden did not make for that run: nothing was resumed",
            run.id
        ))
        .with_hint("resume the session on a branch of its own: `eden run MANIFEST --set agent.resume=\"SESSION\"`"));
    }
    Ok(branch)
}

/// The run, session and step agent `wanted` names, for `transfer` and `resume`.
fn session_of<'r>(
    runs: &'r [Light],
    wanted: &str,
) -> Result<(&'r Light, &'r str, &'r history::LightIteration, AgentKind, Option<&'r str>), Error> {
    let run = history::find(runs, wanted)?;
    let Some((session, iteration)) = history::session_in(run, wanted) else {
        return Err(Error::usage(format!("run `{}` has no agent session", run.id)).with_hint(
            "only agents that report a session id can be resumed or transferred (not `cli` or `simulated`)",
        ));
    };
    let Some(step) = run.step_of(iteration) else {
        return Err(Error::usage(format!(
            "the record of run `{}` names no step `{}` for session `{session}`",
            run.id, iteration.step
        ))
        .with_hint("its record is not one eden wrote whole; start a new session"));
    };
    Ok((run, session, iteration, step.agent, step.model.as_deref()))
}

fn transfer(args: SessionsTransferArgs) -> Result<i32, Error> {
    let current = crate::commands::current_dir()?;
    let to = crate::values::normalize_path(&current.join(&args.to));
    let to = std::fs::canonicalize(&to).unwrap_or(to);
    let layout = super::layout(args.repo.as_ref())?;
    let runs = runs(&layout);
    let (run, session, iteration, kind, _) = session_of(&runs, &args.session)?;
    let Some(transcript) = &iteration.transcript else {
        return Err(Error::usage(format!("session `{session}` of run `{}` has no captured transcript", run.id))
            .with_hint(
                "eden captures transcripts after each iteration; this one was not found then (see the run's warnings)",
            ));
    };
    // eden's copy of the transcript, never a file a record names elsewhere.
    let own = layout.sessions().join(&run.id);
    let confined = |path: &std::path::Path| crate::values::normalize_path(path).starts_with(&own);
    if !confined(&transcript.path) || !transcript.subagents.iter().all(|path| confined(path)) {
        return Err(Error::usage(format!(
            "the record of run `{}` names a transcript outside eden's copies of its sessions: nothing was copied",
            run.id
        ))
        .with_hint(format!("eden reads transcripts only from `{}`", own.display())));
    }
    let env = |key: &str| std::env::var(key).ok();
    let done = crate::sessions::transfer::transfer(
        kind,
        session,
        &transcript.path,
        &transcript.subagents,
        &to,
        &env,
        args.force,
    )?;
    print_data(&done.path.display().to_string());
    print_note(&format!(
        "session `{session}` ({}) copied for `{}`; resume it there with `agent.resume = \"{session}\"` (`eden sessions resume {session}` in this repository)",
        kind.as_str(),
        to.display()
    ));
    Ok(0)
}

fn resume(args: SessionsResumeArgs) -> Result<i32, Error> {
    let layout = super::layout(args.repo.as_ref())?;
    let runs = runs(&layout);
    let (run, session, _, kind, model) = session_of(&runs, &args.session)?;
    if !kind.spec().resume {
        return Err(Error::usage(format!("`{}` agents cannot resume a session", kind.as_str())).with_hint(format!(
            "resume works for {}",
            crate::agent::spec::spoken(&crate::agent::spec::adapters_where(|spec| spec.resume))
        )));
    }
    let manifest = match &args.manifest {
        Some(manifest) => Some(manifest.clone()),
        None => super::recorded::record_manifest(run, &layout)?,
    };
    let quote = |value: &str| toml::Value::String(value.to_owned()).to_string();
    let mut set = super::recorded::carried_overrides(run);
    if manifest.is_none() && !set.iter().any(|pair| pair.starts_with("agent.kind=")) {
        set.push(format!("agent.kind={}", quote(kind.as_str())));
        if let Some(model) = model {
            set.push(format!("agent.model={}", quote(model)));
        }
    }
    let branch = resumed_branch(run, &layout)?;
    set.push(format!("agent.resume={}", quote(session)));
    set.push(format!("name={}", quote(&run.name)));
    set.push("branch.strategy=\"named\"".into());
    set.push(format!("branch.name={}", quote(&branch)));
    set.push("branch.reuse_worktree=true".into());
    if let Some(base) = &run.base_branch {
        set.push(format!("branch.base={}", quote(base)));
    }
    // Interactive: the person types; a `--prompt` is the first message.
    let prompt = match (&args.prompt, args.interactive) {
        (Some(prompt), _) => prompt.clone(),
        (None, true) => String::new(),
        (None, false) => RESUME_PROMPT.to_owned(),
    };
    set.push(format!("prompt={}", quote(&prompt)));
    // A follow-up continues one session: one run, whatever the manifest's `attempts`.
    set.push("attempts=1".to_owned());
    set.extend(args.set.iter().cloned());
    let interactive =
        args.interactive.then_some(crate::commands::invocation::InteractiveMode { no_tty: false, resume: None });
    let run_args = RunArgs {
        dry_run: args.dry_run,
        json: args.json,
        quiet: args.quiet,
        ..RunArgs::of_manifest(manifest.into_iter().collect(), set, layout.root.clone())
    };
    crate::commands::run::invoke(run_args, interactive)
}

/// The follow-up message when `--prompt` gives none.
const RESUME_PROMPT: &str =
    "Continue where you left off. When everything is done and committed, print <promise>COMPLETE</promise>.";
