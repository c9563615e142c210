//! The requests a proxy served, for the run's log: each answered one once, as soon as it is
//! asked for (the run's log tells them as they happen), and those still in flight when the
//! agent was stopped, told then as such and not again when they end.

use super::Audit;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Default)]
pub(crate) struct Ledger(Mutex<Entries>);

#[derive(Default)]
struct Entries {
    done: Vec<Audit>,
    in_flight: BTreeMap<u64, Flying>,
    next: u64,
}

struct Flying {
    audit: Audit,
    started: Instant,
    /// Told as in flight: its end is not told again.
    told: bool,
}

impl Ledger {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request on its way (its head read): its number, for `end`.
    pub(super) fn begin(&self, audit: Audit) -> u64 {
        let mut entries = self.entries();
        let id = entries.next;
        entries.next += 1;
        entries.in_flight.insert(id, Flying { audit, started: Instant::now(), told: false });
        id
    }

    /// A request answered (or refused): the one `begin` numbered, if it was begun.
    pub(super) fn end(&self, id: Option<u64>, audit: Audit) {
        let mut entries = self.entries();
        let told = id.and_then(|id| entries.in_flight.remove(&id)).is_some_and(|flying| flying.told);
        if !told {
            entries.done.push(audit);
        }
    }

    /// Is a request in flight that was not told so yet?
    pub(crate) fn busy(&self) -> bool {
        self.entries().in_flight.values().any(|flying| !flying.told)
    }

    /// The requests answered since the last call.
    pub(crate) fn drain(&self) -> Vec<Audit> {
        std::mem::take(&mut self.entries().done)
    }

    /// The requests still in flight, as far as they got (no status yet), told once: their end
    /// is not told again.
    pub(crate) fn in_flight(&self) -> Vec<Audit> {
        let mut entries = self.entries();
        let untold = entries.in_flight.values_mut().filter(|flying| !flying.told);
        untold
            .map(|flying| {
                flying.told = true;
                let mut audit = flying.audit.clone();
                audit.duration_ms = flying.started.elapsed().as_millis() as u64;
                audit.in_flight = true;
                audit
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answered request is told once; one in flight is told as such, and its end is not.
    #[test]
    fn each_request_is_told_once() {
        let ledger = Ledger::default();
        let a = ledger.begin(Audit::new("POST", "h", "/a"));
        let b = ledger.begin(Audit::new("POST", "h", "/b"));
        ledger.end(Some(a), Audit::new("POST", "h", "/a"));
        assert_eq!(ledger.drain().iter().map(|audit| audit.path.as_str()).collect::<Vec<_>>(), ["/a"]);
        assert!(ledger.drain().is_empty());
        assert!(ledger.busy());
        let flying = ledger.in_flight();
        assert_eq!((flying.len(), flying[0].path.as_str(), flying[0].in_flight), (1, "/b", true));
        assert!(ledger.in_flight().is_empty(), "told once");
        assert!(!ledger.busy(), "what was told is not waited for");
        ledger.end(Some(b), Audit::new("POST", "h", "/b"));
        assert!(ledger.drain().is_empty(), "its end is not told again");
        ledger.end(None, Audit::new("GET", "h", "/refused"));
        assert_eq!(ledger.drain().len(), 1);
    }
}
