//! One held request: read from the sandbox's side, checked, its placeholder swapped for the
//! real credential, sent to the upstream, and the response streamed back as it comes (server-
//! sent events pass through unbuffered). One request per connection (`Connection: close` both
//! ways: the response's head says so to the client whatever the upstream said), so nothing of
//! a response is parsed but its head.

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
    pub(crate) method: String,
    pub(crate) path: String,
    /// Name and value, as they came (the placeholder swapped).
    pub(crate) headers: Vec<(String, String)>,
    /// How its body ends.
    framing: Framing,
}

/// The most headers a request or response may have.
const MAX_HEADERS: usize = 100;

/// Reads a request head (parsed by `httparse`); `Err` says why it is refused (sent back as a
/// 400): not HTTP/1, not for the provider's API (an absolute URL, `CONNECT`, a path that would
/// leave the base URL's path), a malformed header (a bare CR or LF in a value, an invalid name),
/// or a body whose length is not said one clear way (both `Content-Length` and
/// `Transfer-Encoding`, two or a malformed `Content-Length`, a coding other than `chunked`).
pub(super) fn read_head(client: &mut impl BufRead) -> Result<Request, Refused> {
    let head =
        read_head_bytes(client, "request").map_err(|why| Refused { why: why.to_string(), method: None, path: None })?;
    parse_head(&head).map_err(|why| {
        // What the first line asked for, for the audit.
        let first = String::from_utf8_lossy(head.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
        let mut words = first.split(' ');
        let (method, path) = (words.next().map(str::to_owned), words.next().map(str::to_owned));
        Refused { why: why.to_string(), method, path }
    })
}

/// Why a request (or the upstream's response) is not passed on: said to the client (a 400 or a
/// 403) and in the audit.
#[derive(Debug)]
pub(super) enum Unfit {
    Incomplete,
    Malformed(httparse::Error),
    NotHttp1,
    /// Not in origin form, or `CONNECT`: this is not a proxy to anywhere else.
    NotForTheApi {
        method: String,
        path: String,
    },
    LeavesPrefix {
        path: String,
    },
    NotUtf8 {
        header: String,
    },
    BadLength(String),
    Coding(String),
    TwoLengths,
    TwoCodings,
    LengthAndCoding,
    /// The request or response (`what`) ended before its head did.
    EndedEarly(&'static str),
    TooLong(&'static str),
    Unread(std::io::Error),
    NoPlaceholder,
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |path: &str| path.chars().take(100).collect::<String>();
        match self {
            Unfit::Incomplete => write!(f, "the request's head is incomplete"),
            Unfit::Malformed(err) => write!(f, "a malformed request head ({err})"),
            Unfit::NotHttp1 => write!(f, "not an HTTP/1 request"),
            Unfit::NotForTheApi { method, path } => {
                write!(f, "only requests for the provider's API are forwarded, not `{method} {}`", shown(path))
            }
            Unfit::LeavesPrefix { path } => write!(f, "the path `{}` would leave the provider's base URL", shown(path)),
            Unfit::NotUtf8 { header } => write!(f, "the header `{header}` is not UTF-8"),
            Unfit::BadLength(length) => write!(f, "a malformed Content-Length `{length}`"),
            Unfit::Coding(coding) => write!(f, "the transfer coding `{coding}` is not forwarded (only `chunked`)"),
            Unfit::TwoLengths => write!(f, "more than one Content-Length"),
            Unfit::TwoCodings => write!(f, "more than one Transfer-Encoding"),
            Unfit::LengthAndCoding => write!(f, "both Content-Length and Transfer-Encoding"),
            Unfit::EndedEarly(what) => write!(f, "the {what} ended before its head did"),
            Unfit::TooLong(what) => write!(f, "the {what}'s head is too long"),
            Unfit::Unread(err) => write!(f, "{err}"),
            Unfit::NoPlaceholder => write!(f, "the request carries none of this run's placeholders"),
        }
    }
}

/// A request eden refused, and what its first line asked for (for the audit).
pub(super) struct Refused {
    pub(crate) why: String,
    pub(crate) method: Option<String>,
    pub(crate) path: Option<String>,
}

fn parse_head(head: &[u8]) -> Result<Request, Unfit> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Unfit::Incomplete),
        Err(err) => return Err(Unfit::Malformed(err)),
    }
    let (method, path) = (parsed.method.unwrap_or(""), parsed.path.unwrap_or(""));
    if method.is_empty() || !method.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(Unfit::NotHttp1);
    }
    // Origin form only: this is not a proxy to anywhere else.
    if !path.starts_with('/') || path.starts_with("//") || method == "CONNECT" {
        return Err(Unfit::NotForTheApi { method: method.to_owned(), path: path.to_owned() });
    }
    if leaves_its_prefix(path) {
        return Err(Unfit::LeavesPrefix { path: path.to_owned() });
    }
    let mut fields = Vec::new();
    for header in parsed.headers.iter() {
        let value = std::str::from_utf8(header.value).map_err(|_| Unfit::NotUtf8 { header: header.name.to_owned() })?;
        fields.push((header.name.to_owned(), value.trim().to_owned()));
    }
    let framing = request_framing(&fields)?;
    Ok(Request { method: method.to_owned(), path: path.to_owned(), headers: fields, framing })
}

