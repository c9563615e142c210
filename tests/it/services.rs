//! `[[service]]`: containers beside the sandbox, on the real docker and podman engines (a
//! remote engine's in `remote.rs`, a pod's in `kubernetes.rs`). The service image is the test
//! image with busybox (`httpd`, `wget`, `ip`), built on each engine once per machine.

use crate::containers::{containers_of, ready, IMAGE};
use crate::support::{interrupt, Run, TestEnv};
use nix::sys::signal::Signal;
use std::process::Command;
use std::sync::Mutex;

pub const SERVICE_IMAGE: &str = "localhost/eden-test:services";
static BUILD: Mutex<()> = Mutex::new(());

/// The build context: a Containerfile on the test image, and this machine's busybox.
pub fn service_context() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("eden-services-image");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy("/bin/busybox", dir.join("busybox")).expect("busybox-static is installed (/bin/busybox)");
    std::fs::write(dir.join("Containerfile"), format!("FROM {IMAGE}\nCOPY busybox /bin/busybox\n")).unwrap();
    dir
}

/// Build the service image with `client` (an engine's client, pointed where it builds).
pub fn build_service_image(mut client: Command) {
    let dir = service_context();
    let built = client
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "-t", SERVICE_IMAGE, "-f"])
        .arg(dir.join("Containerfile"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(built.status.success(), "building the service image: {}", String::from_utf8_lossy(&built.stderr));
}

/// Is `engine` usable, with the service image in it? Builds it the first time.
pub fn services_ready(engine: &str) -> bool {
    if !ready(engine) {
        return false;
    }
    let _serial = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let there = Command::new(engine).args(["image", "inspect", SERVICE_IMAGE]).output();
    if !there.is_ok_and(|o| o.status.success()) {
        build_service_image(Command::new(engine));
    }
    true
}

/// A service `web` that serves `$GREETING` at `/`, `$DB_PASSWORD` at `/secret`, and at
/// `/probe` what became of its own try, at its start, to reach `probe` (`HOST:PORT`; `GATEWAY`
/// for its default gateway): `refused`, or what it got.
pub fn web_service(probe: &str) -> String {
    let probe = probe.replace("GATEWAY", "$(busybox ip route | busybox awk '/default/ {print $3}')");
    let script = format!(
        "mkdir -p /tmp/www && echo \"$GREETING\" > /tmp/www/index.html && echo \"$DB_PASSWORD\" > /tmp/www/secret && \
         (timeout 3 busybox wget -qO- http://{probe}/ > /tmp/www/probe 2>/dev/null || echo refused > /tmp/www/probe); \
         echo serving from the service; exec busybox httpd -f -p 8080 -h /tmp/www"
    );
    let script = script.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "\n[[service]]\nname = \"web\"\nimage = \"{SERVICE_IMAGE}\"\ncommand = [\"sh\", \"-c\", \"{script}\"]\n\
         env = {{ GREETING = \"hello from the service\", DB_PASSWORD = \"${{SERVICE_SECRET}}\" }}\n\
         ready = \"busybox wget -qO- http://127.0.0.1:8080/ >/dev/null\"\n"
    )
}

/// The agent fetches what `web` serves into files and commits them. (perl, waiting for the
/// socket before each read: under gVisor on the namespace's own stack a blocking read that
/// must wait fails with `EAGAIN` now and then, measured with busybox's `wget` and perl's
/// `readline`; clients that poll first, as libpq, node and curl do, never see it.)
pub const FETCH_AND_COMMIT: &str = "get() { perl -MIO::Socket::INET -MIO::Select -e '$s = IO::Socket::INET->new(PeerAddr => $ARGV[0], Timeout => 5) or exit 1; \
    print $s \"GET /$ARGV[1] HTTP/1.0\\r\\n\\r\\n\"; $t = \"\"; $w = IO::Select->new($s); \
    while ($w->can_read(5)) { $n = sysread($s, $b, 65536); next if !defined $n && $!{EAGAIN}; last unless $n; $t .= $b } \
    $t =~ s/^.*?\\r?\\n\\r?\\n//s; print $t' \"$1\" \"$2\"; }; \
    for f in index.html probe secret; do get web:8080 $f > got-$f; done; \
    get OUTSIDE '' > got-outside || echo refused > got-outside; \
    git add got-* && git -c user.name=box -c user.email=box@example.com commit -qm served && echo '<promise>COMPLETE</promise>'";

