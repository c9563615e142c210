//! `eden run A.toml B.toml … [--jobs N] [--fail-fast] [--matrix KEY=V1,V2]`: several runs at
//! once.
//!
//! Every manifest (times every `--matrix` combination) is loaded and checked here first — plan,
//! repository, branch, engine and image — and nothing starts unless all of them pass. Then the
//! coordinator (`crate::coordinator`) runs each as an `eden run` process of its own, at most
//! `--jobs` at a time; this command shows the table, prints the JSON and exits with the most
//! severe exit code.

use super::settings::RunSettings;
use crate::cli::RunArgs;
use crate::coordinator::{self, Ended, Member};
use crate::error::Error;
use crate::exit::Exit;
use crate::process::ProcessBuilder;
use crate::ui::batch::{BatchDisplay, Row};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `--jobs` when not given: every run at once, up to this many.
const DEFAULT_JOBS: usize = 8;

pub(crate) fn run(args: &RunArgs, settings: &RunSettings, printed: &mut bool) -> Result<i32, Error> {
    let current_dir = crate::commands::current_dir()?;
    let (members, sources) = members(args, settings, &current_dir)?;
    if args.dry_run {
        return dry_run(&members, &sources, printed);
    }
    let jobs = args.jobs.map_or(members.len().min(DEFAULT_JOBS), |jobs| jobs as usize).max(1);
    let display = BatchDisplay::new(crate::ui::Display::detect(args.quiet), &members_rows(&members));
    let options = coordinator::Options {
        jobs,
        fail_fast: args.fail_fast,
        json_events: args.json_events,
        per_host: args.jobs_per_host.map(|n| n as usize),
    };
    let coordinated = coordinator::run(&members, &options, display)?;
    let (mut display, mut ended) = (coordinated.display, coordinated.ended);
    if coordinated.interrupted.is_none() && members.iter().any(|member| member.best) {
        land_best(&mut ended, &mut display);
    }
    let rows: Vec<Row> = members.iter().zip(&ended).map(|(member, ended)| coordinator::row(member, ended)).collect();
    display.finish(&rows);
    if args.json {
        let array: Vec<serde_json::Value> =
            members.iter().zip(&ended).map(|(member, ended)| coordinator::json_entry(member, ended)).collect();
        crate::ui::print_data(&serde_json::to_string_pretty(&array).expect("records serialize"));
    }
    *printed = args.json || args.json_events;
    let landed = ended.iter().any(|ended| {
        ended.record.as_ref().and_then(|record| record.attempt.as_ref()).is_some_and(|attempt| attempt.chosen)
    });
    let code = match coordinated.interrupted {
        Some(signal) => Exit::Interrupted(signal).code(),
        // Of several attempts, one landed: what the others came to is on their branches.
        None if landed => Exit::Success.code(),
        None => {
            let codes =
                ended.iter().filter(|ended| ended.started && !ended.stopped).filter_map(|ended: &Ended| ended.code);
            codes.max_by_key(|code| Exit::from_code(*code).severity()).unwrap_or(Exit::Success.code())
        }
    };
    // In a GitHub Actions step: one summary and one set of outputs for them all.
    let summarized: Vec<crate::ui::github::Summarized> = rows
        .into_iter()
        .zip(&ended)
        .map(|(row, ended)| crate::ui::github::Summarized { row, record: ended.record.as_ref() })
        .collect();
    crate::ui::github::write(&summarized, code);
    Ok(code)
}

