//! Real "remote" container engines on this machine, for the tests of `sandbox.host`: a network
//! namespace per host (10.213.77.2, .3 …) behind a bridge in a "switch" namespace, the host at
//! 10.213.77.1, each running its own dockerd (the first over TCP with TLS, from certificates made
//! here with openssl; the others over plain TCP), the first also a podman API service and an
//! sshd (for `ssh://`, which runs `docker system dial-stdio` there); and a private registry
//! (Debian's `docker-registry`) at 10.213.77.1:5055 that every engine trusts. The
//! test's temporary folders and eden's own executable are hidden from those daemons (a tmpfs
//! over them in their mount namespace), as on another machine: anything eden bind-mounts by a
//! path of this machine shows up empty, and the test fails.
//!
//! One set per test process, made on first use (about two seconds, plus loading the test image
//! into each engine) and torn down when the process exits, by the pids it wrote; namespaces and
//! links are named after the test process, and leftovers of a killed one are removed first.
//! Needs root, `ip`, `nsenter`, `unshare`, `openssl`, `sshd`, dockerd and podman (`.ci/run` installs
//! them); elsewhere the tests that need it are skipped with a note.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const SUBNET: &str = "10.213.77";
const HOSTS: usize = 2;
/// gVisor's runtime, where `.ci/run` installs it: the engines register it as this machine's dockerd does.
pub const RUNSC: &str = "/usr/bin/runsc";

pub struct RemoteEngines {
    base: PathBuf,
    pid: u32,
    pub hosts: Vec<RemoteHost>,
    /// `ADDRESS:5055`: a private registry (Debian's `docker-registry`) on this machine's side of
    /// the network, which every test engine trusts without TLS.
    pub registry: String,
}

pub struct RemoteHost {
    pub name: String,
    pub address: String,
    /// `tcp://ADDRESS:2376` (TLS) or `tcp://ADDRESS:2375` (plain).
    pub docker: String,
    pub tls: bool,
    /// `tcp://ADDRESS:8888`: a podman API service (the first host only).
    pub podman: Option<String>,
    /// `ssh://root@ADDRESS`: an sshd whose sessions reach this host's dockerd (the first host
    /// only; its key in `RemoteEngines::ssh_config`).
    pub ssh: Option<String>,
    dockerd_pid: u32,
}

static ENGINES: OnceLock<Result<RemoteEngines, String>> = OnceLock::new();

/// The engines, set up once; `None` (the test skipped, with a note) where this machine cannot.
pub fn engines() -> Option<&'static RemoteEngines> {
    let engines = ENGINES.get_or_init(|| {
        let engines = RemoteEngines::start()?;
        extern "C" fn stop() {
            if let Some(Ok(engines)) = ENGINES.get() {
                engines.stop();
            }
        }
        // SAFETY: `stop` is an `extern "C" fn()` with no arguments, as atexit takes.
        unsafe { nix::libc::atexit(stop) };
        Ok(engines)
    });
    match engines {
        Ok(engines) => Some(engines),
        Err(why) => {
            crate::support::skip(&format!("remote engines cannot be set up here: {why}"));
            None
        }
    }
}

