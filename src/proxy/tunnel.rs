//! Held keys off this machine: the run's proxies are unix sockets here, which a remote engine's
//! container or a pod cannot be handed. So eden runs `eden __eden-tunnel DIR NAME…` inside the
//! sandbox through the engine's own exec channel (`docker exec -i`, `podman exec -i`, `kubectl
//! exec -i`): it listens on `DIR/NAME` there, where the relay connects as it does locally, and
//! carries every connection over its stdin and stdout, one multiplexed stream, to this machine,
//! where `Tunnel` connects each to the proxy's socket. Nothing listens on the remote host's
//! network and no port is opened toward this machine; the tunnel holds nothing (the keys stay
//! in the proxy, here).
//!
//! The stream is frames: a kind (one byte), a connection's id (four bytes), a length (four
//! bytes) and that many bytes, at most `MAX_FRAME`. What comes from inside is hostile input: an
//! over-long frame ends the tunnel, an unknown id is ignored, and at most `MAX_CONNECTIONS` are
//! open at once (past that a connection is ended unanswered).

// A helper process: it talks on its own stderr, which eden reads when it fails to start.
#![allow(clippy::print_stderr)]

use crate::error::Error;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

pub(crate) const TUNNEL_SUBCOMMAND: &str = "__eden-tunnel";

/// The most bytes one frame carries.
const MAX_FRAME: usize = 64 * 1024;

/// The most connections open through one tunnel at once.
const MAX_CONNECTIONS: usize = 64;

/// Frames in flight toward one connection before the stream waits for it.
const QUEUED: usize = 16;

/// The tunnel's sockets are listening (inside to here, first); its payload is the tunnel's pid
/// inside, in decimal (so a sweep of what commands left behind spares it).
const READY: u8 = 0;
/// A connection was made inside; its payload is the socket's index.
const OPEN: u8 = 1;
const DATA: u8 = 2;
/// The sender will send no more on this connection.
const EOF: u8 = 3;

/// One frame, as read.
struct Frame {
    kind: u8,
    id: u32,
    payload: Vec<u8>,
}

fn write_frame(out: &Mutex<Box<dyn Write + Send>>, kind: u8, id: u32, payload: &[u8]) -> std::io::Result<()> {
    let mut head = [0u8; 9];
    head[0] = kind;
    head[1..5].copy_from_slice(&id.to_be_bytes());
    head[5..9].copy_from_slice(&u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes());
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    out.write_all(&head)?;
    out.write_all(payload)?;
    out.flush()
}

/// The next frame; `None` when the stream ended between frames.
fn read_frame(input: &mut impl Read) -> std::io::Result<Option<Frame>> {
    let mut head = [0u8; 9];
    match input.read_exact(&mut head) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(err) => return Err(err),
    }
    let id = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    let len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!("a frame of {len} bytes (at most {MAX_FRAME})")));
    }
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload)?;
    Ok(Some(Frame { kind: head[0], id, payload }))
}

/// One end of the stream: the connections on this side, each with a queue toward it.
struct Mux {
    out: Mutex<Box<dyn Write + Send>>,
    open: Mutex<HashMap<u32, SyncSender<Vec<u8>>>>,
}

impl Mux {
    fn new(out: Box<dyn Write + Send>) -> Arc<Mux> {
        Arc::new(Mux { out: Mutex::new(out), open: Mutex::new(HashMap::new()) })
    }

