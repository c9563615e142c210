//! The relay inside a sandbox: `eden __eden-relay SOCKET VAR… [--write FILE TEMPLATE]… [--env
//! VAR TEMPLATE]… -- PROGRAM ARGS…` listens on `127.0.0.1:<a free port>` in the sandbox's own
//! network, points each VAR at it (`http://127.0.0.1:<port>`) for PROGRAM (the agent), writes
//! each FILE (or sets each `--env` VAR) from its TEMPLATE with the URL where `URL_MARK` is (for
//! an agent whose base URL is in its own configuration), and becomes PROGRAM; a forked helper
//! carries each connection to SOCKET, the run's proxy outside (`process::beside`). It holds
//! nothing: the agent could reach the socket itself, and gains nothing by doing so.

// A helper process: it talks on its own stderr, which eden reads as the agent's.
#![allow(clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;

pub(crate) const RELAY_SUBCOMMAND: &str = "__eden-relay";

/// In PROGRAM's arguments, replaced by the relay's URL (for a CLI that takes its base URL as an
/// option).
pub(crate) const URL_MARK: &str = crate::agent::credentials::RELAY_URL_MARK;

/// Runs the relay; returns an exit code only when the agent could not be started.
pub(crate) fn run(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    let Some(split) = args.iter().position(|arg| arg == "--") else {
        eprintln!("eden: usage: {RELAY_SUBCOMMAND} SOCKET VAR... -- PROGRAM ARGS...");
        return 2;
    };
    let (before, program) = (&args[..split], &args[split + 1..]);
    let (Some((socket, rest)), Some((program, program_args))) = (before.split_first(), program.split_first()) else {
        eprintln!("eden: usage: {RELAY_SUBCOMMAND} SOCKET VAR... -- PROGRAM ARGS...");
        return 2;
    };
    let (mut vars, mut files, mut values) = (Vec::new(), Vec::new(), Vec::new());
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        let pair = match arg.as_str() {
            "--write" => &mut files,
            "--env" => &mut values,
            _ => {
                vars.push(arg);
                continue;
            }
        };
        let (Some(first), Some(template)) = (rest.next(), rest.next()) else {
            eprintln!("eden: usage: {RELAY_SUBCOMMAND} SOCKET VAR... [--write FILE TEMPLATE] [--env VAR TEMPLATE] -- PROGRAM ARGS...");
            return 2;
        };
        pair.push((first, template));
    }
    let listener = match TcpListener::bind(("127.0.0.1", 0)) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("eden: the relay to the credential proxy cannot listen on 127.0.0.1: {err}");
            return 126;
        }
    };
    let port = listener.local_addr().map(|addr| addr.port()).unwrap_or(0);
    let url = format!("http://127.0.0.1:{port}");
    for (file, template) in files {
        if let Err(err) = write_config(file, template, &url) {
            eprintln!("eden: the relay cannot write `{file}` for the agent: {err}");
            return 126;
        }
    }
    let mut env: Vec<(String, String)> = vars.iter().map(|var| ((*var).clone(), url.clone())).collect();
    for (var, template) in values {
        match std::fs::read_to_string(template) {
            Ok(text) => env.push((var.clone(), text.replace(URL_MARK, &url))),
            Err(err) => {
                eprintln!("eden: the relay cannot read `{template}` for the agent: {err}");
                return 126;
            }
        }
    }
    let program_args: Vec<String> = program_args.iter().map(|arg| arg.replace(URL_MARK, &url)).collect();
    let socket = socket.clone();
    let why = crate::process::beside::exec_beside(move || serve(listener, &socket), program, &program_args, &env);
    eprintln!("eden: {why}");
    127
}

/// `file` from `template` with the relay's URL in it. Both are in the sandbox: the template is
/// eden's (the proxy's folder, read-only in a container), the file is the agent's own.
fn write_config(file: &str, template: &str, url: &str) -> std::io::Result<()> {
    let text = std::fs::read_to_string(template)?;
    std::fs::write(file, text.replace(URL_MARK, url))
}

fn serve(listener: TcpListener, socket: &str) {
    for connection in listener.incoming().flatten() {
        let socket = socket.to_owned();
        std::thread::spawn(move || {
            if let Ok(proxy) = UnixStream::connect(&socket) {
                carry(connection, proxy);
            }
        });
    }
}

/// Both directions until each side ends, then the connection closed.
fn carry(tcp: TcpStream, unix: UnixStream) {
    let (Ok(mut tcp_in), Ok(mut unix_out)) = (tcp.try_clone(), unix.try_clone()) else { return };
    let upward = std::thread::spawn(move || {
        let _ = pump(&mut tcp_in, &mut unix_out);
        let _ = unix_out.shutdown(Shutdown::Write);
    });
    let (mut unix_in, mut tcp_out) = (unix, tcp);
    let _ = pump(&mut unix_in, &mut tcp_out);
    let _ = tcp_out.shutdown(Shutdown::Both);
    let _ = unix_in.shutdown(Shutdown::Both);
    let _ = upward.join();
}

fn pump(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = from.read(&mut buffer)?;
        if read == 0 {
            return Ok(());
        }
        to.write_all(&buffer[..read])?;
    }
}
