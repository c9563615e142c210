//! Rules in a container's own network namespace, installed by eden from the host before any
//! hook or agent command runs in it, which nothing inside can undo (the container holds no
//! capability, and `run_args` that would give one back are refused at load):
//!
//! - `network = "internet"` (a container's default): every connection to this machine (each of
//!   its addresses), the bridge's gateway, private and shared ranges, link-local (where cloud
//!   metadata lives), multicast and reserved addresses is refused; the internet is not. DNS to
//!   the container's own resolver stays open.
//! - `network = "allowlist"`: every outgoing connection is refused but to `sandbox.allow` and
//!   DNS to the resolver.
//!
//! eden enters the namespace from the host (`nsenter`, `iptables-restore`). Then a self-test
//! against a target eden controls: a listener on the host at the sandbox's gateway, which the
//! sandbox reached before the rules, must be refused after them and have seen nothing (the
//! first allowed destination must connect). Where the container's runtime is not one whose
//! traffic goes through the namespace's kernel stack (runc, crun), gVisor's or a VM's, the
//! probes after the rules run inside the container itself, so rules that do not reach its
//! traffic cannot pass. If the rules cannot be installed or the self-test fails, the run stops
//! (exit 6) before the agent starts: never silently open. Names are resolved at the start and
//! again every minute while the run goes (`Refresher`); the rules follow their addresses, and a
//! name that stops resolving keeps the addresses it had.

use crate::error::Error;
use crate::manifest::plan::{AllowEntry, Engine};
use crate::process::{ProcessBuilder, Stdin};
use std::net::{Ipv4Addr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the allowed names are resolved again.
const REFRESH: Duration = Duration::from_secs(60);

/// Re-resolves the allowed names while the run goes; stops when dropped (the container's
/// removal).
pub(crate) struct Refresher {
    stop: Arc<AtomicBool>,
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The hidden subcommand the self-test runs inside the namespace: `__eden-connect ADDR PORT`.
pub(crate) const CONNECT_SUBCOMMAND: &str = "__eden-connect";

/// An address nobody is allowed to (TEST-NET-1, RFC 5737): it must be refused.
pub(super) const DENIED_PROBE: (Ipv4Addr, u16) = (Ipv4Addr::new(192, 0, 2, 1), 9);

/// eden's own listener on the host, at the sandbox's gateway (the host's end of the engine's
/// network), which the sandbox reached before the rules were installed.
struct Target {
    listener: std::net::TcpListener,
    address: Ipv4Addr,
    port: u16,
}

impl Target {
    /// Listen at the namespace's gateway and check the sandbox reaches it; `None` when there is
    /// no such gateway on this host (a remote or host network), it is allowed anyway, or it
    /// cannot be reached (then the fixed probe is all there is).
    fn open(pid: u32, rules: &[Vec<Rule>]) -> Option<Target> {
        let route = std::fs::read_to_string(format!("/proc/{pid}/net/route")).ok()?;
        let address = default_gateway(&route)?;
        let listener = std::net::TcpListener::bind((address, 0)).ok()?;
        listener.set_nonblocking(true).ok()?;
        let port = listener.local_addr().ok()?.port();
        let allowed = rules
            .iter()
            .flatten()
            .any(|rule| rule.port.is_none_or(|allowed| allowed == port) && covers(&rule.network, address));
        let target = Target { listener, address, port };
        if allowed || !matches!(connect_inside(pid, &address.to_string(), port), Ok((0, _))) || !target.reached() {
            return None;
        }
        Some(target)
    }

    /// Did a connection arrive since the last look?
    fn reached(&self) -> bool {
        let mut any = false;
        while self.listener.accept().is_ok() {
            any = true;
        }
        any
    }
}

/// The default route's gateway in `/proc/net/route` (hexadecimal, host byte order).
pub(super) fn default_gateway(route: &str) -> Option<Ipv4Addr> {
    route.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (destination, gateway) = (fields.get(1)?, fields.get(2)?);
        if *destination != "00000000" {
            return None;
        }
        // The kernel prints the address as the u32 it holds in memory, network byte order.
        let raw = u32::from_str_radix(gateway, 16).ok()?;
        Some(Ipv4Addr::from(raw.to_le_bytes())).filter(|ip| !ip.is_unspecified())
    })
}

