//! A writer shared with a small thread that writes out what waits in it every `FLUSH_EVERY`:
//! the display and the log file buffer an agent's stream (thousands of lines a second would
//! otherwise be a `write(2)` each), yet a line is never held back longer than that (an agent
//! that prints one line and then thinks for a minute is still shown, and logged, at once).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The longest a line waits in the buffer.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

pub(super) struct Ticked<T>(Arc<Mutex<T>>);

impl<T: Send + 'static> Ticked<T> {
    /// `inner`, with `flush` called on it every `FLUSH_EVERY` until this is dropped.
    pub(super) fn new(inner: T, flush: fn(&mut T)) -> Self {
        let shared = Arc::new(Mutex::new(inner));
        let weak = Arc::downgrade(&shared);
        // Ends with its owner: the next tick finds nothing to upgrade.
        let _ = std::thread::Builder::new().name("flush".into()).spawn(move || loop {
            std::thread::sleep(FLUSH_EVERY);
            let Some(shared) = weak.upgrade() else { return };
            flush(&mut shared.lock().unwrap_or_else(|e| e.into_inner()));
        });
        Ticked(shared)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
