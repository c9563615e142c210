//! The docker and podman sandboxes on the real engines. The test image is a Debian minbase
//! rootfs with git (debootstrap), imported into each engine once per machine. `.ci/run`
//! installs and starts the engines; elsewhere a missing engine skips its tests with a note.

use crate::support::{interrupt, Run, TestEnv};
use nix::sys::signal::Signal;
use std::process::Command;
use std::sync::Mutex;

pub const IMAGE: &str = "localhost/eden-test:git";
static BUILD: Mutex<()> = Mutex::new(());

/// Is `engine` usable, with the test image in it? Builds the image the first time.
pub fn ready(engine: &str) -> bool {
    let _serial = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let works = |args: &[&str]| Command::new(engine).args(args).output().is_ok_and(|o| o.status.success());
    if !works(&["version", "--format", "{{.Server.Version}}"]) {
        crate::support::skip(&format!("`{engine}` is not installed or not running"));
        return false;
    }
    if works(&["image", "inspect", IMAGE]) {
        return true;
    }
    let rootfs = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("eden-test-rootfs");
    if !rootfs.join("usr/bin/git").exists() {
        let _ = std::fs::remove_dir_all(&rootfs);
        let status = Command::new("debootstrap")
            .args(["--variant=minbase", "--include=git,ca-certificates", "bookworm"])
            .arg(&rootfs)
            .arg("http://deb.debian.org/debian")
            .output()
            .expect("debootstrap runs (apt-get install debootstrap)");
        assert!(status.status.success(), "debootstrap failed: {}", String::from_utf8_lossy(&status.stderr));
    }
    let import = Command::new("sh")
        .arg("-c")
        .arg(format!("tar -C '{}' -c . | {engine} import - {IMAGE}", rootfs.display()))
        .output()
        .unwrap();
    assert!(import.status.success(), "import failed: {}", String::from_utf8_lossy(&import.stderr));
    true
}

