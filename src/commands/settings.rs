//! The run's settings, made once from `eden run`'s flags (and `eden interactive`'s, and each
//! run of several): the flags in one table turned into manifest overrides, the manifest loaded
//! with them, and resolved into a `Plan`. Nothing here starts a run; `run` and `batch` both
//! build on it.

use crate::cli::RunArgs;
use crate::error::Error;
use crate::manifest::load::{LoadRequest, Override};
use crate::manifest::plan::DotEnv;
use crate::manifest::{self, plan};

/// A manifest (or the flags alone) resolved into a plan, with where it will run.
pub(crate) struct Loaded {
    pub plan: plan::Plan,
    /// The repository found where eden was started (or `--repo`), or why none.
    pub repo: Result<crate::git::Discovered, Error>,
    /// Warnings from loading (keys dropped by a `--strategy`).
    pub notes: Vec<String>,
    /// The flags and `--set`s that stood in for manifest keys, for the record.
    pub given: Vec<String>,
}

/// Load `file` (or the flags alone) with the run's flags and `extra` `KEY=VALUE`s (a `--matrix`
/// combination) on top, and resolve it into a plan. No side effects.
pub(crate) fn load(
    args: &RunArgs,
    file: Option<&std::path::Path>,
    extra: &[String],
    interactive: bool,
    current_dir: &std::path::Path,
) -> Result<Loaded, Error> {
    let mut overrides = overrides(args, current_dir)?;
    // Only the runs of several (`--matrix` values, and the names made from them) have these.
    for set in extra {
        let mut item = Override::parse_set(set)?;
        item.flag = format!("--matrix {set}");
        overrides.push(item);
    }
    let given: Vec<String> = overrides.iter().map(|item| format!("{}={}", item.path, item.value)).collect();
    if file.is_none() && overrides.is_empty() {
        return Err(Error::usage("no manifest given").with_hint(
            "pass a manifest (`eden run plan.toml`) or describe the run with flags: `eden run --agent simulated --prompt \"...\"`",
        ));
    }
    let (mut manifest, mut source) = manifest::load(LoadRequest { file, overrides, current_dir })?;
    if interactive {
        source.prompt_optional = true;
        // The person expects their writes in their checkout: `head`, unless the manifest or a
        // flag says otherwise.
        manifest.branch.strategy.get_or_insert(crate::manifest::schema::Strategy::Head);
    }
    let repo_dir = match &args.repo {
        Some(dir) => current_dir.join(dir),
        None => current_dir.to_path_buf(),
    };
    // `.eden/.env` of the repository, if eden is in one (outside one, preflight says so later).
    let repo = crate::git::Git::discover(&repo_dir);
    let dotenv = match &repo {
        Ok(found) => DotEnv::load(&found.root)?,
        Err(_) => DotEnv::default(),
    };
    let plan = plan::resolve(manifest, &source, &|name| std::env::var(name).ok(), &dotenv)?;
    check_args_are_used(&args.prompt_args, &plan)?;
    Ok(Loaded { plan, repo, notes: source.notes, given })
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

/// Flags first (in a fixed order), then `--set` in the order given: the last word wins.
fn overrides(args: &RunArgs, current_dir: &std::path::Path) -> Result<Vec<Override>, Error> {
    let string = |value: &str| toml::Value::String(value.to_owned());
    let mut list = Vec::new();
    let flags: [(&str, &str, &Option<String>); 9] = [
        ("agent.kind", "--agent", &args.agent),
        ("agent.binary", "--binary", &args.binary),
        ("agent.model", "--model", &args.model),
        ("prompt", "--prompt", &args.prompt),
        ("prompt_file", "--prompt-file", &args.prompt_file),
        ("name", "--name", &args.name),
        ("sandbox.kind", "--sandbox", &args.sandbox),
        ("branch.strategy", "--strategy", &args.strategy),
        ("branch.name", "--branch", &args.branch),
    ];
    for (key, flag, value) in flags {
        if let Some(value) = value {
            list.push(Override::flag(key, flag, string(value)));
        }
    }
    if let Some(base) = &args.base {
        list.push(Override::flag("branch.base", "--base", string(base)));
    }
    if let Some(max) = args.max_iterations {
        list.push(Override::flag("loop.max_iterations", "--max-iterations", toml::Value::Integer(max.into())));
    }
    for pair in &args.prompt_args {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Error::usage(format!("`--arg {pair}` has no value")).with_hint("write it as `--arg KEY=VALUE`"));
        };
        let mut item = Override::flag("prompt_args", &format!("--arg {pair}"), string(value));
        item.path = item.path.child(key.trim());
        list.push(item);
    }
    for set in &args.set {
        list.push(Override::parse_set(set)?);
    }
    for item in &mut list {
        let is_path = item.path.to_string().rsplit('.').next().is_some_and(|key| PATH_KEYS.contains(&key));
        if let (true, toml::Value::String(value)) = (is_path, &item.value) {
            // A bare name (`--binary claude`) is looked up on PATH, not taken as a file here.
            let names_a_file = value.contains('/') || !item.path.to_string().ends_with("binary");
            if names_a_file && std::path::Path::new(value).is_relative() {
                let path = crate::values::normalize_path(&current_dir.join(value));
                item.value = toml::Value::String(path.display().to_string());
            }
        }
    }
    Ok(list)
}
