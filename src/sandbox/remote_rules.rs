//! The network rules of `network = "internet"` and `"allowlist"` on a remote engine, where
//! eden cannot enter the container's namespace from this machine. The rules are the same as
//! locally (`firewall`); they are installed from a helper container on that engine that joins
//! the sandbox's network namespace (`--network container:NAME`) and alone holds `NET_ADMIN`
//! (the agent's own container holds no capability), for the moment it takes. The helper runs
//! this machine's own `iptables-restore` (nf_tables), sent in with its libraries as a tar
//! stream, so the image needs nothing but `sh`, `mktemp` and `tar`, as for any remote sandbox.
//!
//! The self-test is the local one's: a probe container of eden's in the engine host's own
//! network listens (`eden __eden-listen`) at the sandbox's gateway; the sandbox must reach it
//! before the rules and must be refused after them, the probe seeing nothing (where it cannot
//! be reached at all, a denied address, 192.0.2.1, must be refused instead); an allowlist's
//! first destination must connect. A failure stops the run (exit 6) before the agent starts.

use super::carry::{self, Exec, EDEN_INSIDE};
use super::engine::Target;
use super::firewall::{self, Policy, Rule, CONNECT_SUBCOMMAND};
use crate::error::Error;
use crate::process::ProcessBuilder;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The hidden subcommand the probe runs: `__eden-listen PORT SECONDS`.
pub(crate) const LISTEN_SUBCOMMAND: &str = "__eden-listen";

/// The xtables extensions the rules use, from this machine's `iptables`.
const EXTENSIONS: [&str; 6] = [
    "libxt_conntrack.so",
    "libxt_standard.so",
    "libxt_tcp.so",
    "libxt_udp.so",
    "libipt_REJECT.so",
    "libip6t_REJECT.so",
];

/// Run by the helper: unpack the bundle in a folder of its own (as its own files: the helper
/// may not give them eden's owner) and restore both rule sets.
pub(super) const INSTALL_SCRIPT: &str = r#"set -e
d=$(mktemp -d)
tar -x -o -f - -C "$d"
export XTABLES_LIBDIR="$d/xtables"
"$d/ld.so" --library-path "$d/lib" "$d/xtables-nft-multi" iptables-restore "$d/v4"
"$d/ld.so" --library-path "$d/lib" "$d/xtables-nft-multi" ip6tables-restore "$d/v6""#;

/// The sandbox on a remote engine, as the rules need it.
pub(crate) struct RemoteSandbox<'a> {
    pub(crate) target: &'a Target,
    pub(crate) name: &'a str,
    pub(crate) image: &'a str,
    /// The engine's address as the client resolved it (`tcp://…`, `ssh://…`), if known.
    pub(crate) endpoint: Option<&'a str>,
    /// Runs a command in the sandbox as root (`stdin`: with its stdin open).
    pub(crate) as_root: Exec<'a>,
    /// Has eden's executable been copied in.
    pub(crate) eden_inside: &'a std::sync::atomic::AtomicBool,
    /// The run's scratch folder on this machine (the bundle is made there).
    pub(crate) scratch: &'a Path,
}

