//! GitHub Actions: when `GITHUB_STEP_SUMMARY` and `GITHUB_OUTPUT` are set (as they are in a
//! job's step), eden writes a Markdown summary of its run(s) — the table, branch, checks, push —
//! and step outputs a later step can use (`steps.<id>.outputs.branch`, …). Nothing is written
//! when they are not set; a file that cannot be written is a warning, never a failed run.

use super::batch::Row;
use crate::record::{HookOutcome, RunRecord};
use std::fmt::Write as _;
use std::io::Write as _;

/// One run as the summary and the outputs show it.
pub(crate) struct Summarized<'a> {
    pub(crate) row: Row,
    pub(crate) record: Option<&'a RunRecord>,
}

/// Write the summary and the outputs of `runs`, if GitHub asked for them.
pub(crate) fn write(runs: &[Summarized<'_>], exit_code: i32) {
    let env = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(path) = env("GITHUB_STEP_SUMMARY") {
        append(&path, &summary(runs, exit_code), "GITHUB_STEP_SUMMARY");
    }
    if let Some(path) = env("GITHUB_OUTPUT") {
        append(&path, &outputs(runs, exit_code), "GITHUB_OUTPUT");
    }
}

fn append(path: &std::ffi::OsStr, text: &str, what: &str) {
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut file| file.write_all(crate::redact::apply(text).as_bytes()));
    if let Err(err) = written {
        super::print_note(&format!("warning: cannot write `{what}` ({}): {err}", std::path::Path::new(path).display()));
    }
}

/// A cell of a Markdown table: its pipes escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The Markdown: a heading with the outcome, the table, then per run its branch, push and checks.
pub(crate) fn summary(runs: &[Summarized<'_>], exit_code: i32) -> String {
    let mark = if exit_code == 0 { "✅" } else { "❌" };
    let mut out = match runs {
        [one] => format!("### {mark} eden: `{}` {}\n\n", cell(&one.row.name), cell(&one.row.status)),
        _ => format!("### {mark} eden: {} runs, exit code {exit_code}\n\n", runs.len()),
    };
    out.push_str("| Run | Agent | Status | Iterations | Commits | Checks | Result | Time | Tokens | Cost |\n");
    out.push_str("|---|---|---|--:|--:|--:|---|--:|--:|--:|\n");
    let dash = || "-".to_owned();
    for Summarized { row, .. } in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&row.name),
            cell(&row.agent),
            cell(&row.status),
            row.iterations.map_or_else(dash, |n| n.to_string()),
            row.commits.map_or_else(dash, |n| n.to_string()),
            row.checks.map_or_else(dash, |(passed, all)| format!("{passed}/{all}")),
            if row.landed.is_empty() { dash() } else { cell(&row.landed) },
            row.duration_ms.map_or_else(dash, |ms| format!("{:.1}s", ms as f64 / 1000.0)),
            row.tokens.map_or_else(dash, super::thousands),
            row.cost.map_or_else(dash, |cost| format!("${cost:.4}")),
        );
    }
    for Summarized { row, record } in runs {
        let Some(record) = record else { continue };
        out.push('\n');
        let prefix = if runs.len() > 1 { format!("**{}**: ", cell(&row.name)) } else { String::new() };
        let _ = writeln!(out, "{prefix}{}{}", branch_line(record), pushed(record));
        for check in record.last_checks() {
            let how = match (check.outcome, check.exit_code) {
                (HookOutcome::Ok, _) => "passed".to_owned(),
                (HookOutcome::Timeout, _) => "timed out".to_owned(),
                (_, Some(code)) => format!("failed (exit {code})"),
                (outcome, None) => outcome.as_str().to_owned(),
            };
            let sign = if check.outcome == HookOutcome::Ok { "✅" } else { "❌" };
            let _ = writeln!(out, "- {sign} check `{}`: {how} (iteration {})", cell(&check.name), check.iteration);
        }
        if let (Some(dir), false) = (&record.artifacts_dir, record.artifacts.is_empty()) {
            let files: Vec<String> = record.artifacts.iter().map(|file| format!("`{}`", cell(&file.path))).collect();
            let _ = writeln!(out, "- artifacts in `{}`: {}", dir.display(), files.join(", "));
        }
        if let Some(error) = &record.error {
            let _ = writeln!(out, "\n> {}", cell(error.message.lines().next().unwrap_or_default()));
        }
    }
    out
}

/// The run's branch when it is still there after the run: the checkout's own (strategy
/// `head`), kept for review, or pushed; none when its work merged and it was deleted, or it
/// never had a commit. What the `branch` output names.
fn branch_left(record: &RunRecord) -> Option<&str> {
    if record.worked_in_place() {
        return Some(&record.branch);
    }
    let pushed = record.push.as_ref().filter(|push| push.pushed).map(|push| push.branch.as_str());
    record.preserved_branch.as_deref().or(pushed)
}

/// What became of the run's branch, for the summary.
fn branch_line(record: &RunRecord) -> String {
    let branch = &record.branch;
    match (branch_left(record), &record.merged_into) {
        _ if record.worked_in_place() => format!("worked on `{branch}` (strategy `head`)"),
        (Some(_), _) if record.preserved_branch.is_some() => format!("branch `{branch}` kept"),
        (left, Some(into)) => {
            let here = if left.is_none() { " (deleted here)" } else { "" };
            format!("branch `{branch}` merged into `{into}`{here}")
        }
        _ if record.commits.is_empty() => format!("branch `{branch}`: no commits, deleted"),
        _ => format!("branch `{branch}` deleted"),
    }
}