/// The IPv4 name servers a `resolv.conf` names.
pub(super) fn resolvers(resolv_conf: &str) -> Vec<Ipv4Addr> {
    resolv_conf
        .lines()
        .filter_map(|line| line.strip_prefix("nameserver"))
        .filter_map(|address| address.trim().parse().ok())
        .collect()
}

/// Does `network` (an address, or `address/prefix`) hold `address`?
pub(super) fn covers(network: &str, address: Ipv4Addr) -> bool {
    let (base, prefix) = network.split_once('/').unwrap_or((network, "32"));
    let (Ok(base), Ok(prefix)) = (base.parse::<Ipv4Addr>(), prefix.parse::<u32>()) else { return false };
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix.min(32)) };
    u32::from(base) & mask == u32::from(address) & mask
}

/// A destination as the rules see it: an address or network, and a port (any when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rule {
    pub(super) network: String,
    pub(super) port: Option<u16>,
}

/// What the rules let through.
#[derive(Debug, Clone)]
pub(crate) enum Policy {
    /// `network = "internet"`: everything but this machine, private ranges and the like.
    Internet,
    /// `network = "allowlist"`: only these (and DNS to the resolver).
    Allow(Vec<AllowEntry>),
}

/// Never reached with `network = "internet"`: "this network", private ranges (RFC 1918), shared
/// address space (RFC 6598), loopback, link-local (cloud metadata), IETF protocol assignments,
/// the documentation and benchmarking ranges, multicast and reserved (broadcast included).
const NOT_THE_INTERNET: [&str; 14] = [
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// The container's network namespace, as the firewall finds it.
struct Namespace {
    engine: Engine,
    name: String,
    /// A process of the container's on the host (in its network namespace).
    pid: u32,
    /// Its traffic goes through that namespace's kernel stack (runc, crun): probes can run
    /// there from the host. Otherwise (gVisor, a VM) they run inside the container.
    kernel_stack: bool,
    resolvers: Vec<Ipv4Addr>,
}

impl Namespace {
    fn find(engine: Engine, name: &str) -> Result<Namespace, Error> {
        let runtime = match engine {
            Engine::Docker => "{{.HostConfig.Runtime}}",
            Engine::Podman => "{{.OCIRuntime}}",
        };
        let format = format!("{{{{.State.Pid}}}}\t{runtime}\t{{{{.ResolvConfPath}}}}");
        let found = engine_output(engine, &["inspect", "--format", &format, name])?;
        let mut fields = found.trim_end().split('\t');
        let pid = fields.next().and_then(|pid| pid.trim().parse::<u32>().ok()).filter(|pid| *pid > 0);
        let pid = pid.ok_or_else(|| {
            Error::sandbox(format!("cannot find the process of container `{name}` to install its network rules"))
        })?;
        let runtime = fields.next().unwrap_or_default();
        let base = runtime.rsplit('/').next().unwrap_or_default();
        let kernel_stack = matches!(base, "" | "runc" | "crun" | "youki" | "io.containerd.runc.v2");
        // The container's own `resolv.conf` is a file on the host (the engine writes it).
        let resolv = match fields.next().map(str::trim).filter(|path| path.starts_with('/')) {
            Some(path) => std::fs::read_to_string(path).ok(),
            None => None,
        };
        let resolv = match resolv {
            Some(text) => text,
            None => engine_output(engine, &["exec", name, "cat", "/etc/resolv.conf"])?,
        };
        let resolvers = resolvers(&resolv);
        Ok(Namespace { engine, name: name.to_owned(), pid, kernel_stack, resolvers })
    }

    /// Try to connect to `address:port` as the sandbox would: exit code (0 connected, 1
    /// refused, 2 no answer) and what was said.
    fn connect(&self, address: &str, port: u16) -> Result<(i32, String), Error> {
        if self.kernel_stack {
            return connect_inside(self.pid, address, port);
        }
        let command = super::engine::Target::new(self.engine, None).command().args([
            "exec",
            &self.name,
            super::carry::EDEN_INSIDE,
            CONNECT_SUBCOMMAND,
            address,
            &port.to_string(),
        ]);
        let output = super::engine::run(command)?;
        match output.status.code() {
            Some(code @ 0..=2) => Ok((code, output.stderr.trim().to_owned())),
            _ => Err(Error::sandbox(format!(
                "cannot test the network rules from inside container `{}`: {}",
                self.name,
                output.stderr.trim()
            ))
            .with_hint("under a runtime other than runc or crun, eden tests its rules by running its own executable in the container; the image needs glibc (a Debian or Ubuntu base), or choose `network = \"none\"`")),
        }
    }
}

/// Install the rules of `policy` in the running container `name` and test them; the
/// `Refresher` keeps an allowlist's names' addresses current (none when every entry is an
/// address, and for `Internet`).
pub(crate) fn install(engine: Engine, name: &str, policy: &Policy) -> Result<Option<Refresher>, Error> {
    if !nix::unistd::geteuid().is_root() {
        return Err(needs_root(policy));
    }
    let namespace = Namespace::find(engine, name)?;
    let pid = namespace.pid;
    let resolvers = namespace.resolvers.clone();
    let allow = match policy {
        Policy::Allow(allow) => allow.clone(),
        Policy::Internet => Vec::new(),
    };
    let rules = resolve(&allow)?;
    // A target eden controls, reachable from the sandbox before the rules: after them it must
    // be refused. (Only an address nobody answers proves nothing: its own network may refuse.)
    let target = Target::open(pid, &rules);
    let (v4, v6) = match policy {
        Policy::Allow(_) => rule_sets(&resolvers, &rules),
        Policy::Internet => internet_rule_sets(&resolvers, &blocked(target.as_ref().map(|t| t.address))),
    };
    in_namespace(pid, "iptables-restore", v4)?;
    in_namespace(pid, "ip6tables-restore", v6)?;
    self_test(&namespace, &allow, &rules, target.as_ref())?;
    refresh_allowlist(rules, allow, move |next| {
        in_namespace(pid, "iptables-restore", rule_sets(&resolvers, next).0).is_ok()
    })
}

/// Every `REFRESH` while the run goes, the allowlist's names resolved again; `apply` gets the
/// rules when their addresses changed and says whether they are in force (if not, the old
/// ones stay, and the next look tries again). `None` when every entry is an address.
pub(super) fn refresh_allowlist(
    rules: Vec<Vec<Rule>>,
    allow: Vec<AllowEntry>,
    apply: impl Fn(&[Vec<Rule>]) -> bool + Send + 'static,
) -> Result<Option<Refresher>, Error> {
    if allow.iter().all(|entry| is_address(&entry.host)) {
        return Ok(None);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let refresh = move || {
        let mut current = rules;
        loop {
            std::thread::sleep(REFRESH);
            if flag.load(Ordering::SeqCst) {
                return;
            }
            if let Some(next) = next_rules(&current, &allow, &|entry| resolve_entry(entry).ok()) {
                // The whole table is replaced at once; if that fails the old rules stay.
                if apply(&next) {
                    current = next;
                }
            }
        }
    };
    std::thread::Builder::new()
        .name("allowlist".into())
        .spawn(refresh)
        .map_err(|err| Error::sandbox(format!("cannot start the allowlist's refresh: {err}")))?;
    Ok(Some(Refresher { stop }))
}

/// The error of rules eden cannot install, not being root.
pub(crate) fn needs_root(policy: &Policy) -> Error {
    let (what, instead) = match policy {
        Policy::Internet => (
            "the default network (`network = \"internet\"`: the internet, but not this machine)",
            "`network = \"bridge\"` (the engine's bridge as it is, which reaches this machine) or `\"none\"`",
        ),
        Policy::Allow(_) => ("`network = \"allowlist\"`", "`network = \"none\"`"),
    };
    Error::sandbox(format!(
        "{what} needs eden to run as root: it enters the container's network namespace to install its rules"
    ))
    .with_hint(format!("run eden as root, or choose {instead} in `[sandbox]`"))
}

/// What `network = "internet"` refuses: `NOT_THE_INTERNET`, and every address this machine has
/// (a public one too: from a container it is this machine), and the sandbox's gateway.
pub(super) fn blocked(gateway: Option<Ipv4Addr>) -> Vec<String> {
    let mut blocked: Vec<String> = NOT_THE_INTERNET.iter().map(|net| (*net).to_owned()).collect();
    let mut own: Vec<Ipv4Addr> = nix::ifaddrs::getifaddrs()
        .map(|addresses| {
            addresses
                .filter_map(|interface| interface.address)
                .filter_map(|address| address.as_sockaddr_in().map(|v4| v4.ip()))
                .collect()
        })
        .unwrap_or_default();
    own.extend(gateway);
    own.sort();
    own.dedup();
    for address in own {
        if !NOT_THE_INTERNET.iter().any(|net| covers(net, address)) {
            blocked.push(format!("{address}/32"));
        }
    }
    blocked
}

fn is_address(host: &str) -> bool {
    host.split('/').next().is_some_and(|address| address.parse::<Ipv4Addr>().is_ok())
}

/// The rules (one list per `allow` entry) with every name resolved again by `resolve`
/// (`None`: it failed, keep the old addresses); `None` when nothing changed.
fn next_rules(
    current: &[Vec<Rule>],
    allow: &[AllowEntry],
    resolve: &dyn Fn(&AllowEntry) -> Option<Vec<Rule>>,
) -> Option<Vec<Vec<Rule>>> {
    let next: Vec<Vec<Rule>> = current
        .iter()
        .zip(allow)
        .map(|(rules, entry)| {
            let fresh = match is_address(&entry.host) {
                true => None,
                false => resolve(entry).filter(|fresh| !fresh.is_empty()),
            };
            fresh.unwrap_or_else(|| rules.clone())
        })
        .collect();
    (next != current).then_some(next)
}

/// Every entry as rules (one list per entry): names resolved (on the host, now) to their IPv4
/// addresses.
pub(super) fn resolve(allow: &[AllowEntry]) -> Result<Vec<Vec<Rule>>, Error> {
    allow.iter().map(resolve_entry).collect()
}

fn resolve_entry(entry: &AllowEntry) -> Result<Vec<Rule>, Error> {
    let networks: Vec<String> = if is_address(&entry.host) {
        vec![entry.host.clone()]
    } else {
        let addresses = (entry.host.as_str(), entry.port.unwrap_or(443)).to_socket_addrs().map_err(|err| {
            Error::sandbox(format!("cannot resolve `{}` for the allowlist: {err}", entry.host))
                .with_hint("check the name in `sandbox.allow`, and that DNS works on this machine")
        })?;
        let mut ips: Vec<String> = addresses.filter(|a| a.is_ipv4()).map(|a| a.ip().to_string()).collect();
        ips.sort();
        ips.dedup();
        if ips.is_empty() {
            return Err(Error::sandbox(format!("`{}` has no IPv4 address for the allowlist", entry.host)));
        }
        ips
    };
    Ok(networks.into_iter().map(|network| Rule { network, port: entry.port }).collect())
}

/// The `iptables-restore` input for IPv4 and IPv6: everything out refused but loopback,
/// replies, DNS to the resolvers and the allowed destinations.
pub(super) fn rule_sets(resolvers: &[Ipv4Addr], rules: &[Vec<Rule>]) -> (String, String) {
    let head = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT DROP [0:0]\n\
                -A OUTPUT -o lo -j ACCEPT\n-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n";
    let mut v4 = head.to_owned();
    for resolver in resolvers {
        for protocol in ["udp", "tcp"] {
            v4.push_str(&format!("-A OUTPUT -d {resolver}/32 -p {protocol} --dport 53 -j ACCEPT\n"));
        }
    }
    for rules in rules {
        for rule in rules {
            match rule.port {
                Some(port) => {
                    for protocol in ["tcp", "udp"] {
                        v4.push_str(&format!("-A OUTPUT -d {} -p {protocol} --dport {port} -j ACCEPT\n", rule.network));
                    }
                }
                None => v4.push_str(&format!("-A OUTPUT -d {} -j ACCEPT\n", rule.network)),
            }
        }
    }
    v4.push_str("-A OUTPUT -p tcp -j REJECT --reject-with tcp-reset\n-A OUTPUT -j REJECT --reject-with icmp-admin-prohibited\nCOMMIT\n");
    let v6 = format!("{head}-A OUTPUT -j REJECT\nCOMMIT\n");
    (v4, v6)
}

/// The `iptables-restore` input for `network = "internet"`: loopback, replies and DNS to the
/// resolvers open, every `blocked` network refused, everything else open; IPv6 refused but
/// loopback (the engines' bridges have none by default).
pub(super) fn internet_rule_sets(resolvers: &[Ipv4Addr], blocked: &[String]) -> (String, String) {
    let head = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
                -A OUTPUT -o lo -j ACCEPT\n-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n";
    let mut v4 = head.to_owned();
    for resolver in resolvers {
        for protocol in ["udp", "tcp"] {
            v4.push_str(&format!("-A OUTPUT -d {resolver}/32 -p {protocol} --dport 53 -j ACCEPT\n"));
        }
    }
    for network in blocked {
        v4.push_str(&format!("-A OUTPUT -d {network} -p tcp -j REJECT --reject-with tcp-reset\n"));
        v4.push_str(&format!("-A OUTPUT -d {network} -j REJECT --reject-with icmp-admin-prohibited\n"));
    }
    v4.push_str("COMMIT\n");
    let v6 = format!("{}-A OUTPUT -j REJECT\nCOMMIT\n", head.replace(":OUTPUT ACCEPT", ":OUTPUT DROP"));
    (v4, v6)
}

fn in_namespace(pid: u32, program: &str, rules: String) -> Result<(), Error> {
    let program = which(program).map_or_else(|| program.to_owned(), |found| found.display().to_string());
    let command = ProcessBuilder::new("nsenter")
        .args(["-t", &pid.to_string(), "-n", &program])
        .stdin(Stdin::Bytes(rules.into_bytes()));
    let output = command.output().map_err(|err| {
        Error::sandbox(format!("cannot run `{command}` to install the allowlist: {err}"))
            .with_hint("the allowlist needs `nsenter` (util-linux) and `iptables` on the host")
    })?;
    if !output.success() {
        return Err(Error::sandbox(format!("`{command}` could not install the allowlist: {}", output.stderr.trim()))
            .with_hint("the allowlist needs `iptables` (nf_tables or legacy) working on the host"));
    }
    Ok(())
}

/// `program` on this machine's `PATH` (and the sbin folders, which a user's `PATH` may lack).
pub(super) fn which(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|dir| std::path::Path::new(dir).join(program))
        .find(|candidate| candidate.is_file());
    found
}

/// From inside the namespace (or the container): a denied address is refused, the first
/// allowed destination (with its port, or 443) connects.
fn self_test(
    namespace: &Namespace,
    allow: &[AllowEntry],
    rules: &[Vec<Rule>],
    target: Option<&Target>,
) -> Result<(), Error> {
    let (denied, port) = target.map_or(DENIED_PROBE, |target| (target.address, target.port));
    match namespace.connect(&denied.to_string(), port)? {
        (1, _) if target.is_none_or(|target| !target.reached()) => {}
        (code, said) => {
            return Err(Error::sandbox(format!(
                "the network rules' self-test failed: a connection to {denied}:{port} was not refused ({})",
                if code <= 1 { "it reached eden's own listener".to_owned() } else { said }
            ))
            .with_hint("the rules are not in force; nothing ran in the sandbox"))
        }
    }
    let Some((rules, entry)) = rules.iter().zip(allow).find(|(rules, _)| !rules.is_empty()) else {
        return Ok(());
    };
    let shown = &entry.host;
    let address = rules[0].network.split('/').next().unwrap_or_default();
    // A network has no one address to try; a host does.
    if entry.host.contains('/') {
        return Ok(());
    }
    let port = entry.port.unwrap_or(443);
    match namespace.connect(address, port)? {
        (0, _) => Ok(()),
        (_, said) => Err(Error::sandbox(format!(
            "the allowlist's self-test failed: the allowed destination `{shown}` ({address}:{port}) cannot be reached from the sandbox: {said}"
        ))
        .with_hint("check that it is up and reachable from containers; the run stopped before the agent started")),
    }
}

/// `eden __eden-connect ADDR PORT` in the container's network namespace: its exit code and
/// what it said.
fn connect_inside(pid: u32, address: &str, port: u16) -> Result<(i32, String), Error> {
    let eden =
        std::env::current_exe().map_err(|err| Error::sandbox(format!("cannot find eden's executable: {err}")))?;
    let command = ProcessBuilder::new("nsenter").args(["-t", &pid.to_string(), "-n"]).arg(eden).args([
        CONNECT_SUBCOMMAND,
        address,
        &port.to_string(),
    ]);
    let output = command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))?;
    Ok((output.status.code().unwrap_or(1), output.stderr.trim().to_owned()))
}

