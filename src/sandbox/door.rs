//! A door into a warm pool member on a local engine. An engine's `exec` costs 65–230 ms here
//! (its client, its daemon, the runtime entering the namespaces); a claimed member's set-up and
//! its agent's first command would pay that twice before the agent's first byte. So a member is
//! made with eden itself waiting inside (`eden __eden-door SOCKET`, started by one `exec` as
//! the run's user while the member is made), listening on a unix socket in a folder of this
//! machine's mounted in. A call through the door (`eden __eden-door-call SPEC`, spawned where
//! the engine's `exec` would be) costs a connection and a fork.
//!
//! The door is an engine's `exec` for one user, and nothing more:
//! - it runs commands only as its own user, the run's, which the agent's commands run as too:
//!   it gives nothing the agent has not got. Root's commands stay the engine's execs.
//! - it answers only callers outside the member's pid namespace (`SO_PEERCRED`: a process
//!   inside has a pid there, one outside has none): a process in the sandbox cannot use it.
//! - eden calls it only while the process listening is the one that answered at the claim,
//!   before any command of the run's ran (its pid and start time on this machine): a socket
//!   put in its place is never spoken to. The call then goes through the engine's `exec`, as
//!   it does whenever the door is gone.
//! - what comes back is what an engine's `exec` gives: bytes from the sandbox, read as such
//!   (frames of a bounded size).
//!
//! The wire: a call is a length (four bytes) and a JSON `Request`, then the command's stdin
//! until the caller shuts its side; the door answers with frames, a kind (one byte), a length
//! (four bytes) and that many bytes: the command's stdout and stderr as they come, then its
//! exit code.

// Helper processes: they talk on their own stderr, as an engine's `exec` would.
#![allow(clippy::print_stderr)]

use crate::process::ProcessBuilder;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Inside a member: `__eden-door SOCKET`.
pub(crate) const DOOR_SUBCOMMAND: &str = "__eden-door";
/// On this machine: `__eden-door-call SPEC` (a JSON `Call`).
pub(crate) const DOOR_CALL_SUBCOMMAND: &str = "__eden-door-call";
/// Where a member has its door's folder (this machine's, mounted in).
pub(crate) const DOOR_INSIDE: &str = "/opt/eden/door";
/// The socket's name in the door's folder.
pub(crate) const SOCKET: &str = "door";

/// The most bytes one frame (or a request) carries.
const MAX_FRAME: usize = 1 << 20;
const HELLO: u8 = b'h';
const STDOUT: u8 = b'1';
const STDERR: u8 = b'2';
const EXIT: u8 = b'x';
/// What an engine's client exits with when the engine, not the command, failed.
const DOOR_FAILED: i32 = 125;

/// A call, as the caller sends it. An empty `argv` asks the door who it is (its pid inside).
#[derive(Serialize, Deserialize)]
struct Request {
    user: String,
    cwd: Option<String>,
    env: Vec<(String, String)>,
    argv: Vec<String>,
    stdin: bool,
}

/// A door that answered: where it listens, and who it is.
#[derive(Debug, Clone)]
pub(crate) struct Door {
    socket: PathBuf,
    /// Its pid and start time on this machine.
    peer: (i32, u64),
    /// Its pid inside the sandbox (sweeps spare it).
    pub(crate) inside: u32,
}

/// `__eden-door-call`'s one argument.
#[derive(Serialize, Deserialize)]
struct Call {
    socket: PathBuf,
    peer: (i32, u64),
    user: String,
    cwd: Option<String>,
    /// The variables passed, by name: their values are in the caller's environment.
    env: Vec<String>,
    stdin: bool,
    argv: Vec<String>,
    /// The engine's `exec` of the same command, run instead when the door is not there.
    fallback: Vec<String>,
}

impl Door {
    /// The door listening at `socket`, asked who it is; `None` when nothing answers as a door.
    pub(crate) fn open(socket: &Path) -> Option<Door> {
        let (mut stream, peer) = connect(socket, None)?;
        let hello = Request { user: String::new(), cwd: None, env: Vec::new(), argv: Vec::new(), stdin: false };
        send_request(&mut stream, &hello).ok()?;
        let _ = stream.shutdown(std::net::Shutdown::Write);
        match read_frame(&mut stream).ok()? {
            Some((HELLO, pid)) => {
                let inside = std::str::from_utf8(&pid).ok()?.parse().ok()?;
                Some(Door { socket: socket.to_owned(), peer, inside })
            }
            _ => None,
        }
    }

