//! Finding completion signals anywhere in the agent's text. A signal may arrive split across
//! streamed fragments, so the last bytes of a fragment are carried into the next scan.

use memchr::memmem::Finder;

pub(crate) struct CompletionScanner {
    signals: Vec<String>,
    finders: Vec<Finder<'static>>,
    /// The end of the previous fragment when it continues into the next one.
    carry: Vec<u8>,
    longest: usize,
}

impl CompletionScanner {
    pub(crate) fn new(signals: &[String]) -> Self {
        let finders = signals.iter().map(|s| Finder::new(s.as_bytes()).into_owned()).collect();
        let longest = signals.iter().map(String::len).max().unwrap_or(0);
        CompletionScanner { signals: signals.to_vec(), finders, carry: Vec::new(), longest }
    }

    /// Scan a piece of text; returns the signal found, if any. `continues` says the next piece
    /// continues this one (so a signal may straddle them).
    pub(crate) fn scan(&mut self, text: &str, continues: bool) -> Option<&str> {
        let bytes = text.as_bytes();
        let keep = self.longest.saturating_sub(1);
        let mut found = self.finders.iter().position(|finder| finder.find(bytes).is_some());
        if found.is_none() && !self.carry.is_empty() {
            // A signal straddling the seam lies within the carry plus this text's start.
            let carried = self.carry.len();
            self.carry.extend_from_slice(&bytes[..bytes.len().min(keep)]);
            found = self.finders.iter().position(|finder| finder.find(&self.carry).is_some());
            self.carry.truncate(carried);
        }
        if continues && found.is_none() {
            if bytes.len() >= keep {
                self.carry.clear();
                self.carry.extend_from_slice(&bytes[bytes.len() - keep..]);
            } else {
                self.carry.extend_from_slice(bytes);
                let excess = self.carry.len().saturating_sub(keep);
                self.carry.drain(..excess);
            }
        } else {
            self.carry.clear();
        }
        found.map(|index| self.signals[index].as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_signals_within_and_across_fragments() {
        let mut scanner = CompletionScanner::new(&["<done/>".to_owned(), "FINISHED".to_owned()]);
        assert_eq!(scanner.scan("all FINISHED now", false), Some("FINISHED"));
        assert_eq!(scanner.scan("work <do", true), None);
        assert_eq!(scanner.scan("ne/> more", false), Some("<done/>"));
        // A complete line does not join with the next.
        assert_eq!(scanner.scan("<do", false), None);
        assert_eq!(scanner.scan("ne/>", false), None);
        // Across three fragments.
        assert_eq!(scanner.scan("FIN", true), None);
        assert_eq!(scanner.scan("ISH", true), None);
        assert_eq!(scanner.scan("ED", false), Some("FINISHED"));
    }
}
