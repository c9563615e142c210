//! A test forge on 127.0.0.1: the subset of GitHub's REST API the pull-request loop uses
//! (FORGE.md), and its repositories over git's smart HTTP (`git http-backend`), where a push
//! needs the token as on GitHub (HTTP basic, `x-access-token:TOKEN`). Every request is kept with
//! the credential it carried, so a test can prove the token reached the forge on each call and
//! push, and nothing else did.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request the forge served.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Whether it carried the forge's token (a bearer for the API, basic for git).
    pub authorized: bool,
    /// Its `Authorization` header, as it came (empty when there was none).
    pub authorization: String,
    pub body: String,
}

/// A pull request on the test forge.
#[derive(Debug, Clone)]
pub struct Pull {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    pub labels: Vec<String>,
    pub open: bool,
    pub merged: bool,
}

/// A check run the forge's CI reports for a commit.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub name: String,
    /// `success`, `failure`, … (completed), or `None` while it runs.
    pub conclusion: Option<String>,
    /// Its job's log (an Actions job: served through a redirect elsewhere).
    pub log: String,
}

/// What the forge's CI says of a commit: `(bare repository, sha)` → its check runs.
pub type Ci = Box<dyn Fn(&Path, &str) -> Vec<CheckRun> + Send + Sync>;

/// What happens on the forge when a pull request is opened: `(bare repository, its branch)`.
pub type OnOpen = Box<dyn Fn(&Path, &str) + Send>;

pub struct State {
    pub token: String,
    /// The folder its bare repositories are in (`OWNER/NAME.git`).
    pub root: PathBuf,
    pub seen: Mutex<Vec<Seen>>,
    pub pulls: Mutex<Vec<Pull>>,
    pub ci: Mutex<Ci>,
    /// The reviews and inline comments (`pull_request_review_id`) every pull request gets.
    pub reviews: Mutex<Vec<Value>>,
    pub review_comments: Mutex<Vec<Value>>,
    /// Comments posted on pull requests: (number, body).
    pub comments: Mutex<Vec<(u64, String)>>,
    /// Answer the next API request with a rate limit (403, `Retry-After: 1`).
    pub rate_limit_next: AtomicBool,
    /// Run when a pull request is opened (a base that moves into a conflict, say).
    pub on_open: Mutex<Option<OnOpen>>,
    /// Answers of `304 Not Modified`.
    pub not_modified: std::sync::atomic::AtomicU64,
    /// Job logs by id, and their next id.
    logs: Mutex<Vec<String>>,
    port: std::sync::atomic::AtomicU16,
}

pub struct Forge {
    pub port: u16,
    pub state: Arc<State>,
    stop: Arc<AtomicBool>,
}

impl Forge {
    /// A forge holding `owner/name` as a bare repository, seeded from `from` (its `main`).
    pub fn start(token: &str, root: &Path, repository: &str, from: &Path) -> Forge {
        let bare = root.join(format!("{repository}.git"));
        std::fs::create_dir_all(bare.parent().unwrap()).unwrap();
        let status = Command::new("git")
            .args(["clone", "-q", "--bare"])
            .arg(from)
            .arg(&bare)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success(), "seed the forge's repository");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the test forge");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State {
            token: token.to_owned(),
            root: root.to_path_buf(),
            seen: Mutex::new(Vec::new()),
            pulls: Mutex::new(Vec::new()),
            ci: Mutex::new(Box::new(|_: &Path, _: &str| Vec::new())),
            reviews: Mutex::new(Vec::new()),
            review_comments: Mutex::new(Vec::new()),
            comments: Mutex::new(Vec::new()),
            rate_limit_next: AtomicBool::new(false),
            on_open: Mutex::new(None),
            not_modified: std::sync::atomic::AtomicU64::new(0),
            logs: Mutex::new(Vec::new()),
            port: std::sync::atomic::AtomicU16::new(port),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_state, thread_stop) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = thread_state.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        Forge { port, state, stop }
    }

    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn git_url(&self, repository: &str) -> String {
        format!("http://127.0.0.1:{}/git/{repository}.git", self.port)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.state.pulls.lock().unwrap().clone()
    }

    /// The forge's CI from now on.
    pub fn set_ci(&self, ci: impl Fn(&Path, &str) -> Vec<CheckRun> + Send + Sync + 'static) {
        *self.state.ci.lock().unwrap() = Box::new(ci);
    }

    /// The tip of `branch` in `owner/name` on the forge.
    pub fn tip(&self, repository: &str, branch: &str) -> Option<String> {
        tip(&self.state.root.join(format!("{repository}.git")), branch)
    }
}