/// Install `policy`'s rules in the sandbox and test them. Names in an allowlist are resolved
/// on this machine, and again every minute while the run goes (the `Refresher`: a helper
/// restores the rules when their addresses change).
pub(crate) fn install(sandbox: &RemoteSandbox<'_>, policy: &Policy) -> Result<Option<firewall::Refresher>, Error> {
    carry::copy_eden_in(sandbox.eden_inside, sandbox.as_root, "container")?;
    let read = |path: &str| inside_output(sandbox, ProcessBuilder::new("cat").arg(path));
    let resolvers = firewall::resolvers(&read("/etc/resolv.conf")?);
    let gateway = firewall::default_gateway(&read("/proc/net/route")?);
    let allow = match policy {
        Policy::Allow(allow) => allow.clone(),
        Policy::Internet => Vec::new(),
    };
    let rules = firewall::resolve(&allow)?;
    let (v4, v6) = match policy {
        Policy::Allow(_) => firewall::rule_sets(&resolvers, &rules),
        Policy::Internet => {
            let mut blocked = firewall::blocked(gateway);
            blocked.extend(sandbox.endpoint.and_then(engine_address).map(|address| format!("{address}/32")));
            firewall::internet_rule_sets(&resolvers, &blocked)
        }
    };
    // The probe listens at the sandbox's gateway, unless an allowlist lets that through.
    let gateway =
        gateway.filter(|gateway| !rules.iter().flatten().any(|rule| firewall::covers(&rule.network, *gateway)));
    let probe = gateway.map(|gateway| Probe::start(sandbox, gateway)).transpose()?;
    let result = (|| {
        // Reached before the rules, or the fixed denied address is all there is.
        let before = match &probe {
            Some(probe) => Some(probe.reached_from(sandbox)?).filter(|(code, _)| *code == 0).map(|_| probe),
            None => None,
        };
        Helper::of(sandbox).restore(&v4, &v6)?;
        let (target, after) = match before {
            Some(probe) => (format!("eden's probe at {}", probe.address), probe.reached_from(sandbox)?),
            None => {
                let (address, port) = firewall::DENIED_PROBE;
                (format!("{address}:{port}"), connect(sandbox, &address.to_string(), port)?)
            }
        };
        if after.0 != 1 {
            return Err(Error::sandbox(format!(
                "the network rules' self-test failed: a connection to {target} was not refused ({})",
                if after.1.is_empty() { "it connected" } else { after.1.as_str() }
            ))
            .with_hint("the rules are not in force; nothing ran in the sandbox"));
        }
        test_first_allowed(sandbox, &allow, &rules)
    })();
    if let Some(probe) = probe {
        probe.remove(sandbox);
    }
    result?;
    let helper = Helper::of(sandbox);
    firewall::refresh_allowlist(rules, allow, move |next| {
        let (v4, v6) = firewall::rule_sets(&resolvers, next);
        helper.restore(&v4, &v6).is_ok()
    })
}

/// The remote engine's own address, when the client reaches it by one (`tcp://10.0.0.5:2376`):
/// refused like this machine's are locally.
fn engine_address(endpoint: &str) -> Option<Ipv4Addr> {
    let rest = endpoint.strip_prefix("tcp://").or_else(|| endpoint.strip_prefix("ssh://"))?;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split(':').next()?.parse().ok()
}

/// The allowlist's first destination that is one host connects.
fn test_first_allowed(
    sandbox: &RemoteSandbox<'_>,
    allow: &[crate::manifest::plan::AllowEntry],
    rules: &[Vec<Rule>],
) -> Result<(), Error> {
    let Some((rules, entry)) =
        rules.iter().zip(allow).find(|(rules, entry)| !rules.is_empty() && !entry.host.contains('/'))
    else {
        return Ok(());
    };
    let address = rules[0].network.split('/').next().unwrap_or_default().to_owned();
    let port = entry.port.unwrap_or(443);
    match connect(sandbox, &address, port)? {
        (0, _) => Ok(()),
        (_, said) => Err(Error::sandbox(format!(
            "the allowlist's self-test failed: the allowed destination `{}` ({address}:{port}) cannot be reached from the sandbox: {said}",
            entry.host
        ))
        .with_hint("check that it is up and reachable from the engine's containers; the run stopped before the agent started")),
    }
}

/// `eden __eden-connect ADDRESS PORT` in the sandbox: its exit code and what it said.
fn connect(sandbox: &RemoteSandbox<'_>, address: &str, port: u16) -> Result<(i32, String), Error> {
    connect_through(sandbox.as_root, address, port, &format!("container `{}`", sandbox.name))
}

/// `eden __eden-connect ADDRESS PORT` run through `exec` (eden is inside): its exit code (0
/// connected, 1 refused, 2 no answer) and what it said.
pub(super) fn connect_through(exec: Exec<'_>, address: &str, port: u16, place: &str) -> Result<(i32, String), Error> {
    let command = exec(ProcessBuilder::new(EDEN_INSIDE).args([CONNECT_SUBCOMMAND, address, &port.to_string()]), false);
    let output = super::engine::run(command)?;
    match output.status.code() {
        Some(code @ 0..=2) => Ok((code, output.stderr.trim().to_owned())),
        _ => {
            Err(Error::sandbox(format!("cannot test the network rules from inside {place}: {}", output.stderr.trim())))
        }
    }
}

