//! `eden clean`: arguments into settings, the survey and the removal (`crate::clean`), then the
//! table (or JSON) on stdout and a summary for people on stderr.

use crate::clean::{self, Item, Outcome, Settings, Survey};
use crate::cli::CleanArgs;
use crate::error::Error;
use crate::git::Git;
use crate::layout::Layout;
use crate::ui::{print_data, print_note};
use crate::values::parse_duration;

pub(crate) fn clean(args: CleanArgs) -> Result<i32, Error> {
    let older_than = match &args.older_than {
        Some(text) => Some(parse_duration(text).map_err(|why| {
            Error::usage(format!("`--older-than {text}`: {why}"))
                .with_hint("write a duration such as `7d`, `12h` or `90m`")
        })?),
        None => None,
    };
    let settings = Settings { older_than, force: args.force, dry_run: args.dry_run, all_repos: args.all_repos };
    let current_dir = crate::commands::current_dir()?;
    let dir = args.repo.as_ref().map_or_else(|| current_dir.clone(), |repo| current_dir.join(repo));
    let layout = match Git::discover(&dir) {
        Ok(found) => Some(Layout::new(found.root, found.common_dir)),
        // Outside a repository, `--all-repos` still finds containers and isolated copies.
        Err(_) if args.all_repos && args.repo.is_none() => None,
        Err(err) => return Err(err),
    };
    let interrupted = crate::process::signal_flag();

    let mut survey = clean::survey(layout.as_ref(), &settings);
    if !settings.dry_run {
        clean::execute(&mut survey, layout.as_ref(), &|| interrupted().is_some())?;
    }
    for warning in &survey.warnings {
        print_note(&format!("warning: {warning}"));
    }
    if args.json {
        let json = serde_json::json!({
            "dry_run": settings.dry_run,
            "items": survey.items,
            "history_kept": survey.history_kept,
        });
        print_data(&serde_json::to_string_pretty(&json).expect("items serialize"));
    } else if !survey.items.is_empty() {
        print_data(&table(&survey.items));
    }
    print_note(&summary(&survey, &settings));
    if let Some(signal) = interrupted() {
        let error = Error::interrupted(signal);
        return Err(Error::new(error.kind, format!("{} before the end", error.message))
            .with_hint("what was done is complete; run `eden clean` again to finish"));
    }
    let unfinished = survey.items.iter().any(|item| item.needs_force || item.outcome == Outcome::Failed);
    Ok(i32::from(unfinished))
}

/// `ACTION  WHAT  NAME  WHY`, one line per item, columns aligned.
fn table(items: &[Item]) -> String {
    let rows: Vec<[&str; 4]> = items
        .iter()
        .map(|item| [item.outcome.as_str(), item.kind.as_str(), item.name.as_str(), item.reason.as_str()])
        .collect();
    let header = ["ACTION", "WHAT", "NAME", "WHY"];
    let width = |column: usize| {
        rows.iter().map(|row| row[column].chars().count()).chain([header[column].len()]).max().unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let line = |row: [&str; 4]| {
        format!(
            "{:w0$}  {:w1$}  {:w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        )
    };
    std::iter::once(line(header)).chain(rows.into_iter().map(line)).collect::<Vec<_>>().join("\n")
}

/// `removed 3 · kept 2 (1 needs --force)`, and what else was left alone.
fn summary(survey: &Survey, settings: &Settings) -> String {
    let count = |outcome: Outcome| survey.items.iter().filter(|item| item.outcome == outcome).count();
    let need_force = survey.items.iter().filter(|item| item.needs_force).count();
    let mut parts = Vec::new();
    for (outcome, label) in [
        (Outcome::WouldRemove, "would remove"),
        (Outcome::Removed, "removed"),
        (Outcome::WouldMark, "would mark abandoned"),
        (Outcome::Marked, "marked abandoned"),
        (Outcome::Kept, "kept"),
        (Outcome::Failed, "failed"),
        (Outcome::Skipped, "not reached"),
    ] {
        let n = count(outcome);
        if n > 0 {
            let extra = if outcome == Outcome::Kept && need_force > 0 {
                format!(" ({need_force} only with `--force`)")
            } else {
                String::new()
            };
            parts.push(format!("{label} {n}{extra}"));
        }
    }
    let mut text = if parts.is_empty() { "nothing eden left behind".to_owned() } else { parts.join(" · ") };
    if survey.history_kept > 0 {
        let how = if settings.older_than.is_some() {
            "newer than `--older-than`"
        } else {
            "remove old ones with `--older-than 7d`"
        };
        text.push_str(&format!(
            "\nkept {} log(s), run record(s), session(s) and patch(es): {how}",
            survey.history_kept
        ));
    }
    text
}
