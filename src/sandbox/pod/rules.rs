//! The network rules of a pod: `network = "internet"` (the default), `"none"` and
//! `"allowlist"`, the same rules as a local container's (`firewall`), in the pod's own network
//! namespace, before the agent's container starts.
//!
//! They go in from an init container (`RULES_CONTAINER`) of the sandbox's image, the only
//! container of the pod that runs as root, holding `NET_ADMIN` and no other capability. It
//! waits until eden has sent it this machine's `iptables-restore` with the rule sets (as for a
//! remote engine, `remote_rules::send_rules`) and has tested them, then ends; only then does
//! the kubelet start the agent's container, which holds no capability and so cannot change
//! them. A pod with this init container does not meet the "restricted" Pod Security Standard
//! (nor "baseline": `NET_ADMIN`); `network = "bridge"` leaves it out, for namespaces that
//! enforce one, and the cluster's NetworkPolicy is then all there is.
//!
//! The self-test: from the init container, before the rules, the node's kubelet
//! (`status.hostIP`:10250) or the API server (`KUBERNETES_SERVICE_HOST`) must answer; from the
//! agent's container, as its user, after them, the same address must be refused (where neither
//! answered before: a denied address, 192.0.2.1, must be refused); an allowlist's first
//! destination must connect. A failure stops the run (exit 6) before the agent starts.
//!
//! Where the cluster enforces NetworkPolicies, a policy of the pod's own (`network_policy`,
//! owned by the pod, so it goes with it) says the same.

use crate::error::Error;
use crate::manifest::plan::{AllowEntry, PodPlan};
use crate::manifest::schema::Network;
use crate::process::ProcessBuilder;
use crate::sandbox::carry::{self, Exec};
use crate::sandbox::firewall::{self, Rule, DENIED_PROBE};
use crate::sandbox::remote_rules::{connect_through, send_rules, INSTALL_SCRIPT};
use std::net::Ipv4Addr;
use std::path::Path;

/// The init container's name.
pub(crate) const RULES_CONTAINER: &str = "eden-rules";

/// Where the init container is told it may end.
const DONE_FILE: &str = "/tmp/.eden-rules-done";

/// The kubelet's port on every node.
const KUBELET_PORT: u16 = 10250;

/// Does the pod get rules (and so the init container)?
pub(crate) fn has_rules(plan: &PodPlan) -> bool {
    plan.network != Network::Bridge
}

/// The init container that installs the rules: the sandbox's image, root, `NET_ADMIN` alone,
/// eden's folder mounted (eden is copied in through it), waiting for eden's word.
pub(crate) fn init_container(plan: &PodPlan, eden_mount: serde_json::Value) -> serde_json::Value {
    // The pause after the word lets `kubectl exec touch` report its own exit before the
    // container (and so the exec) ends.
    let wait = format!("while [ ! -e {DONE_FILE} ]; do sleep 0.2; done; sleep 1");
    let mut container = serde_json::json!({
        "name": RULES_CONTAINER,
        "image": plan.image,
        "command": ["sh", "-c", wait],
        "volumeMounts": [eden_mount],
        "securityContext": {
            "runAsUser": 0,
            "runAsGroup": 0,
            "runAsNonRoot": false,
            "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]},
        },
    });
    if let Some(policy) = plan.image_pull_policy {
        container["imagePullPolicy"] = serde_json::to_value(policy).expect("policies serialize");
    }
    container
}

/// The pod while its init container waits, as the rules need it.
pub(crate) struct WaitingPod<'a> {
    pub(crate) name: &'a str,
    /// The node's address (`status.hostIP`).
    pub(crate) host_ip: Option<Ipv4Addr>,
    /// Runs a command in the init container (as root, with `NET_ADMIN`).
    pub(crate) rules: Exec<'a>,
    /// `kubectl exec -i POD -c RULES_CONTAINER -- sh -c SCRIPT`.
    pub(crate) helper: ProcessBuilder,
    pub(crate) eden_inside: &'a std::sync::atomic::AtomicBool,
    pub(crate) scratch: &'a Path,
    /// Has the init container ended, with 0? (An exec cut short as it ends still did its work.)
    pub(crate) init_succeeded: &'a dyn Fn() -> bool,
}

/// What is left to test once the agent's container runs.
pub(crate) struct Installed {
    /// Answered before the rules; must be refused after them (`None`: `DENIED_PROBE`).
    target: Option<(String, Ipv4Addr, u16)>,
    /// The allowlist's first destination that is one host: must connect.
    allowed: Option<(String, String, u16)>,
}

