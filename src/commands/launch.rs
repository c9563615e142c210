//! How the command line starts a run: its options (how it stops, what a coordinator said)
//! and who hears of it (the display, `--json-events`, OpenTelemetry). `eden run`'s one run and
//! a pull request's rounds start the same way.

/// The run's options: how it stops, and what its coordinator (several runs, attempts) said.
pub(super) fn options(
    plan: &crate::manifest::plan::Plan,
    repo: Result<crate::git::Discovered, crate::error::Error>,
    given: Vec<String>,
    attached: Option<crate::orchestrator::Interactive>,
    from: Option<crate::record::FromRecord>,
    markers: super::invocation::Markers,
) -> crate::orchestrator::RunOptions {
    let stopping =
        crate::process::Stopping { kill_grace: plan.timeouts.kill_grace.0, drain: plan.timeouts.output_drain.0 };
    crate::orchestrator::RunOptions {
        repo,
        stopping,
        overrides: given,
        open_log: crate::ui::LogFileReporter::open,
        interactive: attached,
        batch: markers.batch,
        attempt: markers.attempt,
        from,
        traced: crate::ui::otlp::Settings::from_env(&|name| std::env::var(name).ok()).is_some(),
        timings: false,
    }
}

/// Who hears of the run: the display, `--json-events`, and OpenTelemetry.
pub(super) fn reporters(args: &crate::cli::RunArgs, interactive: bool) -> Vec<Box<dyn crate::ui::Reporter>> {
    let display = match crate::ui::Display::detect(args.quiet) {
        // The agent draws on the terminal: eden's own lines only before and after, no spinner.
        crate::ui::Display::Live if interactive => crate::ui::Display::Plain,
        display => display,
    };
    let mut reporters: Vec<Box<dyn crate::ui::Reporter>> = display.reporter().into_iter().collect();
    if args.json_events {
        reporters.push(Box::new(crate::ui::JsonLinesReporter::stdout()));
    }
    if let Some(telemetry) = crate::ui::otlp::Settings::from_env(&|name| std::env::var(name).ok()) {
        reporters.push(Box::new(crate::ui::otlp::TraceReporter::new(telemetry)));
    }
    reporters
}
