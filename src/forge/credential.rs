//! eden's own `git push` and `git ls-remote` to a forge get the token from eden's memory: git
//! asks its credential helper, which for that one command is eden itself
//! (`__eden-credential`), which asks the eden process holding the token over a unix socket in
//! a folder only this user can enter. The token is never in an argument, a URL, a file, git's
//! config or git's environment; the person's own helpers are set aside for the command (an
//! empty `credential.helper` first), so none of them is asked or stores it. Only the remote's
//! own protocol and host get an answer, and plain `http` only on this machine's loopback.

use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::redact::Secret;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The hidden subcommand git runs as its credential helper.
pub(crate) const CREDENTIAL_SUBCOMMAND: &str = "__eden-credential";
/// Where the helper finds the socket: a path, not a secret.
const SOCKET_VAR: &str = "EDEN_CREDENTIAL_SOCKET";
/// The most a request may be.
const MAX_REQUEST: u64 = 8 * 1024;

/// The forge's token and the one remote it is for. It is served only while one of eden's git
/// commands to that remote runs (`output`): never while an agent runs, so not even an agent
/// on this machine (sandbox `none`) finds a socket that answers.
#[derive(Clone)]
pub(crate) struct ForRemote {
    token: Secret,
    url: String,
}

impl ForRemote {
    /// The token for `remote_url`; `None` for a remote git reaches over ssh (the person's own
    /// key, not the token); an error for plain http off this machine.
    pub(crate) fn new(token: &Secret, remote_url: &str) -> Result<Option<ForRemote>, Error> {
        if !remote_url.starts_with("http://") && !remote_url.starts_with("https://") {
            return Ok(None);
        }
        if Allowed::of(remote_url).is_none() {
            return Err(Error::forge(format!(
                "the push remote `{}` is plain http: the forge's token would travel in the clear",
                without_userinfo(remote_url)
            ))
            .with_hint("point the push remote at the forge's https URL: `git remote set-url origin https://…`"));
        }
        Ok(Some(ForRemote { token: token.clone(), url: remote_url.to_owned() }))
    }

    /// Run `command` (a git command to the remote) with the token served to it alone.
    pub(crate) fn output(&self, command: ProcessBuilder) -> std::io::Result<crate::process::Output> {
        let held = Held::serve(&self.token, &self.url).map_err(|err| std::io::Error::other(err.message))?;
        held.dress(command).output()
    }
}

/// The token, answering git's helper for as long as this lives.
struct Held {
    dir: PathBuf,
    socket: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Held {
    /// Serve `token` to git's requests for `remote_url`'s protocol and host (one `ForRemote`
    /// checked).
    fn serve(token: &Secret, remote_url: &str) -> Result<Held, Error> {
        let allowed = Allowed::of(remote_url).ok_or_else(|| Error::internal("a remote the token is not for"))?;
        let cannot = |err: std::io::Error| {
            Error::internal("cannot make the folder of eden's credential socket").with_source(err)
        };
        let dir =
            std::env::temp_dir().join(format!("eden-credential-{}", crate::values::random_hex(8).map_err(cannot)?));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(cannot)?;
        let socket = dir.join("socket");
        let listener = UnixListener::bind(&socket).map_err(cannot)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (token, stopped) = (token.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let _ = answer(stream, &allowed, &token);
                }
            }
        });
        Ok(Held { dir, socket, stop, thread: Some(thread) })
    }

    /// `command` (a git command) with eden as its only credential helper.
    fn dress(&self, command: ProcessBuilder) -> ProcessBuilder {
        let eden = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("eden"));
        let helper = format!("!'{}' {CREDENTIAL_SUBCOMMAND}", eden.display().to_string().replace('\'', r"'\''"));
        let command = crate::git::with_config(command, &[("credential.helper", ""), ("credential.helper", &helper)]);
        command
            .env(SOCKET_VAR, &self.socket)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_ASKPASS")
            .env_remove("SSH_ASKPASS")
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept so the thread sees the stop.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `url` without a user or password in it.
pub(crate) fn without_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}/{path}")
        }
        None => url.to_owned(),
    }
}

/// The one protocol and host the token is for.
struct Allowed {
    protocol: String,
    host: String,
}

