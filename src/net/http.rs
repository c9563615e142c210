//! The small HTTP/1.1 client eden's own requests go through: one request per connection
//! (`Connection: close`), a deadline over the whole exchange (redirects included), the answer's
//! body framed as its head says (a length, chunks, or the close) and bounded, redirects
//! followed a few times (never from `https` down to `http`; to another origin without the
//! caller's headers, which may carry a token), and a status outside 2xx an error of its own
//! kind. What a server says is data: a redirect's target is checked like any URL, and the
//! reason phrase an error shows is cut to plain text.

use super::connect::{connect, Connection};
use crate::values::BaseUrl;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The redirects one request follows at most.
const MAX_REDIRECTS: usize = 5;

/// The largest head an answer may have.
const MAX_HEAD: usize = 64 * 1024;

/// The headers kept when a redirect leads to another origin: none that can carry a credential.
const KEPT_ACROSS_ORIGINS: [&str; 3] = ["accept", "content-type", "user-agent"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    Post,
    Put,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }
}

/// One request: its headers are the caller's (a `Host`, the length and `Connection` are the
/// client's own).
#[derive(Clone)]
pub(crate) struct Request<'a> {
    pub(crate) method: Method,
    pub(crate) url: &'a str,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: &'a [u8],
}

impl std::fmt::Debug for Request<'_> {
    /// Header names and the body's size only: values may be credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &names)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// An answer with a 2xx status (or any status, from `Client::exchange`).
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    /// The status line's reason phrase, as plain text.
    pub(crate) reason: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (any case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

/// Why a request got no answer eden can use. Never holds a header's value.
#[derive(Debug)]
pub(crate) enum HttpError {
    /// Not an `http://` or `https://` URL eden sends to (or a redirect to one).
    Url(String),
    /// A header eden would not send as it is (a name that is not a token, a line break in a value).
    Header(String),
    Connect {
        host: String,
        source: std::io::Error,
    },
    Io(std::io::Error),
    /// The whole exchange did not end within this.
    Timeout(Duration),
    /// The answer is not HTTP/1.1 as eden reads it.
    Malformed(&'static str),
    /// The body is larger than this.
    TooLarge(usize),
    TooManyRedirects,
    /// A redirect from `https` to plain `http`.
    Downgrade(String),
    /// A status outside 2xx: its code, its reason phrase (cut to plain text), and its body.
    Status {
        status: u16,
        reason: String,
        body: Vec<u8>,
    },
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Url(url) => write!(f, "`{url}` is not an `http://` or `https://` URL eden sends to"),
            HttpError::Header(name) => write!(f, "the header `{name}` cannot be sent as it is"),
            HttpError::Connect { host, source } => write!(f, "cannot connect to {host}: {source}"),
            HttpError::Io(err) => write!(f, "{err}"),
            HttpError::Timeout(limit) => write!(f, "no answer within {} ms", limit.as_millis()),
            HttpError::Malformed(what) => write!(f, "the answer is malformed: {what}"),
            HttpError::TooLarge(limit) => write!(f, "the answer is larger than {limit} bytes"),
            HttpError::TooManyRedirects => write!(f, "more than {MAX_REDIRECTS} redirects"),
            HttpError::Downgrade(url) => write!(f, "redirected from https to plain http (`{url}`), not followed"),
            HttpError::Status { status, reason, body } => {
                write!(f, "the server answered `{status} {reason}`")?;
                // What it said, as plain text (a collector's or a forge's message, or anything).
                let said = plain(&String::from_utf8_lossy(body), 200);
                match said.trim() {
                    "" => Ok(()),
                    said => write!(f, ": {said}"),
                }
            }
        }
    }
}

/// Sends requests: the TLS settings, the deadline each request gets, the largest body read.
pub(crate) struct Client {
    tls: Arc<rustls::ClientConfig>,
    timeout: Duration,
    max_body: usize,
}

impl Client {
    pub(crate) fn new(tls: Arc<rustls::ClientConfig>, timeout: Duration) -> Client {
        Client { tls, timeout, max_body: 16 << 20 }
    }

    /// The largest body read (16 MiB unless told).
    pub(crate) fn max_body(self, max_body: usize) -> Client {
        Client { max_body, ..self }
    }

    /// Send `request`, following redirects; a status outside 2xx is `HttpError::Status`.
    pub(crate) fn send(&self, request: &Request<'_>) -> Result<Response, HttpError> {
        let response = self.exchange(request)?;
        match response.status {
            200..=299 => Ok(response),
            status => Err(HttpError::Status { status, reason: response.reason, body: response.body }),
        }
    }