fn sh(script: &str) -> Result<String, String> {
    let output = Command::new("sh").args(["-c", script]).output().map_err(|err| err.to_string())?;
    if !output.status.success() {
        return Err(format!("`{script}` failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

impl RemoteEngines {
    fn start() -> Result<RemoteEngines, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("not root".into());
        }
        for tool in ["ip", "nsenter", "unshare", "openssl", "dockerd", "docker", "podman"] {
            which::which(tool).map_err(|_| format!("`{tool}` is missing"))?;
        }
        reap_stale();
        let pid = std::process::id();
        let base = PathBuf::from(format!("/var/tmp/eden-remote-engines/{pid}"));
        std::fs::create_dir_all(&base).map_err(|err| err.to_string())?;
        certificates(&base)?;
        let switch = format!("eden-sw-{pid}");
        sh(&format!(
            "ip netns add {switch} && ip link add ers{pid} type veth peer name erp{pid} && \
             ip link set erp{pid} netns {switch} && ip addr add {SUBNET}.1/24 dev ers{pid} && ip link set ers{pid} up && \
             ip netns exec {switch} ip link add br0 type bridge && ip netns exec {switch} ip link set br0 up && \
             ip netns exec {switch} ip link set erp{pid} master br0 && ip netns exec {switch} ip link set erp{pid} up"
        ))?;
        let registry = format!("{SUBNET}.1:5055");
        let mut engines = RemoteEngines { base, pid, hosts: Vec::new(), registry };
        engines.start_registry().inspect_err(|_| engines.stop())?;
        for n in 0..HOSTS {
            let host = engines.start_host(n, &switch).inspect_err(|_| engines.stop())?;
            engines.hosts.push(host);
        }
        for host in &engines.hosts {
            host.load_test_image(&engines).inspect_err(|_| engines.stop())?;
        }
        Ok(engines)
    }

    fn start_host(&self, n: usize, switch: &str) -> Result<RemoteHost, String> {
        let (pid, base) = (self.pid, &self.base);
        let name = format!("h{}", n + 1);
        let address = format!("{SUBNET}.{}", n + 2);
        let netns = format!("eden-{name}-{pid}");
        sh(&format!(
            "ip netns add {netns} && ip link add er{n}{pid}a type veth peer name er{n}{pid}b && \
             ip link set er{n}{pid}a netns {switch} && ip link set er{n}{pid}b netns {netns} && \
             ip netns exec {switch} ip link set er{n}{pid}a master br0 && ip netns exec {switch} ip link set er{n}{pid}a up && \
             ip netns exec {netns} ip addr add {address}/24 dev er{n}{pid}b && ip netns exec {netns} ip link set er{n}{pid}b up && \
             ip netns exec {netns} ip link set lo up && ip netns exec {netns} ip route add default via {SUBNET}.1"
        ))?;
        let dir = base.join(&name);
        std::fs::create_dir_all(dir.join("data")).map_err(|err| err.to_string())?;
        // gVisor registered as on this machine (`.ci/run`), where it is installed.
        let daemon = match std::path::Path::new(RUNSC).exists() {
            true => format!("{{\"runtimes\": {{\"runsc\": {{\"path\": \"{RUNSC}\", \"runtimeArgs\": [\"--network=host\", \"--host-uds=open\"]}}}}}}"),
            false => "{}".to_owned(),
        };
        std::fs::write(dir.join("daemon.json"), daemon).map_err(|err| err.to_string())?;
        let tls = n == 0;
        let listen = if tls {
            format!(
                "-H tcp://{address}:2376 --tlsverify --tlscacert {b}/ca.pem --tlscert {b}/{name}-cert.pem --tlskey {b}/{name}-key.pem",
                b = base.display()
            )
        } else {
            format!("-H tcp://{address}:2375")
        };
        let hidden =
            hidden_paths().iter().map(|path| format!("mount -t tmpfs none '{}'; ", path.display())).collect::<String>();
        let d = dir.display();
        let script = format!(
            "hostname {name}; {hidden}exec dockerd --data-root {d}/data --exec-root {d}/exec --pidfile {d}/docker.pid \
             -H unix://{d}/docker.sock {listen} --insecure-registry {SUBNET}.1:5055 --cgroup-parent /eden-{name}-{pid} --bip 172.31.{}.1/24 \
             --config-file {d}/daemon.json >{d}/dockerd.log 2>&1",
            201 + n
        );
        Command::new("setsid")
            .args([
                "nsenter",
                &format!("--net=/run/netns/{netns}"),
                "unshare",
                "--uts",
                "--mount",
                "--propagation",
                "private",
            ])
            .args(["sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|err| err.to_string())?;
        let docker = format!("tcp://{address}:{}", if tls { 2376 } else { 2375 });
        let mut host = RemoteHost { name, address, docker, tls, podman: None, ssh: None, dockerd_pid: 0 };
        let started = std::time::Instant::now();
        while !host.docker_command(self).args(["version"]).output().is_ok_and(|o| o.status.success()) {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let log = std::fs::read_to_string(dir.join("dockerd.log")).unwrap_or_default();
                return Err(format!("dockerd on {} did not start: {log}", host.name));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        host.dockerd_pid = std::fs::read_to_string(dir.join("docker.pid"))
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
            .ok_or("dockerd wrote no pid")?;
        if n == 0 {
            host.podman = Some(self.start_podman(&host, &dir)?);
            host.ssh = Some(self.start_sshd(&host, &dir)?);
        }
        Ok(host)
    }

    /// Debian's registry, serving on this machine's side of the test network.
    fn start_registry(&self) -> Result<(), String> {
        which::which("docker-registry").map_err(|_| "`docker-registry` is missing".to_owned())?;
        let b = self.base.display();
        std::fs::write(
            self.base.join("registry.yml"),
            format!(
                "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {b}/registry\nhttp:\n  addr: {}\n",
                self.registry
            ),
        )
        .map_err(|err| err.to_string())?;
        let child = Command::new("setsid")
            .args(["docker-registry", "serve", &format!("{b}/registry.yml")])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(self.base.join("registry.log")).map_err(|err| err.to_string())?)
            .spawn()
            .map_err(|err| err.to_string())?;
        std::fs::write(self.base.join("registry.pid"), child.id().to_string()).map_err(|err| err.to_string())?;
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(&self.registry).is_err() {
            if started.elapsed() > std::time::Duration::from_secs(30) {
                return Err("the registry did not start".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Ok(())
    }

    /// A podman API service in the host's namespaces (its mount namespace hides what dockerd's
    /// does), with stores of its own.
    fn start_podman(&self, host: &RemoteHost, dir: &Path) -> Result<String, String> {
        let url = format!("tcp://{}:8888", host.address);
        let d = dir.display();
        let script = format!(
            "exec podman --root {d}/podman/root --runroot {d}/podman/run --tmpdir {d}/podman/tmp \
             --network-config-dir {d}/podman/net --cgroup-manager cgroupfs system service --time=0 {url} \
             >{d}/podman.log 2>&1"
        );
        let child = Command::new("setsid")
            .args(["nsenter", "-t", &host.dockerd_pid.to_string(), "--mount", "--net", "--uts"])
            .args(["sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|err| err.to_string())?;
        std::fs::write(dir.join("podman.pid"), child.id().to_string()).map_err(|err| err.to_string())?;
        let started = std::time::Instant::now();
        loop {
            let ok = Command::new("podman").args(["--remote", "--url", &url, "version"]).output();
            if ok.is_ok_and(|o| o.status.success()) {
                return Ok(url);
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                return Err(format!("the podman service on {} did not start", host.name));
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// This machine's address on the engines' network (a server there is reachable from their
    /// containers).
    pub fn local_address(&self) -> String {
        format!("{SUBNET}.1")
    }

    /// An sshd in the host's namespaces, root logging in with the fixture's key, its sessions
    /// pointed at this host's dockerd (`docker -H ssh://…` runs `docker system dial-stdio`
    /// there).
    fn start_sshd(&self, host: &RemoteHost, dir: &Path) -> Result<String, String> {
        which::which("sshd").map_err(|_| "`sshd` is missing (openssh-server)".to_owned())?;
        let (b, d) = (self.base.display(), dir.display());
        if !self.base.join("ssh-key").exists() {
            sh(&format!("ssh-keygen -q -t ed25519 -N '' -f {b}/ssh-key && cp {b}/ssh-key.pub {b}/authorized_keys && chmod 600 {b}/authorized_keys"))?;
        }
        sh(&format!("ssh-keygen -q -t ed25519 -N '' -f {d}/host-key"))?;
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "ListenAddress {}:22\nHostKey {d}/host-key\nPidFile {d}/sshd.pid\nAuthorizedKeysFile {b}/authorized_keys\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\nStrictModes no\n\
                 SetEnv DOCKER_HOST=unix://{d}/docker.sock\n",
                host.address
            ),
        )
        .map_err(|err| err.to_string())?;
        std::fs::create_dir_all("/run/sshd").map_err(|err| err.to_string())?;
        let started = Command::new("nsenter")
            .args(["-t", &host.dockerd_pid.to_string(), "--mount", "--net", "--uts"])
            .args(["/usr/sbin/sshd", "-f", &format!("{d}/sshd_config")])
            .output()
            .map_err(|err| err.to_string())?;
        if !started.status.success() {
            return Err(format!("sshd did not start: {}", String::from_utf8_lossy(&started.stderr)));
        }
        Ok(format!("ssh://root@{}", host.address))
    }

    /// An ssh client configuration of the test's own (the fixture's key, the test hosts' keys
    /// taken on first sight) and an `ssh` in `dir` that uses it (OpenSSH reads the home folder
    /// from the password database, not `HOME`): returns the `PATH` that puts it first.
    pub fn ssh_config(&self, dir: &Path) -> String {
        let ssh = dir.join("ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        let config = format!(
            "Host {SUBNET}.*\n  User root\n  IdentityFile {}/ssh-key\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            self.base.display()
        );
        std::fs::write(ssh.join("config"), config).unwrap();
        let wrapper = ssh.join("ssh");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec /usr/bin/ssh -F {}/config \"$@\"\n", ssh.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("{}:{}", ssh.display(), std::env::var("PATH").unwrap_or_default())
    }

    /// The environment a docker client needs for TLS hosts.
    pub fn tls_env(&self) -> Vec<(String, String)> {
        vec![("DOCKER_TLS_VERIFY".into(), "1".into()), ("DOCKER_CERT_PATH".into(), self.base.display().to_string())]
    }

    fn stop(&self) {
        if let Some(pid) =
            std::fs::read_to_string(self.base.join("registry.pid")).ok().and_then(|p| p.trim().parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        for host in &self.hosts {
            let dir = self.base.join(&host.name);
            for pid_file in ["sshd.pid", "podman.pid", "docker.pid"] {
                if let Some(pid) =
                    std::fs::read_to_string(dir.join(pid_file)).ok().and_then(|p| p.trim().parse::<i32>().ok())
                {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        teardown(self.pid);
    }
}

impl RemoteHost {
    /// `docker` pointed at this host's engine.
    pub fn docker_command(&self, engines: &RemoteEngines) -> Command {
        let mut command = Command::new("docker");
        command.args(["--host", &self.docker]).env_remove("DOCKER_CONTEXT");
        if self.tls {
            command.envs(engines.tls_env());
        } else {
            command.env_remove("DOCKER_TLS_VERIFY");
        }
        command
    }

    /// The names of eden's containers on this engine for the repository at `repo`.
    pub fn containers(&self, engines: &RemoteEngines, repo: &Path) -> Vec<String> {
        let filter = format!("label=eden.repo={}", std::fs::canonicalize(repo).unwrap().display());
        let output = self
            .docker_command(engines)
            .args(["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
    }

    fn load_test_image(&self, engines: &RemoteEngines) -> Result<(), String> {
        if !crate::containers::ready("docker") {
            return Err("the local docker has no test image".into());
        }
        let mut load = self.docker_command(engines);
        load.arg("load");
        load_image(load, &self.name)?;
        if let Some(url) = &self.podman {
            let mut load = Command::new("podman");
            load.args(["--remote", "--url", url, "load"]);
            load_image(load, &format!("podman on {}", self.name))?;
        }
        Ok(())
    }
}

/// The local docker's test image, saved into `load` (another engine's `load`).
fn load_image(mut load: Command, into: &str) -> Result<(), String> {
    let mut save = Command::new("docker")
        .args(["save", crate::containers::IMAGE])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| err.to_string())?;
    let loaded = load.stdin(save.stdout.take().unwrap()).output().map_err(|err| err.to_string())?;
    let _ = save.wait();
    if !loaded.status.success() {
        return Err(format!("loading the test image into {into} failed: {}", String::from_utf8_lossy(&loaded.stderr)));
    }
    Ok(())
}

/// What a remote engine must not see: the tests' temporary folders and eden's executable.
fn hidden_paths() -> Vec<PathBuf> {
    let exe_dir = Path::new(crate::support::EDEN).parent().unwrap().to_path_buf();
    vec![std::env::temp_dir(), exe_dir]
}

/// A CA, a server certificate per host (its address as subjectAltName), a client certificate:
/// `ca.pem`, `cert.pem`, `key.pem` as `DOCKER_CERT_PATH` wants them.
fn certificates(base: &Path) -> Result<(), String> {
    let b = base.display();
    let mut script = format!(
        "cd {b} && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=eden-test-ca -keyout ca-key.pem -out ca.pem && \
         openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout key.pem -out client.csr && \
         printf 'extendedKeyUsage=clientAuth\\n' > client.cnf && \
         openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile client.cnf -out cert.pem"
    );
    for n in 0..HOSTS {
        let name = format!("h{}", n + 1);
        let address = format!("{SUBNET}.{}", n + 2);
        script.push_str(&format!(
            " && openssl req -newkey rsa:2048 -nodes -subj /CN={name} -keyout {name}-key.pem -out {name}.csr && \
             printf 'subjectAltName=IP:{address}\\nextendedKeyUsage=serverAuth\\n' > {name}.cnf && \
             openssl x509 -req -in {name}.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile {name}.cnf -out {name}-cert.pem"
        ));
    }
    sh(&format!("({script}) 2>&1")).map(drop)
}

/// Namespaces, links and daemons of test processes that are gone (killed before their exit
/// handler ran).
fn reap_stale() {
    let Ok(entries) = std::fs::read_dir("/var/tmp/eden-remote-engines") else { return };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        for pid_file in ["registry.pid", "h1/sshd.pid", "h1/podman.pid", "h1/docker.pid", "h2/docker.pid"] {
            if let Some(daemon) =
                std::fs::read_to_string(entry.path().join(pid_file)).ok().and_then(|p| p.trim().parse::<i32>().ok())
            {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(daemon), nix::sys::signal::Signal::SIGKILL);
            }
        }
        teardown(pid);
    }
}

fn teardown(pid: u32) {
    let _ = sh(&format!(
        "ip link del ers{pid} 2>/dev/null; for ns in $(ip netns list | awk '{{print $1}}' | grep -- '-{pid}$'); do ip netns del $ns; done; \
         umount -l /var/tmp/eden-remote-engines/{pid}/*/data/overlay2/*/merged 2>/dev/null; \
         rm -rf /var/tmp/eden-remote-engines/{pid} 2>/dev/null; true"
    ));
}