    /// `engine_exec` (an engine's `exec` of `argv` as `user` in `cwd`, its variables passed by
    /// name) as a call through this door; unchanged when a word of it is not UTF-8.
    pub(crate) fn call(
        &self,
        engine_exec: ProcessBuilder,
        user: &str,
        cwd: Option<&Path>,
        argv: &[&std::ffi::OsStr],
        stdin: bool,
    ) -> ProcessBuilder {
        let text = |word: &std::ffi::OsStr| word.to_str().map(str::to_owned);
        let env: Option<Vec<String>> =
            engine_exec.get_env().iter().filter(|(_, value)| value.is_some()).map(|(key, _)| text(key)).collect();
        let argv: Option<Vec<String>> = argv.iter().map(|word| text(word)).collect();
        let fallback: Option<Vec<String>> = std::iter::once(engine_exec.program())
            .chain(engine_exec.get_args().iter().map(|arg| arg.as_os_str()))
            .map(text)
            .collect();
        let cwd = match cwd {
            Some(cwd) => cwd.to_str().map(|cwd| Some(cwd.to_owned())),
            None => Some(None),
        };
        let (Some(env), Some(argv), Some(fallback), Some(cwd), Ok(eden)) =
            (env, argv, fallback, cwd, std::env::current_exe())
        else {
            return engine_exec;
        };
        let call = Call {
            socket: self.socket.clone(),
            peer: self.peer,
            user: user.to_owned(),
            cwd,
            env,
            stdin,
            argv,
            fallback,
        };
        match serde_json::to_string(&call) {
            Ok(spec) => engine_exec.with_program(eden, [DOOR_CALL_SUBCOMMAND.to_owned(), spec]),
            Err(_) => engine_exec,
        }
    }
}

/// A connection to the door at `socket` whose listener is `expected` (pid and start time on
/// this machine), or any listener this machine can see when `None`; its pid and start time.
fn connect(socket: &Path, expected: Option<(i32, u64)>) -> Option<(UnixStream, (i32, u64))> {
    let stream = connect_path(socket).ok()?;
    let peer = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    let pid = peer.pid();
    // Not visible from here (pid 0): there is nothing to tell it from another by.
    if pid <= 0 {
        return None;
    }
    let found = (pid, started(pid)?);
    (expected.is_none_or(|expected| expected == found)).then_some((stream, found))
}

/// A socket's path can be longer than a socket address holds: then through its folder's
/// descriptor (`/proc/self/fd/N/NAME`).
fn connect_path(socket: &Path) -> std::io::Result<UnixStream> {
    // The folder is the sandbox's to write: a link put where the socket was is never followed
    // (to this machine's sockets), and anything but a socket is not a door.
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::symlink_metadata(socket)?.file_type().is_socket() {
        return Err(std::io::Error::other("not a socket"));
    }
    if socket.as_os_str().len() < 100 {
        return UnixStream::connect(socket);
    }
    let (Some(folder), Some(name)) = (socket.parent(), socket.file_name()) else {
        return UnixStream::connect(socket);
    };
    let folder = std::fs::File::open(folder)?;
    let short = Path::new("/proc/self/fd").join(std::os::fd::AsRawFd::as_raw_fd(&folder).to_string()).join(name);
    UnixStream::connect(short)
}

/// A process's start time (clock ticks after boot), which a pid reused later does not share.
fn started(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name, in parentheses (which may hold anything): the 20th field is it.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

fn send_request(stream: &mut UnixStream, request: &Request) -> std::io::Result<()> {
    let json = serde_json::to_vec(request).map_err(std::io::Error::other)?;
    let len = u32::try_from(json.len()).map_err(std::io::Error::other)?;
    stream.write_all(&len.to_be_bytes())?;
    stream.write_all(&json)
}

fn send_frame(stream: &Mutex<UnixStream>, kind: u8, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(std::io::Error::other)?;
    let mut stream = stream.lock().map_err(|_| std::io::Error::other("a writer panicked"))?;
    let mut frame = Vec::with_capacity(bytes.len() + 5);
    frame.push(kind);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(bytes);
    stream.write_all(&frame)
}

/// A length and that many bytes, at most `MAX_FRAME`.
fn read_sized(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!("a frame of {len} bytes (at most {MAX_FRAME})")));
    }
    let mut bytes = vec![0u8; len];
    input.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// The next frame; `None` at the end of the stream.