    fn open_count(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Carry `stream` as connection `id`: what it sends goes out as frames, what comes for it
    /// is written to it, each direction on a thread of its own. `announce`: the `OPEN` frame
    /// that tells the other end, sent once the connection can take what comes for it.
    fn attach(self: &Arc<Mux>, id: u32, stream: UnixStream, announce: Option<&[u8]>) -> std::io::Result<()> {
        let (mut reading, mut writing) = (stream.try_clone()?, stream);
        let (sender, queue): (SyncSender<Vec<u8>>, Receiver<Vec<u8>>) = sync_channel(QUEUED);
        self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(id, sender);
        if let Some(payload) = announce {
            write_frame(&self.out, OPEN, id, payload)?;
        }
        std::thread::spawn(move || {
            for chunk in queue {
                if writing.write_all(&chunk).is_err() {
                    break;
                }
            }
            let _ = writing.shutdown(std::net::Shutdown::Write);
        });
        let mux = self.clone();
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; MAX_FRAME];
            loop {
                match reading.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if write_frame(&mux.out, DATA, id, &buffer[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = write_frame(&mux.out, EOF, id, &[]);
            let _ = reading.shutdown(std::net::Shutdown::Read);
        });
        Ok(())
    }

    /// A frame for a connection of this side: its data queued for it, or its end.
    fn deliver(&self, frame: Frame) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        match frame.kind {
            DATA => {
                let Some(sender) = open.get(&frame.id).cloned() else { return };
                drop(open);
                // Waits while the connection's queue is full: the stream is as slow as its
                // slowest reader, and never holds more than `QUEUED` frames for one.
                if sender.send(frame.payload).is_err() {
                    self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&frame.id);
                }
            }
            EOF => {
                open.remove(&frame.id);
            }
            _ => {}
        }
    }
}

/// This machine's end of a tunnel: the exec that runs `eden __eden-tunnel` inside the sandbox,
/// and the proxies' sockets its connections go to. Dropping it ends the exec, and with it the
/// tunnel inside.
pub(crate) struct Tunnel {
    child: std::process::Child,
    /// The tunnel's pid inside, as it said.
    pid_inside: u32,
}

impl Tunnel {
    /// Start `exec` (the engine's client running the tunnel inside, stdin and stdout piped) and
    /// wait until its sockets listen, for `ready_within` at most. Connections for the socket
    /// at index `i` inside go to `sockets[i]`.
    pub(crate) fn open(
        mut child: std::process::Child,
        sockets: Vec<PathBuf>,
        ready_within: std::time::Duration,
    ) -> Result<Tunnel, Error> {
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::internal("the tunnel's stdin and stdout are not piped"));
        };
        let said = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            let said = said.clone();
            // Read to its end (a client that talks must never block on us), the first 4 KiB kept.
            std::thread::spawn(move || {
                let mut lines = std::io::BufReader::new(stderr);
                let mut line = String::new();
                while matches!(std::io::BufRead::read_line(&mut lines, &mut line), Ok(n) if n > 0) {
                    let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
                    if said.len() < 4096 {
                        said.push_str(&line);
                    }
                    line.clear();
                }
            });
        }
        let is_ready = match carry_here(Box::new(stdin), stdout, sockets) {
            Ok(is_ready) => is_ready,
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::internal(format!("cannot start the tunnel's reader: {err}")));
            }
        };
        match is_ready.recv_timeout(ready_within) {
            Ok(pid_inside) => Ok(Tunnel { child, pid_inside }),
            Err(_) => {
                // Ended (its client's last words are in), or given up on.
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(std::time::Duration::from_millis(50));
                let said = said.lock().unwrap_or_else(|e| e.into_inner()).trim().to_owned();
                let said =
                    if said.is_empty() { format!("it did not start within {}s", ready_within.as_secs()) } else { said };
                Err(Error::sandbox(said))
            }
        }
    }
}