/// `, pushed to `origin``, or why not.
fn pushed(record: &RunRecord) -> String {
    match &record.push {
        Some(push) if push.pushed => format!(", pushed to `{}`", push.remote),
        Some(push) => format!(", **not pushed** to `{}`", push.remote),
        None => String::new(),
    }
}

/// `name<<DELIMITER` … `DELIMITER` for each output (values may hold anything); with several
/// runs each holds one line per run, and `runs` all of them as JSON.
pub(crate) fn outputs(runs: &[Summarized<'_>], exit_code: i32) -> String {
    let delimiter = format!("EDEN_OUTPUT_{}", crate::values::random_hex(16).unwrap_or_else(|_| "END".into()));
    let values = |of: &dyn Fn(&Summarized<'_>) -> String| runs.iter().map(of).collect::<Vec<_>>().join("\n");
    let status = |run: &Summarized<'_>| if run.row.code == Some(0) { "success" } else { "failure" }.to_owned();
    let reason = |run: &Summarized<'_>| run.row.status.clone();
    let branch = |run: &Summarized<'_>| run.record.and_then(branch_left).unwrap_or_default().to_owned();
    let merged_into =
        |run: &Summarized<'_>| run.record.and_then(|record| record.merged_into.clone()).unwrap_or_default();
    let commits = |run: &Summarized<'_>| run.row.commits.unwrap_or(0).to_string();
    let cost = |run: &Summarized<'_>| run.row.cost.map(|cost| format!("{cost:.4}")).unwrap_or_default();
    let artifacts = |run: &Summarized<'_>| {
        let dir = run.record.and_then(|record| record.artifacts_dir.as_ref());
        dir.map(|dir| dir.display().to_string()).unwrap_or_default()
    };
    let pull_url = |run: &Summarized<'_>| {
        run.record.and_then(|record| record.pull_request.as_ref()).map(|pull| pull.url.clone()).unwrap_or_default()
    };
    let pull_number = |run: &Summarized<'_>| {
        let pull = run.record.and_then(|record| record.pull_request.as_ref());
        pull.map(|pull| pull.number.to_string()).unwrap_or_default()
    };
    let json: Vec<serde_json::Value> = runs
        .iter()
        .map(|run| {
            serde_json::json!({
                "name": run.row.name,
                "branch": branch(run),
                "status": status(run),
                "exit_reason": reason(run),
                "exit_code": run.row.code,
                "commits": run.row.commits.unwrap_or(0),
                // Money to a millionth of a dollar: sums of floats carry noise past it.
                "cost_usd": run.row.cost.map(|cost| (cost * 1e6).round() / 1e6),
                "merged_into": run.record.and_then(|record| record.merged_into.clone()),
                "pushed": run.record.and_then(|record| record.push.as_ref()).map(|push| push.pushed),
                "attempt": run.record.and_then(|record| record.attempt.as_ref()).map(|attempt| attempt.number),
                "chosen": run.record.and_then(|record| record.attempt.as_ref()).map(|attempt| attempt.chosen),
                "artifacts": run.record.map(|record| record.artifacts.clone()).unwrap_or_default(),
                "pull_request": run.record.and_then(|record| record.pull_request.clone()),
            })
        })
        .collect();
    // Of several attempts, the branch of the one that landed (empty when none did).
    let chosen = runs
        .iter()
        .filter_map(|run| run.record)
        .find(|record| record.attempt.as_ref().is_some_and(|attempt| attempt.chosen))
        .map(|record| record.branch.clone())
        .unwrap_or_default();
    let pairs = [
        ("branch", values(&branch)),
        ("chosen_branch", chosen),
        ("status", if runs.len() == 1 { values(&status) } else { status_of(exit_code) }),
        ("exit_reason", values(&reason)),
        ("merged_into", values(&merged_into)),
        ("exit_code", exit_code.to_string()),
        ("commits", values(&commits)),
        ("cost_usd", values(&cost)),
        ("artifacts", values(&artifacts)),
        ("pull_request_url", values(&pull_url)),
        ("pull_request_number", values(&pull_number)),
        ("runs", serde_json::Value::Array(json).to_string()),
    ];
    let mut out = String::new();
    for (name, value) in pairs {
        let _ = write!(out, "{name}<<{delimiter}\n{value}\n{delimiter}\n");
    }
    out
}

fn status_of(exit_code: i32) -> String {
    if exit_code == 0 { "success" } else { "failure" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `runs` carries money to a millionth of a dollar, not a float sum's noise.
    #[test]
    fn a_cost_in_runs_is_rounded() {
        let row = Row {
            name: "t".into(),
            agent: "claude-code".into(),
            host: None,
            status: "completed".into(),
            code: Some(0),
            iterations: Some(1),
            commits: Some(0),
            landed: "no commits".into(),
            duration_ms: Some(1),
            tokens: Some(1),
            cost: Some(0.000_563_999_999_999_999_9),
            checks: None,
        };
        let out = outputs(&[Summarized { row, record: None }], 0);
        let runs = out.lines().skip_while(|line| !line.starts_with("runs<<")).nth(1).unwrap();
        let runs: serde_json::Value = serde_json::from_str(runs).unwrap();
        assert_eq!(runs[0]["cost_usd"], serde_json::json!(0.000564), "{runs}");
    }
}