fn read_frame(input: &mut impl Read) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut kind = [0u8; 1];
    match input.read(&mut kind)? {
        0 => Ok(None),
        _ => Ok(Some((kind[0], read_sized(input)?))),
    }
}

/// `__eden-door-call SPEC`: the command run through the door, this process's stdin, stdout and
/// stderr its; when the door is not the one that answered at the claim (or not there), the
/// engine's `exec` instead, which this process becomes. Returns the command's exit code.
pub(crate) fn run_call(args: &[std::ffi::OsString]) -> i32 {
    let Some(call) =
        args.first().and_then(|spec| spec.to_str()).and_then(|spec| serde_json::from_str::<Call>(spec).ok())
    else {
        eprintln!("eden: {DOOR_CALL_SUBCOMMAND} takes one JSON argument");
        return DOOR_FAILED;
    };
    // Values that are not UTF-8 cannot cross in JSON: the engine's `exec` carries them.
    let env: Option<Vec<(String, String)>> = call
        .env
        .iter()
        .filter_map(|name| Some(std::env::var_os(name)?.into_string().map(|value| (name.clone(), value)).ok()))
        .collect();
    match (env, connect(&call.socket, Some(call.peer))) {
        (Some(env), Some((stream, _))) => relay(stream, &call, env),
        _ => fall_back(&call.fallback),
    }
}

/// The engine's `exec`, in this process's place (its stdin, stdout, stderr and environment).
fn fall_back(fallback: &[String]) -> i32 {
    let Some((program, args)) = fallback.split_first() else { return DOOR_FAILED };
    let err = ProcessBuilder::new(program).args(args).become_it();
    eprintln!("eden: cannot run `{program}`: {err}");
    DOOR_FAILED
}

/// The call sent, stdin carried in, stdout and stderr carried out; the command's exit code.
fn relay(mut stream: UnixStream, call: &Call, env: Vec<(String, String)>) -> i32 {
    let request =
        Request { user: call.user.clone(), cwd: call.cwd.clone(), env, argv: call.argv.clone(), stdin: call.stdin };
    if let Err(err) = send_request(&mut stream, &request) {
        eprintln!("eden: the sandbox's door did not take the command: {err}");
        return DOOR_FAILED;
    }
    match (call.stdin, stream.try_clone()) {
        (true, Ok(mut input)) => {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut input);
                let _ = input.shutdown(std::net::Shutdown::Write);
            });
        }
        _ => {
            let _ = stream.shutdown(std::net::Shutdown::Write);
        }
    }
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    loop {
        match read_frame(&mut stream) {
            Ok(Some((STDOUT, bytes))) => {
                let _ = stdout.write_all(&bytes).and_then(|()| stdout.flush());
            }
            Ok(Some((STDERR, bytes))) => {
                let _ = stderr.write_all(&bytes).and_then(|()| stderr.flush());
            }
            Ok(Some((EXIT, code))) => {
                return std::str::from_utf8(&code).ok().and_then(|code| code.parse().ok()).unwrap_or(DOOR_FAILED);
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                eprintln!("eden: the sandbox's door closed before its command ended");
                return DOOR_FAILED;
            }
        }
    }
}

/// `__eden-door SOCKET`, inside a member: listens at SOCKET and runs each call. Returns only
/// when it cannot listen.
pub(crate) fn run_serve(args: &[std::ffi::OsString]) -> i32 {
    let [socket] = args else {
        eprintln!("eden: {DOOR_SUBCOMMAND} takes a socket's path");
        return 2;
    };
    let _ = std::fs::remove_file(socket);
    let listener = match UnixListener::bind(socket) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("eden: cannot listen at {}: {err}", Path::new(socket).display());
            return 1;
        }
    };
    let me = format!("{}:{}", nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let me: Arc<str> = me.into();
    for stream in listener.incoming().flatten() {
        let me = Arc::clone(&me);
        std::thread::spawn(move || {
            let _ = answer(stream, &me);
        });
    }
    1
}

/// One call: from outside the sandbox only, as the door's own user only.
fn answer(mut stream: UnixStream, me: &str) -> std::io::Result<()> {
    let peer = nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)?;
    // A caller inside the sandbox has a pid here; eden's, outside, has none.
    if peer.pid() != 0 {
        return Ok(());
    }
    let request: Request = serde_json::from_slice(&read_sized(&mut stream)?).map_err(std::io::Error::other)?;
    let out = Arc::new(Mutex::new(stream.try_clone()?));
    if request.argv.is_empty() {
        return send_frame(&out, HELLO, std::process::id().to_string().as_bytes());
    }
    if request.user != me {
        let said = format!("eden's door runs commands as {me} only, not as {}\n", request.user);
        send_frame(&out, STDERR, said.as_bytes())?;
        return send_frame(&out, EXIT, DOOR_FAILED.to_string().as_bytes());
    }
    let code = run_one(&request, stream, &out);
    send_frame(&out, EXIT, code.to_string().as_bytes())
}