impl Tunnel {
    /// Its pid inside the sandbox.
    pub(crate) fn pid_inside(&self) -> u32 {
        self.pid_inside
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This machine's end of the stream (`to_inside`, `from_inside`): a thread that reads it until
/// it ends or breaks the rules, connecting what opens inside to `sockets`. The receiver gets
/// the tunnel's pid inside once it says it is ready.
fn carry_here(
    to_inside: Box<dyn Write + Send>,
    mut from_inside: impl Read + Send + 'static,
    sockets: Vec<PathBuf>,
) -> std::io::Result<Receiver<u32>> {
    let mux = Mux::new(to_inside);
    let (ready, is_ready) = sync_channel::<u32>(1);
    std::thread::Builder::new().name("eden-tunnel".into()).spawn(move || {
        let mut ready = Some(ready);
        while let Ok(Some(frame)) = read_frame(&mut from_inside) {
            match frame.kind {
                READY => {
                    let pid = std::str::from_utf8(&frame.payload).ok().and_then(|pid| pid.parse().ok());
                    if let (Some(ready), Some(pid)) = (ready.take(), pid) {
                        let _ = ready.send(pid);
                    }
                }
                OPEN => connect(&mux, frame, &sockets),
                _ => mux.deliver(frame),
            }
        }
    })?;
    Ok(is_ready)
}

/// A connection made inside: one to the proxy it names, here, or its end at once.
fn connect(mux: &Arc<Mux>, frame: Frame, sockets: &[PathBuf]) {
    let socket = frame.payload.first().and_then(|index| sockets.get(usize::from(*index)));
    let known = mux.open.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&frame.id);
    let stream = match socket {
        Some(socket) if !known && mux.open_count() < MAX_CONNECTIONS => UnixStream::connect(socket).ok(),
        _ => None,
    };
    let attached = match stream {
        Some(stream) => mux.attach(frame.id, stream, None).is_ok(),
        None => known,
    };
    if !attached {
        let _ = write_frame(&mux.out, EOF, frame.id, &[]);
    }
}

/// `eden __eden-tunnel DIR NAME…`, inside the sandbox: listen on each `DIR/NAME`, say so, and
/// carry each connection over stdin and stdout until stdin ends.
pub(crate) fn run(args: &[std::ffi::OsString]) -> i32 {
    let Some((dir, names)) = args.split_first().filter(|(_, names)| !names.is_empty()) else {
        eprintln!("eden: usage: {TUNNEL_SUBCOMMAND} DIR NAME...");
        return 2;
    };
    let dir = Path::new(dir);
    let mut listeners = Vec::new();
    for name in names {
        match listen(&dir.join(name)) {
            Ok(listener) => listeners.push(listener),
            Err(err) => {
                eprintln!("eden: the tunnel cannot listen on `{}`: {err}", dir.join(name).display());
                return 1;
            }
        }
    }
    let served = serve_inside(listeners, Box::new(std::io::stdout()), std::io::stdin().lock());
    for name in names {
        let _ = std::fs::remove_file(dir.join(name));
    }
    i32::from(served.is_err())
}

/// The sandbox's end: say it is ready, then carry each connection to `listeners` over the
/// stream (`to_here`, `from_here`) until the stream ends.
fn serve_inside(
    listeners: Vec<UnixListener>,
    to_here: Box<dyn Write + Send>,
    mut from_here: impl Read,
) -> std::io::Result<()> {
    let mux = Mux::new(to_here);
    write_frame(&mux.out, READY, 0, std::process::id().to_string().as_bytes())?;
    let next = Arc::new(std::sync::atomic::AtomicU32::new(1));
    for (index, listener) in listeners.into_iter().enumerate() {
        let (mux, next) = (mux.clone(), next.clone());
        let index = u8::try_from(index).unwrap_or(u8::MAX);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let id = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if mux.attach(id, stream, Some(&[index])).is_err() {
                    return;
                }
            }
        });
    }
    while let Ok(Some(frame)) = read_frame(&mut from_here) {
        mux.deliver(frame);
    }
    Ok(())
}

