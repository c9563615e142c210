//! The run's settings, made once from `eden run`'s flags (and `eden interactive`'s, and each
//! run of several): the flags that stand for manifest keys in one table (`KEY_FLAGS`), turned
//! into manifest overrides for this process's plan, or back into a command line for a run of
//! several; the manifest loaded with them and resolved into a `Plan`. Nothing here starts a
//! run; `run` and `batch` both build on it.

use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::load::{LoadRequest, Override};
use crate::manifest::plan::DotEnv;
use crate::manifest::{self, plan};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A flag of `eden run` that stands for a manifest key.
pub(crate) struct KeyFlag {
    pub(crate) key: &'static str,
    pub(crate) flag: &'static str,
    /// Its value on the command line, as given.
    value: fn(&RunArgs) -> Option<String>,
    /// The key takes a number.
    integer: bool,
}

/// Every flag that stands for a manifest key, in the order they apply (`--set` comes after
/// them all: the last word wins).
static KEY_FLAGS: [KeyFlag; 13] = [
    KeyFlag { key: "agent.kind", flag: "--agent", value: |args| args.agent.clone(), integer: false },
    KeyFlag { key: "agent.binary", flag: "--binary", value: |args| args.binary.clone(), integer: false },
    KeyFlag { key: "agent.model", flag: "--model", value: |args| args.model.clone(), integer: false },
    KeyFlag { key: "prompt", flag: "--prompt", value: |args| args.prompt.clone(), integer: false },
    KeyFlag { key: "prompt_file", flag: "--prompt-file", value: |args| args.prompt_file.clone(), integer: false },
    KeyFlag { key: "name", flag: "--name", value: |args| args.name.clone(), integer: false },
    KeyFlag { key: "sandbox.kind", flag: "--sandbox", value: |args| args.sandbox.clone(), integer: false },
    KeyFlag { key: "sandbox.host", flag: "--host", value: |args| args.host.clone(), integer: false },
    KeyFlag { key: "branch.strategy", flag: "--strategy", value: |args| args.strategy.clone(), integer: false },
    KeyFlag { key: "branch.name", flag: "--branch", value: |args| args.branch.clone(), integer: false },
    KeyFlag { key: "branch.base", flag: "--base", value: |args| args.base.clone(), integer: false },
    KeyFlag { key: "attempts", flag: "--attempts", value: |args| args.attempts.map(|n| n.to_string()), integer: true },
    KeyFlag {
        key: "loop.max_iterations",
        flag: "--max-iterations",
        value: |args| args.max_iterations.map(|n| n.to_string()),
        integer: true,
    },
];

/// What `eden run`'s command line says about the plan of each run, read once.
pub(crate) struct RunSettings {
    /// The flags given that stand for manifest keys, with their values as given.
    key_flags: Vec<(&'static KeyFlag, String)>,
    /// `--arg KEY=VALUE`, as given.
    prompt_args: Vec<String>,
    /// `--set KEY=VALUE`, as given.
    sets: Vec<String>,
    /// `--repo`.
    pub(crate) repo: Option<PathBuf>,
}

impl RunSettings {
    /// `--set`s alone: a manifest with those keys changed (`eden pool up`).
    pub(crate) fn with_sets(repo: Option<PathBuf>, sets: Vec<String>) -> RunSettings {
        RunSettings { sets, ..RunSettings::plain(repo) }
    }

    /// No flags: a manifest as it is (`eden doctor`).
    pub(crate) fn plain(repo: Option<PathBuf>) -> RunSettings {
        RunSettings { key_flags: Vec::new(), prompt_args: Vec::new(), sets: Vec::new(), repo }
    }

    pub(crate) fn from_args(args: &RunArgs) -> RunSettings {
        let key_flags = KEY_FLAGS.iter().filter_map(|flag| Some((flag, (flag.value)(args)?))).collect();
        RunSettings {
            key_flags,
            prompt_args: args.prompt_args.clone(),
            sets: args.set.clone(),
            repo: args.repo.clone(),
        }
    }