/// The head's bytes (a request's, or with `what` a response's), up to and with its empty line,
/// at most `MAX_HEAD`.
fn read_head_bytes(client: &mut impl BufRead, what: &'static str) -> Result<Vec<u8>, Unfit> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let read = client.take((MAX_HEAD - head.len()) as u64).read_until(b'\n', &mut head).map_err(Unfit::Unread)?;
        if read == 0 {
            return Err(Unfit::EndedEarly(what));
        }
        if head[before..] == *b"\r\n" || head[before..] == *b"\n" {
            return Ok(head);
        }
        if head.len() >= MAX_HEAD {
            return Err(Unfit::TooLong(what));
        }
    }
}

/// A path whose `.` or `..` segments (as they are, or percent-encoded), or encoded slashes and
/// backslashes, could take it out of the base URL's path once a server normalizes it.
fn leaves_its_prefix(path: &str) -> bool {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let lower = path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") || path.contains('\\') {
        return true;
    }
    lower.split('/').any(|segment| {
        let decoded = segment.replace("%2e", ".");
        decoded == "." || decoded == ".."
    })
}

/// How a request's body ends, said one clear way.
fn request_framing(headers: &[(String, String)]) -> Result<Framing, Unfit> {
    let named = |name: &'static str| -> Vec<&String> {
        headers.iter().filter(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value).collect()
    };
    let (lengths, codings) = (named("content-length"), named("transfer-encoding"));
    match (&lengths[..], &codings[..]) {
        ([], []) => Ok(Framing::Length(0)),
        ([length], []) => parse_length(length).map(Framing::Length).ok_or_else(|| Unfit::BadLength(length.to_string())),
        ([], [coding]) if coding.eq_ignore_ascii_case("chunked") => Ok(Framing::Chunked),
        ([], [coding]) => Err(Unfit::Coding(coding.to_string())),
        (_, []) => Err(Unfit::TwoLengths),
        ([], _) => Err(Unfit::TwoCodings),
        _ => Err(Unfit::LengthAndCoding),
    }
}

/// A `Content-Length`: digits only.
fn parse_length(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

/// The placeholder swapped for the real credential in the one header that carries it; `Err`
/// when no header carries a placeholder of this run (the request is refused).
pub(super) fn swap_credential(request: &mut Request, keys: &[HeldKey]) -> Result<(), Unfit> {
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
        Err(Unfit::NoPlaceholder)
    }
}

/// Does `request` carry a credential header at all (`x-api-key`, `authorization`)?
fn carries_credentials(request: &Request) -> bool {
    request
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("x-api-key") || name.eq_ignore_ascii_case("authorization"))
}

/// The audit of `request` as it will go to `upstream`: its path under the base URL's own.
pub(super) fn audit_of(request: &Request, upstream: &Upstream) -> Audit {
    Audit::new(&request.method, &upstream.authority(), &format!("{}{}", upstream.prefix, request.path))
}

/// Sends `request` (its body read from `client`) to `upstream` and streams the response back;
/// `audit` (`audit_of` it) filled in as it goes.
pub(super) fn forward(
    mut request: Request,
    mut audit: Audit,
    client: &mut BufReader<std::os::unix::net::UnixStream>,
    upstream: &Upstream,
    keys: &[HeldKey],
    tls: &std::sync::Arc<rustls::ClientConfig>,
) -> Audit {
    let started = Instant::now();
    // A keyless `HEAD` (Claude Code's connectivity probe, `HEAD /api/hello`) carries nothing to
    // swap and costs nothing: it goes on as it is, rather than reading as a refused key.
    let probe = request.method == "HEAD" && !carries_credentials(&request);
    if let Err(why) = swap_credential(&mut request, keys).or_else(|why| if probe { Ok(()) } else { Err(why) }) {
        let why = why.to_string();
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
    copy_framed(client, server, request.framing)
}

/// How a message's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
        Framing::Chunked => copy_chunks(from, to),
    }
}