/// Install the rules of `network` (its `allow` list) in the waiting pod, and let its init
/// container end.
pub(crate) fn install(pod: &WaitingPod<'_>, network: Network, allow: &[AllowEntry]) -> Result<Installed, Error> {
    carry::copy_eden_in(pod.eden_inside, pod.rules, "pod")?;
    let read = |script: &str| {
        let command = (pod.rules)(ProcessBuilder::new("sh").args(["-c", script]), false);
        let output = crate::sandbox::engine::run(command)?;
        match output.success() {
            true => Ok(output.stdout),
            false => Err(Error::sandbox(format!("cannot read the pod's network settings: {}", output.stderr.trim()))),
        }
    };
    let resolvers = firewall::resolvers(&read("cat /etc/resolv.conf")?);
    let gateway = firewall::default_gateway(&read("cat /proc/net/route")?);
    let api_server = read(r#"echo "$KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT""#)?;
    let rules = firewall::resolve(allow)?;
    let (v4, v6) = match network {
        Network::Allowlist => firewall::rule_sets(&resolvers, &rules),
        Network::Internet => {
            let mut blocked = firewall::blocked(gateway);
            blocked.extend(pod.host_ip.map(|address| format!("{address}/32")));
            firewall::internet_rule_sets(&resolvers, &blocked)
        }
        // Not even DNS.
        _ => firewall::rule_sets(&[], &[]),
    };
    let mut candidates: Vec<(String, Ipv4Addr, u16)> = Vec::new();
    if let Some(node) = pod.host_ip {
        candidates.push((format!("the node's kubelet at {node}:{KUBELET_PORT}"), node, KUBELET_PORT));
    }
    let mut api_server = api_server.split_whitespace();
    if let (Some(Ok(address)), Some(Ok(port))) =
        (api_server.next().map(str::parse::<Ipv4Addr>), api_server.next().map(str::parse::<u16>))
    {
        candidates.push((format!("the API server at {address}:{port}"), address, port));
    }
    let place = format!("pod `{}`", pod.name);
    let mut target = None;
    for (what, address, port) in candidates {
        if allowed(&rules, address, port) {
            continue;
        }
        if connect_through(pod.rules, &address.to_string(), port, &place)?.0 == 0 {
            target = Some((what, address, port));
            break;
        }
    }
    let helper = pod.helper.clone().args(["-c", INSTALL_SCRIPT]);
    send_rules(helper, pod.scratch, (&v4, &v6), |said| {
        Error::sandbox(format!("could not install the network rules in pod `{}`: {said}", pod.name)).with_hint(
            "the node must run the init container as root with `NET_ADMIN`, on the same architecture as this machine, with nf_tables in its kernel; or choose `network = \"bridge\"` (the cluster's own network)",
        )
    })?;
    let done = (pod.rules)(ProcessBuilder::new("touch").arg(DONE_FILE), false);
    let done = crate::sandbox::engine::run(done)?;
    if !done.success() && !(pod.init_succeeded)() {
        return Err(Error::sandbox(format!("cannot end pod `{}`'s init container: {}", pod.name, done.stderr.trim())));
    }
    Ok(Installed { target, allowed: first_allowed(allow, &rules) })
}

/// Is `address:port` let through by the allowlist's rules?
fn allowed(rules: &[Vec<Rule>], address: Ipv4Addr, port: u16) -> bool {
    rules
        .iter()
        .flatten()
        .any(|rule| rule.port.is_none_or(|allowed| allowed == port) && firewall::covers(&rule.network, address))
}

/// The allowlist's first destination that is one host: its name, address and port.
fn first_allowed(allow: &[AllowEntry], rules: &[Vec<Rule>]) -> Option<(String, String, u16)> {
    let (rules, entry) =
        rules.iter().zip(allow).find(|(rules, entry)| !rules.is_empty() && !entry.host.contains('/'))?;
    let address = rules[0].network.split('/').next().unwrap_or_default().to_owned();
    Some((entry.host.clone(), address, entry.port.unwrap_or(443)))
}

/// The self-test's second half, from the agent's container as its user (`agent`): the
/// target is refused, the allowlist's first destination connects.
pub(crate) fn verify(installed: &Installed, agent: Exec<'_>, name: &str) -> Result<(), Error> {
    let place = format!("pod `{name}`");
    let (what, address, port) = match &installed.target {
        Some((what, address, port)) => (what.clone(), *address, *port),
        None => (format!("{}:{}", DENIED_PROBE.0, DENIED_PROBE.1), DENIED_PROBE.0, DENIED_PROBE.1),
    };
    let (code, said) = connect_through(agent, &address.to_string(), port, &place)?;
    if code != 1 {
        return Err(Error::sandbox(format!(
            "the network rules' self-test failed in pod `{name}`: a connection to {what} was not refused ({})",
            if said.is_empty() { "it connected" } else { said.as_str() }
        ))
        .with_hint("the rules are not in force; nothing ran in the sandbox"));
    }
    let Some((host, address, port)) = &installed.allowed else { return Ok(()) };
    match connect_through(agent, address, *port, &place)? {
        (0, _) => Ok(()),
        (_, said) => Err(Error::sandbox(format!(
            "the allowlist's self-test failed: the allowed destination `{host}` ({address}:{port}) cannot be reached from pod `{name}`: {said}"
        ))
        .with_hint("check that it is up and reachable from the cluster's pods; the run stopped before the agent started")),
    }
}

/// The pod's NetworkPolicy, saying what the rules say, for a cluster that enforces them: owned
/// by the pod (`uid`), so the cluster removes it with the pod. `selector`: the pod's labels.
pub(crate) fn network_policy(
    plan: &PodPlan,
    name: &str,
    uid: &str,
    selector: &serde_json::Value,
) -> Result<serde_json::Value, Error> {
    let dns = serde_json::json!({"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]});
    let egress: Vec<serde_json::Value> = match plan.network {
        Network::Internet => {
            let except: Vec<String> = firewall::blocked(None).into_iter().filter(|net| net.contains('/')).collect();
            vec![serde_json::json!({"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": except}}]}), dns]
        }
        Network::Allowlist => {
            let mut egress = vec![dns];
            for (rules, entry) in firewall::resolve(&plan.allow)?.iter().zip(&plan.allow) {
                let to: Vec<serde_json::Value> = rules
                    .iter()
                    .map(|rule| {
                        let cidr = if rule.network.contains('/') {
                            rule.network.clone()
                        } else {
                            format!("{}/32", rule.network)
                        };
                        serde_json::json!({"ipBlock": {"cidr": cidr}})
                    })
                    .collect();
                let mut allowed = serde_json::json!({"to": to});
                if let Some(port) = entry.port {
                    allowed["ports"] =
                        serde_json::json!([{"protocol": "TCP", "port": port}, {"protocol": "UDP", "port": port}]);
                }
                egress.push(allowed);
            }
            egress
        }
        _ => Vec::new(),
    };
    Ok(serde_json::json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "eden"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}],
        },
        "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": egress},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(network: Network, allow: &[&str]) -> PodPlan {
        let mut plan = PodPlan {
            image: "img".into(),
            namespace: None,
            context: None,
            cpus: None,
            memory: None,
            image_pull_policy: None,
            service_account: None,
            node_selector: Default::default(),
            tolerations: Vec::new(),
            start_timeout: std::time::Duration::from_secs(1),
            deadline: std::time::Duration::from_secs(1),
            agent_state: Vec::new(),
            max_return: 1,
            runtime_class: None,
            run_as: (1000, 1000),
            network: Network::Bridge,
            allow: Vec::new(),
            services: Vec::new(),
        };
        plan.network = network;
        plan.allow = allow.iter().map(|entry| AllowEntry::parse(entry).expect("an entry")).collect();
        plan
    }

    #[test]
    fn the_policy_says_what_the_rules_say() {
        let selector = serde_json::json!({"eden.run": "r1"});
        let none = network_policy(&plan(Network::None, &[]), "eden-r1", "u1", &selector).unwrap();
        assert_eq!(none["spec"]["egress"], serde_json::json!([]));
        assert_eq!(none["metadata"]["ownerReferences"][0]["uid"], "u1");
        let internet = network_policy(&plan(Network::Internet, &[]), "eden-r1", "u1", &selector).unwrap();
        let except = internet["spec"]["egress"][0]["to"][0]["ipBlock"]["except"].as_array().unwrap();
        for private in ["10.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16"] {
            assert!(except.iter().any(|net| net == private), "{private} is not excepted");
        }
        let allow =
            network_policy(&plan(Network::Allowlist, &["10.1.2.3:5432", "10.9.0.0/16"]), "eden-r1", "u1", &selector)
                .unwrap();
        let egress = allow["spec"]["egress"].as_array().unwrap();
        assert_eq!(egress[1]["to"][0]["ipBlock"]["cidr"], "10.1.2.3/32");
        assert_eq!(egress[1]["ports"][0]["port"], 5432);
        assert_eq!(egress[2]["to"][0]["ipBlock"]["cidr"], "10.9.0.0/16");
        assert!(egress[2].get("ports").is_none());
    }

    #[test]
    fn an_allowed_address_is_no_target() {
        let rules = vec![vec![Rule { network: "10.213.79.1".into(), port: Some(10250) }]];
        assert!(allowed(&rules, Ipv4Addr::new(10, 213, 79, 1), 10250));
        assert!(!allowed(&rules, Ipv4Addr::new(10, 213, 79, 1), 6443));
        assert_eq!(first_allowed(&[AllowEntry::parse("10.213.79.1:10250").unwrap()], &rules).unwrap().2, 10250);
    }
}
