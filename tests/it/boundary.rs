//! The sandbox keeps the agent in: from inside every sandbox kind an agent tries each way out
//! (capabilities and no-new-privileges, remounting `/`, unmounting `/proc`, a user namespace of
//! its own, this machine's unix sockets — docker's, an ssh-agent's, the test's own in `/run`,
//! the temporary folder and the abstract namespace —, the person's key files, the repository's
//! `.eden/.env`, variables eden has that the manifest does not hand over, a listener on this
//! machine through the sandbox's gateway, a link-local address) and each must be shut. The
//! payloads prove where they ran: the listeners count what reached them, the secrets carry a
//! marker that must appear nowhere, and a control run with the way deliberately opened
//! (`network = "bridge"` or `"host"`, a socket handed over in `mounts`) shows the same probe
//! does see an open way.

use crate::support::TestEnv;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;

/// What the test puts on this machine for the agent to try, and counts what reached it.
struct Bait {
    env: TestEnv,
    marker: String,
    /// Unix sockets the test listens on: in its own folder (the temporary folder), in `/run`,
    /// and in the abstract namespace.
    unix: Vec<(String, UnixListener)>,
    /// Listening on every address of this machine.
    tcp: TcpListener,
    ssh_agent: Option<std::process::Child>,
    ssh_socket: PathBuf,
    /// A link-local address on a dummy interface of the test's, and a listener there.
    link_local: Option<LinkLocal>,
    run_socket: PathBuf,
    /// eden runs as this unprivileged user (`setpriv` arguments), not as root.
    user: Option<Vec<String>>,
}

struct LinkLocal {
    interface: String,
    address: String,
    listener: TcpListener,
}

impl Drop for LinkLocal {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip").args(["link", "del", &self.interface]).output();
    }
}

impl Drop for Bait {
    fn drop(&mut self) {
        if let Some(mut agent) = self.ssh_agent.take() {
            let _ = agent.kill();
            let _ = agent.wait();
        }
        let _ = std::fs::remove_file(&self.run_socket);
    }
}

/// Different in every call, in every test process.
fn random() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let nanos = std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos();
    format!("{:x}{n:x}{nanos:x}", std::process::id())
}