impl Drop for Forge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn tip(bare: &Path, branch: &str) -> Option<String> {
    let output = Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")])
        .current_dir(bare)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

struct Request {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

fn read_request(stream: &mut TcpStream) -> std::io::Result<Request> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default().to_owned();
    let (path, query) =
        target.split_once('?').map_or((target.clone(), String::new()), |(p, q)| (p.to_owned(), q.to_owned()));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let mut request = Request { method, path, query, headers, body: Vec::new() };
    if request.header("Expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if request.header("Transfer-Encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            request.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = request.header("Content-Length").and_then(|l| l.parse::<usize>().ok()) {
        request.body = vec![0; length];
        reader.read_exact(&mut request.body)?;
    }
    Ok(request)
}

fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &[u8]) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

fn respond_json(stream: &mut TcpStream, status: u16, value: &Value) -> std::io::Result<()> {
    respond(stream, status, &[("Content-Type", "application/json".to_owned())], value.to_string().as_bytes())
}

fn serve(mut stream: TcpStream, state: &State) -> std::io::Result<()> {
    let request = read_request(&mut stream)?;
    let authorization = request.header("Authorization").unwrap_or_default().to_owned();
    let git = request.path.starts_with("/git/");
    let authorized = if git {
        authorization == format!("Basic {}", base64(&format!("x-access-token:{}", state.token)))
    } else {
        authorization == format!("Bearer {}", state.token)
    };
    state.seen.lock().unwrap().push(Seen {
        method: request.method.clone(),
        path: request.path.clone(),
        authorized,
        authorization: authorization.clone(),
        body: String::from_utf8_lossy(&request.body).into_owned(),
    });
    if git {
        if !authorized {
            let headers = [("WWW-Authenticate", "Basic realm=\"test forge\"".to_owned())];
            return respond(&mut stream, 401, &headers, b"authentication required\n");
        }
        return http_backend(&mut stream, state, &request);
    }
    // A job log's short-lived download, on another origin: no credential needed (or wanted).
    if let Some(id) = request.path.strip_prefix("/download/job/") {
        let log = id.parse::<usize>().ok().and_then(|id| state.logs.lock().unwrap().get(id).cloned());
        return match log {
            Some(log) => respond(&mut stream, 200, &[("Content-Type", "text/plain".to_owned())], log.as_bytes()),
            None => respond(&mut stream, 404, &[], b""),
        };
    }
    if !authorized {
        return respond_json(&mut stream, 401, &json!({ "message": "Bad credentials" }));
    }
    if state.rate_limit_next.swap(false, Ordering::SeqCst) {
        let headers = [("Retry-After", "1".to_owned()), ("X-RateLimit-Remaining", "0".to_owned())];
        let body = json!({ "message": "API rate limit exceeded" }).to_string();
        return respond(&mut stream, 403, &headers, body.as_bytes());
    }
    let (status, answer, location) = api(state, &request);
    if let Some(location) = location {
        return respond(&mut stream, 302, &[("Location", location)], b"");
    }
    let body = answer.to_string();
    let etag = format!("\"{:x}\"", fnv(body.as_bytes()));
    if request.method == "GET" && status == 200 && request.header("If-None-Match") == Some(etag.as_str()) {
        state.not_modified.fetch_add(1, Ordering::SeqCst);
        return respond(&mut stream, 304, &[("ETag", etag)], b"");
    }
    respond(&mut stream, status, &[("Content-Type", "application/json".to_owned()), ("ETag", etag)], body.as_bytes())
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x100000001b3))
}