/// `__eden-connect ADDR PORT` (or `__eden-connect unix:PATH`, `unix:@ABSTRACT`): 0 connected, 1 refused or
/// unreachable, 2 no answer in 5 s.
pub(crate) fn run_connect(args: &[std::ffi::OsString]) -> i32 {
    use std::io::Write;
    if let Some(path) = args.first().and_then(|arg| arg.to_str()).and_then(|arg| arg.strip_prefix("unix:")) {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixStream};
        // `unix:@NAME`: an abstract socket (of the network namespace).
        let connected = match path.strip_prefix('@') {
            Some(name) => SocketAddr::from_abstract_name(name).and_then(|addr| UnixStream::connect_addr(&addr)),
            None => UnixStream::connect(path),
        };
        return match connected {
            Ok(_) => 0,
            Err(err) => {
                let _ = writeln!(std::io::stderr(), "{err}");
                1
            }
        };
    }
    let (Some(address), Some(port)) = (args.first(), args.get(1)) else { return 3 };
    let target = format!("{}:{}", address.to_string_lossy(), port.to_string_lossy());
    let Ok(Some(target)) = target.to_socket_addrs().map(|mut a| a.next()) else { return 3 };
    match std::net::TcpStream::connect_timeout(&target, std::time::Duration::from_secs(5)) {
        Ok(_) => 0,
        Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
            let _ = writeln!(std::io::stderr(), "no answer in 5 s");
            2
        }
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "{err}");
            1
        }
    }
}