fn inside_output(sandbox: &RemoteSandbox<'_>, command: ProcessBuilder) -> Result<String, Error> {
    let command = (sandbox.as_root)(command, false);
    let output = super::engine::run(command.clone())?;
    if !output.success() {
        return Err(Error::sandbox(format!("`{command}` failed: {}", output.stderr.trim())));
    }
    Ok(output.stdout)
}

/// What a helper needs to restore the rules in the sandbox's network namespace (owned: the
/// allowlist's refresh does it again later).
struct Helper {
    target: Target,
    name: String,
    image: String,
    scratch: PathBuf,
}

impl Helper {
    fn of(sandbox: &RemoteSandbox<'_>) -> Helper {
        Helper {
            target: sandbox.target.clone(),
            name: sandbox.name.to_owned(),
            image: sandbox.image.to_owned(),
            scratch: sandbox.scratch.to_owned(),
        }
    }

    /// The rules restored by a helper container in the sandbox's network namespace.
    fn restore(&self, v4: &str, v6: &str) -> Result<(), Error> {
        let helper =
            self.target.command().args(["run", "--rm", "-i", "--network"]).arg(format!("container:{}", self.name));
        let helper = helper
            .args(["--cap-drop", "ALL", "--cap-add", "NET_ADMIN", "--security-opt", "no-new-privileges"])
            .args(["--user", "0:0", "--entrypoint", "sh", "--label", "eden.helper=rules"])
            .arg(&self.image)
            .args(["-c", INSTALL_SCRIPT]);
        send_rules(helper, &self.scratch, (v4, v6), |said| {
            Error::sandbox(format!(
                "{} could not install the network rules in container `{}`: {said}",
                self.target.describe(),
                self.name,
            ))
            .with_hint("the engine must run a helper container with `NET_ADMIN` in the sandbox's network namespace, on the same architecture as this machine, with nf_tables in its kernel; or choose `network = \"bridge\"` or `\"none\"`")
        })
    }
}

/// The bundle (`make_bundle`, made in `scratch`) as a tar stream into `helper`, which runs
/// `INSTALL_SCRIPT` where the rules go. When the helper or tar fails, the error is what
/// `refused` makes of what it said.
pub(super) fn send_rules(
    helper: ProcessBuilder,
    scratch: &Path,
    (v4, v6): (&str, &str),
    refused: impl FnOnce(&str) -> Error,
) -> Result<(), Error> {
    let bundle = scratch.join("rules");
    let _ = crate::safe_fs::remove_tree(&bundle);
    make_bundle(&bundle, v4, v6)?;
    let archive = ProcessBuilder::new("tar").args(["-c", "-f", "-", "-C"]).arg(&bundle).arg(".");
    let helper = helper.timeout(super::ENGINE_CALL);
    let (archived, installed) = archive
        .pipe_into(&helper)
        .map_err(|err| Error::sandbox(format!("cannot run `{helper}` to install the network rules: {err}")))?;
    let _ = crate::safe_fs::remove_tree(&bundle);
    if !archived.success() || !installed.success() {
        let said = if archived.success() { &installed.stderr } else { &archived.stderr };
        return Err(refused(said.trim()));
    }
    Ok(())
}