pub const SECRET: &str = "s3rvice-secret-value-4417";

/// A TCP listener on every address of this machine, which nothing may reach: `reached()` says
/// whether something connected.
pub struct Listener(std::net::TcpListener);

impl Listener {
    pub fn open() -> Listener {
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Listener(listener)
    }

    pub fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    pub fn reached(&self) -> bool {
        self.0.accept().is_ok()
    }
}

/// An address of this machine other than loopback (what a sandbox could try to reach it by).
pub fn machine_address() -> String {
    nix::ifaddrs::getifaddrs()
        .unwrap()
        .filter_map(|interface| interface.address.and_then(|a| a.as_sockaddr_in().map(|v4| v4.ip())))
        .find(|ip| !ip.is_loopback())
        .expect("an address other than loopback")
        .to_string()
}

fn manifest(engine: &str, network: &str, listener: &Listener, extra: &str) -> String {
    let outside = format!("{}:{}", machine_address(), listener.port());
    let script = FETCH_AND_COMMIT.replace("OUTSIDE", &outside);
    let sandbox = format!("network = \"{network}\"");
    let probe = format!("GATEWAY:{}", listener.port());
    format!("{}{}{extra}", crate::containers::manifest(engine, &script, &sandbox), web_service(&probe))
        .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{SERVICE_IMAGE}\""))
}

fn run(env: &TestEnv, manifest: &str) -> Run {
    let path = env.write_manifest(manifest);
    let mut command = env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
    command.env("SERVICE_SECRET", SECRET);
    Run::from(command.output().unwrap())
}

/// What the agent fetched, committed and merged: `got-NAME`.
pub fn got(env: &TestEnv, name: &str) -> String {
    std::fs::read_to_string(env.repo.join(format!("got-{name}"))).unwrap_or_default().trim().to_owned()
}

/// Nothing the run wrote holds the service's secret: its output, record and log.
pub fn assert_secret_kept(env: &TestEnv, run: &Run) {
    assert!(!run.stderr.contains(SECRET) && !run.stdout.contains(SECRET), "{}", run.stderr);
    for folder in [".eden/runs", ".eden/logs"] {
        for entry in std::fs::read_dir(env.repo.join(folder)).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            assert!(!text.contains(SECRET), "the secret is in {}", entry.path().display());
        }
    }
}

/// The agent and a check reach `web` by its name; the service got its environment (the secret
/// too, which nothing eden writes shows); the service's own try to reach this machine at its
/// gateway is refused as the agent's would be (the rules are the namespace's); nothing is left.
fn the_agent_and_the_checks_reach_a_service(engine: &str) {
    if !services_ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let listener = Listener::open();
    let check = "\n[[check]]\nname = \"served\"\ncmd = \"busybox wget -qO- http://web:8080/ | grep -q 'hello from the service'\"\n";
    let run = run(&env, &manifest(engine, "internet", &listener, check));
    run.assert_code(0);
    assert_eq!(got(&env, "index.html"), "hello from the service", "{}", run.stderr);
    assert_eq!(got(&env, "secret"), SECRET, "the service got its environment");
    assert_eq!(got(&env, "probe"), "refused", "the service cannot reach this machine");
    assert_eq!(got(&env, "outside"), "refused", "nor can the agent");
    assert!(!listener.reached(), "nothing from the sandbox reached this machine");
    let record = run.json();
    assert_eq!(record["services"], serde_json::json!([{"name": "web", "image": SERVICE_IMAGE}]));
    assert_eq!(record["checks"][0]["outcome"], "ok", "{}", record["checks"]);
    assert!(run.stderr.contains("service(s) ready beside the sandbox: `web`"), "{}", run.stderr);
    assert_secret_kept(&env, &run);
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "nothing left");
    let shown = env.eden(&["sessions", "show", "last", "--no-pager"]);
    assert!(shown.stdout.contains("service(s) ready beside the sandbox: `web`"), "{}", shown.stdout);
}

