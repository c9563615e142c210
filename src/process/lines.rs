//! Splitting a byte stream into lines without holding more than one line (bounded) in memory,
//! and a bounded tail of recent output for error messages.

use std::collections::VecDeque;

/// Longest line kept whole; longer lines are delivered in pieces of about this size so memory
/// stays bounded whatever the agent prints.
pub(crate) const MAX_LINE: usize = 4 << 20;

#[derive(Default)]
pub(crate) struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Feed a chunk; `on_line(line, continues)` gets each complete line without its `\n` (and
    /// without a trailing `\r`), with `continues = false`. A line longer than `MAX_LINE` comes
    /// in pieces with `continues = true` until its last one, cut between UTF-8 characters, so
    /// whoever reads them can still find text that straddles a cut. Lines inside the chunk are
    /// passed as slices of it, without copying.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], mut on_line: impl FnMut(&[u8], bool)) {
        while let Some(end) = memchr::memchr(b'\n', chunk) {
            if self.partial.is_empty() {
                on_line(strip_cr(&chunk[..end]), false);
            } else {
                self.partial.extend_from_slice(&chunk[..end]);
                on_line(strip_cr(&self.partial), false);
                self.partial.clear();
            }
            chunk = &chunk[end + 1..];
        }
        self.partial.extend_from_slice(chunk);
        while self.partial.len() >= MAX_LINE {
            let rest = self.partial.split_off(char_boundary(&self.partial, MAX_LINE));
            on_line(&self.partial, true);
            self.partial = rest;
        }
    }

    /// The last line, if the stream did not end with a newline.
    pub(crate) fn finish(&mut self, mut on_line: impl FnMut(&[u8], bool)) {
        if !self.partial.is_empty() {
            on_line(strip_cr(&self.partial), false);
            self.partial.clear();
        }
    }
}

/// `at`, moved back past UTF-8 continuation bytes (at most three) so a character is not cut in
/// two; `at` itself when the bytes there are not UTF-8 anyway.
fn char_boundary(bytes: &[u8], at: usize) -> usize {
    let continuation = |index: usize| bytes.get(index).is_some_and(|byte| byte & 0xC0 == 0x80);
    (at.saturating_sub(3)..=at).rev().find(|&index| !continuation(index)).unwrap_or(at)
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// How a sandbox's command wrapper starts a line it adds to the command's stderr for eden (the
/// branch's tip when the command ended): never shown, never part of a tail.
pub(crate) const SANDBOX_NOTE: &[u8] = b"\x01eden ";

/// Is `line` a sandbox's note for eden? The text after the prefix, if so.
pub(crate) fn sandbox_note(line: &[u8]) -> Option<&[u8]> {
    line.strip_prefix(SANDBOX_NOTE)
}

/// The last `capacity` bytes written, for "the tail of its output" in error messages.
pub(crate) struct Tail {
    bytes: VecDeque<u8>,
    capacity: usize,
}

impl Tail {
    pub(crate) fn new(capacity: usize) -> Self {
        Tail { bytes: VecDeque::with_capacity(capacity), capacity }
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        let data = &data[data.len().saturating_sub(self.capacity)..];
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    /// The last `max_lines` complete lines (a cut-off first line is dropped).
    pub(crate) fn lines(&self, max_lines: usize) -> Vec<String> {
        let (front, back) = self.bytes.as_slices();
        let mut all = Vec::with_capacity(self.bytes.len());
        all.extend_from_slice(front);
        all.extend_from_slice(back);
        let text = String::from_utf8_lossy(&all);
        let mut lines: Vec<&str> = text.lines().collect();
        if self.bytes.len() == self.capacity && !lines.is_empty() {
            lines.remove(0);
        }
        let skip = lines.len().saturating_sub(max_lines);
        lines[skip..]
            .iter()
            .filter(|l| sandbox_note(l.as_bytes()).is_none())
            .map(|l| l.trim_end_matches('\r').to_owned())
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        split_pieces(chunks).into_iter().map(|(line, _)| line).collect()
    }

    fn split_pieces(chunks: &[&[u8]]) -> Vec<(String, bool)> {
        let mut splitter = LineSplitter::default();
        let mut lines = Vec::new();
        for chunk in chunks {
            splitter.feed(chunk, |l, continues| lines.push((String::from_utf8_lossy(l).into_owned(), continues)));
        }
        splitter.finish(|l, continues| lines.push((String::from_utf8_lossy(l).into_owned(), continues)));
        lines
    }

    #[test]
    fn lines_across_chunks() {
        assert_eq!(split(&[b"a\nb", b"c\r\n", b"d"]), ["a", "bc", "d"]);
        assert_eq!(split(&[b"", b"\n\n"]), ["", ""]);
    }

    #[test]
    fn long_lines_are_bounded_and_their_pieces_say_so() {
        let long = vec![b'x'; MAX_LINE + 10];
        let lines = split_pieces(&[&long, b"\n"]);
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[0].0.len(), lines[0].1), (MAX_LINE, true));
        assert_eq!((lines[1].0.len(), lines[1].1), (10, false));
    }

    #[test]
    fn long_lines_are_cut_between_characters() {
        // `é` is two bytes: the cut at MAX_LINE would fall inside the last one.
        let mut long = vec![b'x'; MAX_LINE - 1];
        long.extend_from_slice("éé".as_bytes());
        let lines = split_pieces(&[&long]);
        assert_eq!(lines[0].0.len(), MAX_LINE - 1);
        assert_eq!(lines[1], ("éé".to_owned(), false));
    }

    #[test]
    fn tail_keeps_last_lines() {
        let mut tail = Tail::new(16);
        tail.push(b"first line\nsecond\nthird\n");
        assert_eq!(tail.lines(5), ["second", "third"]);
        tail.push(b"x\n");
        assert_eq!(tail.lines(1), ["x"]);
    }
}
