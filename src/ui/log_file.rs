//! Every event as one JSON line with a timestamp: the `[logging] file`, and `--json-events` on
//! stdout (flushed per event, so a consumer sees them as they happen).

use super::{Event, Reporter};
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct JsonLinesReporter<W: Write> {
    writer: BufWriter<W>,
    /// Flush after every event (stdout) or only after the less frequent ones (files).
    flush_every_event: bool,
}

pub type LogFileReporter = JsonLinesReporter<fs_err::File>;

#[derive(Serialize)]
struct Line<'a> {
    ts: String,
    run_id: &'a str,
    #[serde(flatten)]
    event: &'a Event<'a>,
}

impl LogFileReporter {
    /// Open (append to) the log file at `path`: what `RunOptions::open_log` does.
    pub fn open(path: &Path) -> std::io::Result<Box<dyn Reporter>> {
        Ok(Box::new(Self::create(path)?))
    }

    pub fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let file = fs_err::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(JsonLinesReporter { writer: BufWriter::new(file), flush_every_event: false })
    }
}

impl JsonLinesReporter<std::io::Stdout> {
    pub fn stdout() -> Self {
        JsonLinesReporter { writer: BufWriter::new(std::io::stdout()), flush_every_event: true }
    }
}

impl<W: Write> Reporter for JsonLinesReporter<W> {
    fn report(&mut self, run_id: &str, event: &Event<'_>) {
        let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let Ok(line) = serde_json::to_string(&Line { ts, run_id, event }) else {
            return;
        };
        let _ = self.writer.write_all(crate::redact::apply(&line).as_bytes());
        let _ = self.writer.write_all(b"\n");
        if self.flush_every_event
            || !matches!(event, Event::AgentText { .. } | Event::AgentStderr { .. } | Event::HookOutput { .. })
        {
            let _ = self.writer.flush();
        }
    }
}

impl<W: Write> Drop for JsonLinesReporter<W> {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}