/// Does `head` merge into `base` without a conflict?
fn merges_cleanly(bare: &Path, base: &str, head: &str) -> bool {
    Command::new("git")
        .args(["merge-tree", "--write-tree", base, head])
        .current_dir(bare)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// The REST subset, for `/repos/OWNER/NAME/…` of a repository the forge holds.
fn api(state: &State, request: &Request) -> (u16, Value, Option<String>) {
    let (status, value) = match api_jobs(state, request) {
        Some(Ok(location)) => return (302, Value::Null, Some(location)),
        Some(Err(status)) => (status, json!({ "message": "Not Found" })),
        None => api_json(state, request),
    };
    (status, value, None)
}

/// `GET /repos/O/N/actions/jobs/ID/logs`: a redirect to the log on another origin.
fn api_jobs(state: &State, request: &Request) -> Option<Result<String, u16>> {
    let parts: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    let ["repos", _, _, "actions", "jobs", id, "logs"] = parts.as_slice() else { return None };
    let id = id.parse::<usize>().ok().filter(|id| *id < state.logs.lock().unwrap().len());
    let port = state.port.load(Ordering::SeqCst);
    Some(id.map(|id| format!("http://localhost:{port}/download/job/{id}")).ok_or(404))
}

fn api_json(state: &State, request: &Request) -> (u16, Value) {
    let parts: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    let ["repos", owner, name, rest @ ..] = parts.as_slice() else { return (404, json!({ "message": "Not Found" })) };
    let bare = state.root.join(format!("{owner}/{name}.git"));
    if !bare.is_dir() {
        return (404, json!({ "message": "Not Found" }));
    }
    let base_url = format!("https://forge.test/{owner}/{name}");
    let pull_json = |pull: &Pull| {
        let clean = pull.merged || merges_cleanly(&bare, &pull.base, &pull.head);
        json!({
            "number": pull.number,
            "html_url": format!("{base_url}/pull/{}", pull.number),
            "state": if pull.open { "open" } else { "closed" },
            "merged": pull.merged,
            "mergeable": clean,
            "mergeable_state": if clean { "clean" } else { "dirty" },
            "head": { "ref": pull.head, "sha": tip(&bare, &pull.head).unwrap_or_default() },
            "base": { "ref": pull.base, "sha": tip(&bare, &pull.base).unwrap_or_default() },
        })
    };
    let mut pulls = state.pulls.lock().unwrap();
    match (request.method.as_str(), rest) {
        ("GET", []) => (200, json!({ "full_name": format!("{owner}/{name}") })),
        ("GET", ["branches", branch]) => match tip(&bare, branch) {
            Some(sha) => (200, json!({ "name": branch, "commit": { "sha": sha } })),
            None => (404, json!({ "message": "Branch not found" })),
        },
        ("GET", ["pulls"]) => {
            let head = query_value(&request.query, "head").unwrap_or_default();
            let open: Vec<Value> = pulls
                .iter()
                .filter(|pull| pull.open && (head.is_empty() || head == format!("{owner}:{}", pull.head)))
                .map(pull_json)
                .collect();
            (200, Value::Array(open))
        }
        ("POST", ["pulls"]) => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let field = |key: &str| body[key].as_str().unwrap_or_default().to_owned();
            if tip(&bare, &field("base")).is_none() || tip(&bare, &field("head")).is_none() {
                return (
                    422,
                    json!({ "message": "Validation Failed", "errors": [{ "message": "base or head invalid" }] }),
                );
            }
            let pull = Pull {
                number: pulls.len() as u64 + 1,
                head: field("head"),
                base: field("base"),
                title: field("title"),
                body: field("body"),
                draft: body["draft"].as_bool().unwrap_or(false),
                labels: Vec::new(),
                open: true,
                merged: false,
            };
            if let Some(on_open) = state.on_open.lock().unwrap().as_ref() {
                on_open(&bare, &field("head"));
            }
            let answer = pull_json(&pull);
            pulls.push(pull);
            (201, answer)
        }
        ("GET", ["pulls", number]) => match pulls.iter().find(|pull| pull.number.to_string() == *number) {
            Some(pull) => (200, pull_json(pull)),
            None => (404, json!({ "message": "Not Found" })),
        },
        ("POST", ["issues", number, "labels"]) => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let Some(pull) = pulls.iter_mut().find(|pull| pull.number.to_string() == *number) else {
                return (404, json!({ "message": "Not Found" }));
            };
            pull.labels
                .extend(body["labels"].as_array().into_iter().flatten().filter_map(|l| l.as_str().map(str::to_owned)));
            (200, json!(pull.labels.iter().map(|name| json!({ "name": name })).collect::<Vec<_>>()))
        }
        ("GET", ["commits", sha, "check-runs"]) => {
            let runs = (state.ci.lock().unwrap())(&bare, sha);
            let mut logs = state.logs.lock().unwrap();
            let runs: Vec<Value> = runs
                .into_iter()
                .map(|run| {
                    logs.push(run.log.clone());
                    json!({
                        "id": logs.len() - 1,
                        "name": run.name,
                        "status": if run.conclusion.is_some() { "completed" } else { "in_progress" },
                        "conclusion": run.conclusion,
                        "output": { "title": "CI", "summary": run.log.lines().last().unwrap_or_default() },
                        "app": { "slug": "github-actions" },
                    })
                })
                .collect();
            (200, json!({ "total_count": runs.len(), "check_runs": runs }))
        }
        ("GET", ["commits", _, "status"]) => (200, json!({ "state": "pending", "statuses": [] })),
        ("GET", ["pulls", _, "reviews"]) => (200, Value::Array(state.reviews.lock().unwrap().clone())),
        ("GET", ["pulls", _, "comments"]) => (200, Value::Array(state.review_comments.lock().unwrap().clone())),
        ("POST", ["issues", number, "comments"]) => {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let number = number.parse().unwrap_or(0);
            state.comments.lock().unwrap().push((number, body["body"].as_str().unwrap_or_default().to_owned()));
            (201, json!({ "id": 1 }))
        }
        ("PUT", ["pulls", number, "merge"]) => {
            let Some(pull) = pulls.iter_mut().find(|pull| pull.number.to_string() == *number) else {
                return (404, json!({ "message": "Not Found" }));
            };
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            if body["sha"].as_str() != tip(&bare, &pull.head).as_deref() {
                return (409, json!({ "message": "Head branch was modified" }));
            }
            (pull.merged, pull.open) = (true, false);
            (200, json!({ "merged": true }))
        }
        _ => (404, json!({ "message": "Not Found" })),
    }
}