/// `network = "none"`: the agent reaches its service, and nothing else.
fn with_network_none_the_agent_reaches_its_services_only(engine: &str) {
    if !services_ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let listener = Listener::open();
    let run = run(&env, &manifest(engine, "none", &listener, ""));
    run.assert_code(0);
    assert_eq!(got(&env, "index.html"), "hello from the service", "{}", run.stderr);
    assert_eq!(got(&env, "outside"), "refused");
    assert_eq!(got(&env, "probe"), "refused");
    assert!(!listener.reached());
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "nothing left");
}

/// A service that exits, one never ready and one whose image is missing: exit 6 naming it,
/// with its last lines, and nothing left (no container, branch or worktree).
fn a_failing_service_is_exit_6_and_leaves_nothing(engine: &str) {
    if !services_ready(engine) {
        return;
    }
    let service = |extra: &str| format!("\n[[service]]\nname = \"db\"\nimage = \"{SERVICE_IMAGE}\"\n{extra}\n");
    let cases = [
        (
            // Its last lines, secrets redacted.
            service("command = [\"sh\", \"-c\", \"echo bad setting in db.conf, password $DB_PASSWORD; exit 3\"]\nenv = { DB_PASSWORD = \"${SERVICE_SECRET}\" }"),
            vec!["service `db` (localhost/eden-test:services) exited with code 3 before it was ready", "bad setting in db.conf, password ***"],
        ),
        (
            service("command = [\"sh\", \"-c\", \"echo still warming up; exec sleep 300\"]\nready = \"false\"\nready_timeout = \"2s\""),
            vec!["service `db` (localhost/eden-test:services) was not ready after 2 s: `false` never succeeded", "still warming up"],
        ),
        (
            service("").replace(SERVICE_IMAGE, "localhost/not-there:1"),
            vec!["service `db`'s image `localhost/not-there:1` is not available"],
        ),
    ];
    for (extra, said) in cases {
        let env = TestEnv::new();
        let manifest = crate::containers::manifest(engine, "echo '<promise>COMPLETE</promise>'", "network = \"none\"");
        let run = run(&env, &format!("{manifest}{extra}"));
        run.assert_code(6);
        for said in said {
            assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
        }
        assert!(run.stderr.contains("hint:"), "{}", run.stderr);
        assert_secret_kept(&env, &run);
        assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "nothing left");
        env.assert_pristine();
        if extra.contains("not-there") {
            // `eden doctor MANIFEST` finds it too.
            let path = env.write_manifest(&format!("{manifest}{extra}"));
            let doctor = env.eden(&["doctor", path.to_str().unwrap()]);
            doctor.assert_code(1);
            let said = format!("{}{}", doctor.stdout, doctor.stderr);
            assert!(said.contains("service `db`'s image `localhost/not-there:1`"), "{said}");
        }
    }
}