/// `request`'s command run, its stdin read from `input`, its output framed into `out`, in a
/// process group of its own (as an engine's `exec` would start it); its exit code, or 128 and
/// the signal that ended it.
fn run_one(request: &Request, mut input: UnixStream, out: &Arc<Mutex<UnixStream>>) -> i32 {
    let (program, args) = request.argv.split_first().expect("a call has a program");
    let mut command = ProcessBuilder::new(program).args(args);
    for (key, value) in &request.env {
        command = command.env(key, value);
    }
    if let Some(cwd) = &request.cwd {
        command = command.cwd(cwd);
    }
    let mut child = match command.spawn_for_caller(request.stdin) {
        Ok(child) => child,
        Err(err) => {
            let said = format!("eden's door cannot run `{program}`: {err}\n");
            let _ = send_frame(out, STDERR, said.as_bytes());
            return if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut input, &mut stdin);
        });
    }
    let pumps = [
        child.stdout.take().map(|pipe| pump(Box::new(pipe), STDOUT, out)),
        child.stderr.take().map(|pipe| pump(Box::new(pipe), STDERR, out)),
    ];
    let status = child.wait();
    for pump in pumps.into_iter().flatten() {
        let _ = pump.join();
    }
    status.map_or(DOOR_FAILED, crate::exit::Exit::from_status)
}

/// A command's output, framed as it comes; drained to its end even when the caller has gone
/// (a command must never stall on a full pipe).
fn pump(mut pipe: Box<dyn Read + Send>, kind: u8, out: &Arc<Mutex<UnixStream>>) -> std::thread::JoinHandle<()> {
    let out = Arc::clone(out);
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut open = true;
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 {
                break;
            }
            open = open && send_frame(&out, kind, &buffer[..read]).is_ok();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_time_is_read_past_a_name_with_parentheses_and_spaces() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(started(me).is_some());
        assert_eq!(started(i32::MAX), None);
    }

    #[test]
    fn a_listener_other_than_the_door_that_answered_is_never_spoken_to() {
        let folder = tempfile::tempdir().unwrap();
        let socket = folder.path().join(SOCKET);
        let _listener = UnixListener::bind(&socket).unwrap();
        let (_, found) = connect(&socket, None).expect("any listener this machine sees");
        assert_eq!(found.0, i32::try_from(std::process::id()).unwrap());
        assert!(connect(&socket, Some(found)).is_some());
        assert!(connect(&socket, Some((found.0, found.1 + 1))).is_none(), "another start time");
        assert!(connect(&socket, Some((found.0 + 1, found.1))).is_none(), "another process");
        assert!(connect(&folder.path().join("none"), None).is_none());
        // A link to the socket, as the sandbox could put in the door's folder, is not followed.
        let link = folder.path().join("link");
        std::os::unix::fs::symlink(&socket, &link).unwrap();
        assert!(connect(&link, None).is_none());
    }

    #[test]
    fn a_socket_path_too_long_for_an_address_is_reached_through_its_folder() {
        let folder = tempfile::tempdir().unwrap();
        let deep = folder.path().join("d".repeat(60)).join("e".repeat(60));
        std::fs::create_dir_all(&deep).unwrap();
        let socket = deep.join(SOCKET);
        assert!(UnixListener::bind(&socket).is_err(), "longer than an address holds");
        let short = Path::new("/proc/self/fd");
        let dir = std::fs::File::open(&deep).unwrap();
        let _listener =
            UnixListener::bind(short.join(std::os::fd::AsRawFd::as_raw_fd(&dir).to_string()).join(SOCKET)).unwrap();
        assert!(connect_path(&socket).is_ok());
    }

    #[test]
    fn a_frame_longer_than_the_limit_is_refused() {
        let mut long = vec![STDOUT];
        long.extend_from_slice(&u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes());
        assert!(read_frame(&mut long.as_slice()).is_err());
        assert!(read_frame(&mut [].as_slice()).unwrap().is_none());
    }
}