fn query_value(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(byte);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// git's smart HTTP through `git http-backend`, as CGI.
fn http_backend(stream: &mut TcpStream, state: &State, request: &Request) -> std::io::Result<()> {
    let path_info = request.path.trim_start_matches("/git");
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &state.root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("REQUEST_METHOD", &request.method)
        .env("PATH_INFO", path_info)
        .env("QUERY_STRING", &request.query)
        .env("CONTENT_TYPE", request.header("Content-Type").unwrap_or_default())
        .env("CONTENT_LENGTH", request.body.len().to_string())
        .env("REMOTE_USER", "x-access-token")
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(encoding) = request.header("Content-Encoding") {
        command.env("HTTP_CONTENT_ENCODING", encoding);
    }
    if let Some(protocol) = request.header("Git-Protocol") {
        command.env("GIT_PROTOCOL", protocol);
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let body = request.body.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let mut output = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut output)?;
    let _ = writer.join();
    child.wait()?;
    let split = output.windows(4).position(|w| w == b"\r\n\r\n").map(|at| (at, 4));
    let split = split.or_else(|| output.windows(2).position(|w| w == b"\n\n").map(|at| (at, 2)));
    let Some((at, gap)) = split else { return respond(stream, 500, &[], b"bad CGI output") };
    let head = String::from_utf8_lossy(&output[..at]).into_owned();
    let mut status = 200;
    let mut headers = Vec::new();
    for line in head.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        if key.eq_ignore_ascii_case("Status") {
            status = value.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(200);
        } else {
            headers.push((key.trim(), value.trim().to_owned()));
        }
    }
    respond(stream, status, &headers, &output[at + gap..])
}

fn base64(text: &str) -> String {
    const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(TABLE[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_is_rfc_4648() {
    assert_eq!(base64("x-access-token:abc"), "eC1hY2Nlc3MtdG9rZW46YWJj");
    assert_eq!(base64("ab"), "YWI=");
    assert_eq!(base64("a"), "YQ==");
}
