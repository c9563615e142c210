//! Keeping a copy of an agent's transcript under `.eden/sessions/<run-id>/`, secrets redacted,
//! and finding the copies earlier runs kept. Where each agent writes its transcripts is the
//! agent's own (`agent::transcripts`, from its spec row).

use crate::agent::transcripts::{dirs, files, plain_session_id, Found};
use crate::record::TranscriptRecord;
use std::path::{Path, PathBuf};

/// eden's own copy of a session's transcript, captured by an earlier run into `sessions`
/// (`.eden/sessions/<run>/<step>-<iteration>-<id>.jsonl`, the newest if several), with its
/// subagents' transcripts.
pub(crate) fn captured(sessions: &Path, session_id: &str) -> Option<Found> {
    if !plain_session_id(session_id) {
        return None;
    }
    let suffix = format!("-{session_id}.jsonl");
    let modified = |path: &PathBuf| path.metadata().and_then(|m| m.modified()).ok();
    let main = dirs(sessions)
        .into_iter()
        .flat_map(files)
        .filter(|path| path.file_name().unwrap_or_default().to_string_lossy().ends_with(&suffix))
        .max_by_key(modified)?;
    let mut subagents = files(main.with_extension("").join("subagents"));
    subagents.sort();
    Some(Found { main, subagents })
}

/// The file name a captured transcript gets: `<step>-<iteration>-<session-id>`.
pub(crate) fn stem(step: &str, iteration: u32, session_id: &str) -> String {
    let step: String = step.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    format!("{step}-{iteration}-{session_id}")
}

/// Copy a located transcript (and its subagents') into `dir` as `<stem>.jsonl`, secrets
/// redacted like everything else eden writes. A transcript under `confined` (the run's private
/// state folders, which the agent wrote) is read without following any symlink there.
pub(crate) fn keep_file(
    main: &Path,
    subagents: &[PathBuf],
    dir: &Path,
    stem: &str,
    confined: &Path,
) -> std::io::Result<TranscriptRecord> {
    let path = dir.join(format!("{stem}.jsonl"));
    let bytes = store(main, &path, confined)?;
    let mut kept = Vec::new();
    for sub in subagents {
        let target = dir.join(stem).join("subagents").join(sub.file_name().unwrap_or_default());
        store(sub, &target, confined)?;
        kept.push(target);
    }
    Ok(TranscriptRecord { path, source: main.display().to_string(), bytes, subagents: kept })
}

/// The largest transcript eden copies.
const TRANSCRIPT_LIMIT: u64 = 1 << 30;

/// Keep `text` (an export) as the transcript `<stem>.json`.
pub(crate) fn keep_export(text: &[u8], dir: &Path, stem: &str, source: String) -> std::io::Result<TranscriptRecord> {
    let path = dir.join(format!("{stem}.json"));
    let bytes = write_redacted(&path, text)?;
    Ok(TranscriptRecord { path, source, bytes, subagents: Vec::new() })
}

fn store(from: &Path, to: &Path, confined: &Path) -> std::io::Result<u64> {
    let data = match from.strip_prefix(confined) {
        Ok(inside) => crate::safe_fs::Dir::open(confined)?.read(inside, TRANSCRIPT_LIMIT)?,
        Err(_) => fs_err::read(from)?,
    };
    write_redacted(to, &data)
}

fn write_redacted(path: &Path, data: &[u8]) -> std::io::Result<u64> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    let text = String::from_utf8_lossy(data);
    let redacted = crate::redact::apply(&text);
    let temporary = path.with_extension(format!("tmp.{}", std::process::id()));
    fs_err::write(&temporary, redacted.as_bytes())?;
    fs_err::rename(&temporary, path)?;
    Ok(redacted.len() as u64)
}
