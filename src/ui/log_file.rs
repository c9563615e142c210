//! Every event as one JSON line with a timestamp: the `[logging] file`, and `--json-events` on
//! stdout (flushed per event, so a consumer sees them as they happen).
//!
//! The file holds whole lines only: what is written is buffered as complete lines, and when a
//! write fails part-way (a full disk) the file is cut back to its last complete line, so every
//! line in it reads as JSON.

use super::ticker::Ticked;
use super::{Event, Reporter};
use crate::report::Logged;
use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::Path;

pub(crate) struct JsonLinesReporter<W: Write> {
    writer: BufWriter<W>,
    /// Flush after every event (stdout) or only after the less frequent ones (files).
    flush_every_event: bool,
}

/// The `[logging] file`: whole lines, or none. The agent's stream is written out by a `Ticked`
/// thread (at most 50 ms late, or at 64 KiB); the run's milestones at once.
pub(crate) struct LogFileReporter {
    log: Ticked<LogFile>,
}

struct LogFile {
    file: fs_err::File,
    /// Complete lines not written yet.
    pending: Vec<u8>,
    /// The file's length after its last complete line.
    written: u64,
}

impl LogFileReporter {
    /// Open (append to) the log file at `path`: what `RunOptions::open_log` does.
    pub(crate) fn open(path: &Path) -> std::io::Result<Box<dyn Reporter>> {
        Ok(Box::new(Self::create(path)?))
    }

    pub(crate) fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let file = fs_err::OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        let log = LogFile { file, pending: Vec::with_capacity(64 * 1024), written };
        Ok(LogFileReporter { log: Ticked::new(log, LogFile::flush) })
    }
}

impl LogFile {
    /// Write what is pending; on a failure, cut the file back to its last complete line (the
    /// lines that did not fit are lost, the file stays readable).
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        match self.file.write_all(&self.pending) {
            Ok(()) => self.written += self.pending.len() as u64,
            Err(_) => {
                let _ = self.file.file().set_len(self.written);
            }
        }
        self.pending.clear();
    }
}

impl Reporter for LogFileReporter {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        let Ok(line) = serde_json::to_string(&logged(run_id, event)) else {
            return;
        };
        let line = crate::redact::apply(&line);
        let mut log = self.log.lock();
        log.pending.extend_from_slice(line.as_bytes());
        log.pending.push(b'\n');
        if !event.is_stream() || log.pending.len() >= 64 * 1024 {
            log.flush();
        }
    }
}

impl Drop for LogFileReporter {
    fn drop(&mut self) {
        self.log.lock().flush();
    }
}

impl JsonLinesReporter<std::io::Stdout> {
    pub(crate) fn stdout() -> Self {
        JsonLinesReporter { writer: BufWriter::new(std::io::stdout()), flush_every_event: true }
    }
}

impl<W: Write> Reporter for JsonLinesReporter<W> {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        let Ok(line) = serde_json::to_string(&logged(run_id, event)) else {
            return;
        };
        let line = crate::redact::apply(&line);
        let _ = self.writer.write_all(super::defuse(&line, true).as_bytes());
        let _ = self.writer.write_all(b"\n");
        if self.flush_every_event || !event.is_stream() {
            let _ = self.writer.flush();
        }
    }
}

impl<W: Write> Drop for JsonLinesReporter<W> {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}

/// The line for `event`, stamped now.
fn logged<'a>(run_id: &'a str, event: &'a Event<'a>) -> Logged<'a> {
    let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    Logged { ts: ts.into(), run_id: run_id.into(), event: Cow::Borrowed(event) }
}