impl Allowed {
    fn of(remote_url: &str) -> Option<Allowed> {
        let (protocol, rest) = remote_url.split_once("://")?;
        let authority = rest.split('/').next()?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host).to_owned();
        let loopback = ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| host == *name || host.starts_with(&format!("{name}:")));
        match protocol {
            "https" => Some(Allowed { protocol: protocol.to_owned(), host }),
            "http" if loopback => Some(Allowed { protocol: protocol.to_owned(), host }),
            _ => None,
        }
    }

    /// Does git's request (`protocol=…`, `host=…` lines) ask for this remote?
    fn covers(&self, request: &str) -> bool {
        let value = |key: &str| request.lines().find_map(|line| line.strip_prefix(key)?.strip_prefix('='));
        value("protocol") == Some(self.protocol.as_str()) && value("host") == Some(self.host.as_str())
    }
}

fn answer(mut stream: UnixStream, allowed: &Allowed, token: &Secret) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let mut request = String::new();
    (&mut stream).take(MAX_REQUEST).read_to_string(&mut request)?;
    if allowed.covers(&request) && !token.0.contains('\n') {
        write!(stream, "username=x-access-token\npassword={}\n", token.0)?;
    }
    Ok(())
}

/// `__eden-credential get|store|erase`: git's helper. `get` passes git's request to the eden
/// that holds the token and its answer back; the others have nothing to do.
pub(crate) fn run_helper(args: &[std::ffi::OsString]) -> i32 {
    if args.first().is_none_or(|operation| operation != "get") {
        let _ = std::io::copy(&mut std::io::stdin().take(MAX_REQUEST), &mut std::io::sink());
        return 0;
    }
    let Some(socket) = std::env::var_os(SOCKET_VAR) else { return 0 };
    let mut request = Vec::new();
    if std::io::stdin().take(MAX_REQUEST).read_to_end(&mut request).is_err() {
        return 1;
    }
    let asked = UnixStream::connect(socket).and_then(|mut stream| {
        stream.write_all(&request)?;
        stream.shutdown(std::net::Shutdown::Write)?;
        let mut answer = Vec::new();
        stream.take(MAX_REQUEST).read_to_end(&mut answer)?;
        Ok(answer)
    });
    match asked {
        Ok(answer) => i32::from(std::io::stdout().write_all(&answer).is_err()),
        Err(_) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_remote_s_own_host_is_answered() {
        let allowed = Allowed::of("https://github.com/octo/hello.git").unwrap();
        assert!(allowed.covers("protocol=https\nhost=github.com\npath=octo/hello.git\n"));
        assert!(!allowed.covers("protocol=https\nhost=evil.example\n"));
        assert!(!allowed.covers("protocol=http\nhost=github.com\n"));
        assert!(!allowed.covers("host=github.com\n"));
        assert!(Allowed::of("http://github.com/octo/hello.git").is_none(), "a token never goes out in the clear");
        assert!(Allowed::of("http://127.0.0.1:4000/octo/hello.git").is_some_and(|a| a.host == "127.0.0.1:4000"));
        assert!(Allowed::of("git@github.com:octo/hello.git").is_none());
    }

    #[test]
    fn the_socket_answers_and_goes_with_its_holder() {
        let token = Secret("tok-12345".into());
        assert!(ForRemote::new(&token, "git@github.com:o/r.git").unwrap().is_none(), "ssh: the person's key");
        let plain = ForRemote::new(&token, "http://me:pw@forge.example/o/r.git").err().unwrap();
        assert!(
            plain.message.contains("http://forge.example/o/r.git") && !plain.message.contains("pw"),
            "{}",
            plain.message
        );
        let held = Held::serve(&token, "https://github.com/o/r.git").unwrap();
        let ask = |request: &str| {
            let mut stream = UnixStream::connect(&held.socket).unwrap();
            stream.write_all(request.as_bytes()).unwrap();
            stream.shutdown(std::net::Shutdown::Write).unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        assert_eq!(ask("protocol=https\nhost=github.com\n\n"), "username=x-access-token\npassword=tok-12345\n");
        assert_eq!(ask("protocol=https\nhost=gitlab.com\n\n"), "");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&held.dir).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o700);
        let dir = held.dir.clone();
        drop(held);
        assert!(!dir.exists());
    }
}