/// Ctrl-C while the agent works, and eden killed (its guard cleans up), leave no container.
fn ctrl_c_or_a_killed_eden_leaves_no_service(engine: &str) {
    if !services_ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    let mount = format!("network = \"none\"\nmounts = [{{ host = \"{}\", sandbox = \"/shared\" }}]", shared.display());
    let script = "busybox wget -qO- http://web:8080/ > /shared/seen; touch /shared/ready; sleep 300";
    let listener = Listener::open();
    let manifest = format!(
        "{}{}",
        crate::containers::manifest(engine, script, &mount)
            .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{SERVICE_IMAGE}\"")),
        web_service(&format!("GATEWAY:{}", listener.port())).replace("${SERVICE_SECRET}", "none here")
    );
    let repo = std::fs::canonicalize(&env.repo).unwrap();
    let (run, _) = interrupt(&env, &manifest, &shared.join("ready"), &[Signal::SIGINT]);
    run.assert_code(130);
    assert_eq!(std::fs::read_to_string(shared.join("seen")).unwrap(), "hello from the service\n");
    assert!(containers_of(engine, &repo).is_empty(), "removed on Ctrl-C");
    std::fs::remove_file(shared.join("ready")).unwrap();
    let path = env.write_manifest(&manifest);
    let mut child = env
        .eden_command(&["run", path.to_str().unwrap()])
        .env("SERVICE_SECRET", SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::wait_for(&shared.join("ready"));
    assert_eq!(containers_of(engine, &repo).len(), 2, "the sandbox and its service");
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !containers_of(engine, &repo).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the guard left {:?}", containers_of(engine, &repo));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // eden and its guard both die: `eden clean` removes the sandbox and its service.
    std::fs::remove_file(shared.join("ready")).unwrap();
    let mut child = env
        .eden_command(&["run", path.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::wait_for(&shared.join("ready"));
    let mut left = containers_of(engine, &repo);
    left.sort();
    let sandbox = left[0].clone();
    assert_eq!(left, [sandbox.clone(), format!("{sandbox}-web")]);
    let guard = Command::new("pkill").args(["-9", "-f", &format!("__eden-guard .* {sandbox}$")]).status();
    assert!(guard.unwrap().success(), "the guard was running");
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(containers_of(engine, &repo).len(), 2, "left behind");
    env.eden(&["clean"]).assert_code(0);
    assert!(containers_of(engine, &repo).is_empty(), "eden clean left {:?}", containers_of(engine, &repo));
}

pub const POSTGRES_IMAGE: &str = "localhost/eden-test:postgres";

/// Debian's PostgreSQL on the test image (from Debian's archive, as the README's recipe builds
/// images without a registry), run as its own user, trusting connections from the pod's or
/// container's own loopback.
const POSTGRES_CONTAINERFILE: &str = r#"FROM localhost/eden-test:git
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql \
 && rm -rf /var/lib/apt/lists/* \
 && v=$(ls /etc/postgresql) \
 && printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' > /etc/postgresql/$v/main/pg_hba.conf \
 && printf '#!/bin/sh\nexec /usr/lib/postgresql/%s/bin/postgres -D /var/lib/postgresql/%s/main -c config_file=/etc/postgresql/%s/main/postgresql.conf -c listen_addresses=127.0.0.1\n' $v $v $v > /usr/local/bin/pg-start \
 && chmod +x /usr/local/bin/pg-start
USER postgres
CMD ["pg-start"]
"#;

fn postgres_ready(engine: &str) -> bool {
    if !ready(engine) {
        return false;
    }
    static BUILD_POSTGRES: Mutex<()> = Mutex::new(());
    let _serial = BUILD_POSTGRES.lock().unwrap_or_else(|e| e.into_inner());
    let there = Command::new(engine).args(["image", "inspect", POSTGRES_IMAGE]).output();
    if there.is_ok_and(|o| o.status.success()) {
        return true;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("eden-postgres-image-{engine}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Containerfile"), POSTGRES_CONTAINERFILE).unwrap();
    let built = Command::new(engine)
        .env("DOCKER_BUILDKIT", "0")
        .args(["build", "-q", "-t", POSTGRES_IMAGE, "-f"])
        .arg(dir.join("Containerfile"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(built.status.success(), "building the postgres image: {}", String::from_utf8_lossy(&built.stderr));
    true
}

/// A real PostgreSQL as a service: the agent creates a table and a row with `psql`, a check
/// reads the row back; `pg_isready` says when it serves.
fn a_check_queries_a_real_postgres(engine: &str) {
    if !postgres_ready(engine) {
        return;
    }
    let env = TestEnv::new();
    let script = "psql -h db -U postgres -qc \"create table notes (body text); insert into notes values ('from the agent')\" && \
        echo done > done.txt && git add done.txt && git -c user.name=box -c user.email=box@example.com commit -qm stored && echo '<promise>COMPLETE</promise>'";
    let extra = format!(
        "\n[[service]]\nname = \"db\"\nimage = \"{POSTGRES_IMAGE}\"\nready = \"pg_isready -h 127.0.0.1 -q\"\n\
         \n[[check]]\nname = \"stored\"\ncmd = \"psql -h db -U postgres -tAc 'select body from notes' | grep -qx 'from the agent'\"\n"
    );
    let manifest = format!("{}{extra}", crate::containers::manifest(engine, script, "network = \"none\""))
        .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{POSTGRES_IMAGE}\""));
    let run = run(&env, &manifest);
    run.assert_code(0);
    let record = run.json();
    assert_eq!(record["checks"][0]["outcome"], "ok", "{}", run.stderr);
    assert_eq!(record["services"][0]["name"], "db");
    assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "nothing left");
}

/// A service that runs what its client asks (a CGI script behind busybox's `httpd`) does not
/// undo the sandbox's limits: asked to start 150 processes, it has at most the sandbox's
/// `pids_limit` of 64, in its own PID namespace (which it says).
fn a_service_keeps_the_sandbox_s_limits(engine: &str) {
    if !services_ready(engine) {
        return;
    }
    let env = TestEnv::new();
    // A shell of its own starts the processes (it dies when the limit refuses a fork); once
    // the limit is reached nothing forks, so the count is the shell's own (`set --`).
    let cgi = r"#!/bin/sh\nns=$(readlink /proc/self/ns/pid)\necho Content-Type: text/plain\necho\nsh -c 'for i in $(seq 150); do sleep 300 >/dev/null 2>&1 & done' >/dev/null 2>&1\nset -- /proc/[0-9]*\necho count=$# ns=$ns\n";
    let service = "mkdir -p /tmp/www/cgi-bin && echo up > /tmp/www/index.html && printf '%b' \"$CGI\" > /tmp/www/cgi-bin/fork && \
        chmod 755 /tmp/www/cgi-bin/fork && exec busybox httpd -f -p 8080 -h /tmp/www";
    let toml = |text: &str| text.replace('\\', "\\\\").replace('"', "\\\"");
    let (service, cgi) = (toml(service), toml(cgi));
    let agent = "busybox wget -qO- http://fork:8080/cgi-bin/fork; echo '<promise>COMPLETE</promise>'";
    let manifest = format!(
        "{}\n[[service]]\nname = \"fork\"\nimage = \"{SERVICE_IMAGE}\"\ncommand = [\"sh\", \"-c\", \"{service}\"]\n\
         env = {{ CGI = \"{cgi}\" }}\n\
         ready = \"busybox wget -qO- http://127.0.0.1:8080/ >/dev/null\"\n",
        crate::containers::manifest(engine, agent, "network = \"none\"\npids_limit = 64")
            .replace(&format!("image = \"{IMAGE}\""), &format!("image = \"{SERVICE_IMAGE}\""))
    );
    let run = run(&env, &manifest);
    run.assert_code(0);
    let said = run.stderr.lines().find(|line| line.contains("| count=")).unwrap_or_else(|| panic!("{}", run.stderr));
    let count: u32 = said.split("count=").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(count <= 64, "the service ran {count} processes past the sandbox's 64: {said}");
    assert!(said.contains("ns=pid:["), "{said}");
}

macro_rules! per_engine {
    ($($engine:ident),*) => {$(
        mod $engine {
            #[test]
            fn the_agent_and_the_checks_reach_a_service() {
                super::the_agent_and_the_checks_reach_a_service(stringify!($engine));
            }

            #[test]
            fn with_network_none_the_agent_reaches_its_services_only() {
                super::with_network_none_the_agent_reaches_its_services_only(stringify!($engine));
            }

            #[test]
            fn a_failing_service_is_exit_6_and_leaves_nothing() {
                super::a_failing_service_is_exit_6_and_leaves_nothing(stringify!($engine));
            }

            #[test]
            fn a_check_queries_a_real_postgres() {
                super::a_check_queries_a_real_postgres(stringify!($engine));
            }

            #[test]
            fn ctrl_c_or_a_killed_eden_leaves_no_service() {
                super::ctrl_c_or_a_killed_eden_leaves_no_service(stringify!($engine));
            }

            #[test]
            fn a_service_keeps_the_sandbox_s_limits() {
                super::a_service_keeps_the_sandbox_s_limits(stringify!($engine));
            }
        }
    )*};
}

per_engine!(docker, podman);

/// What cannot work is refused at load, each with the key's place and a hint, changing nothing.
#[test]
fn services_that_cannot_work_are_refused_at_load() {
    let env = TestEnv::new();
    let base = "name = \"s\"\nprompt = \"go\"\n[agent]\nkind = \"simulated\"\n";
    let docker = format!("{base}[sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\n");
    let cases = [
        (
            format!("{base}[[service]]\nname = \"db\"\nimage = \"x\"\n"),
            "`[[service]]` needs a container sandbox, not `none`",
        ),
        (
            format!("{base}[sandbox]\nkind = \"isolated\"\n[[service]]\nname = \"db\"\nimage = \"x\"\n"),
            "`[[service]]` needs a container sandbox, not `isolated`",
        ),
        (
            format!("{docker}network = \"host\"\n[[service]]\nname = \"db\"\nimage = \"x\"\n"),
            "`[[service]]` cannot go with `network = \"host\"`",
        ),
        (format!("{docker}[[service]]\nname = \"Db_1\"\nimage = \"x\"\n"), "invalid service name `Db_1`"),
        (format!("{docker}[[service]]\nimage = \"x\"\n"), "a service has no `name`"),
        (format!("{docker}[[service]]\nname = \"db\"\n"), "service `db` has no `image`"),
        (
            format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\n[[service]]\nname = \"db\"\nimage = \"y\"\n"),
            "two services are named `db`",
        ),
        (
            format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\ncommand = []\n"),
            "service `db`'s `command` is empty",
        ),
        (
            format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\nready_timeout = \"5s\"\n"),
            "`ready_timeout` has no effect without `ready`",
        ),
        (format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\nport = 5432\n"), "unknown key `port`"),
        (format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\ncommand = \"postgres\"\n"), "expected a sequence"),
        (
            format!(
                "{docker}[[service]]\nname = \"db\"\nimage = \"x\"\nenv = {{ PASSWORD = \"${{NOT_SET_ANYWHERE}}\" }}\n"
            ),
            "refers to `${NOT_SET_ANYWHERE}`, which is not set",
        ),
    ];
    let held = "name = \"s\"\nprompt = \"go\"\n[agent]\nkind = \"claude-code\"\nenv = { ANTHROPIC_API_KEY = \"${ANTHROPIC_API_KEY}\" }\n";
    let cases = cases.into_iter().chain([
        (
            format!(
                "{held}[sandbox]\nkind = \"docker\"\nimage = \"{IMAGE}\"\n[[service]]\nname = \"db\"\nimage = \"x\"\nenv = {{ UPSTREAM_KEY = \"${{ANTHROPIC_API_KEY}}\" }}\n"
            ),
            "service `db` is handed the value of `ANTHROPIC_API_KEY`, which eden holds for the agent",
        ),
        (format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\npids_limit = 0\n"), "service `db`'s `pids_limit` must be at least 1"),
        (format!("{docker}[[service]]\nname = \"db\"\nimage = \"x\"\ncpus = -1.0\n"), "service `db`'s `cpus` must be a positive number"),
        (
            format!("{base}[sandbox]\nkind = \"kubernetes\"\nimage = \"x\"\n[[service]]\nname = \"db\"\nimage = \"x\"\npids_limit = 10\n"),
            "a service's `pids_limit` does not apply in a pod",
        ),
    ]);
    for (manifest, said) in cases {
        let mut command = env.eden_command(&["run", env.write_manifest(&manifest).to_str().unwrap()]);
        command.env("ANTHROPIC_API_KEY", "sk-ant-held-4417");
        let run = Run::from(command.output().unwrap());
        assert!(!run.stderr.contains("sk-ant-held-4417"), "{}", run.stderr);
        run.assert_code(2);
        assert!(run.stderr.contains(said), "{said}: {}", run.stderr);
        assert!(
            run.stderr.contains("s.toml:") || run.stderr.contains(".toml:"),
            "file, line and column: {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint:"), "{}", run.stderr);
        env.assert_pristine();
    }
}

/// Under gVisor (`runtime = "runsc"`, on the namespace's own stack) the agent reaches its
/// services the same, and the rules hold for them the same.
#[test]
fn services_beside_a_gvisor_sandbox() {
    for engine in ["docker", "podman"] {
        if !services_ready(engine) || !crate::boundary::gvisor_ready(engine) {
            return;
        }
        let env = TestEnv::new();
        let listener = Listener::open();
        let manifest = manifest(engine, "internet", &listener, "").replacen(
            "network = \"internet\"",
            "network = \"internet\"\nruntime = \"runsc\"",
            1,
        );
        let run = run(&env, &manifest);
        run.assert_code(0);
        assert_eq!(got(&env, "index.html"), "hello from the service", "{engine}: {}", run.stderr);
        assert_eq!(got(&env, "probe"), "refused", "{engine}");
        assert_eq!(got(&env, "outside"), "refused", "{engine}");
        assert!(!listener.reached(), "{engine}");
        assert!(containers_of(engine, &std::fs::canonicalize(&env.repo).unwrap()).is_empty(), "nothing left");
    }
}
