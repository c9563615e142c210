//! One held request: read from the sandbox's side, checked, its placeholder swapped for the
//! real credential, sent to the upstream, and the response streamed back as it comes (server-
//! sent events pass through unbuffered). One request per connection (`Connection: close` both
//! ways), so nothing of a response is ever parsed but its status line.

use super::upstream::Upstream;
use super::{Audit, HeldKey};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Instant;

/// The most a request's head may take.
const MAX_HEAD: usize = 64 * 1024;

/// Headers never forwarded: the connection's own, and the proxy's.
const HOP_BY_HOP: [&str; 8] =
    ["host", "connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade", "expect"];

pub(super) struct Request {
    pub method: String,
    pub path: String,
    /// Name and value, as they came (the placeholder swapped).
    pub headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

/// Reads a request head; `Err` says why it is refused (sent back as a 400).
pub(super) fn read_head(client: &mut impl BufRead) -> Result<Request, String> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let read =
            client.take((MAX_HEAD - head.len()) as u64).read_until(b'\n', &mut head).map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("the request ended before its head did".into());
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            break;
        }
        if head.len() >= MAX_HEAD {
            return Err("the request's head is too long".into());
        }
    }
    let text = std::str::from_utf8(&head).map_err(|_| "the request's head is not UTF-8".to_owned())?;
    let mut lines = text.lines();
    let mut first = lines.next().unwrap_or("").split(' ');
    let (method, path, version) = (first.next().unwrap_or(""), first.next().unwrap_or(""), first.next().unwrap_or(""));
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.chars().all(|c| c.is_ascii_uppercase()) {
        return Err("not an HTTP/1 request".into());
    }
    // Origin form only: this is not a proxy to anywhere else.
    if !path.starts_with('/') || path.starts_with("//") || method == "CONNECT" {
        let shown: String = path.chars().take(100).collect();
        return Err(format!("only requests for the provider's API are forwarded, not `{method} {shown}`"));
    }
    let mut headers = Vec::new();
    for line in lines.filter(|line| !line.is_empty()) {
        let (name, value) = line.split_once(':').ok_or_else(|| "a malformed header line".to_owned())?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(Request { method: method.to_owned(), path: path.to_owned(), headers })
}

/// The placeholder swapped for the real credential in the one header that carries it; `Err`
/// when no header carries a placeholder of this run (the request is refused).
pub(super) fn swap_credential(request: &mut Request, keys: &[HeldKey]) -> Result<(), String> {
    let mut swapped = false;
    for (name, value) in &mut request.headers {
        for key in keys {
            if let Some(real) = key.header.swap(name, value, &key.placeholder, &key.value.0) {
                *value = real;
                swapped = true;
            }
        }
    }
    if swapped {
        Ok(())
    } else {
        Err("the request carries none of this run's placeholders".into())
    }
}

/// Sends `request` (its body read from `client`) to `upstream` and streams the response back.
pub(super) fn forward(
    mut request: Request,
    client: &mut BufReader<std::os::unix::net::UnixStream>,
    upstream: &Upstream,
    keys: &[HeldKey],
    tls: &std::sync::Arc<rustls::ClientConfig>,
) -> Audit {
    let started = Instant::now();
    let mut audit = Audit::new(&request.method, &upstream.authority(), &request.path);
    if let Err(why) = swap_credential(&mut request, keys) {
        respond(client.get_mut(), 403, &why);
        audit.refused = Some(why);
        audit.status = Some(403);
        return audit;
    }
    let outcome = exchange(&request, client, upstream, tls, &mut audit);
    if let Err(err) = outcome {
        if audit.status.is_none() {
            respond(client.get_mut(), 502, &format!("eden's proxy could not reach {}: {err}", upstream.url()));
            audit.status = Some(502);
        }
        audit.refused = Some(err.to_string());
    }
    audit.duration_ms = started.elapsed().as_millis() as u64;
    audit
}