pub fn containers_of(engine: &str, repo: &std::path::Path) -> Vec<String> {
    let output = Command::new(engine)
        .args(["ps", "-a", "--filter", &format!("label=eden.repo={}", repo.display()), "--format", "{{.Names}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
}

/// A manifest whose agent is `sh -c SCRIPT` inside the image.
pub fn manifest(engine: &str, script: &str, extra_sandbox: &str) -> String {
    let script = script.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "name = \"box\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; {script}\"]\n\
         [sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\n{extra_sandbox}\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
    )
}

pub const COMMIT: &str = "id -u > owner.txt && git add owner.txt && git -c user.name=box -c user.email=box@example.com commit -qm 'from the box' && echo '<promise>COMPLETE</promise>'";

fn writes_commits_and_merges(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let run = env.run_manifest(&manifest(engine, COMMIT, ""), &[]);
    run.assert_code(0);
    let record = run.record();
    assert_eq!(record["sandbox"], engine);
    assert!(record["container"]["name"].as_str().unwrap().starts_with("eden-"));
    assert_eq!(record["merged_into"], "main", "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[0], "from the box");
    // The agent ran as the host user, so its files belong to the host user.
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(env.repo.join("owner.txt")).unwrap().uid();
    assert_eq!(owner, nix::unistd::getuid().as_raw());
    assert_eq!(std::fs::read_to_string(env.repo.join("owner.txt")).unwrap().trim(), owner.to_string());
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
    env.assert_pristine();
}

/// Three iterations: commits in the first and third, none in the second (the wrapper's note of
/// the tip then spares asking the container). Every commit comes back, in order, and the note
/// never shows.
fn commits_come_back_after_every_iteration(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; \
        if [ $n != 2 ]; then echo $n > file-$n.txt && git add file-$n.txt && git -c user.name=box -c user.email=box@example.com commit -qm commit-$n; fi; \
        echo done-$n; [ $n = 3 ] && echo '<promise>COMPLETE</promise>'; exit 0";
    let run = env.run_manifest(&manifest(engine, script, "").replace("max_iterations = 1", "max_iterations = 3"), &[]);
    run.assert_code(1);
    let record = run.record();
    let per_iteration: Vec<usize> =
        record["iterations"].as_array().unwrap().iter().map(|i| i["commits"].as_array().unwrap().len()).collect();
    assert_eq!(per_iteration, [1, 0, 1], "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[..2], ["commit-3", "commit-1"]);
    assert!(!run.stderr.contains("eden tip"), "{}", run.stderr);
    // `count` was never committed: it came back as uncommitted work.
    assert!(run.stderr.contains("the agent left 1 file(s) uncommitted"), "{}", run.stderr);
}

/// Strategy `head` works in the checkout, which holds `.eden/` (other runs' worktrees and
/// records, `.eden/.env`): none of it is copied into the sandbox; the agent's commit lands on
/// the checkout's branch and its uncommitted file in the checkout.
fn head_leaves_eden_s_folder_outside(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    env.write(".eden/.env", "TOKEN=from-dotenv\n");
    std::fs::write(env.repo.join(".git/info/exclude"), ".eden/\n").unwrap();
    let script = "if [ -e .eden ]; then echo EDEN-INSIDE; fi; echo h > h.txt && git add h.txt && \
        git -c user.name=box -c user.email=box@example.com commit -qm head-commit && echo d > d.txt; echo '<promise>COMPLETE</promise>'";
    let run =
        env.run_manifest(&manifest(engine, script, "").replace("[loop]", "[branch]\nstrategy = \"head\"\n[loop]"), &[]);
    run.assert_code(0);
    assert!(!run.stderr.contains("EDEN-INSIDE"), "{}", run.stderr);
    assert_eq!(env.log_subjects("main")[0], "head-commit");
    assert_eq!(std::fs::read_to_string(env.repo.join("d.txt")).unwrap(), "d\n");
}

/// The image has no git identity: the agent's plain `git commit` works all the same, as the
/// person (the sandbox's repository carries the identity their git uses).
fn the_agent_commits_as_the_person(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = "echo x > x.txt && git add x.txt && git commit -qm plain && echo '<promise>COMPLETE</promise>'";
    let run = env.run_manifest(&manifest(engine, script, ""), &[]);
    run.assert_code(0);
    assert_eq!(env.git(&["log", "-1", "--format=%an <%ae>", "main"]), "Test <test@example.com>");
}

fn ctrl_c_leaves_no_container(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let mount = format!("mounts = [{{ host = \"{}\", sandbox = \"/shared\" }}]", shared.display());
    let script = "echo half > half.txt; touch /shared/ready; sleep 300";
    let (run, _) = interrupt(&env, &manifest(engine, script, &mount), &shared.join("ready"), &[Signal::SIGINT]);
    run.assert_code(130);
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
    let record = run.record();
    let worktree = record["preserved_worktree"].as_str().expect("the dirty worktree is kept");
    assert_eq!(std::fs::read_to_string(format!("{worktree}/half.txt")).unwrap(), "half\n");
}

fn network_none_has_no_network(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    // (`/proc/net/dev`, which gVisor has too.)
    let script = "echo \"interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')\"; echo '<promise>COMPLETE</promise>'";
    let run = env.run_manifest(&manifest(engine, script, "network = \"none\""), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| interfaces: lo \n"), "only loopback: {}", run.stderr);
}

/// An HTTP server of the test's own, in a container of its own on the engine's bridge (this
/// machine only); removed when dropped. `address()` is its IP.
pub(crate) struct TestServer {
    engine: &'static str,
    name: String,
}

impl TestServer {
    pub(crate) fn start(engine: &'static str, tag: &str) -> TestServer {
        let name = format!("eden-test-server-{}-{tag}", std::process::id());
        let serve = "use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => 8080, Listen => 16, ReuseAddr => 1) or die; \
                     while (my $c = $s->accept) { print $c \"HTTP/1.0 200 OK\\r\\n\\r\\nhello\\n\"; close $c }";
        let output = Command::new(engine)
            .args(["run", "-d", "--rm", "--name", &name, IMAGE, "perl", "-e", serve])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        TestServer { engine, name }
    }

    pub(crate) fn address(&self) -> String {
        let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
        let output = Command::new(self.engine).args(["inspect", "--format", format, &self.name]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = Command::new(self.engine).args(["rm", "-f", &self.name]).output();
    }
}

/// `network = "allowlist"`: the agent reaches the allowed server and nothing else — not the
/// other server, not another DNS server — and cannot change the rules (no `CAP_NET_ADMIN`).
fn the_allowlist_lets_through_only_what_it_allows(engine: &'static str) {
    if !ready(engine) {
        return;
    }
    let (allowed, denied) = (TestServer::start(engine, "allowed"), TestServer::start(engine, "denied"));
    let (allowed_ip, denied_ip) = (allowed.address(), denied.address());
    let env = TestEnv::new();
    let probe = |label: &str, ip: &str, port: u16| {
        format!(
            "if timeout 5 bash -c 'exec 3<>/dev/tcp/{ip}/{port}'; then echo {label}-OPEN; else echo {label}-SHUT; fi; "
        )
    };
    // The host's own `iptables` and `ip` (same Debian as the test image), mounted in, so the
    // agent can try to open the way itself: flush the rules, open the policy, reroute.
    let undo = "export LD_LIBRARY_PATH=/host/lib XTABLES_LIBDIR=/host/lib/xtables; \
                /host/sbin/xtables-nft-multi iptables -F OUTPUT; echo \"flush $?\"; \
                /host/sbin/xtables-nft-multi iptables -P OUTPUT ACCEPT; echo \"policy $?\"; \
                /host/bin/ip route replace default dev eth0; echo \"route $?\"; ";
    let script = format!(
        "{}{}{}{}caps=$(grep CapEff /proc/self/status | cut -f2); echo \"netadmin $(( (0x$caps >> 12) & 1 ))\"; {undo}\
         export http_proxy=http://{denied_ip}:8080 https_proxy=http://{denied_ip}:8080; {}{}echo '<promise>COMPLETE</promise>'",
        probe("ALLOWED", &allowed_ip, 8080),
        probe("DENIED", &denied_ip, 8080),
        probe("DNS-ELSEWHERE", "1.1.1.1", 53),
        probe("ALLOWED-OTHER-PORT", &allowed_ip, 8081),
        probe("ALLOWED-AGAIN", &allowed_ip, 8080),
        probe("DENIED-AFTER", &denied_ip, 8080),
    );
    let mounts = "mounts = [{ host = \"/usr/sbin\", sandbox = \"/host/sbin\", read_only = true }, \
                  { host = \"/usr/bin\", sandbox = \"/host/bin\", read_only = true }, \
                  { host = \"/usr/lib/x86_64-linux-gnu\", sandbox = \"/host/lib\", read_only = true }]";
    let extra = format!("network = \"allowlist\"\nallow = [\"{allowed_ip}:8080\"]\n{mounts}");
    let run = env.run_manifest(&manifest(engine, &script, &extra), &[]);
    run.assert_code(0);
    for line in [
        "| ALLOWED-OPEN",
        "| DENIED-SHUT",
        "| DNS-ELSEWHERE-SHUT",
        "| ALLOWED-OTHER-PORT-SHUT",
        "| ALLOWED-AGAIN-OPEN",
        "| DENIED-AFTER-SHUT",
        "| netadmin 0",
    ] {
        assert!(run.stderr.contains(line), "{line}: {}", run.stderr);
    }
    // Each attempt to undo the rules failed (a non-zero status).
    for attempt in ["flush", "policy", "route"] {
        let status = run.stderr.lines().find_map(|line| line.split(&format!("| {attempt} ")).nth(1)).unwrap_or("?");
        let ran = !["0", "?", "126", "127"].contains(&status);
        assert!(ran, "`{attempt}` must run and fail inside: {status}\n{}", run.stderr);
    }
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
}

/// An allowed destination that cannot be reached fails the self-test: exit 6 before the agent
/// runs, and no container is left.
fn a_failing_allowlist_self_test_stops_the_run(engine: &'static str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let marker = env.root().join("agent-ran");
    let script = format!("touch {}; echo '<promise>COMPLETE</promise>'", marker.display());
    let extra = "network = \"allowlist\"\nallow = [\"192.0.2.55:8080\"]";
    let run = env.run_manifest(&manifest(engine, &script, extra), &[]);
    run.assert_code(6);
    assert!(run.stderr.contains("self-test"), "{}", run.stderr);
    assert!(!marker.exists(), "the agent never ran");
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
}

/// The self-test proves refusal against eden's own listener on the host (the sandbox's
/// gateway), which the sandbox reaches before the rules: a firewall that installs nothing (an
/// `iptables-restore` that only says yes) fails it, although an address nobody answers would
/// have been "refused" by the network anyway.
fn a_firewall_that_does_nothing_fails_the_self_test(engine: &'static str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let fake = env.root().join("fake-iptables");
    std::fs::create_dir_all(&fake).unwrap();
    for tool in ["iptables-restore", "ip6tables-restore"] {
        std::fs::write(
            fake.join(tool),
            "#!/bin/sh
cat >/dev/null
exit 0
",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join(tool), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let marker = env.root().join("agent-ran");
    let script = format!("touch {}; echo '<promise>COMPLETE</promise>'", marker.display());
    let extra = "network = \"allowlist\"\nallow = [\"192.0.2.55:8080\"]";
    let path = env.write_manifest(&manifest(engine, &script, extra));
    let mut command = env.eden_command(&["run", path.to_str().unwrap()]);
    let path_var = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default());
    command.env("PATH", path_var);
    let run = Run::from(command.output().unwrap());
    run.assert_code(6);
    assert!(run.stderr.contains("was not refused (it reached eden's own listener)"), "{}", run.stderr);
    assert!(!marker.exists(), "the agent never ran");
}

fn limits_are_enforced(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    // A fork bomb in miniature: 200 sleepers against a limit of 30 processes.
    // dash gives up at the first failed fork, so count the forks in a child shell.
    let script = "n=$(sh -c 'for i in $(seq 200); do sleep 30 >/dev/null 2>&1 & echo x; done' 2>/dev/null | wc -l); echo \"started $n\"; echo '<promise>COMPLETE</promise>'";
    // Under gVisor the limit is the whole sandbox's, gVisor's own host threads counted (with the
    // ptrace platform, many per process): a small one keeps the sandbox from starting (its start
    // can hang the engine), a workload of 200 processes ends it even under 1000. Only the
    // memory limit is tried there.
    let gvisor = std::env::var("EDEN_TEST_RUNTIME").is_ok_and(|runtime| runtime.starts_with("runsc"));
    if !gvisor {
        let run = env.run_manifest(&manifest(engine, script, "pids_limit = 30"), &[]);
        run.assert_code(0);
        let started = crate::containers::started_count(&run);
        assert!(started < 30, "pids_limit caps the processes: {started} started");
    }
    // Memory: a process holding 300 MB in a 64 MB container is killed. The result goes to a
    // file: very short-lived execs can lose their output under load (podman).
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let limits = format!("memory = \"64m\"\nmounts = [{{ host = \"{}\", sandbox = \"/shared\" }}]", shared.display());
    let script = "head -c 300000000 /dev/zero | tail > /dev/null; echo \"tail exit $?\" > /shared/result";
    let run = env.run_manifest(&manifest(engine, script, &limits), &[]);
    let result = std::fs::read_to_string(shared.join("result"));
    if gvisor {
        // gVisor's memory is the sandbox's: the hog takes the whole sandbox down with it.
        assert!(result.is_err() || result.as_deref().is_ok_and(|r| r == "tail exit 137\n"), "{result:?}");
        assert_ne!(run.code, 0, "{}", run.stderr);
        remove_volumes_of(engine, &std::fs::canonicalize(&env.repo).unwrap());
    } else {
        let result = result.unwrap_or_else(|_| panic!("no result: {}", run.stderr));
        assert_eq!(result, "tail exit 137\n", "the memory hog is OOM-killed");
    }
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty());
}

fn env_values_stay_out_of_ps_and_logs(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let secret = format!("s3cret-{}", std::process::id());
    // The agent proves the value arrived (by its hash) and stays alive long enough to be seen.
    let script = "printf %s \"$EDEN_TEST_TOKEN\" | sha256sum; sleep 2; echo '<promise>COMPLETE</promise>'";
    let manifest = format!(
        "{}[logging]\nfile = \".eden/logs/run.log\"\n",
        manifest(engine, script, "")
            .replace("[sandbox]", "env = { EDEN_TEST_TOKEN = \"${EDEN_TEST_TOKEN_SOURCE}\" }\n[sandbox]")
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("EDEN_TEST_TOKEN_SOURCE", &secret);
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    // While it runs, no process's command line may carry the value.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
                assert!(
                    !String::from_utf8_lossy(&cmdline).contains(&secret),
                    "secret on a command line: {:?}",
                    entry.path()
                );
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(0);
    let hash = Command::new("sh").arg("-c").arg(format!("printf %s '{secret}' | sha256sum")).output().unwrap();
    let hash = String::from_utf8_lossy(&hash.stdout).split_whitespace().next().unwrap().to_owned();
    assert!(run.stderr.contains(&hash), "the agent received the value");
    let log = std::fs::read_to_string(env.repo.join(".eden/logs/run.log")).unwrap();
    for (what, text) in [("stderr", &run.stderr), ("record", &run.stdout), ("log", &log)] {
        assert!(!text.contains(&secret), "the value leaked into the {what}");
    }
}

fn missing_image_is_a_clear_error(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let run = env.run_manifest(&manifest(engine, "true", "").replace(IMAGE, "localhost/eden-no-such-image:1"), &[]);
    run.assert_code(6);
    assert_eq!(
        run.error_text(),
        format!(
            "error: image `localhost/eden-no-such-image:1` is not available to {engine}\n\
             hint: build it first: `eden image build --engine {engine} --tag localhost/eden-no-such-image:1` (from `Dockerfile.eden`, which `eden init --sandbox {engine}` writes); eden never pulls images"
        )
    );
    env.assert_pristine();
    assert!(!env.repo.join(".eden").exists(), "nothing created");
}

/// The real Claude Code (its native executable, mounted into the image) against the model server
/// on the host's network: its transcript, written inside to the shared state folder, is captured.
fn claude_transcripts_are_captured_from_inside(engine: &str) {
    let Some(claude) = crate::real_agents::require("claude") else { return };
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
    let claude = std::fs::canonicalize(claude).unwrap();
    let manifest = format!(
        "name = \"boxed\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"claude-code\"\n\
         binary = \"/opt/claude\"\nenv = {{ ANTHROPIC_BASE_URL = \"${{ANTHROPIC_BASE_URL}}\", ANTHROPIC_API_KEY = \"${{ANTHROPIC_API_KEY}}\", \
         DISABLE_TELEMETRY = \"1\", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", CLAUDE_CODE_MAX_RETRIES = \"0\" }}\n\
         [sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"host\"\n\
         mounts = [{{ host = \"{}\", sandbox = \"/opt/claude\", read_only = true }}]\n\
         [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
        claude.display()
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.envs(crate::real_agents::claude_env(&env, &server));
    let run = Run::from(command.output().unwrap());
    run.assert_code(0);
    let record = run.json();
    crate::real_agents::assert_transcript(&env, &record, 0);
    // Written in the run's private state folder, never the person's own.
    let source = record["iterations"][0]["transcript"]["source"].as_str().unwrap();
    let private = std::fs::canonicalize(&env.repo).unwrap().join(".eden/agent-state");
    assert!(source.starts_with(&private.display().to_string()), "{source}");
    assert!(!env.root().join("claude/projects").exists(), "nothing written to the person's folder");
    assert!(!private.exists() || std::fs::read_dir(&private).unwrap().next().is_none(), "the private folder is gone");
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
}

/// The real Codex, pi, opencode and Copilot CLIs inside the image (node and the npm packages mounted
/// read-only from the host, at the same paths), each against the model server on the host's
/// network: each one's transcript, written inside, is captured (opencode's through its own
/// `export`, run in the container).
fn transcripts_of_node_agents_are_captured_from_inside(engine: &str) {
    use crate::real_agents::{CODEX, COPILOT, OPENCODE, PI};
    let Some(node) = crate::real_agents::require("node") else { return };
    if !ready(engine) {
        return;
    }
    let node = std::fs::canonicalize(node).unwrap();
    for agent in [CODEX, PI, OPENCODE, COPILOT] {
        let Some(binary) = crate::real_agents::require(agent.binary) else { continue };
        let binary = std::fs::canonicalize(binary).unwrap();
        let modules = binary.ancestors().find(|dir| dir.ends_with("node_modules")).unwrap().to_path_buf();
        let env = TestEnv::new();
        let server = crate::model_server::ModelServer::start(std::fs::canonicalize(&env.repo).unwrap(), false);
        let mut vars = (agent.configure)(&env, &server);
        // A config file outside the shared folders is moved into the agent's own (mounted) one.
        for (key, value) in &mut vars {
            if key == "OPENCODE_CONFIG" {
                let inside = env.home().join(".config/opencode/opencode.json");
                std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
                std::fs::copy(&*value, &inside).unwrap();
                *value = inside.display().to_string();
            }
        }
        let passed: Vec<String> = vars.iter().map(|(key, _)| format!("{key} = \"${{{key}}}\"")).collect();
        let model = agent.model.map(|m| format!("model = \"{m}\"\n")).unwrap_or_default();
        let manifest = format!(
            "name = \"boxed\"\nprompt = \"create hello.txt and commit it\"\n[agent]\nkind = \"{}\"\n{model}\
             binary = \"{}\"\nenv = {{ {} }}\n[sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nnetwork = \"host\"\n\
             mounts = [{{ host = \"{}\", sandbox = \"/usr/local/bin/node\", read_only = true }}, \
             {{ host = \"{}\", sandbox = \"{}\", read_only = true }}]\n\
             [loop]\nmax_iterations = 1\nidle_timeout = \"90s\"\n",
            agent.kind,
            binary.display(),
            passed.join(", "),
            node.display(),
            modules.display(),
            modules.display(),
        );
        let path = env.write_manifest(&manifest);
        let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
        command.envs(vars);
        let run = Run::from(command.output().unwrap());
        assert_eq!(run.code, 0, "{}: {}", agent.kind, run.stderr);
        crate::real_agents::assert_transcript(&env, &run.json(), 0);
        // Copilot's provider key is held by eden (its base URL set); the others' not yet.
        let held = &run.json()["held_keys"];
        match agent.kind {
            "copilot" => assert_eq!(held[0]["var"], "COPILOT_PROVIDER_API_KEY", "{held}"),
            _ => assert!(held.is_null(), "{}: {held}", agent.kind),
        }
        assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
    }
}

macro_rules! engine_tests {
    ($engine:ident) => {
        mod $engine {
            #[test]
            fn writes_commits_and_merges() {
                super::writes_commits_and_merges(stringify!($engine));
            }
            #[test]
            fn commits_come_back_after_every_iteration() {
                super::commits_come_back_after_every_iteration(stringify!($engine));
            }
            #[test]
            fn head_leaves_eden_s_folder_outside() {
                super::head_leaves_eden_s_folder_outside(stringify!($engine));
            }
            #[test]
            fn the_agent_commits_as_the_person() {
                super::the_agent_commits_as_the_person(stringify!($engine));
            }
            #[test]
            fn ctrl_c_leaves_no_container() {
                super::ctrl_c_leaves_no_container(stringify!($engine));
            }
            #[test]
            fn network_none_has_no_network() {
                super::network_none_has_no_network(stringify!($engine));
            }
            #[test]
            fn the_allowlist_lets_through_only_what_it_allows() {
                super::the_allowlist_lets_through_only_what_it_allows(stringify!($engine));
            }
            #[test]
            fn a_failing_allowlist_self_test_stops_the_run() {
                super::a_failing_allowlist_self_test_stops_the_run(stringify!($engine));
            }
            #[test]
            fn a_firewall_that_does_nothing_fails_the_self_test() {
                super::a_firewall_that_does_nothing_fails_the_self_test(stringify!($engine));
            }
            #[test]
            fn limits_are_enforced() {
                super::limits_are_enforced(stringify!($engine));
            }
            #[test]
            fn env_values_stay_out_of_ps_and_logs() {
                super::env_values_stay_out_of_ps_and_logs(stringify!($engine));
            }
            #[test]
            fn missing_image_is_a_clear_error() {
                super::missing_image_is_a_clear_error(stringify!($engine));
            }
            #[test]
            fn agent_missing_from_the_image_is_a_sandbox_error() {
                super::agent_missing_from_the_image_is_a_sandbox_error(stringify!($engine));
            }
            #[test]
            fn step_timeout_inside_the_container() {
                super::step_timeout_inside_the_container(stringify!($engine));
            }
            #[test]
            fn read_only_mounts_are_read_only() {
                super::read_only_mounts_are_read_only(stringify!($engine));
            }
            #[test]
            fn the_simulated_agent_runs_inside() {
                super::the_simulated_agent_runs_inside(stringify!($engine));
            }
            #[test]
            fn sandbox_hooks_run_inside_and_a_failing_one_exits_5() {
                super::sandbox_hooks_run_inside_and_a_failing_one_exits_5(stringify!($engine));
            }
            #[test]
            fn a_sandbox_hook_over_its_timeout_exits_4() {
                super::a_sandbox_hook_over_its_timeout_exits_4(stringify!($engine));
            }
            #[test]
            fn the_agents_state_folder_is_private() {
                super::the_agents_state_folder_is_private(stringify!($engine));
            }
            #[test]
            fn a_container_removed_mid_run_is_a_sandbox_error() {
                super::a_container_removed_mid_run_is_a_sandbox_error(stringify!($engine));
            }
            #[test]
            fn containers_of_dead_runs_are_pruned() {
                super::containers_of_dead_runs_are_pruned(stringify!($engine));
            }
            #[test]
            fn transcripts_of_node_agents_are_captured_from_inside() {
                super::transcripts_of_node_agents_are_captured_from_inside(stringify!($engine));
            }
            #[test]
            fn claude_transcripts_are_captured_from_inside() {
                super::claude_transcripts_are_captured_from_inside(stringify!($engine));
            }
        }
    };
}

engine_tests!(docker);
engine_tests!(podman);

fn sandbox_hooks_run_inside_and_a_failing_one_exits_5(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    // Inside: the engine's marker file exists. The hook commits its evidence, so it comes back.
    let inside = "(test -f /.dockerenv || test -f /run/.containerenv) && echo \\\"$EDEN_PHASE $(id -u)\\\" > inside.txt && git add inside.txt && git -c user.name=box -c user.email=box@example.com commit -qm hook";
    let hooks = format!("[hooks.sandbox]\non_sandbox_ready = [\"{inside}\"]\n");
    // A prompt's `!` block runs inside too.
    let manifest_text = manifest(engine, "echo '<promise>COMPLETE</promise>'", "")
        .replace("prompt = \"go\"", "prompt = \"ctx: !`test -f /.dockerenv -o -f /run/.containerenv && echo inside`\"");
    let run = env.run_manifest(&(manifest_text + &hooks), &[]);
    run.assert_code(0);
    let uid = nix::unistd::getuid().as_raw();
    assert_eq!(std::fs::read_to_string(env.repo.join("inside.txt")).unwrap(), format!("on_sandbox_ready {uid}\n"));
    let record = run.record();
    assert_eq!(record["hooks"][0]["side"], "sandbox");
    assert_eq!(record["iterations"][0]["prompt"], "ctx: inside");

    let env = TestEnv::new();
    let hooks = "[hooks.sandbox]\non_iteration_end = [\"echo checking inside; exit 7\"]\n";
    let run = env.run_manifest(&(manifest(engine, "echo '<promise>COMPLETE</promise>'", "") + hooks), &[]);
    run.assert_code(5);
    let error = run.error_text();
    assert!(
        error.starts_with("error: the sandbox on_iteration_end (iteration 1) hook `echo checking inside; exit 7` failed with exit code 7"),
        "{error}"
    );
    assert_eq!(run.record()["exit_reason"], "hook_failed");
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
    env.assert_pristine();
}

fn a_sandbox_hook_over_its_timeout_exits_4(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let hooks = "[hooks.sandbox]\non_sandbox_ready = [{ cmd = \"sleep 300\", timeout = \"2s\" }]\n";
    let started = std::time::Instant::now();
    let run = env.run_manifest(&(manifest(engine, "echo never", "") + hooks), &[]);
    run.assert_code(4);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(run.error_text().starts_with("error: the sandbox on_sandbox_ready hook `sleep 300` ran longer than 2s"));
    assert_eq!(run.record()["iterations"].as_array().unwrap().len(), 0);
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "container removed");
    env.assert_pristine();
}

/// The agent gets a private state folder: seeded with copies of what it needs from the
/// person's own (pi's `auth.json` and `settings.json`), writable inside, its transcript captured
/// from there; the person's folder is byte-identical afterwards and the private one is gone.
fn the_agents_state_folder_is_private(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let own = env.home().join(".pi/agent");
    std::fs::create_dir_all(own.join("sessions")).unwrap();
    std::fs::write(own.join("auth.json"), "{\"token\":\"login\"}").unwrap();
    std::fs::write(own.join("settings.json"), "{}").unwrap();
    std::fs::write(own.join("notes.md"), "not for the agent").unwrap();
    // A stand-in for pi inside the image: it reads its login, rewrites its settings (as a
    // hostile agent would, to plant hooks for the person's next session) and writes a session.
    let bin = env.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = "#!/bin/sh\nd=\"$PI_CODING_AGENT_DIR\"\necho \"login: $(cat \"$d/auth.json\") notes: $(cat \"$d/notes.md\" 2>&1 | head -c 20)\"\n\
        echo '{\"hooks\":\"pwned\"}' > \"$d/settings.json\"\nmkdir -p \"$d/sessions/--w--\"\n\
        echo '{\"type\":\"session\",\"id\":\"s-1\"}' > \"$d/sessions/--w--/t_s-1.jsonl\"\n\
        echo '{\"type\":\"session\",\"id\":\"s-1\"}'\necho '<promise>COMPLETE</promise>'\n";
    std::fs::write(bin.join("pi"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("pi"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let manifest = format!(
        "prompt = \"go\"\n[agent]\nkind = \"pi\"\nbinary = \"/opt/fake/pi\"\n[sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\nmounts = [{{ host = \"{}\", sandbox = \"/opt/fake\", read_only = true }}]\n[loop]\nmax_iterations = 1\n",
        bin.display()
    );
    let before = crate::support::tree_digest(&env.home().join(".pi"));
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("login: {\"token\":\"login\"} notes: cat: "),
        "seeded with the login only: {}",
        run.stderr
    );
    assert_eq!(crate::support::tree_digest(&env.home().join(".pi")), before, "the person's folder is untouched");
    let record = run.record();
    let transcript = record["iterations"][0]["transcript"]["path"].as_str().expect("captured");
    assert!(std::fs::read_to_string(transcript).unwrap().contains("s-1"));
    assert!(!env.repo.join(format!(".eden/agent-state/{}", record["id"].as_str().unwrap())).exists());

    // Opted out: no folder is made or pointed at.
    let env = TestEnv::new();
    // (In a committed file: podman can lose the output of very short execs under load.)
    let script = "#!/bin/sh\necho \"dir=${PI_CODING_AGENT_DIR:-unset}\" > state.txt && git add state.txt && git -c user.name=box -c user.email=box@example.com commit -qm state\necho '<promise>COMPLETE</promise>'\n";
    std::fs::write(bin.join("pi"), script).unwrap();
    let run = env.run_manifest(&manifest.replace("[loop]", "mount_agent_config = false\n[loop]"), &[]);
    run.assert_code(0);
    assert_eq!(std::fs::read_to_string(env.repo.join("state.txt")).unwrap(), "dir=unset\n");
    assert!(!env.home().join(".pi").exists());
}

fn a_container_removed_mid_run_is_a_sandbox_error(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let signal_dir = env.root().join("signal");
    std::fs::create_dir_all(&signal_dir).unwrap();
    let mount = format!("mounts = [{{ host = \"{}\", sandbox = \"/signal\" }}]\n", signal_dir.display());
    let path = env.write_manifest(&manifest(engine, "touch /signal/ready; sleep 300", &mount));
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    crate::support::wait_for(&signal_dir.join("ready"));
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    for name in containers_of(engine, &repo) {
        Command::new(engine).args(["rm", "-f", &name]).output().unwrap();
    }
    let run = Run::from(child.wait_with_output().unwrap());
    run.assert_code(6);
    let error = run.error_text();
    assert!(error.starts_with(&format!("error: the {engine} container `eden-")), "{error}");
    assert!(error.contains("stopped or was removed, so the command in it failed"), "{error}");
    assert_eq!(run.record()["exit_reason"], "sandbox_error");
    assert!(containers_of(engine, &repo).is_empty());
    env.assert_pristine();
    // Its workspace volume is kept for the person (the work may be there); the test's goes.
    remove_volumes_of(engine, &repo);
}

/// Remove the workspace volumes eden kept for runs in `repo`.
pub fn remove_volumes_of(engine: &str, repo: &std::path::Path) {
    let filter = format!("label=eden.repo={}", repo.display());
    let listed = Command::new(engine).args(["volume", "ls", "-q", "--filter", &filter]).output().unwrap();
    for volume in String::from_utf8_lossy(&listed.stdout).lines() {
        let _ = Command::new(engine).args(["volume", "rm", "-f", volume]).output();
    }
}

fn agent_missing_from_the_image_is_a_sandbox_error(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let manifest = manifest(engine, "true", "")
        .replace("binary = \"sh\"\nargs = [\"-c\", \"cat >/dev/null; true\"]", "binary = \"no-such-agent\"");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(6);
    let error = run.error_text();
    assert!(error.starts_with("error: `no-such-agent` was not found in container `eden-"), "{error}");
    assert!(error.ends_with("hint: install the agent in the image, or set `agent.binary` to its path inside the image"));
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty());
}

fn step_timeout_inside_the_container(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = "while true; do echo tick; sleep 0.2; done";
    let manifest = format!("{}[timeouts]\niteration_step = \"2s\"\n", manifest(engine, script, ""));
    let started = std::time::Instant::now();
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(4);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty());
    env.assert_pristine();
}

fn read_only_mounts_are_read_only(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let shared = env.root().join("ro");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("data.txt"), "data\n").unwrap();
    let mount = format!("mounts = [{{ host = \"{}\", sandbox = \"/ro\", read_only = true }}]", shared.display());
    let script = "cat /ro/data.txt; if touch /ro/new 2>/dev/null; then echo writable; else echo read-only; fi; echo '<promise>COMPLETE</promise>'";
    let run = env.run_manifest(&manifest(engine, script, &mount), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| data\n") && run.stderr.contains("| read-only\n"), "{}", run.stderr);
    assert!(!shared.join("new").exists());
}

fn containers_of_dead_runs_are_pruned(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    // A container as a killed eden would leave it: its eden.pid no longer exists.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let name = format!("eden-leftover-{}", std::process::id());
    let mut run_args = vec!["run", "-d", "--init", "--name", &name];
    let labels = [format!("eden.repo={}", repo.display()), format!("eden.pid={dead}")];
    for label in &labels {
        run_args.extend(["--label", label]);
    }
    if engine == "podman" {
        run_args.push("--pull=never");
    }
    run_args.extend([IMAGE, "tail", "-f", "/dev/null"]);
    assert!(Command::new(engine).args(&run_args).output().unwrap().status.success());
    assert_eq!(containers_of(engine, &repo), std::slice::from_ref(&name));
    let run = env.run_manifest(&manifest(engine, "echo '<promise>COMPLETE</promise>'", ""), &[]);
    run.assert_code(0);
    assert!(run.stderr.contains(&format!("removed container `{name}` left by an earlier run")), "{}", run.stderr);
    assert!(containers_of(engine, &repo).is_empty());
}

fn the_simulated_agent_runs_inside(engine: &str) {
    if !ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let manifest = format!("name = \"sim\"\nprompt = \"hi\"\n[agent]\nkind = \"simulated\"\n[sandbox]\nkind = \"{engine}\"\nimage = \"{IMAGE}\"\n");
    let run = env.run_manifest(&manifest, &[]);
    run.assert_code(0);
    assert!(run.stderr.contains("| simulated agent: working"), "{}", run.stderr);
    assert_eq!(run.record()["sandbox"], engine);
}

/// What a fork-bomb script said it started (`started N` on its output).
pub fn started_count(run: &Run) -> usize {
    run.stderr
        .lines()
        .find_map(|l| l.split("| started ").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{}", run.stderr))
}

/// An agent CLI the image lacks is exit 6, named, before anything runs, also when its key is
/// held (the command is then eden's relay, which runs the agent: both are looked for).
#[test]
fn an_agent_missing_from_the_image_is_a_sandbox_error() {
    if !ready("docker") {
        return;
    }
    let env = TestEnv::new();
    let manifest = format!(
        "name = \"missing\"\nprompt = \"hi\"\n[agent]\nkind = \"claude-code\"\nenv = {{ ANTHROPIC_API_KEY = \"${{MY_KEY}}\" }}\n\
         [sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\n"
    );
    let path = env.write_manifest(&manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    let run = Run::from(command.env("MY_KEY", "sk-ant-test-0000").output().unwrap());
    run.assert_code(6);
    assert!(run.stderr.contains("`claude` was not found in container"), "{}", run.stderr);
    assert!(run.stderr.contains("hint: install the agent in the image"), "{}", run.stderr);
    // The key was held: the relay ran the agent, and the agent is what was missing.
    assert_eq!(run.json()["held_keys"][0]["var"], "ANTHROPIC_API_KEY", "{}", run.stdout);
}
