//! `eden run` and `eden interactive`: the arguments resolved once (`invocation`), carried out
//! as one run (`single`) or several (`batch`); an error before any run began is still JSON on
//! stdout for a script that asked for it.

use super::invocation::{InteractiveMode, Invocation, Markers};
use super::settings::RunSettings;
use crate::cli::RunArgs;
use crate::error::Error;
use crate::ui::print_data;
use std::path::PathBuf;

/// `eden interactive`: a run's manifest and flags, the session in the agent's own UI.
pub(crate) fn interactive(args: Box<crate::cli::InteractiveArgs>) -> Result<i32, Error> {
    invoke(args.run, Some(InteractiveMode { no_tty: args.no_tty, resume: args.resume }))
}

/// A run, or with `interactive` a session in the agent's own UI.
pub(crate) fn invoke(args: RunArgs, interactive: Option<InteractiveMode>) -> Result<i32, Error> {
    let args = with_default_manifest(args)?;
    let markers = Markers::read();
    let mut printed = false;
    let settings = RunSettings::from_args(&args);
    let (several, invocation) = super::invocation::resolve(&args, &settings, interactive, &markers);
    let result = match invocation {
        Ok(Invocation::Several) => super::batch::run(&args, &settings, &mut printed),
        Ok(Invocation::Single(single)) => super::single::run(&args, *single, markers, &mut printed),
        Err(error) => Err(error),
    };
    if let (Err(error), false) = (&result, printed) {
        error_on_stdout(&args, error, several);
    }
    result
}

/// Scripts that read stdout get JSON whatever happened: an error before the run began is
/// printed as one (once it began, its record, with the error in it, is what is printed).
/// Several runs keep their one shape, an array: an entry per manifest, none started.
fn error_on_stdout(args: &RunArgs, error: &Error, several: bool) {
    if !(args.json || args.json_events) {
        return;
    }
    let entry = |name: Option<String>| {
        serde_json::json!({
            "name": name,
            "status": "not_started",
            "exit_code": error.kind.exit_code(),
            "error": error_json(error),
        })
    };
    let manifests: Vec<String> = args.manifests.iter().map(|path| path.display().to_string()).collect();
    let value = match (several, args.json && !args.json_events) {
        (true, true) if manifests.is_empty() => serde_json::json!([entry(None)]),
        (true, true) => serde_json::Value::Array(manifests.iter().map(|path| entry(Some(path.clone()))).collect()),
        _ => serde_json::to_value(crate::report::Failed { error: crate::report::ErrorReport::of(error) })
            .expect("errors serialize"),
    };
    print_data(&value.to_string());
}

/// The manifest `eden init` writes, used when none is named (as cargo uses `Cargo.toml`).
pub(crate) const DEFAULT_MANIFEST: &str = "eden.toml";

/// No manifest named: `./eden.toml` when there is one (flags then override its keys), else the
/// run is described by flags alone.
fn with_default_manifest(mut args: RunArgs) -> Result<RunArgs, Error> {
    let default = crate::commands::current_dir()?.join(DEFAULT_MANIFEST);
    if args.manifests.is_empty() && default.is_file() {
        crate::ui::print_note(&format!("note: running `./{DEFAULT_MANIFEST}` (no manifest was named)"));
        args.manifests.push(PathBuf::from(DEFAULT_MANIFEST));
    }
    Ok(args)
}

/// An error as data: kind, message, hint, exit code.
fn error_json(error: &Error) -> serde_json::Value {
    serde_json::to_value(crate::report::ErrorReport::of(error)).expect("errors serialize")
}