    /// Send `request`, following redirects: the final answer, whatever its status.
    pub(crate) fn exchange(&self, request: &Request<'_>) -> Result<Response, HttpError> {
        let deadline = Instant::now() + self.timeout;
        let mut current = Hop { method: request.method, url: request.url.to_owned(), headers: request.headers.clone() };
        let mut body = request.body;
        for _ in 0..=MAX_REDIRECTS {
            let target = Target::parse(&current.url).ok_or_else(|| HttpError::Url(current.url.clone()))?;
            let response = self.once(&target, &current, body, deadline)?;
            let Some(next) = redirect(&target, &current, &response)? else { return Ok(response) };
            if next.method != current.method || matches!(response.status, 301..=303) {
                body = &[];
            }
            current = next;
        }
        Err(HttpError::TooManyRedirects)
    }

    /// One request on a connection of its own, and its answer.
    fn once(&self, target: &Target, hop: &Hop, body: &[u8], deadline: Instant) -> Result<Response, HttpError> {
        let left = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero());
        let within = left.ok_or(HttpError::Timeout(self.timeout))?;
        let head = request_head(target, hop, body.len())?;
        let mut connection = connect(&target.base, &self.tls, within).map_err(|source| match source.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => HttpError::Timeout(self.timeout),
            _ => HttpError::Connect { host: target.base.authority(), source },
        })?;
        let timed = |err: std::io::Error| match err.kind() {
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => HttpError::Timeout(self.timeout),
            _ => HttpError::Io(err),
        };
        connection.wait_at_most(Some(within)).map_err(HttpError::Io)?;
        connection.write_all(&head).and_then(|()| connection.write_all(body)).map_err(timed)?;
        connection.flush().map_err(timed)?;
        let mut reader = BufReader::new(Deadlined { connection, deadline });
        let Head { status, reason, headers } = read_answer_head(&mut reader).map_err(|err| match err {
            HttpError::Io(err) => timed(err),
            other => other,
        })?;
        let body = match hop.method == Method::Head || status == 204 || status == 304 {
            true => Vec::new(),
            false => read_body(&mut reader, &headers, self.max_body).map_err(|err| match err {
                HttpError::Io(err) => timed(err),
                other => other,
            })?,
        };
        Ok(Response { status, reason, headers, body })
    }
}

/// A request as it is sent on one hop of its redirects.
struct Hop {
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
}

/// A URL split the way a request line needs it.
struct Target {
    base: BaseUrl,
    /// The path and query, as sent (`/` at least).
    path: String,
}

impl Target {
    /// `http(s)://host[:port][/path][?query]` (a `#fragment` dropped); no user in it, and
    /// nothing in the path that could end the request line.
    fn parse(url: &str) -> Option<Target> {
        let base = BaseUrl::parse(url)?;
        let rest = url.split_once("://")?.1;
        let path = rest.find(['/', '?']).map_or("", |at| &rest[at..]);
        let path = path.split('#').next().unwrap_or("");
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return None;
        }
        let path = match path.strip_prefix('?') {
            Some(query) => format!("/?{query}"),
            None if path.is_empty() => "/".to_owned(),
            None => path.to_owned(),
        };
        Some(Target { base, path })
    }

    fn origin(&self) -> (bool, &str, u16) {
        (self.base.tls, self.base.host.as_str(), self.base.port)
    }
}