/// Chunks as RFC 9112 frames them, checked as they pass: a hexadecimal size (extensions after
/// `;`) and CRLF, that many bytes and CRLF, until the size 0 and the trailers' empty line.
fn copy_chunks(from: &mut impl BufRead, to: &mut dyn Write) -> std::io::Result<u64> {
    let malformed = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let mut total = 0;
    loop {
        let mut size_line = Vec::new();
        if from.take(1024).read_until(b'\n', &mut size_line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let digits = size_line.strip_suffix(b"\r\n").ok_or_else(|| malformed("a chunk size line without CRLF"))?;
        let digits = digits.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(digits)
            .ok()
            .filter(|digits| !digits.is_empty() && digits.len() <= 16 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|digits| u64::from_str_radix(digits, 16).ok())
            .ok_or_else(|| malformed("a malformed chunk size"))?;
        to.write_all(&size_line)?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let mut line = Vec::new();
                if from.take(8192).read_until(b'\n', &mut line)? == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                if !line.ends_with(b"\r\n") || line[..line.len() - 2].contains(&b'\r') {
                    return Err(malformed("a malformed trailer"));
                }
                to.write_all(&line)?;
                if line == b"\r\n" {
                    to.flush()?;
                    return Ok(total);
                }
            }
        }
        let copied = copy_flushing(&mut from.take(size), to)?;
        if copied != size {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        total += copied;
        let mut end = [0u8; 2];
        from.read_exact(&mut end)?;
        if end != *b"\r\n" {
            return Err(malformed("a chunk not ended by CRLF"));
        }
        to.write_all(&end)?;
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
    server: crate::net::connect::Connection,
    method: &str,
    client: &mut dyn Write,
    audit: &mut Audit,
) -> std::io::Result<()> {
    let mut server = BufReader::new(server);
    let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let head = read_head_bytes(&mut server, "response").map_err(|why| invalid(why.to_string()))?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut headers);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(invalid("the upstream's response head is malformed".into())),
    }
    audit.status = parsed.code;
    let fields: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|header| (header.name.to_owned(), String::from_utf8_lossy(header.value).trim().to_owned()))
        .collect();
    let said = fields
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding"));
    let body = if said {
        request_framing(&fields).map_err(|why| invalid(format!("the upstream's response: {why}")))?
    } else {
        Framing::Close
    };
    // The head as it came, but that the connection ends with this response: one request per
    // connection, and a client told otherwise may send its next on it as it closes (a reset).
    let head = closing_head(&head, parsed.headers);
    client.write_all(&head)?;
    client.flush()?;
    audit.bytes_down = head.len() as u64;
    let status = audit.status.unwrap_or(0);
    let framing = if method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Length(0)
    } else {
        body
    };
    audit.bytes_down += copy_framed(&mut server, client, framing)?;
    Ok(())
}