    /// The same settings as an `eden run` command line (for a run of several, which `sets`
    /// add to): values as given, so relative paths resolve the same from the same directory.
    pub(crate) fn command_line(&self, sets: &[String]) -> Vec<OsString> {
        let mut line: Vec<OsString> = Vec::new();
        for (flag, value) in &self.key_flags {
            line.extend([flag.flag.into(), value.into()]);
        }
        if let Some(repo) = &self.repo {
            line.extend(["--repo".into(), repo.into()]);
        }
        for pair in &self.prompt_args {
            line.extend(["--arg".into(), pair.into()]);
        }
        for set in self.sets.iter().chain(sets) {
            line.extend(["--set".into(), set.into()]);
        }
        line
    }

    /// The settings as manifest overrides: the key flags, `--arg`s, then `--set`s in the order
    /// given. A relative path in a path key is relative to `current_dir`.
    fn overrides(&self, current_dir: &Path) -> Result<Vec<Override>, Error> {
        let mut list = Vec::new();
        for (flag, value) in &self.key_flags {
            let value = match flag.integer {
                true => value.parse().map(toml::Value::Integer).map_err(|_| {
                    Error::usage(format!("`{} {value}` is not a number", flag.flag)).with_hint("give a whole number")
                })?,
                false => toml::Value::String(value.clone()),
            };
            list.push(Override::flag(flag.key, flag.flag, value));
        }
        for pair in &self.prompt_args {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(
                    Error::usage(format!("`--arg {pair}` has no value")).with_hint("write it as `--arg KEY=VALUE`")
                );
            };
            let mut item = Override::flag("prompt_args", &format!("--arg {pair}"), toml::Value::String(value.into()));
            item.path = item.path.child(key.trim());
            list.push(item);
        }
        for set in &self.sets {
            list.push(Override::parse_set(set)?);
        }
        for item in &mut list {
            resolve_path(item, current_dir);
        }
        Ok(list)
    }
}

/// A manifest (or the flags alone) resolved into a plan, with where it will run.
pub(crate) struct Loaded {
    pub(crate) plan: plan::Plan,
    /// The repository found where eden was started (or `--repo`), or why none.
    pub(crate) repo: Result<crate::git::Discovered, Error>,
    /// Warnings from loading (keys dropped by a `--strategy`).
    pub(crate) notes: Vec<String>,
    /// The flags and `--set`s that stood in for manifest keys, for the record.
    pub(crate) given: Vec<String>,
    /// For `eden doctor`: the `${VAR}`s the manifest refers to that are not set.
    pub(crate) unset: Vec<String>,
}

/// Load `file` (or the flags alone) with the run's flags and `extra` `KEY=VALUE`s (a `--matrix`
/// combination) on top, and resolve it into a plan. No side effects.
///
/// What the plan is for: a run, an interactive session (no prompt needed, strategy `head` by
/// default), or `eden doctor` (`eden init`'s placeholder prompt allowed: doctor says so itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    Run,
    Interactive,
    Doctor,
}