fn request_head(target: &Target, hop: &Hop, length: usize) -> Result<Vec<u8>, HttpError> {
    let mut head = format!("{} {} HTTP/1.1\r\nHost: {}\r\n", hop.method.as_str(), target.path, target.base.authority());
    let has = |name: &str| hop.headers.iter().any(|(key, _)| key.eq_ignore_ascii_case(name));
    if !has("user-agent") {
        head.push_str(&format!("User-Agent: eden/{}\r\n", env!("CARGO_PKG_VERSION")));
    }
    for (name, value) in &hop.headers {
        let token =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
        let own = ["host", "content-length", "connection", "transfer-encoding"]
            .iter()
            .any(|own| name.eq_ignore_ascii_case(own));
        if !token || own || value.contains(['\r', '\n', '\0']) {
            return Err(HttpError::Header(name.chars().filter(|c| c.is_ascii_graphic()).take(64).collect()));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if length > 0 || hop.method == Method::Post {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    Ok(head.into_bytes())
}

/// The request a redirect asks for, or `None` when the answer is not one.
fn redirect(from: &Target, hop: &Hop, response: &Response) -> Result<Option<Hop>, HttpError> {
    if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.header("location") else { return Ok(None) };
    let url = if location.starts_with("http://") || location.starts_with("https://") {
        location.to_owned()
    } else if location.starts_with('/') && !location.starts_with("//") {
        format!("{}://{}{location}", if from.base.tls { "https" } else { "http" }, from.base.authority())
    } else {
        return Err(HttpError::Url(plain(location, 200)));
    };
    let to = Target::parse(&url).ok_or_else(|| HttpError::Url(plain(&url, 200)))?;
    if from.base.tls && !to.base.tls {
        return Err(HttpError::Downgrade(plain(&url, 200)));
    }
    let method = match (response.status, hop.method) {
        (301..=303, Method::Head) => Method::Head,
        (301..=303, _) => Method::Get,
        (_, method) => method,
    };
    let mut headers = hop.headers.clone();
    if to.origin() != from.origin() {
        headers.retain(|(name, _)| KEPT_ACROSS_ORIGINS.iter().any(|kept| name.eq_ignore_ascii_case(kept)));
    }
    if method != hop.method {
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
    }
    Ok(Some(Hop { method, url, headers }))
}

/// A connection whose every read and write waits only until the exchange's deadline.
struct Deadlined {
    connection: Connection,
    deadline: Instant,
}

impl Read for Deadlined {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero());
        let left = left.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut))?;
        self.connection.wait_at_most(Some(left))?;
        match self.connection.read(buffer) {
            // A TLS peer that closes without `close_notify`: what it framed has arrived.
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
            other => other,
        }
    }
}

/// An answer's head.
struct Head {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
}

/// The status, reason phrase and headers of the final answer's head (`1xx` interim answers
/// skipped).
fn read_answer_head(reader: &mut impl BufRead) -> Result<Head, HttpError> {
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            let read =
                reader.take((MAX_HEAD + 1 - head.len()) as u64).read_until(b'\n', &mut line).map_err(HttpError::Io)?;
            if read == 0 {
                return Err(HttpError::Malformed("the connection closed before the answer's head ended"));
            }
            head.extend_from_slice(&line);
            if head.len() > MAX_HEAD {
                return Err(HttpError::Malformed("the answer's head is too long"));
            }
            if line == b"\r\n" || line == b"\n" {
                break;
            }
        }
        let mut slots = [httparse::EMPTY_HEADER; 100];
        let mut parsed = httparse::Response::new(&mut slots);
        match parsed.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {}
            _ => return Err(HttpError::Malformed("the answer's head is not HTTP/1.1")),
        }
        let status = parsed.code.ok_or(HttpError::Malformed("no status"))?;
        let headers: Vec<(String, String)> = parsed
            .headers
            .iter()
            .map(|header| (header.name.to_owned(), String::from_utf8_lossy(header.value).trim().to_owned()))
            .collect();
        if (100..200).contains(&status) {
            continue;
        }
        return Ok(Head { status, reason: plain(parsed.reason.unwrap_or_default(), 64), headers });
    }
}

/// The body as the head frames it, at most `max` bytes.
fn read_body(reader: &mut impl BufRead, headers: &[(String, String)], max: usize) -> Result<Vec<u8>, HttpError> {
    let header = |name: &str| headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let chunked = header("transfer-encoding").is_some_and(|value| value.to_ascii_lowercase().ends_with("chunked"));
    if chunked {
        return read_chunks(reader, max);
    }
    match header("content-length") {
        Some(length) => {
            let length: usize = length.parse().map_err(|_| HttpError::Malformed("a malformed Content-Length"))?;
            if length > max {
                return Err(HttpError::TooLarge(max));
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).map_err(HttpError::Io)?;
            Ok(body)
        }
        None => {
            let mut body = Vec::new();
            reader.take(max as u64 + 1).read_to_end(&mut body).map_err(HttpError::Io)?;
            if body.len() > max {
                return Err(HttpError::TooLarge(max));
            }
            Ok(body)
        }
    }
}

/// A chunked body, decoded (RFC 9112): hexadecimal sizes, extensions ignored, trailers skipped.
fn read_chunks(reader: &mut impl BufRead, max: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let mut line = Vec::new();
        reader.take(1024).read_until(b'\n', &mut line).map_err(HttpError::Io)?;
        let digits = line.strip_suffix(b"\r\n").ok_or(HttpError::Malformed("a chunk size line without CRLF"))?;
        let digits = digits.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(digits)
            .ok()
            .filter(|digits| !digits.is_empty() && digits.len() <= 16 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|digits| usize::from_str_radix(digits, 16).ok())
            .ok_or(HttpError::Malformed("a malformed chunk size"))?;
        if size == 0 {
            loop {
                let mut trailer = Vec::new();
                if reader.take(8192).read_until(b'\n', &mut trailer).map_err(HttpError::Io)? == 0 || trailer == b"\r\n"
                {
                    return Ok(body);
                }
            }
        }
        if body.len().saturating_add(size) > max {
            return Err(HttpError::TooLarge(max));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).map_err(HttpError::Io)?;
        let mut end = [0u8; 2];
        reader.read_exact(&mut end).map_err(HttpError::Io)?;
        if end != *b"\r\n" {
            return Err(HttpError::Malformed("a chunk not ended by CRLF"));
        }
    }
}