/// A socket anyone in the sandbox may connect to (the agent's relay runs as the agent's user).
fn listen(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A proxy stand-in here that answers each connection with what it read, upper-cased,
    /// once the connection's sender is done.
    fn shouting_proxy(path: &Path) {
        let listener = UnixListener::bind(path).unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let mut read = Vec::new();
                    let _ = stream.read_to_end(&mut read);
                    let _ = stream.write_all(&read.to_ascii_uppercase());
                });
            }
        });
    }

    /// Both ends, joined by socket pairs as an exec's stdin and stdout would join them; the
    /// socket inside is `inside/0.sock`, the proxy's `here/0.sock`.
    fn both_ends(dir: &Path) -> (PathBuf, Receiver<u32>) {
        let (here, inside) = (dir.join("here"), dir.join("inside"));
        std::fs::create_dir_all(&here).unwrap();
        std::fs::create_dir_all(&inside).unwrap();
        shouting_proxy(&here.join("0.sock"));
        let (down_here, down_inside) = UnixStream::pair().unwrap();
        let (up_inside, up_here) = UnixStream::pair().unwrap();
        let listener = listen(&inside.join("0.sock")).unwrap();
        std::thread::spawn(move || serve_inside(vec![listener], Box::new(up_inside), down_inside));
        let ready = carry_here(Box::new(down_here), up_here, vec![here.join("0.sock")]).unwrap();
        (inside.join("0.sock"), ready)
    }

    #[test]
    fn connections_inside_reach_the_proxy_here_and_back() {
        let dir = tempfile::tempdir().unwrap();
        let (socket, ready) = both_ends(dir.path());
        assert_eq!(ready.recv_timeout(Duration::from_secs(5)).unwrap(), std::process::id());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o666);
        // Several at once, one bigger than a frame, each answered on its own connection.
        let workers: Vec<_> = (0..8)
            .map(|n| {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    let body = format!("request {n} ").repeat(if n == 0 { 20_000 } else { 1 });
                    let mut stream = UnixStream::connect(&socket).unwrap();
                    stream.write_all(body.as_bytes()).unwrap();
                    stream.shutdown(std::net::Shutdown::Write).unwrap();
                    let mut answer = String::new();
                    stream.read_to_string(&mut answer).unwrap();
                    assert_eq!(answer, body.to_ascii_uppercase());
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
    }

    /// What comes from inside is hostile: an unknown socket's connection, and one past the
    /// cap, are ended at once; an over-long frame ends the tunnel.
    #[test]
    fn the_inside_cannot_overreach() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().join("0.sock");
        shouting_proxy(&here);
        let (mut to_here, from_inside) = UnixStream::pair().unwrap();
        let (to_inside, mut reading) = UnixStream::pair().unwrap();
        let ready = carry_here(Box::new(to_inside), from_inside, vec![here]).unwrap();
        let out: Mutex<Box<dyn Write + Send>> = Mutex::new(Box::new(to_here.try_clone().unwrap()));
        write_frame(&out, READY, 0, b"42").unwrap();
        assert_eq!(ready.recv_timeout(Duration::from_secs(5)).unwrap(), 42);
        // Socket 7 does not exist here: ended.
        write_frame(&out, OPEN, 1, &[7]).unwrap();
        let frame = read_frame(&mut reading).unwrap().unwrap();
        assert_eq!((frame.kind, frame.id), (EOF, 1));
        // The cap: the first MAX_CONNECTIONS are taken, the next is ended.
        for id in 100..100 + u32::try_from(MAX_CONNECTIONS).unwrap() {
            write_frame(&out, OPEN, id, &[0]).unwrap();
        }
        write_frame(&out, OPEN, 999, &[0]).unwrap();
        let frame = read_frame(&mut reading).unwrap().unwrap();
        assert_eq!((frame.kind, frame.id), (EOF, 999));
        // A frame over the limit: this end stops reading, and drops its end of the stream.
        let mut long = vec![DATA, 0, 0, 0, 100];
        long.extend_from_slice(&u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes());
        to_here.write_all(&long).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        write_frame(&out, OPEN, 2000, &[0]).unwrap_or(());
        to_here.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        reading.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let after = read_frame(&mut reading);
        assert!(!matches!(after, Ok(Some(Frame { id: 2000, .. }))), "it still answered");
    }

    #[test]
    fn frames_round_trip_and_an_over_long_one_is_refused() {
        let buffer: Arc<Mutex<Vec<u8>>> = Arc::default();
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out: Mutex<Box<dyn Write + Send>> = Mutex::new(Box::new(Shared(buffer.clone())));
        write_frame(&out, DATA, 7, b"hello").unwrap();
        write_frame(&out, EOF, 7, &[]).unwrap();
        let bytes = buffer.lock().unwrap().clone();
        let mut reading = bytes.as_slice();
        let frame = read_frame(&mut reading).unwrap().unwrap();
        assert_eq!((frame.kind, frame.id, frame.payload.as_slice()), (DATA, 7, &b"hello"[..]));
        let frame = read_frame(&mut reading).unwrap().unwrap();
        assert_eq!((frame.kind, frame.id, frame.payload.len()), (EOF, 7, 0));
        assert!(read_frame(&mut reading).unwrap().is_none());

        let mut long = vec![DATA, 0, 0, 0, 1];
        long.extend_from_slice(&u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes());
        assert!(read_frame(&mut long.as_slice()).is_err());
    }
}