pub(crate) fn load(
    settings: &RunSettings,
    file: Option<&Path>,
    extra: &[String],
    purpose: Purpose,
    current_dir: &Path,
) -> Result<Loaded, Error> {
    let mut overrides = settings.overrides(current_dir)?;
    // Only the runs of several (`--matrix` values, and the names made from them) have these.
    for set in extra {
        let mut item = Override::parse_set(set)?;
        item.flag = format!("--matrix {set}");
        overrides.push(item);
    }
    let given: Vec<String> = overrides.iter().map(|item| format!("{}={}", item.path, item.value)).collect();
    if file.is_none() && overrides.is_empty() {
        return Err(Error::usage("no manifest given").with_hint(
            "write one with `eden init` (then `eden run` runs `./eden.toml`), pass a manifest (`eden run plan.toml`), or describe the run with flags: `eden run --agent simulated --prompt \"...\"`",
        ));
    }
    let (mut manifest, mut source) = manifest::load(LoadRequest { file, overrides, current_dir })?;
    // `eden doctor` says the placeholder is there as one finding, and checks the rest.
    source.placeholder_allowed = purpose == Purpose::Doctor;
    source.unset = (purpose == Purpose::Doctor).then(Default::default);
    if purpose == Purpose::Interactive {
        source.prompt_optional = true;
        // The person expects their writes in their checkout: `head`, unless the manifest or a
        // flag says otherwise.
        manifest.branch.strategy.get_or_insert(crate::manifest::schema::Strategy::Head);
    }
    let repo_dir = match &settings.repo {
        Some(dir) => current_dir.join(dir),
        None => current_dir.to_path_buf(),
    };
    // `.eden/.env` of the repository, if eden is in one (outside one, preflight says so later).
    let repo = crate::git::Git::discover(&repo_dir);
    let dotenv = match &repo {
        Ok(found) => DotEnv::load(&found.root)?,
        Err(_) => DotEnv::default(),
    };
    let project = repo.as_ref().ok().map(|found| found.root.as_path());
    let plan = plan::resolve(manifest, &source, &|name| std::env::var(name).ok(), &dotenv, project)?;
    check_args_are_used(&settings.prompt_args, &plan)?;
    let unset = source.unset.map(std::cell::RefCell::into_inner).unwrap_or_default();
    Ok(Loaded { plan, repo, notes: source.notes, given, unset })
}

/// An `--arg` no prompt uses is a typo or a stale script: say which keys the prompts do use.
fn check_args_are_used(pairs: &[String], plan: &plan::Plan) -> Result<(), Error> {
    let used: std::collections::BTreeSet<&str> = plan
        .steps
        .iter()
        .flat_map(|step| crate::manifest::prompt::placeholders(&step.prompt.template))
        .filter(|key| !crate::manifest::prompt::BUILT_INS.contains(key))
        .collect();
    for pair in pairs {
        let key = pair.split_once('=').map_or(pair.as_str(), |(key, _)| key).trim();
        if used.contains(key) {
            continue;
        }
        let known = if used.is_empty() {
            "the prompt uses no `{{KEY}}` placeholders".to_owned()
        } else {
            format!(
                "the prompt uses {}",
                used.iter().map(|key| format!("`{{{{{key}}}}}`")).collect::<Vec<_>>().join(", ")
            )
        };
        let problem = if crate::manifest::prompt::is_key(key) {
            format!("no prompt uses `{{{{{key}}}}}`")
        } else {
            format!("`{key}` is not a placeholder name (letters, digits, `_` and `-`)")
        };
        return Err(Error::usage(format!("`--arg {pair}`: {problem}")).with_hint(known));
    }
    Ok(())
}

/// Keys whose values are paths: given on the command line, a relative one means relative to
/// where eden was started (as with every command-line tool), not to the manifest's folder.
const PATH_KEYS: [&str; 3] = ["binary", "prompt_file", "schema"];