/// `attempts_pick = "best"`, once every attempt has ended: of those that ended well with a
/// score, the lowest (ties: the fewest changed lines) is merged as `eden merge` merges (under
/// the repository lock, the merge queue), and its record says it was chosen. The others keep
/// their branches.
fn land_best(ended: &mut [Ended], display: &mut BatchDisplay) {
    let changed = |record: &crate::record::RunRecord| -> u64 {
        let Some(branch) = &record.preserved_branch else { return u64::MAX };
        let git = crate::git::Git::new(&record.repo);
        let stat = git.run(["diff", "--shortstat", &format!("{}..refs/heads/{branch}", record.base_commit)]);
        stat.map_or(u64::MAX, |stat| {
            // ` 3 files changed, 10 insertions(+), 2 deletions(-)`
            stat.split(',')
                .filter(|part| part.contains("insertion") || part.contains("deletion"))
                .filter_map(|part| part.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
    };
    let best = ended
        .iter()
        .enumerate()
        .filter(|(_, ended)| ended.code == Some(0))
        .filter_map(|(index, ended)| {
            let record = ended.record.as_ref()?;
            let score = record.attempt.as_ref()?.score?;
            Some((index, score, changed(record)))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)));
    let Some((index, score, _)) = best else {
        display.note("no attempt ended well with a score: nothing lands, every attempt's branch is kept");
        return;
    };
    let Some(record) = ended[index].record.clone() else { return };
    let number = record.attempt.as_ref().map_or(0, |attempt| attempt.number);
    display.note(&format!("attempt {number} has the best score ({score}): merging it"));
    // `eden merge RUN`, as a person would land a kept run.
    let merge = std::env::current_exe()
        .map(|eden| ProcessBuilder::new(eden).args(["merge", record.id.as_str(), "--repo"]).arg(&record.repo));
    let merged = merge.and_then(|merge| merge.output());
    match merged {
        Ok(output) if output.success() => {}
        Ok(output) => {
            let said = output.stderr.lines().find(|line| line.starts_with("error:")).unwrap_or("").to_owned();
            display.note(&format!("attempt {number} could not be merged: {said}"));
            ended[index].code = output.status.code();
            return;
        }
        Err(err) => {
            display.note(&format!("attempt {number} could not be merged: cannot run `eden merge`: {err}"));
            ended[index].code = Some(Exit::Internal.code());
            return;
        }
    }
    // The record as the merge left it, marked chosen.
    if let Ok(mut merged) = crate::record::RunRecord::load(&record.record_path) {
        if let Some(attempt) = &mut merged.attempt {
            attempt.chosen = true;
        }
        let _ = merged.save();
        ended[index].record = Some(merged);
    }
}

/// The runs the arguments name, loaded and checked; any problem is an error before anything
/// starts, every problem found at once.
fn members(
    args: &RunArgs,
    settings: &RunSettings,
    current_dir: &std::path::Path,
) -> Result<(Vec<Member>, Vec<String>), Error> {
    let matrix = matrix(&args.matrix)?;
    let files: Vec<Option<PathBuf>> = match args.manifests.is_empty() {
        true => vec![None],
        false => args.manifests.iter().cloned().map(Some).collect(),
    };
    let several = files.len() > 1 || !args.matrix.is_empty();
    let mut found = Found::default();
    for file in &files {
        for combination in &matrix {
            let shown = file.as_ref().map_or("the flags".to_owned(), |file| file.display().to_string());
            let source = match combination.is_empty() {
                true => shown,
                false => format!("{shown} with {}", combination.join(", ")),
            };
            let loaded = match load_combination(settings, file.as_deref(), combination, current_dir) {
                Ok(loaded) => loaded,
                Err(error) => {
                    found.errors.push(error);
                    continue;
                }
            };
            for note in &loaded.notes {
                crate::ui::print_note(&format!("warning: {source}: {note}"));
            }
            let plan = &loaded.plan;
            let pre = match preflight_everywhere(plan, &loaded.repo) {
                Ok(pre) => pre,
                Err(error) => {
                    found.errors.push(error.context(&source));
                    continue;
                }
            };
            found.no_clash(plan, &pre, &source);
            crate::redact::register(plan.secrets.iter().map(|secret| secret.0.clone()));
            if plan.attempts.count > 1 && several {
                found.errors.push(
                    Error::usage(format!(
                        "{source}: `attempts` runs one manifest several times, not several manifests or a `--matrix`"
                    ))
                    .with_hint("run the attempts of each manifest in an `eden run` of its own"),
                );
                continue;
            }
            let command = member_command(settings, file.as_deref(), combination, &plan.name)?;
            for member in attempt_members(plan, &pre, command) {
                found.members.push(member);
                found.sources.push(source.clone());
            }
        }
    }
    let mut errors = found.errors.into_iter();
    match errors.next() {
        Some(mut first) => {
            first.also = std::mem::take(&mut first.also).into_vec().into_iter().chain(errors).collect();
            Err(first)
        }
        None => Ok((found.members, found.sources)),
    }
}

/// What `members` has found so far: the runs, where each came from, the problems, and the
/// names and branches taken (by which source).
#[derive(Default)]
struct Found {
    members: Vec<Member>,
    sources: Vec<String>,
    errors: Vec<Error>,
    names: BTreeMap<String, String>,
    branches: BTreeMap<String, String>,
}

impl Found {
    /// Two runs may share neither a name nor a branch.
    fn no_clash(
        &mut self,
        plan: &crate::manifest::Plan,
        pre: &crate::orchestrator::workspace::Preflight,
        source: &str,
    ) {
        if let Some(other) = self.names.insert(plan.name.clone(), source.to_owned()) {
            self.errors.push(
                Error::usage(format!("two runs are named `{}`: {other} and {source}", plan.name)).with_hint(
                    "give each manifest its own `name` (or use `--matrix`, which adds the value to the name)",
                ),
            );
        }
        if let Some(other) = self.branches.insert(pre.branch.clone(), source.to_owned()) {
            self.errors.push(
                Error::usage(format!("two runs would work on branch `{}` at once: {other} and {source}", pre.branch))
                    .with_hint("runs of strategy `head` share your checkout, and `named` runs their branch: give each its own branch, or run them one after the other"),
            );
        }
    }
}

/// One manifest (or the flags) with one `--matrix` combination: the value goes into the name
/// (and so the branch), so that the runs stay apart.
fn load_combination(
    settings: &RunSettings,
    file: Option<&std::path::Path>,
    combination: &[String],
    current_dir: &std::path::Path,
) -> Result<super::settings::Loaded, Error> {
    let loaded = super::settings::load(settings, file, combination, super::settings::Purpose::Run, current_dir)?;
    if combination.is_empty() {
        return Ok(loaded);
    }
    let values: Vec<&str> = combination.iter().filter_map(|pair| pair.split_once('=')).map(|(_, v)| v).collect();
    let name = format!("{}-{}", loaded.plan.name, crate::manifest::plan::name_from(&values.join("-")));
    let mut sets = combination.to_vec();
    sets.push(format!("name={}", toml::Value::String(name)));
    super::settings::load(settings, file, &sets, super::settings::Purpose::Run, current_dir)
}

/// The run's preflight, and its sandbox's: a pod's cluster, and every host a container run
/// may be placed on.
fn preflight_everywhere(
    plan: &crate::manifest::Plan,
    repo: &Result<crate::git::Discovered, Error>,
) -> Result<crate::orchestrator::workspace::Preflight, Error> {
    let pre =
        crate::orchestrator::workspace::preflight(plan, repo, "RUN_ID", crate::orchestrator::workspace::Use::Run)?;
    crate::sandbox::provider(&plan.sandbox).preflight_everywhere()?;
    Ok(pre)
}

/// The members a plan makes: one run, or its attempts (`#N` in their names, one group).
fn attempt_members(
    plan: &crate::manifest::Plan,
    pre: &crate::orchestrator::workspace::Preflight,
    command: ProcessBuilder,
) -> Vec<Member> {
    let attempts = plan.attempts.count;
    let group = crate::record::new_run_id();
    let hosts = crate::sandbox::provider(&plan.sandbox).hosts();
    (1..=attempts)
        .map(|number| Member {
            name: match attempts {
                1 => plan.name.clone(),
                _ => format!("{} #{number}", plan.name),
            },
            agent: plan.steps[0].agent.kind().as_str().to_owned(),
            command: command.clone(),
            layout: pre.layout(),
            hosts: hosts.clone(),
            attempt: (attempts > 1).then(|| crate::record::AttemptRecord {
                number,
                of: attempts,
                group: group.clone(),
                chosen: false,
                score: None,
            }),
            best: plan.attempts.score.is_some(),
        })
        .collect()
}

/// `--matrix KEY=V1,V2` flags as every combination of `KEY=VALUE` `--set`s (one empty
/// combination without `--matrix`).
fn matrix(flags: &[String]) -> Result<Vec<Vec<String>>, Error> {
    let mut combinations = vec![Vec::new()];
    for flag in flags {
        let bad = || {
            Error::usage(format!("`--matrix {flag}` is not `KEY=V1,V2,...`")).with_hint(format!(
                "e.g. `--matrix agent.kind={}`",
                crate::agent::spec::adapters_where(|_| true)[..3].join(",")
            ))
        };
        let (key, values) = flag.split_once('=').ok_or_else(bad)?;
        let values: Vec<&str> = values.split(',').map(str::trim).collect();
        if key.trim().is_empty() || values.iter().any(|value| value.is_empty()) {
            return Err(bad());
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(twice) = values.iter().find(|value| !seen.insert(**value)) {
            return Err(
                Error::usage(format!("`--matrix {flag}` gives `{twice}` twice")).with_hint("list each value once")
            );
        }
        combinations = combinations
            .into_iter()
            .flat_map(|combination| {
                values.iter().map(move |value| {
                    let mut next = combination.clone();
                    next.push(format!("{}={value}", key.trim()));
                    next
                })
            })
            .collect();
    }
    Ok(combinations)
}

/// The `eden run` command line of one member: the invocation's settings, its manifest and
/// matrix values (and the name made from them).
fn member_command(
    settings: &RunSettings,
    manifest: Option<&std::path::Path>,
    matrix: &[String],
    name: &str,
) -> Result<ProcessBuilder, Error> {
    let eden =
        std::env::current_exe().map_err(|err| Error::internal("cannot find eden's own executable").with_source(err))?;
    // The several-runs summary is the parent's to write, once.
    let mut command =
        ProcessBuilder::new(eden).arg("run").env_remove("GITHUB_STEP_SUMMARY").env_remove("GITHUB_OUTPUT");
    if let Some(manifest) = manifest {
        command = command.arg(manifest);
    }
    command = command.args(settings.command_line(matrix));
    if !matrix.is_empty() {
        command = command.arg("--name").arg(name);
    }
    Ok(command)
}

/// `--dry-run` of every member, as one JSON array.
fn dry_run(members: &[Member], sources: &[String], printed: &mut bool) -> Result<i32, Error> {
    let mut plans = Vec::new();
    for (member, source) in members.iter().zip(sources) {
        let mut command = member.command.clone().arg("--dry-run");
        if let Some(attempt) = &member.attempt {
            command = command.env(crate::coordinator::ATTEMPT_ENV, attempt.to_env());
        }
        let output = command.output().map_err(|err| Error::internal("cannot start eden").with_source(err))?;
        if !output.success() {
            return Err(Error::usage(format!("{}: {}", source, output.stderr.trim())));
        }
        let plan: serde_json::Value = serde_json::from_str(&output.stdout)
            .map_err(|err| Error::internal("eden's dry run printed no JSON").with_source(err))?;
        plans.push(plan);
    }
    crate::ui::print_data(&serde_json::to_string_pretty(&plans).expect("plans serialize"));
    *printed = true;
    Ok(0)
}

fn members_rows(members: &[Member]) -> Vec<(String, String)> {
    members.iter().map(|member| (member.name.clone(), member.agent.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrix_is_every_combination() {
        let flags = ["agent.kind=claude-code,codex".to_owned(), "agent.model=a, b".to_owned()];
        let combinations = matrix(&flags).unwrap();
        assert_eq!(combinations.len(), 4);
        assert_eq!(combinations[0], ["agent.kind=claude-code", "agent.model=a"]);
        assert_eq!(combinations[3], ["agent.kind=codex", "agent.model=b"]);
        assert_eq!(matrix(&[]).unwrap(), [Vec::<String>::new()]);
        for bad in ["agent.kind", "=a,b", "agent.kind=a,,b", "agent.kind=a,a"] {
            assert!(matrix(&[bad.to_owned()]).is_err(), "{bad}");
        }
    }
}
