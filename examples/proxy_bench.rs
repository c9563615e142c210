//! The key-holding proxy's cost on loopback (`bench/proxy.sh`): time to the first byte of a
//! streamed answer through the proxy against straight to the server, and the throughput of a
//! 100 MB streamed answer through it. The "provider" is a plain HTTP server on 127.0.0.1 that
//! answers each request with chunked server-sent events.

// A benchmark: its figures are its output.
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::time::Instant;

const TOTAL: usize = 100 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;

fn provider() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    port
}

/// `GET /small`: one event; `GET /big`: 100 MB of events, in chunks.
fn answer(mut stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
    }
    let big = first.contains("/big");
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    let event = b"data: {\"type\":\"content_block_delta\"}\n\n";
    let _ = write!(stream, "{:x}\r\n", event.len());
    let _ = stream.write_all(event);
    let _ = stream.write_all(b"\r\n");
    if big {
        let block = vec![b'x'; CHUNK];
        for _ in 0..TOTAL / CHUNK {
            if write!(stream, "{CHUNK:x}\r\n")
                .and_then(|()| stream.write_all(&block))
                .and_then(|()| stream.write_all(b"\r\n"))
                .is_err()
            {
                return;
            }
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
}

fn request(path: &str, key: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: x\r\nx-api-key: {key}\r\nconnection: close\r\n\r\n")
}

/// Seconds to the first byte of the answer, and to its end, with its size.
fn measure(mut stream: impl Read + Write, path: &str, key: &str) -> (f64, f64, usize) {
    let started = Instant::now();
    stream.write_all(request(path, key).as_bytes()).unwrap();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut first = None;
    let mut total = 0;
    loop {
        let read = stream.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        first.get_or_insert(started.elapsed().as_secs_f64());
        total += read;
    }
    (first.unwrap_or(0.0), started.elapsed().as_secs_f64(), total)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn main() {
    let port = provider();
    let dir = tempfile_dir();
    let socket = dir.join("0.sock");
    let upstream = eden::values::BaseUrl::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let key = eden::proxy::HeldKey {
        header: eden::agent::credentials::CredentialHeader::XApiKey,
        placeholder: "eden-held-bench".into(),
        value: eden::redact::Secret("sk-real".into()),
    };
    let _proxy = eden::proxy::Proxy::start(&socket, upstream, vec![key]).unwrap();
    let (mut direct, mut through) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        direct.push(measure(TcpStream::connect(("127.0.0.1", port)).unwrap(), "/small", "sk-real").0);
        through.push(measure(UnixStream::connect(&socket).unwrap(), "/small", "eden-held-bench").0);
    }
    let (direct, through) = (median(direct) * 1000.0, median(through) * 1000.0);
    println!("time to first byte (median of 50): direct {direct:.2} ms, through the proxy {through:.2} ms (+{:.2} ms; goal within 20 ms)", through - direct);
    let mut rates = Vec::new();
    for _ in 0..3 {
        let (_, seconds, bytes) = measure(UnixStream::connect(&socket).unwrap(), "/big", "eden-held-bench");
        rates.push(bytes as f64 / seconds / 1e6);
    }
    let (_, seconds, bytes) = measure(TcpStream::connect(("127.0.0.1", port)).unwrap(), "/big", "sk-real");
    println!(
        "100 MB streamed through the proxy: {:.0} MB/s (median of 3; direct {:.0} MB/s; goal >= 200 MB/s)",
        median(rates),
        bytes as f64 / seconds / 1e6
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("eden-proxy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