fn resolve_path(item: &mut Override, current_dir: &Path) {
    let is_path = item.path.to_string().rsplit('.').next().is_some_and(|key| PATH_KEYS.contains(&key));
    if let (true, toml::Value::String(value)) = (is_path, &item.value) {
        // A bare name (`--binary claude`) is looked up on PATH, not taken as a file here.
        let names_a_file = value.contains('/') || !item.path.to_string().ends_with("binary");
        if names_a_file && Path::new(value).is_relative() {
            let path = crate::values::normalize_path(&current_dir.join(value));
            item.value = toml::Value::String(path.display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(line: &[&str]) -> RunSettings {
        let cli = crate::cli::Cli::try_parse_from(["eden", "run"].iter().chain(line)).unwrap();
        match cli.command {
            crate::cli::Command::Run(args) => RunSettings::from_args(&args),
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_command_line_of_a_run_of_several_says_what_the_flags_said() {
        let line = [
            "--agent",
            "codex",
            "--max-iterations",
            "3",
            "--base",
            "dev",
            "--repo",
            "r",
            "--arg",
            "K=v",
            "--set",
            "name=x",
        ];
        let settings = parse(&line);
        let again: Vec<String> = settings
            .command_line(&["agent.model=m".into()])
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            again,
            [
                "--agent",
                "codex",
                "--base",
                "dev",
                "--max-iterations",
                "3",
                "--repo",
                "r",
                "--arg",
                "K=v",
                "--set",
                "name=x",
                "--set",
                "agent.model=m"
            ]
        );
        // Read back, it is the same settings.
        let reread = RunSettings::from_args(&match crate::cli::Cli::try_parse_from(
            ["eden".to_owned(), "run".to_owned()].into_iter().chain(again.iter().cloned()),
        )
        .unwrap()
        .command
        {
            crate::cli::Command::Run(args) => *args,
            _ => unreachable!(),
        });
        let keys = |s: &RunSettings| s.key_flags.iter().map(|(f, v)| (f.key, v.clone())).collect::<Vec<_>>();
        assert_eq!(keys(&reread), keys(&settings));
    }

    /// Every row of `KEY_FLAGS`: its flag is one clap has (spelled as clap spells it), a value
    /// given to it is read into the settings under its key, written back on a command line and
    /// read again unchanged, and becomes the override of its key.
    #[test]
    fn every_key_flag_round_trips() {
        use clap::CommandFactory;
        let cli = crate::cli::Cli::command();
        let run = cli.find_subcommand("run").expect("the run command");
        for row in &KEY_FLAGS {
            let long = row.flag.trim_start_matches("--");
            let arg = run.get_arguments().find(|arg| arg.get_long() == Some(long));
            assert!(arg.is_some(), "`{}` is not a flag of `eden run`", row.flag);
            let value = if row.integer { "2" } else { "value-of-it" };
            let settings = parse(&[row.flag, value]);
            let read: Vec<(&str, String)> = settings.key_flags.iter().map(|(f, v)| (f.key, v.clone())).collect();
            assert_eq!(read, [(row.key, value.to_owned())], "{}", row.flag);
            let line: Vec<String> =
                settings.command_line(&[]).iter().map(|part| part.to_string_lossy().into_owned()).collect();
            assert_eq!(line, [row.flag, value], "{}", row.flag);
            let again = parse(&line.iter().map(String::as_str).collect::<Vec<_>>());
            let reread: Vec<(&str, String)> = again.key_flags.iter().map(|(f, v)| (f.key, v.clone())).collect();
            assert_eq!(reread, read, "{}", row.flag);
            let overrides = settings.overrides(Path::new("/work")).unwrap();
            assert_eq!(overrides.len(), 1, "{}", row.flag);
            assert_eq!(overrides[0].path.to_string(), row.key, "{}", row.flag);
        }
    }

    #[test]
    fn the_flags_become_overrides_in_order_with_paths_from_the_current_directory() {
        let settings = parse(&["--binary", "./bin/agent", "--max-iterations", "2", "--set", "loop.max_iterations=5"]);
        let overrides = settings.overrides(Path::new("/work")).unwrap();
        let shown: Vec<String> = overrides.iter().map(|o| format!("{}={}", o.path, o.value)).collect();
        assert_eq!(shown, ["agent.binary=\"/work/bin/agent\"", "loop.max_iterations=2", "loop.max_iterations=5"]);
        let bare = parse(&["--binary", "claude"]).overrides(Path::new("/work")).unwrap();
        assert_eq!(bare[0].value, toml::Value::String("claude".into()), "a name is looked up on PATH");
    }
}