/// What a server said, as plain text for a message: printable ASCII only, at most `max` characters.
fn plain(text: &str, max: usize) -> String {
    text.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::Mutex;

    /// A server on 127.0.0.1 that answers its connections in turn with `answers` (the
    /// test's own port in them as `{port}`), keeping each request it read.
    fn serve(answers: Vec<String>) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for (answer, stream) in answers.into_iter().zip(listener.incoming()) {
                let mut stream = BufReader::new(stream.unwrap());
                let mut request = String::new();
                while !request.ends_with("\r\n\r\n") && stream.read_line(&mut request).unwrap_or(0) > 0 {}
                let length = request
                    .lines()
                    .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
                    .map_or(0, |length| length.trim().parse::<usize>().unwrap());
                let mut body = vec![0; length];
                stream.read_exact(&mut body).unwrap();
                request.push_str(&String::from_utf8_lossy(&body));
                kept.lock().unwrap().push(request);
                let _ = stream.get_mut().write_all(answer.replace("{port}", &port.to_string()).as_bytes());
            }
        });
        (port, seen)
    }

    fn client() -> Client {
        Client::new(super::super::connect::client_config(false).unwrap(), Duration::from_secs(10))
    }

    fn post<'a>(url: &'a str, headers: &[(&str, &str)]) -> Request<'a> {
        let headers = headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Request { method: Method::Post, url, headers, body: b"payload" }
    }

    #[test]
    fn bodies_are_read_as_their_heads_frame_them() {
        let (port, seen) = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello and more".into(),
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: 1\r\n\r\n".into(),
            "HTTP/1.1 200 OK\r\n\r\nto the close".into(),
        ]);
        let url = format!("http://127.0.0.1:{port}/v1/traces?x=1#part");
        let answers: Vec<Response> = (0..3).map(|_| client().send(&post(&url, &[])).unwrap()).collect();
        let bodies: Vec<&[u8]> = answers.iter().map(|answer| answer.body.as_slice()).collect();
        assert_eq!(bodies, [&b"hello"[..], b"abcde", b"to the close"]);
        assert_eq!(answers[1].status, 201);
        let first = seen.lock().unwrap()[0].clone();
        assert!(first.starts_with("POST /v1/traces?x=1 HTTP/1.1\r\nHost: 127.0.0.1:"), "{first}");
        assert!(first.contains("Content-Length: 7\r\n") && first.ends_with("\r\n\r\npayload"), "{first}");
    }

    #[test]
    fn a_status_outside_2xx_is_an_error_that_says_it_plainly() {
        let (port, _) =
            serve(vec!["HTTP/1.1 401 Go away\r\nContent-Length: 22\r\n\r\n{\"message\":\"\x1b]2;bad\x07\"}".into()]);
        let url = format!("http://127.0.0.1:{port}/");
        let error = client().send(&post(&url, &[("Authorization", "Bearer s3cret")])).unwrap_err();
        assert!(matches!(error, HttpError::Status { status: 401, .. }), "{error:?}");
        let said = error.to_string();
        assert_eq!(said, "the server answered `401 Go away`: {\"message\":\"?]2;bad?\"}");
        assert!(!said.contains("s3cret") && !format!("{:?}", post(&url, &[("A", "s3cret")])).contains("s3cret"));
    }

    #[test]
    fn redirects_keep_credentials_with_their_origin() {
        // 127.0.0.1 → localhost is another origin: the caller's headers stay behind.
        let (port, seen) = serve(vec![
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: /moved\r\nContent-Length: 0\r\n\r\n".into(),
            "HTTP/1.1 308 Permanent Redirect\r\nLocation: http://localhost:{port}/elsewhere\r\n\r\n".into(),
            "HTTP/1.1 303 See Other\r\nLocation: /done\r\n\r\n".into(),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".into(),
        ]);
        let url = format!("http://127.0.0.1:{port}/start");
        let headers = [("Authorization", "Bearer s3cret"), ("x-api-key", "k3y"), ("Accept", "application/json")];
        let answer = client().send(&post(&url, &headers)).unwrap();
        assert_eq!(answer.body, b"ok");
        let seen = seen.lock().unwrap().clone();
        assert!(seen[1].starts_with("POST /moved ") && seen[1].contains("Bearer s3cret"), "same origin: {}", seen[1]);
        let elsewhere = &seen[2];
        assert!(elsewhere.starts_with("POST /elsewhere ") && elsewhere.contains(&format!("Host: localhost:{port}")));
        assert!(!elsewhere.contains("s3cret") && !elsewhere.contains("k3y"), "{elsewhere}");
        assert!(elsewhere.contains("Accept: application/json") && elsewhere.ends_with("payload"), "{elsewhere}");
        assert!(seen[3].starts_with("GET /done ") && !seen[3].ends_with("payload"), "303: {}", seen[3]);
    }

    #[test]
    fn endless_redirects_and_odd_targets_are_refused() {
        let (port, _) = serve(vec!["HTTP/1.1 302 Found\r\nLocation: /again\r\n\r\n".into(); MAX_REDIRECTS + 1]);
        let url = format!("http://127.0.0.1:{port}/");
        assert!(matches!(client().send(&post(&url, &[])), Err(HttpError::TooManyRedirects)));
        let (port, _) = serve(vec!["HTTP/1.1 302 Found\r\nLocation: //evil.example/x\r\n\r\n".into()]);
        let url = format!("http://127.0.0.1:{port}/");
        assert!(matches!(client().send(&post(&url, &[])), Err(HttpError::Url(_))));
        for bad in ["ftp://h/", "http://user:pw@h/", "http://h/a b", "http://h/a\r\nX: 1"] {
            assert!(Target::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(Target::parse("http://h?q=1").unwrap().path, "/?q=1");
        let injected = post("http://127.0.0.1:9/", &[("X-Evil", "a\r\nInjected: 1")]);
        assert!(matches!(client().send(&injected), Err(HttpError::Header(_))));
    }

    #[test]
    fn a_server_that_never_answers_costs_the_deadline_only() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let _held: Vec<_> = listener.incoming().take(1).collect();
            std::thread::sleep(Duration::from_secs(30));
        });
        let client = Client::new(super::super::connect::client_config(false).unwrap(), Duration::from_millis(300));
        let url = format!("http://127.0.0.1:{port}/");
        let started = Instant::now();
        assert!(matches!(client.send(&post(&url, &[])), Err(HttpError::Timeout(_))));
        // A loose bound: the deadline is 0.3 s; a busy machine may take longer to notice.
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_body_larger_than_allowed_is_refused() {
        let (port, _) = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n01234567890".into(),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n6\r\n678901\r\n0\r\n\r\n".into(),
            "HTTP/1.1 200 OK\r\n\r\n01234567890".into(),
        ]);
        let url = format!("http://127.0.0.1:{port}/");
        for _ in 0..3 {
            assert!(matches!(client().max_body(10).send(&post(&url, &[])), Err(HttpError::TooLarge(10))));
        }
    }

    #[test]
    fn tls_is_verified_and_never_redirected_down_to_plain_http() {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let server = Arc::new(server);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let answers = [
                "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret",
                "HTTP/1.1 302 Found\r\nLocation: http://localhost:1/\r\n\r\n",
                "",
            ];
            for (answer, tcp) in answers.iter().zip(listener.incoming()) {
                let session = rustls::ServerConnection::new(server.clone()).unwrap();
                let mut tls = rustls::StreamOwned::new(session, tcp.unwrap());
                // The whole request (it ends with its body) before answering: unread bytes
                // at the close would reset the connection.
                let (mut request, mut buffer) = (Vec::new(), [0u8; 4096]);
                while !request.ends_with(b"payload") {
                    match tls.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(read) => request.extend_from_slice(&buffer[..read]),
                    }
                }
                let _ = tls.write_all(answer.as_bytes());
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.der().clone()).unwrap();
        let trusting = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let client = Client::new(Arc::new(trusting), Duration::from_secs(10));
        let url = format!("https://localhost:{port}/");
        assert_eq!(client.send(&post(&url, &[])).unwrap().body, b"secret");
        let downgrade = client.send(&post(&url, &[]));
        assert!(matches!(downgrade, Err(HttpError::Downgrade(_))), "{downgrade:?}");
        // Verified: the platform's roots do not trust the test's own authority.
        let platform = Client::new(super::super::connect::client_config(true).unwrap(), Duration::from_secs(10));
        let refused = platform.send(&post(&url, &[])).unwrap_err();
        assert!(refused.to_string().contains("certificate"), "{refused}");
    }
}
