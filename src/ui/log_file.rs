//! `[logging] file`: every event as one JSON line with a timestamp.

use super::{Event, Reporter};
use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::Path;

pub struct LogFileReporter {
    writer: BufWriter<fs_err::File>,
}

#[derive(Serialize)]
struct Line<'a> {
    ts: String,
    #[serde(flatten)]
    event: &'a Event<'a>,
}

impl LogFileReporter {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let file = fs_err::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(LogFileReporter { writer: BufWriter::new(file) })
    }
}

impl Reporter for LogFileReporter {
    fn report(&mut self, event: &Event<'_>) {
        let ts = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let _ = serde_json::to_writer(&mut self.writer, &Line { ts, event });
        let _ = self.writer.write_all(b"\n");
        if !matches!(event, Event::AgentText { .. } | Event::AgentStderr { .. }) {
            let _ = self.writer.flush();
        }
    }
}

impl Drop for LogFileReporter {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}
