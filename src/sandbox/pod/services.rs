//! `[[service]]` in a pod: each service is a container of the run's pod (`svc-NAME`), so it
//! shares the agent's network namespace, its rules and its lifetime, as a service beside a
//! local container does (`services`). Not pods of their own behind a Service: those would be
//! reached over the cluster's network, which the pod's rules refuse, and would outlive a pod the
//! cluster deletes. The agent reaches a service at `127.0.0.1` by its name (`hostAliases`).
//!
//! A service runs as the pod's user (never root), with no capability and no privilege to
//! gain: the "restricted" Pod Security Standard, as the agent's container. Its environment is a
//! Secret of the run's (`eden-RUN-services`), owned by the pod once it exists (the cluster
//! deletes it with the pod), so no value is in the pod's spec or on a command line.

use crate::error::Error;
use crate::manifest::plan::PodPlan;
use crate::manifest::services_plan::ServicePlan;
use crate::process::{ProcessBuilder, Stdin};

/// `kubectl` with the run's context and namespace.
type Kubectl<'a> = &'a dyn Fn() -> ProcessBuilder;
use std::time::{Duration, Instant};

/// How often a service is asked whether it is ready.
const READY_POLL: Duration = Duration::from_millis(250);

/// The longest one `ready` command may take before it counts as not ready.
const READY_CALL: Duration = Duration::from_secs(10);

/// The pod's container of a service.
pub(crate) fn container_name(service: &ServicePlan) -> String {
    format!("svc-{}", service.name)
}

/// The Secret holding the services' environment.
pub(crate) fn secret_name(pod: &str) -> String {
    format!("{pod}-services")
}

/// The secret's key for one variable of one service.
fn secret_key(service: &ServicePlan, var: &str) -> String {
    format!("{}.{var}", service.name)
}

/// The services' containers, for the pod's spec.
pub(crate) fn containers(plan: &PodPlan, pod: &str) -> Vec<serde_json::Value> {
    plan.services
        .iter()
        .map(|service| {
            let env: Vec<serde_json::Value> = service
                .env
                .keys()
                .map(|var| {
                    let key = secret_key(service, var);
                    serde_json::json!({"name": var, "valueFrom": {"secretKeyRef": {"name": secret_name(pod), "key": key}}})
                })
                .collect();
            let mut container = serde_json::json!({
                "name": container_name(service),
                "image": service.image,
                "env": env,
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]},
                    "runAsNonRoot": true,
                },
            });
            let mut limits = serde_json::Map::new();
            if let Some(cpus) = service.cpus {
                limits.insert("cpu".into(), serde_json::json!(format!("{}m", (cpus * 1000.0).round() as u64)));
            }
            if let Some(memory) = service.memory {
                limits.insert("memory".into(), serde_json::json!(memory.0.to_string()));
            }
            if !limits.is_empty() {
                container["resources"] = serde_json::json!({"limits": limits, "requests": limits});
            }
            if !service.command.is_empty() {
                // `args`: the image's entrypoint stays, as with `docker run IMAGE COMMAND…`.
                container["args"] = serde_json::json!(service.command);
            }
            if let Some(policy) = plan.image_pull_policy {
                container["imagePullPolicy"] = serde_json::to_value(policy).expect("policies serialize");
            }
            container
        })
        .collect()
}

/// `hostAliases`: every service's name at the pod's loopback.
pub(crate) fn host_aliases(plan: &PodPlan) -> Option<serde_json::Value> {
    let names: Vec<&str> = plan.services.iter().map(|service| service.name.as_str()).collect();
    (!names.is_empty()).then(|| serde_json::json!([{"ip": "127.0.0.1", "hostnames": names}]))
}

/// Make the Secret of the services' environment, before the pod (which needs it to start);
/// nothing when no service has any.
pub(crate) fn create_secret(
    kubectl: Kubectl<'_>,
    plan: &PodPlan,
    pod: &str,
    labels: &serde_json::Value,
) -> Result<(), Error> {
    let mut data = serde_json::Map::new();
    for service in &plan.services {
        for (var, value) in &service.env {
            data.insert(secret_key(service, var), serde_json::json!(value.0));
        }
    }
    if data.is_empty() {
        return Ok(());
    }
    let secret = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(pod), "labels": labels},
        "type": "Opaque",
        "stringData": data,
    });
    let created = crate::sandbox::engine::run(
        kubectl().args(["create", "-f", "-", "-o", "name"]).stdin(Stdin::Bytes(secret.to_string().into_bytes())),
    )?;
    if !created.success() {
        return Err(Error::sandbox(format!(
            "the cluster refused the Secret of the services' environment: {}",
            crate::sandbox::engine::kubectl_reason(&created.stderr)
        ))
        .with_hint("a service's `env` goes to the pod as a Secret: you need permission to create Secrets in the namespace (`kubectl auth can-i create secrets`)"));
    }
    Ok(())
}