/// This machine's `iptables-restore` (nf_tables), its libraries and loader, the extensions the
/// rules use, and the rule sets, in `bundle`.
fn make_bundle(bundle: &Path, v4: &str, v6: &str) -> Result<(), Error> {
    let failed = |why: String| {
        Error::sandbox(format!("cannot gather this machine's `iptables` for the sandbox's network rules: {why}"))
            .with_hint(
                "the rules on a remote engine and in a pod need `iptables` (nf_tables) installed on this machine",
            )
    };
    let program = super::firewall::which("xtables-nft-multi")
        .ok_or_else(|| failed("`xtables-nft-multi` is not installed".into()))?;
    let ldd = ProcessBuilder::new("ldd").arg(&program).output().map_err(|err| failed(err.to_string()))?;
    if !ldd.success() {
        return Err(failed(ldd.stderr.trim().to_owned()));
    }
    let (libraries, loader) = linked(&ldd.stdout);
    let loader = loader.ok_or_else(|| failed("no loader in `ldd`'s answer".into()))?;
    let extensions = ["/usr/lib/x86_64-linux-gnu/xtables", "/usr/lib/aarch64-linux-gnu/xtables", "/usr/lib/xtables"]
        .iter()
        .map(PathBuf::from)
        .find(|dir| dir.join(EXTENSIONS[0]).exists())
        .ok_or_else(|| failed("its extensions (`libxt_conntrack.so`, …) are not found".into()))?;
    let copy = |from: &Path, to: PathBuf| fs_err::copy(from, to).map(drop).map_err(|err| failed(err.to_string()));
    fs_err::create_dir_all(bundle.join("lib")).map_err(|err| failed(err.to_string()))?;
    fs_err::create_dir_all(bundle.join("xtables")).map_err(|err| failed(err.to_string()))?;
    copy(&program, bundle.join("xtables-nft-multi"))?;
    copy(&loader, bundle.join("ld.so"))?;
    for library in libraries {
        let name = library.file_name().map(ToOwned::to_owned).unwrap_or_default();
        copy(&library, bundle.join("lib").join(name))?;
    }
    for extension in EXTENSIONS {
        copy(&extensions.join(extension), bundle.join("xtables").join(extension))?;
    }
    fs_err::write(bundle.join("v4"), v4).map_err(|err| failed(err.to_string()))?;
    fs_err::write(bundle.join("v6"), v6).map_err(|err| failed(err.to_string()))
}

/// The libraries in `ldd`'s answer (`name => /path (…)`) and the loader (`/path (…)`).
fn linked(ldd: &str) -> (Vec<PathBuf>, Option<PathBuf>) {
    let mut libraries = Vec::new();
    let mut loader = None;
    for line in ldd.lines().map(str::trim) {
        match line.split_once("=>") {
            Some((_, path)) => {
                let path = path.trim().split(' ').next().unwrap_or_default();
                if path.starts_with('/') {
                    libraries.push(PathBuf::from(path));
                }
            }
            None => {
                let path = line.split(' ').next().unwrap_or_default();
                if path.starts_with('/') {
                    loader = Some(PathBuf::from(path));
                }
            }
        }
    }
    (libraries, loader)
}

/// eden's probe on the engine: a container of the sandbox's image in the engine host's own
/// network (so that removing it touches no network the sandbox is on), with eden inside, which
/// listens while the sandbox tries to connect to its gateway: the engine's host.
struct Probe {
    name: String,
    /// The sandbox's gateway.
    address: Ipv4Addr,
}

impl Probe {
    fn start(sandbox: &RemoteSandbox<'_>, address: Ipv4Addr) -> Result<Probe, Error> {
        let name = format!("{}-probe", sandbox.name);
        // It ends by itself within two minutes, should eden die before removing it.
        let run = sandbox
            .target
            .command()
            .args(["run", "-d", "--rm", "--name", &name, "--network", "host"])
            .args(["--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--label", "eden.helper=probe"])
            .args(["--user", "0:0", "--entrypoint", "sleep", sandbox.image, "120"]);
        let started = super::engine::run(run)?;
        if !started.success() {
            return Err(Error::sandbox(format!(
                "cannot start eden's probe for the network rules' self-test: {}",
                started.stderr.trim()
            )));
        }
        let probe = Probe { name, address };
        let exec = |command: ProcessBuilder, stdin: bool| {
            let flags: &[&str] = if stdin { &["exec", "-i"] } else { &["exec"] };
            sandbox.target.command().args(flags).arg(&probe.name).arg(command.program()).args(command.get_args())
        };
        match carry::copy_eden_in(&std::sync::atomic::AtomicBool::new(false), &exec, "probe container") {
            Ok(()) => Ok(probe),
            Err(err) => {
                probe.remove(sandbox);
                Err(err)
            }
        }
    }