fn exchange(
    request: &Request,
    client: &mut BufReader<std::os::unix::net::UnixStream>,
    upstream: &Upstream,
    tls: &std::sync::Arc<rustls::ClientConfig>,
    audit: &mut Audit,
) -> std::io::Result<()> {
    let mut server = super::upstream::connect(upstream, tls)?;
    let mut head = format!(
        "{} {}{} HTTP/1.1\r\nHost: {}\r\n",
        request.method,
        upstream.prefix,
        request.path,
        upstream.authority()
    );
    for (name, value) in &request.headers {
        if !HOP_BY_HOP.iter().any(|hop| name.eq_ignore_ascii_case(hop)) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    server.write_all(head.as_bytes())?;
    audit.bytes_up = copy_body(request, client, &mut server)?;
    server.flush()?;
    stream_back(server, &request.method, client.get_mut(), audit)
}

/// The request's body, as its headers frame it (a length, or chunks); its size.
fn copy_body(request: &Request, client: &mut impl BufRead, server: &mut dyn Write) -> std::io::Result<u64> {
    let chunked = request.header("transfer-encoding").is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let length = request.header("content-length").and_then(|n| n.parse().ok()).unwrap_or(0);
    copy_framed(client, server, if chunked { Framing::Chunked } else { Framing::Length(length) })
}

/// How a message's body ends.
enum Framing {
    Length(u64),
    Chunked,
    /// When the sender closes.
    Close,
}

/// A body copied as it arrives, up to where its framing says it ends; its size.
fn copy_framed(from: &mut impl BufRead, to: &mut dyn Write, framing: Framing) -> std::io::Result<u64> {
    match framing {
        Framing::Length(length) => {
            let copied = copy_flushing(&mut from.take(length), to)?;
            if copied == length {
                Ok(copied)
            } else {
                Err(std::io::ErrorKind::UnexpectedEof.into())
            }
        }
        Framing::Close => copy_flushing(from, to),
        Framing::Chunked => {
            let mut total = 0;
            loop {
                let mut size_line = String::new();
                if from.take(1024).read_line(&mut size_line)? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                to.write_all(size_line.as_bytes())?;
                let size = u64::from_str_radix(size_line.trim().split(';').next().unwrap_or(""), 16)
                    .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "a malformed chunk size"))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        let mut line = String::new();
                        if from.take(8192).read_line(&mut line)? == 0 || line.trim().is_empty() {
                            to.write_all(line.as_bytes())?;
                            to.flush()?;
                            return Ok(total);
                        }
                        to.write_all(line.as_bytes())?;
                    }
                }
                total += copy_flushing(&mut from.take(size.saturating_add(2)), to)?;
            }
        }
    }
}

/// Everything `from` gives, written on as it comes (nothing held back: a streamed answer
/// reaches the agent as the provider sends it).
fn copy_flushing(from: &mut impl Read, to: &mut dyn Write) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(read) => read,
            // A TLS peer that closes without `close_notify`: what it framed has arrived.
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(total),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        to.write_all(&buffer[..read])?;
        to.flush()?;
        total += read as u64;
    }
}

/// The response: its head read and passed on (its status noted), then its body as its framing
/// says, streamed.
fn stream_back(
    server: Box<dyn super::upstream::Stream>,
    method: &str,
    client: &mut dyn Write,
    audit: &mut Audit,
) -> std::io::Result<()> {
    let mut server = BufReader::new(server);
    let mut head = Vec::new();
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        if server.by_ref().take(MAX_HEAD as u64).read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if audit.status.is_none() {
            audit.status = line.split(' ').nth(1).and_then(|code| code.parse().ok()).or(Some(0));
        } else if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse::<u64>().ok();
            } else if name == "transfer-encoding" && value.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
        }
        head.extend_from_slice(line.as_bytes());
        if line == "\r\n" || line == "\n" {
            break;
        }
    }
    client.write_all(&head)?;
    client.flush()?;
    audit.bytes_down = head.len() as u64;
    let status = audit.status.unwrap_or(0);
    let framing = if method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else if let Some(length) = length {
        Framing::Length(length)
    } else {
        Framing::Close
    };
    audit.bytes_down += copy_framed(&mut server, client, framing)?;
    Ok(())
}

/// A response of eden's own (a refusal).
fn respond(client: &mut dyn Write, status: u16, message: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let body = serde_json::json!({"type": "error", "error": {"type": "eden_proxy", "message": message}}).to_string();
    let _ = write!(
        client,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

pub(super) fn refuse(client: &mut dyn Write, message: &str) {
    respond(client, 400, message)
}