/// Hand the Secret to the pod (`uid`): the cluster deletes it with the pod.
pub(crate) fn own_secret(kubectl: Kubectl<'_>, plan: &PodPlan, pod: &str, uid: &str) -> Result<(), Error> {
    if plan.services.iter().all(|service| service.env.is_empty()) {
        return Ok(());
    }
    let owner = serde_json::json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}
    ]}});
    let patched = crate::sandbox::engine::run(kubectl().args([
        "patch",
        "secret",
        &secret_name(pod),
        "--type",
        "merge",
        "-p",
        &owner.to_string(),
    ]))?;
    match patched.success() {
        true => Ok(()),
        false => Err(Error::sandbox(format!(
            "cannot hand the services' Secret to the pod: {}",
            crate::sandbox::engine::kubectl_reason(&patched.stderr)
        ))),
    }
}

/// Delete the Secret (gone already is fine): a pod that was never made cannot take it along.
pub(crate) fn delete_secret(kubectl: Kubectl<'_>, pod: &str) {
    let name = secret_name(pod);
    let _ = crate::sandbox::engine::run(kubectl().finishing().args([
        "delete",
        "secret",
        &name,
        "--ignore-not-found",
        "--wait=false",
    ]));
}

/// Until every service answers its `ready` (or, without one, runs): an error naming the first
/// that exits or passes its `ready_timeout`, with its last log lines.
pub(crate) fn wait_ready(kubectl: Kubectl<'_>, pod: &str, services: &[ServicePlan]) -> Result<(), Error> {
    let since = Instant::now();
    let mut waiting: Vec<&ServicePlan> = services.iter().collect();
    while !waiting.is_empty() {
        if crate::process::stopping() {
            return Err(Error::interrupted(crate::process::signal_received().unwrap_or(crate::exit::Signal::INT)));
        }
        let got = crate::sandbox::engine::run(kubectl().args(["get", "pod", pod, "-o", "json"]))?;
        let status: serde_json::Value = serde_json::from_str(&got.stdout).unwrap_or_default();
        let mut still = Vec::new();
        for service in waiting {
            if let Some(code) = exited(&status, service) {
                return Err(Error::sandbox(format!(
                    "service `{}` ({}) exited with code {code} before it was ready{}",
                    service.name,
                    service.image,
                    last_lines(kubectl, pod, service)
                ))
                .with_hint("check its `command` and `env`, and that its image runs as a user other than root (a pod's services do)"));
            }
            if !answers(kubectl, pod, service) {
                if since.elapsed() >= service.ready_timeout.0 {
                    return Err(not_ready(kubectl, pod, service));
                }
                still.push(service);
            }
        }
        waiting = still;
        if !waiting.is_empty() {
            std::thread::sleep(READY_POLL);
        }
    }
    Ok(())
}

/// The exit code of a service's container that ended (`None` while it runs or waits to).
fn exited(pod: &serde_json::Value, service: &ServicePlan) -> Option<i64> {
    let statuses = pod["status"]["containerStatuses"].as_array()?;
    let status = statuses.iter().find(|status| status["name"] == container_name(service).as_str())?;
    let terminated = &status["state"]["terminated"];
    terminated.is_object().then(|| terminated["exitCode"].as_i64().unwrap_or(-1))
}

/// Does the service answer its `ready` (without one: it runs, as `exited` said)?
fn answers(kubectl: Kubectl<'_>, pod: &str, service: &ServicePlan) -> bool {
    let Some(ready) = &service.ready else { return true };
    let check =
        kubectl().args(["exec", pod, "-c", &container_name(service), "--", "sh", "-c", ready]).timeout(READY_CALL);
    check.output().is_ok_and(|output| output.success())
}

fn not_ready(kubectl: Kubectl<'_>, pod: &str, service: &ServicePlan) -> Error {
    Error::sandbox(format!(
        "service `{}` ({}) was not ready after {} s: `{}` never succeeded{}",
        service.name,
        service.image,
        service.ready_timeout.0.as_secs_f64(),
        service.ready.as_deref().unwrap_or_default(),
        last_lines(kubectl, pod, service)
    ))
    .with_hint("raise its `ready_timeout`, or check that `ready` succeeds once it serves")
}

/// The service's last log lines, as a block for its error (empty when it said nothing).
fn last_lines(kubectl: Kubectl<'_>, pod: &str, service: &ServicePlan) -> String {
    let logs = kubectl().args(["logs", pod, "-c", &container_name(service), "--tail", "20"]);
    let Ok(logs) = crate::sandbox::engine::run(logs) else { return String::new() };
    crate::sandbox::services::last_lines_block(&logs.stdout)
}