    /// Listen in the probe, connect from the sandbox: what the sandbox's attempt came to
    /// (0 connected, 1 refused, 2 no answer, and what it said); 0 also when the probe was
    /// reached whatever the sandbox saw.
    fn reached_from(&self, sandbox: &RemoteSandbox<'_>) -> Result<(i32, String), Error> {
        let listen =
            sandbox.target.command().args(["exec", &self.name, EDEN_INSIDE, LISTEN_SUBCOMMAND]).args(["0", "8"]);
        let mut listener = listen
            .spawn_channel()
            .map_err(|err| Error::sandbox(format!("cannot run `{listen}` for the network rules' self-test: {err}")))?;
        // It says where it listens.
        let mut line = String::new();
        if let Some(stdout) = listener.stdout.take() {
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        }
        let Some(port) = line.trim().strip_prefix("listening ").and_then(|port| port.parse::<u16>().ok()) else {
            let _ = listener.kill();
            let _ = listener.wait();
            return Err(Error::sandbox("eden's probe for the network rules' self-test did not listen"));
        };
        let tried = connect(sandbox, &self.address.to_string(), port);
        // A connection ends the listener at once; one that did not come is not waited for long.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut reached = false;
        while std::time::Instant::now() < deadline {
            match listener.try_wait() {
                Ok(Some(status)) => {
                    reached = status.success();
                    break;
                }
                Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Err(_) => break,
            }
        }
        let _ = listener.kill();
        let _ = listener.wait();
        let tried = tried?;
        Ok(if reached && tried.0 != 0 { (0, "the probe was reached".into()) } else { tried })
    }

    fn remove(&self, sandbox: &RemoteSandbox<'_>) {
        let _ = super::engine::run(sandbox.target.command().finishing().args(["rm", "-f", &self.name]));
    }
}

/// `__eden-listen PORT SECONDS`: listen on every address's PORT (0: any free one), say
/// `listening PORT`, and exit 0 when a connection arrives within SECONDS, 1 when none does.
pub(crate) fn run_listen(args: &[std::ffi::OsString]) -> i32 {
    use std::io::Write;
    let port = args.first().and_then(|port| port.to_str()?.parse::<u16>().ok());
    let seconds = args.get(1).and_then(|seconds| seconds.to_str()?.parse::<u64>().ok()).unwrap_or(5);
    let Some(port) = port else { return 3 };
    let Ok(listener) = std::net::TcpListener::bind(("0.0.0.0", port)) else { return 3 };
    let Ok(bound) = listener.local_addr() else { return 3 };
    if listener.set_nonblocking(true).is_err() || writeln!(std::io::stdout(), "listening {}", bound.port()).is_err() {
        return 3;
    }
    let _ = std::io::stdout().flush();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if listener.accept().is_ok() {
            return 0;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldds_answer_names_the_libraries_and_the_loader() {
        let ldd = "\tlinux-vdso.so.1 (0x00007feb792fb000)\n\tlibxtables.so.12 => /lib/x86_64-linux-gnu/libxtables.so.12 (0x1)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n\t/lib64/ld-linux-x86-64.so.2 (0x3)\n";
        let (libraries, loader) = linked(ldd);
        assert_eq!(
            libraries,
            [PathBuf::from("/lib/x86_64-linux-gnu/libxtables.so.12"), PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6")]
        );
        assert_eq!(loader, Some(PathBuf::from("/lib64/ld-linux-x86-64.so.2")));
    }

    #[test]
    fn an_engines_address_is_refused_as_this_machines_are() {
        assert_eq!(engine_address("tcp://10.213.80.2:2375"), Some(Ipv4Addr::new(10, 213, 80, 2)));
        assert_eq!(engine_address("ssh://root@10.0.0.9"), Some(Ipv4Addr::new(10, 0, 0, 9)));
        assert_eq!(engine_address("ssh://build1"), None);
        assert_eq!(engine_address("unix:///run/docker.sock"), None);
    }
}