/// A response's head (`head`, parsed into `headers`) with its connection headers replaced by
/// `Connection: close`; every other header as it came, byte for byte.
fn closing_head(head: &[u8], headers: &[httparse::Header<'_>]) -> Vec<u8> {
    let status_line = head.split(|byte| *byte == b'\n').next().unwrap_or_default();
    let mut out = status_line.strip_suffix(b"\r").unwrap_or(status_line).to_vec();
    out.extend_from_slice(b"\r\n");
    for header in headers {
        if ["connection", "keep-alive", "proxy-connection"].iter().any(|hop| header.name.eq_ignore_ascii_case(hop)) {
            continue;
        }
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::credentials::CredentialHeader;

    fn head(text: &str) -> Result<Request, String> {
        read_head(&mut std::io::Cursor::new(text.as_bytes().to_vec())).map_err(|refused| refused.why)
    }

    #[test]
    fn the_client_is_told_the_connection_closes() {
        let raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nx-odd: a\xffb\r\n\r\n";
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut parsed = httparse::Response::new(&mut headers);
        parsed.parse(raw).unwrap();
        let closing = closing_head(raw, parsed.headers);
        assert_eq!(
            closing,
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-odd: a\xffb\r\nConnection: close\r\n\r\n"
                .to_vec()
        );
    }

    #[test]
    fn a_plain_request_is_read() {
        let request = head("POST /v1/messages HTTP/1.1\r\nx-api-key: p\r\ncontent-length: 2\r\n\r\n{}").unwrap();
        assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/messages"));
        assert_eq!(request.framing, Framing::Length(2));
        let chunked = head("POST /v1/x HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").unwrap();
        assert_eq!(chunked.framing, Framing::Chunked);
        assert_eq!(head("GET /v1/models?x=1 HTTP/1.1\r\n\r\n").unwrap().framing, Framing::Length(0));
    }

    #[test]
    fn malformed_heads_are_refused() {
        for (request, why) in [
            ("POST /v1/m HTTP/1.1\r\nx-api-key: p\rinjected: 1\r\n\r\n", "a bare CR in a value"),
            ("POST /v1/m HTTP/1.1\r\nbad name: 1\r\n\r\n", "a space in a header's name"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n", "both framings"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n", "two lengths"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\n", "two equal lengths"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: 5a\r\n\r\n", "a malformed length"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: -1\r\n\r\n", "a negative length"),
            ("POST /v1/m HTTP/1.1\r\ncontent-length: \r\n\r\n", "an empty length"),
            ("POST /v1/m HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n", "another coding"),
            ("POST /v1/m HTTP/1.1\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n", "two codings"),
            ("GET http://evil.example/x HTTP/1.1\r\n\r\n", "an absolute URL"),
            ("CONNECT evil.example:443 HTTP/1.1\r\n\r\n", "CONNECT"),
            ("GET /../../admin HTTP/1.1\r\n\r\n", "a climb out of the prefix"),
            ("GET /v1/%2e%2e/%2E%2e/admin HTTP/1.1\r\n\r\n", "an encoded climb"),
            ("GET /v1/..%2fadmin HTTP/1.1\r\n\r\n", "an encoded slash"),
            ("GET /v1/./x HTTP/1.1\r\n\r\n", "a dot segment"),
            ("get /v1/x HTTP/1.1\r\n\r\n", "a lowercase method"),
            ("POST /v1/m HTTP/2.0\r\n\r\n", "not HTTP/1"),
        ] {
            assert!(head(request).is_err(), "{why} was accepted: {request:?}");
        }
        assert!(head("GET /v1/a.b/c..d HTTP/1.1\r\n\r\n").is_ok(), "dots inside names are fine");
    }

    #[test]
    fn the_placeholder_is_swapped_only_in_the_credential_header() {
        let keys = [HeldKey {
            header: CredentialHeader::XApiKey,
            placeholder: "eden-held-p".into(),
            value: crate::redact::Secret("sk-real".into()),
        }];
        let mut request =
            head("POST /v1/m HTTP/1.1\r\nx-api-key: eden-held-p\r\nx-other: eden-held-p\r\nauthorization: Bearer eden-held-p\r\n\r\n")
                .unwrap();
        swap_credential(&mut request, &keys).unwrap();
        let value = |name: &str| request.headers.iter().find(|(key, _)| key == name).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(value("x-api-key"), "sk-real");
        assert_eq!(value("x-other"), "eden-held-p", "another header keeps the placeholder");
        assert_eq!(value("authorization"), "Bearer eden-held-p", "a header of the other kind too");
        let mut without = head("POST /v1/m HTTP/1.1\r\nx-api-key: sk-other\r\n\r\n").unwrap();
        assert!(swap_credential(&mut without, &keys).is_err());
    }

    #[test]
    fn chunks_are_checked_as_they_pass() {
        let copy = |body: &str| {
            let mut out = Vec::new();
            copy_chunks(&mut std::io::Cursor::new(body.as_bytes().to_vec()), &mut out).map(|n| (n, out))
        };
        let good = "4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nx-trailer: 1\r\n\r\n";
        assert_eq!(copy(good).unwrap(), (9, good.as_bytes().to_vec()));
        for bad in [
            "4\r\nwikiXX5\r\npedia\r\n0\r\n\r\n",
            "zz\r\nwiki\r\n0\r\n\r\n",
            "\r\nwiki\r\n0\r\n\r\n",
            "4\nwiki\r\n0\r\n\r\n",
            "4\r\nwi",
            "0\r\nbad\rtrailer\r\n\r\n",
            "10000000000000000\r\n",
        ] {
            assert!(copy(bad).is_err(), "{bad:?} passed");
        }
    }
}