fn engine_output(engine: Engine, args: &[&str]) -> Result<String, Error> {
    let command = super::engine::Target::new(engine, None).command().args(args);
    let output = super::engine::run(command.clone())?;
    if !output.success() {
        return Err(Error::sandbox(format!("`{command}` failed: {}", output.stderr.trim())));
    }
    Ok(output.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateways_and_networks() {
        let route = "Iface\tDestination\tGateway\neth0\t00000000\t010011AC\t0003\ndocker0\t000011AC\t00000000\t0001\n";
        assert_eq!(default_gateway(route), Some(Ipv4Addr::new(172, 17, 0, 1)));
        assert!(covers("172.17.0.0/16", Ipv4Addr::new(172, 17, 0, 1)));
        assert!(covers("172.17.0.1", Ipv4Addr::new(172, 17, 0, 1)));
        assert!(!covers("172.17.0.2", Ipv4Addr::new(172, 17, 0, 1)));
        assert!(covers("0.0.0.0/0", Ipv4Addr::new(8, 8, 8, 8)));
    }

    #[test]
    fn the_rules_refuse_all_but_the_allowed() {
        let rules = vec![
            vec![Rule { network: "10.1.2.3".into(), port: Some(5432) }],
            vec![Rule { network: "10.0.0.0/8".into(), port: None }],
        ];
        let (v4, v6) = rule_sets(&["10.255.255.53".parse().unwrap()], &rules);
        insta::assert_snapshot!(v4, @"
        *filter
        :INPUT ACCEPT [0:0]
        :FORWARD ACCEPT [0:0]
        :OUTPUT DROP [0:0]
        -A OUTPUT -o lo -j ACCEPT
        -A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
        -A OUTPUT -d 10.255.255.53/32 -p udp --dport 53 -j ACCEPT
        -A OUTPUT -d 10.255.255.53/32 -p tcp --dport 53 -j ACCEPT
        -A OUTPUT -d 10.1.2.3 -p tcp --dport 5432 -j ACCEPT
        -A OUTPUT -d 10.1.2.3 -p udp --dport 5432 -j ACCEPT
        -A OUTPUT -d 10.0.0.0/8 -j ACCEPT
        -A OUTPUT -p tcp -j REJECT --reject-with tcp-reset
        -A OUTPUT -j REJECT --reject-with icmp-admin-prohibited
        COMMIT
        ");
        assert!(v6.contains(":OUTPUT DROP") && v6.contains("-A OUTPUT -j REJECT"));
    }

    #[test]
    fn the_rules_follow_the_names_addresses() {
        let allow = [AllowEntry::parse("api.example.com:443").unwrap(), AllowEntry::parse("10.1.2.3").unwrap()];
        let rule = |network: &str, port| Rule { network: network.into(), port };
        let current = vec![vec![rule("1.1.1.1", Some(443))], vec![rule("10.1.2.3", None)]];
        let same = |_: &AllowEntry| Some(vec![rule("1.1.1.1", Some(443))]);
        assert_eq!(next_rules(&current, &allow, &same), None, "nothing changed");
        let moved = |_: &AllowEntry| Some(vec![rule("2.2.2.2", Some(443))]);
        let next = next_rules(&current, &allow, &moved).expect("the name moved");
        assert_eq!(next[0], [rule("2.2.2.2", Some(443))]);
        assert_eq!(next[1], [rule("10.1.2.3", None)], "addresses are not looked up");
        let gone = |_: &AllowEntry| None;
        assert_eq!(next_rules(&current, &allow, &gone), None, "a failed lookup keeps the old addresses");
    }
}
