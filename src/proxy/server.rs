//! The proxy's server: a socket of the run's own, each connection read, checked and
//! forwarded (`forward`) on a thread of its own, at most `MAX_CONNECTIONS` at once.

use super::forward;
use super::ledger::Ledger;
use super::upstream::{self, Upstream};
use super::{Audit, HeldKey};
use crate::error::Error;
use std::io::BufReader;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The most requests one proxy serves at once.
const MAX_CONNECTIONS: usize = 64;

/// A running proxy for one upstream. Dropping it stops it: the socket closed and removed.
pub struct Proxy {
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    ledger: Arc<Ledger>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Listens on `socket` (made readable and writable by the run's user only) for requests
    /// to `upstream`.
    pub fn start(socket: &Path, upstream: Upstream, keys: Vec<HeldKey>) -> Result<Proxy, Error> {
        let tls = upstream::client_config(upstream.tls)?;
        Proxy::start_with(socket, upstream, keys, tls)
    }

    /// The same, trusting what `tls` trusts.
    pub fn start_with(
        socket: &Path,
        upstream: Upstream,
        keys: Vec<HeldKey>,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<Proxy, Error> {
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)
            .map_err(|err| Error::sandbox(format!("cannot listen on `{}`: {err}", socket.display())))?;
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
        let stop = Arc::new(AtomicBool::new(false));
        let ledger = Arc::new(Ledger::default());
        let (stopped, noted, target) = (stop.clone(), ledger.clone(), upstream.clone());
        let keys = Arc::new(keys);
        let acceptor = std::thread::Builder::new()
            .name("eden-proxy".into())
            .spawn(move || {
                let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                while let Some(connection) = next_connection(&listener, &stopped) {
                    // What is inside cannot exhaust eden's threads: past the cap, a connection is
                    // closed unanswered.
                    if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let (keys, tls, target, noted, done) =
                        (keys.clone(), tls.clone(), target.clone(), noted.clone(), open.clone());
                    let spawned = std::thread::Builder::new().name("eden-proxy-request".into()).spawn(move || {
                        serve(connection, &target, &keys, &tls, &noted);
                        done.fetch_sub(1, Ordering::SeqCst);
                    });
                    if spawned.is_err() {
                        open.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
            .map_err(|err| Error::internal(format!("cannot start the proxy: {err}")))?;
        Ok(Proxy { socket: socket.to_owned(), stop, ledger, acceptor: Some(acceptor) })
    }

    /// The requests answered since the last call.
    pub fn drain(&self) -> Vec<Audit> {
        self.ledger.drain()
    }

    /// Is a request in flight (not yet told as such)?
    pub fn busy(&self) -> bool {
        self.ledger.busy()
    }

    /// The requests still in flight, each told once (`Ledger::in_flight`).
    pub fn in_flight(&self) -> Vec<Audit> {
        self.ledger.in_flight()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// The next connection, or `None` once `stop` is set (looked at every 100 ms).
fn next_connection(listener: &UnixListener, stop: &AtomicBool) -> Option<UnixStream> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [PollFd::new(std::os::fd::AsFd::as_fd(listener), PollFlags::POLLIN)];
        if !matches!(poll(&mut fds, PollTimeout::from(100u16)), Ok(n) if n > 0) {
            continue;
        }
        if let Ok((connection, _)) = listener.accept() {
            return Some(connection);
        }
    }
    None
}

fn serve(
    connection: UnixStream,
    upstream: &Upstream,
    keys: &[HeldKey],
    tls: &Arc<rustls::ClientConfig>,
    ledger: &Ledger,
) {
    let _ = connection.set_read_timeout(Some(std::time::Duration::from_secs(600)));
    let mut client = BufReader::new(connection);
    match forward::read_head(&mut client) {
        Ok(request) => {
            let audit = forward::audit_of(&request, upstream);
            let id = ledger.begin(audit.clone());
            ledger.end(Some(id), forward::forward(request, audit, &mut client, upstream, keys, tls));
        }
        Err(refused) => {
            forward::refuse(client.get_mut(), &refused.why);
            // The path as it would have gone upstream, under the base URL's own.
            let path = refused.path.map_or_else(|| "-".to_owned(), |path| format!("{}{path}", upstream.prefix));
            let method: String = refused.method.as_deref().unwrap_or("-").chars().take(16).collect();
            let mut audit = Audit::new(&method, &upstream.authority(), &path);
            audit.status = Some(400);
            audit.refused = Some(refused.why);
            ledger.end(None, audit);
        }
    }
}