impl Bait {
    fn new() -> Bait {
        let env = TestEnv::new();
        let marker = format!("MARKER-31-{}", random());
        let home = env.home();
        for (file, text) in [
            (".ssh/id_ed25519", format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{marker}\n")),
            (".claude/.credentials.json", format!("{{\"claudeAiOauth\":{{\"refreshToken\":\"{marker}\"}}}}")),
            (".codex/auth.json", format!("{{\"OPENAI_API_KEY\":\"{marker}\"}}")),
        ] {
            let path = home.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        env.write(".eden/.env", &format!("# {marker}\nHARMLESS=1\n"));
        let mut unix = Vec::new();
        let own = env.root().join("listener.sock");
        unix.push((own.display().to_string(), UnixListener::bind(&own).unwrap()));
        let run_socket = PathBuf::from(format!("/run/eden-test-{}.sock", random()));
        if let Ok(listener) = UnixListener::bind(&run_socket) {
            unix.push((run_socket.display().to_string(), listener));
        }
        let name = format!("eden-test-{}", random());
        use std::os::linux::net::SocketAddrExt;
        let abstract_addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
        unix.push((format!("@{name}"), UnixListener::bind_addr(&abstract_addr).unwrap()));
        for (_, listener) in &unix {
            listener.set_nonblocking(true).unwrap();
        }
        let tcp = TcpListener::bind("0.0.0.0:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let ssh_socket = env.root().join("ssh-agent.sock");
        let ssh_agent = std::process::Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&ssh_socket)
            .stdout(std::process::Stdio::null())
            .spawn()
            .ok();
        for _ in 0..50 {
            if ssh_socket.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Bait { env, marker, unix, tcp, ssh_agent, ssh_socket, link_local: None, run_socket, user: None }
    }

    /// eden runs as `nobody` (in `groups`, e.g. docker's): the test's folder is theirs, and the
    /// sockets are open to them outside the sandbox, so only the sandbox can keep them out.
    fn run_by_nobody(mut self, groups: &str) -> Bait {
        let chown = std::process::Command::new("chown").arg("-R").arg("65534:65534").arg(self.env.root()).status();
        assert!(chown.unwrap().success());
        use std::os::unix::fs::PermissionsExt;
        for path in self.unix.iter().map(|(path, _)| PathBuf::from(path)).chain([self.ssh_socket.clone()]) {
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777));
        }
        let groups = if groups.is_empty() { "--clear-groups".to_owned() } else { format!("--groups={groups}") };
        self.user = Some(vec!["--reuid=65534".into(), "--regid=65534".into(), groups]);
        self
    }

    /// A listener on a link-local address (169.254.0.0/16) of an interface the test makes on
    /// this machine (never 169.254.169.254).
    fn with_link_local(mut self) -> Bait {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let interface = format!("edenll{:x}{n}", std::process::id() % 0xffff);
        let address = format!("169.254.{}.{}", std::process::id() % 200 + 20, n % 250 + 2);
        let ip = |args: &[&str]| std::process::Command::new("ip").args(args).output().unwrap();
        // A veth pair of the test's own on this machine (this kernel has no dummy interfaces).
        let made = ip(&["link", "add", &interface, "type", "veth", "peer", "name", &format!("{interface}p")]);
        assert!(made.status.success(), "ip link add: {}", String::from_utf8_lossy(&made.stderr));
        ip(&["addr", "add", &format!("{address}/32"), "dev", &interface]);
        ip(&["link", "set", &interface, "up"]);
        ip(&["link", "set", &format!("{interface}p"), "up"]);
        let listener = TcpListener::bind((address.as_str(), 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        self.link_local = Some(LinkLocal { interface, address, listener });
        self
    }

    /// The probe: bash, run as the agent. `eden` is eden's executable as the sandbox sees it;
    /// the test's TCP listener is tried at `this_machine` (an isolated sandbox's loopback), else
    /// at the sandbox's gateway (a container's bridge: this machine's end of it).
    fn probe(&self, eden: &str, this_machine: Option<&str>) -> String {
        let home = self.env.home();
        let mut sockets: Vec<String> = self.unix.iter().map(|(path, _)| path.clone()).collect();
        sockets.extend(
            [
                "/var/run/docker.sock",
                "/run/docker.sock",
                "/run/podman/podman.sock",
                "/run/containerd/containerd.sock",
                "/var/run/docker/containerd/containerd.sock",
            ]
            .map(str::to_owned),
        );
        sockets.push(self.ssh_socket.display().to_string());
        let mut files = vec![
            home.join(".ssh/id_ed25519"),
            home.join(".claude/.credentials.json"),
            home.join(".codex/auth.json"),
            self.env.repo.join(".eden/.env"),
        ];
        // This machine's `/etc` is only an isolated sandbox's to see (a container has the image's).
        if this_machine.is_some() {
            files.push(PathBuf::from("/etc/shadow"));
        }
        let files: Vec<String> = files.iter().map(|path| format!("'{}'", path.display())).collect();
        let sockets: Vec<String> = sockets.iter().map(|path| format!("'{path}'")).collect();
        let port = self.tcp.local_addr().unwrap().port();
        let link_local = self.link_local.as_ref().map_or_else(String::new, |ll| {
            format!(
                "\"$eden\" __eden-connect {} {} 2>/dev/null; report link-local $?\n",
                ll.address,
                ll.listener.local_addr().unwrap().port()
            )
        });
        format!(
            r#"cat >/dev/null
eden='{eden}'
report() {{ if [ "$2" = 0 ]; then echo "OPEN $1"; else echo "SHUT $1"; fi; }}
grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status | sed 's/^/STATUS /'
echo "KERNEL $(uname -r)"
mount -o remount,rw / 2>/dev/null; report remount $?
umount /proc 2>/dev/null; report umount-proc $?
unshare -U true 2>/dev/null; report userns $?
for s in {sockets} "${{SSH_AUTH_SOCK:-/nonexistent}}"; do "$eden" __eden-connect "unix:$s" 2>/dev/null; report "socket $s" $?; done
for f in {files}; do if c=$(cat "$f" 2>/dev/null); then echo "OPEN read $f: $c"; else echo "SHUT read $f"; fi; done
env | grep -E '^(UNNAMED_SECRET|MY_KEY|SSH_AUTH_SOCK|GIT_CONFIG_GLOBAL)=' | sed 's/^/OPEN env /'
gw={this_machine}
if [ -z "$gw" ]; then gw=$(awk '$2 == "00000000" {{ print $3; exit }}' /proc/net/route)
gw=$(printf '%d.%d.%d.%d' 0x${{gw:6:2}} 0x${{gw:4:2}} 0x${{gw:2:2}} 0x${{gw:0:2}}); fi
"$eden" __eden-connect $gw {port} 2>/dev/null; report "tcp $gw" $?
{link_local}echo PROBE-DONE
echo '<promise>COMPLETE</promise>'
"#,
            sockets = sockets.join(" "),
            files = files.join(" "),
            this_machine = this_machine.unwrap_or(""),
        )
    }

    /// Run `probe` as a `cli` agent (`bash -c`) with `sandbox` (the `[sandbox]` table's lines),
    /// eden's environment holding variables the manifest does not name, and one it hands over
    /// under another name. Returns the agent's output.
    fn run(&self, sandbox: &str, probe: &str) -> String {
        let script = probe.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        let manifest = format!(
            "name = \"probe\"\nprompt = \"go\"\n[agent]\nkind = \"cli\"\nbinary = \"bash\"\nargs = [\"-c\", \"{script}\"]\n\
             env = {{ API_TOKEN = \"${{MY_KEY}}\" }}\n[sandbox]\n{sandbox}\n[loop]\nmax_iterations = 1\nidle_timeout = \"60s\"\n"
        );
        let path = self.env.write_manifest(&manifest);
        if self.user.is_some() {
            let _ = std::process::Command::new("chown").arg("65534:65534").arg(&path).status();
        }
        let mut command = self.env.eden_command(&["run", path.to_str().unwrap(), "--json"]);
        if let Some(user) = &self.user {
            let mut setpriv = std::process::Command::new("setpriv");
            setpriv.args(user).arg(crate::support::EDEN).args(["run", path.to_str().unwrap(), "--json"]);
            setpriv.current_dir(&self.env.repo).env("PWD", &self.env.repo).stdin(std::process::Stdio::null());
            self.env.apply_env(&mut setpriv);
            command = setpriv;
        }
        command
            .env("UNNAMED_SECRET", format!("{}-unnamed", self.marker))
            .env("MY_KEY", format!("{}-my-key", self.marker))
            .env("SSH_AUTH_SOCK", &self.ssh_socket);
        let run = crate::support::Run::from(command.output().unwrap());
        run.assert_code(0);
        let output: String =
            run.stderr.lines().filter_map(|line| line.split_once("| ").map(|(_, text)| format!("{text}\n"))).collect();
        assert!(output.contains("PROBE-DONE"), "the probe ran to its end:\n{}", run.stderr);
        // The marker is nowhere eden writes: its output, log, record.
        let id = run.record()["id"].as_str().unwrap().to_owned();
        let log = std::fs::read_to_string(self.env.repo.join(format!(".eden/logs/{id}.jsonl"))).unwrap();
        let record = std::fs::read_to_string(self.env.repo.join(format!(".eden/runs/{id}.json"))).unwrap();
        for (what, text) in [("output", &run.stderr), ("stdout", &run.stdout), ("log", &log), ("record", &record)] {
            assert!(!text.contains(&self.marker), "a secret reached the {what}:\n{text}");
        }
        output
    }

    /// Nothing reached the test's listeners.
    fn assert_unreached(&self) {
        for (path, listener) in &self.unix {
            assert!(listener.accept().is_err(), "the agent connected to the test's socket {path}");
        }
        assert!(self.tcp.accept().is_err(), "the agent reached the test's listener on this machine");
        if let Some(ll) = &self.link_local {
            assert!(ll.listener.accept().is_err(), "the agent reached the link-local listener");
        }
    }
}

/// How the sandbox is expected to differ from the rest.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Isolated,
    /// runc: docker's default seccomp profile refuses a user namespace.
    Docker,
    /// podman's default seccomp profile, and gVisor's kernel, let a process make a user
    /// namespace of its own (capabilities over what it makes there, none over this machine);
    /// gVisor's `/proc` does not print `NoNewPrivs`.
    Podman,
    Gvisor,
}

/// Every probe line is `SHUT`, no capability is held, no-new-privileges is set; with
/// `no_bounding`, none is left to gain either (a container run for an unprivileged user keeps
/// eden's set-up capabilities in its bounding set, which its agent cannot reach).
fn assert_shut(output: &str, kind: Kind, no_bounding: bool) {
    let user_namespaces = matches!(kind, Kind::Podman | Kind::Gvisor);
    let open: Vec<&str> = output
        .lines()
        .filter(|line| line.starts_with("OPEN") && !(user_namespaces && *line == "OPEN userns"))
        .collect();
    assert!(open.is_empty(), "ways out are open:\n{}\n\nall:\n{output}", open.join("\n"));
    for (field, want) in [("CapEff", "0000000000000000"), ("CapPrm", "0000000000000000")] {
        assert!(output.contains(&format!("STATUS {field}:\t{want}")), "{field} is not empty:\n{output}");
    }
    if no_bounding {
        assert!(output.contains("STATUS CapBnd:\t0000000000000000"), "capabilities to gain:\n{output}");
    }
    if kind != Kind::Gvisor {
        assert!(output.contains("STATUS NoNewPrivs:\t1"), "no-new-privileges is not set:\n{output}");
    }
    let mut ways = vec!["remount", "umount-proc", "tcp "];
    if !user_namespaces {
        ways.push("userns");
    }
    if kind == Kind::Isolated {
        ways.push("read /etc/shadow");
    }
    for way in ways {
        assert!(output.contains(&format!("SHUT {way}")), "the probe did not try {way}:\n{output}");
    }
}

#[test]
fn isolated_keeps_the_agent_in() {
    if !crate::isolated::bwrap() {
        return;
    }
    let bait = Bait::new();
    let eden = std::fs::canonicalize(crate::support::EDEN).unwrap();
    let probe = bait.probe(&eden.display().to_string(), Some("127.0.0.1"));
    let output = bait.run("kind = \"isolated\"", &probe);
    assert_shut(&output, Kind::Isolated, true);
    bait.assert_unreached();
    bait.env.assert_pristine();

    // Controls: the same probe sees a way out where one is opened on purpose — this machine's
    // network (`network = "host"`: the test's listener answers on loopback), and a socket
    // handed over by name (`mounts`).
    let handed = bait.env.root().join("handed");
    std::fs::create_dir_all(&handed).unwrap();
    let _control = UnixListener::bind(handed.join("control.sock")).unwrap();
    let probe = probe.replace("for s in ", "for s in /handed/control.sock ");
    let sandbox = format!(
        "kind = \"isolated\"\nnetwork = \"host\"\nmounts = [{{ host = \"{}\", sandbox = \"/handed\" }}]",
        handed.display()
    );
    let output = bait.run(&sandbox, &probe);
    assert!(output.contains("OPEN socket /handed/control.sock"), "{output}");
    assert!(output.contains("OPEN tcp 127.0.0.1"), "{output}");
    assert!(bait.tcp.accept().is_ok(), "the control reached the listener");
}

/// eden run by an unprivileged user: the same ways are shut, and the agent holds nothing.
#[test]
fn isolated_keeps_an_unprivileged_users_agent_in() {
    if !crate::isolated::bwrap() || !root_to_switch() {
        return;
    }
    let bait = Bait::new().run_by_nobody("");
    let eden = std::fs::canonicalize(crate::support::EDEN).unwrap();
    let output = bait.run("kind = \"isolated\"", &bait.probe(&eden.display().to_string(), Some("127.0.0.1")));
    assert_shut(&output, Kind::Isolated, true);
    bait.assert_unreached();
}

/// eden run by an unprivileged user in docker's group: the default network's rules need root,
/// so it is refused before anything starts; with `network = "none"` the container's own user
/// keeps what eden's set-up needs, and the agent (the user) holds nothing and gains nothing.
#[test]
fn docker_keeps_an_unprivileged_users_agent_in() {
    if !crate::containers::ready("docker") || !root_to_switch() {
        return;
    }
    let group = std::process::Command::new("getent").args(["group", "docker"]).output().unwrap();
    let group = String::from_utf8_lossy(&group.stdout).split(':').nth(2).unwrap_or_default().to_owned();
    let bait = Bait::new().run_by_nobody(&group);
    let sandbox = format!("kind = \"docker\"\nimage = \"{}\"\n", crate::containers::IMAGE);
    let path =
        bait.env.write_manifest(&format!("prompt = \"go\"\n[agent]\nkind = \"simulated\"\n[sandbox]\n{sandbox}"));
    let _ = std::process::Command::new("chown").arg("65534:65534").arg(&path).status();
    let mut refused = std::process::Command::new("setpriv");
    refused.args(bait.user.as_ref().unwrap()).arg(crate::support::EDEN).args(["run", path.to_str().unwrap()]);
    refused.current_dir(&bait.env.repo).stdin(std::process::Stdio::null());
    bait.env.apply_env(&mut refused);
    let refused = crate::support::Run::from(refused.output().unwrap());
    refused.assert_code(6);
    assert!(
        refused.stderr.contains("needs eden to run as root") && refused.stderr.contains("hint:"),
        "{}",
        refused.stderr
    );
    for made in ["runs", "worktrees"] {
        assert!(!bait.env.repo.join(".eden").join(made).exists(), "nothing created: {made}");
    }

    let output =
        bait.run(&format!("{sandbox}network = \"none\"\n"), &bait.probe("/opt/eden/bin/eden", Some("127.0.0.1")));
    assert_shut(&output, Kind::Docker, false);
    assert!(output.contains("STATUS CapBnd:\t000000000000000b"), "only eden's set-up capabilities:\n{output}");
    bait.assert_unreached();
}

/// Switching to an unprivileged user needs root.
fn root_to_switch() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    crate::support::skip("switching to an unprivileged user needs root");
    false
}

/// A container sandbox on `engine`, under `runtime` (the engine's default when `None`).
fn container_keeps_the_agent_in(engine: &str, runtime: Option<&str>) {
    if !crate::containers::ready(engine) || runtime.is_some() && !gvisor_ready(engine) {
        return;
    }
    let bait = Bait::new().with_link_local();
    let probe = bait.probe("/opt/eden/bin/eden", None);
    let runtime = runtime.map_or_else(String::new, |runtime| format!("runtime = \"{runtime}\"\n"));
    let sandbox = format!("kind = \"{engine}\"\nimage = \"{}\"\n{runtime}", crate::containers::IMAGE);
    let output = bait.run(&sandbox, &probe);
    let kind = match (engine, runtime.is_empty()) {
        (_, false) => Kind::Gvisor,
        ("docker", true) => Kind::Docker,
        _ => Kind::Podman,
    };
    assert_shut(&output, kind, true);
    assert!(output.contains("SHUT link-local"), "{output}");
    // Under gVisor the agent's system calls meet gVisor's kernel, not this machine's.
    let ours = format!("KERNEL {}", nix::sys::utsname::uname().unwrap().release().to_string_lossy());
    assert_eq!(kind == Kind::Gvisor, !output.contains(&ours), "{output}");
    bait.assert_unreached();
    bait.env.assert_pristine();

    // Control: the engine's bridge as it is reaches this machine through the gateway, and the
    // link-local address.
    let output = bait.run(&format!("{sandbox}network = \"bridge\"\n"), &probe);
    let gateway = output.lines().find(|line| line.starts_with("OPEN tcp ")).unwrap_or_else(|| panic!("{output}"));
    assert!(!gateway.ends_with("127.0.0.1"), "{output}");
    assert!(output.contains("OPEN link-local"), "{output}");
    assert!(bait.tcp.accept().is_ok(), "the control reached the listener");
}

/// gVisor (`runsc`) is registered with the engine (`.ci/run` does it for docker; podman takes
/// it by name from its `PATH`).
pub fn gvisor_ready(engine: &str) -> bool {
    let registered = match engine {
        "docker" => std::process::Command::new("docker")
            .args(["info", "--format", "{{json .Runtimes}}"])
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("\"runsc\"")),
        _ => which::which("runsc").is_ok(),
    };
    if !registered {
        crate::support::skip(&format!("gVisor's `runsc` is not registered with {engine} (see .ci/run)"));
    }
    registered
}

#[test]
fn docker_keeps_the_agent_in() {
    container_keeps_the_agent_in("docker", None);
}

#[test]
fn podman_keeps_the_agent_in() {
    container_keeps_the_agent_in("podman", None);
}

#[test]
fn docker_under_gvisor_keeps_the_agent_in() {
    container_keeps_the_agent_in("docker", Some("runsc"));
}

#[test]
fn podman_under_gvisor_keeps_the_agent_in() {
    container_keeps_the_agent_in("podman", Some("runsc"));
}
