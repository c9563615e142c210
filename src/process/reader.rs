//! A command's stdout, read on a thread of its own: the kernel's copy out of the pipe (a
//! quarter of eden's time on a fast agent stream) overlaps with the parsing of what was read
//! before, on another core. Three buffers go round (one being filled, one waiting, one being
//! parsed), made here, so the thread allocates nothing. It ends at the end of the stream, when
//! nobody takes what it read any more, or, within 100 ms, when the reader is dropped (so a pipe
//! some escaped process still holds is closed, as it was when eden read it itself).

use std::io::Read;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The buffers that go round.
const BUFFERS: usize = 3;

/// One read: a buffer and how much of it the read filled (0: the end).
pub(super) type Chunk = std::io::Result<(Vec<u8>, usize)>;

pub(super) struct Reader {
    chunks: tokio::sync::mpsc::Receiver<Chunk>,
    spare: std::sync::mpsc::SyncSender<Vec<u8>>,
    stop: Arc<AtomicBool>,
}

impl Reader {
    /// Reads `stdout` in buffers of `size` bytes.
    pub(super) fn start(stdout: tokio::process::ChildStdout, size: usize) -> std::io::Result<Reader> {
        let file = std::fs::File::from(stdout.into_owned_fd()?);
        let (chunks, receiver) = tokio::sync::mpsc::channel(1);
        let (spare, spares) = std::sync::mpsc::sync_channel::<Vec<u8>>(BUFFERS);
        for _ in 0..BUFFERS {
            let _ = spare.try_send(vec![0u8; size]);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new().name("eden-stdout".into()).spawn(move || {
            let mut file = file;
            while !stopped.load(Ordering::Relaxed) {
                if !readable(&file) {
                    continue;
                }
                let mut buffer = match spares.recv_timeout(std::time::Duration::from_millis(100)) {
                    Ok(buffer) => buffer,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let read = match file.read(&mut buffer) {
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(err) => Err(err),
                    Ok(n) => Ok((buffer, n)),
                };
                let last = !matches!(read, Ok((_, n)) if n > 0);
                if chunks.blocking_send(read).is_err() || last {
                    return;
                }
            }
        })?;
        Ok(Reader { chunks: receiver, spare, stop })
    }

    /// The next read; the end (0 bytes) once the thread is gone.
    pub(super) async fn next(&mut self) -> Chunk {
        self.chunks.recv().await.unwrap_or(Ok((Vec::new(), 0)))
    }

    /// A buffer `next` gave, for the thread to fill again.
    pub(super) fn give_back(&self, buffer: Vec<u8>) {
        let _ = self.spare.try_send(buffer);
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Is there something to read (or the end) within 100 ms?
fn readable(file: &std::fs::File) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::from(100u16)), Ok(n) if n > 0)
}
