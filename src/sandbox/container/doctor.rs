//! `eden doctor` on docker and podman: the manifest's engine, image, runtimes and the agents in
//! its image; and what this machine has of either engine.

use crate::manifest::plan::{AgentPlan, ContainerPlan, Engine, EngineHost, Plan};
use crate::sandbox::engine::Target;
use crate::sandbox::provider::{first_line, Check};
use std::time::Duration;

/// The manifest's engine: it answers and has the image (and the services' images), its
/// runtimes, and each step's agent CLI in the image.
pub(super) fn planned(plan: &Plan, container: &ContainerPlan) -> Vec<Check> {
    let target = Target::new(container.engine, container.hosts.first().cloned());
    let binary = container.engine.binary();
    match super::preflight::preflight(container) {
        Ok(_) => {
            let mut checks = vec![Check::ok(
                binary,
                format!(
                    "answers, and has the image `{}`{}; runtimes: {}",
                    container.image,
                    services_images(&container.services),
                    runtimes(&target).join(", ")
                ),
            )];
            checks.extend(agents_in_image(plan, &target, &container.image));
            checks
        }
        Err(err) => {
            vec![Check::missing(binary, true, err.message, err.hint.unwrap_or_else(|| "see `eden image build`".into()))]
        }
    }
}

/// docker and podman on this machine (or at `host`), but those `named` already.
pub(super) fn machine(host: Option<&EngineHost>, named: &[String]) -> Vec<Check> {
    let mut checks = Vec::new();
    for target in [Engine::Docker, Engine::Podman].map(|engine| Target::new(engine, host.cloned())) {
        let engine = target.binary();
        if named.iter().any(|name| name == engine) {
            continue;
        }
        checks.push(match first_line(target.command().args(["version", "--format", "{{.Server.Version}}"])) {
            Some(version) => {
                Check::ok(engine, format!("server {version} answers; runtimes: {}", runtimes(&target).join(", ")))
            }
            None if which::which(engine).is_ok() => Check::missing(
                engine,
                false,
                "installed, but its engine does not answer",
                format!("start it (`systemctl start {engine}`, or `dockerd`/`podman system service`)"),
            ),
            None => Check::missing(engine, false, "not installed", format!("needed for `sandbox.kind = \"{engine}\"`")),
        });
    }
    checks
}

/// ` and the services' images …`, for the engine's finding (empty without services).
fn services_images(services: &[crate::manifest::services_plan::ServicePlan]) -> String {
    let images: Vec<String> =
        services.iter().map(|service| format!("`{}` ({})", service.image, service.name)).collect();
    match images.is_empty() {
        true => String::new(),
        false => format!(" and the services' images {}", images.join(", ")),
    }
}

/// Each step's agent CLI as the image has it: its version from inside, or its absence (which
/// would stop the run with exit 6).
fn agents_in_image(plan: &Plan, target: &Target, image: &str) -> Vec<Check> {
    let mut checks: Vec<Check> = Vec::new();
    for step in &plan.steps {
        let AgentPlan::Adapter(settings) = &step.agent else { continue };
        let check = format!("{} in the image", settings.kind.as_str());
        if checks.iter().any(|found| found.name == check) {
            continue;
        }
        let asked = target
            .command()
            .args(["run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c", r#""$0" --version"#])
            .arg(&settings.binary)
            .timeout(Duration::from_secs(120));
        checks.push(match first_line(asked) {
            Some(version) => Check::ok(check, format!("`{}` {version}", settings.binary.display())),
            None => Check::missing(
                check,
                true,
                format!("`{}` is not in `{image}`, or does not run there", settings.binary.display()),
                format!("build the image with the agent: `eden image build --agent {}`", settings.kind.as_str()),
            ),
        });
    }
    checks
}

/// The OCI runtimes an engine can run a container under (`sandbox.runtime`): docker's
/// registered ones; podman's default, and gVisor's `runsc` when it is on `PATH`.
fn runtimes(target: &Target) -> Vec<String> {
    let mut found = match target.engine {
        Engine::Docker => {
            let json = first_line(target.command().args(["info", "--format", "{{json .Runtimes}}"]));
            let parsed: Option<serde_json::Map<String, serde_json::Value>> =
                json.and_then(|json| serde_json::from_str(&json).ok());
            parsed.map(|runtimes| runtimes.keys().cloned().collect()).unwrap_or_default()
        }
        Engine::Podman => first_line(target.command().args(["info", "--format", "{{.Host.OCIRuntime.Name}}"]))
            .map(|name| vec![format!("{name} (default)")])
            .unwrap_or_default(),
    };
    if target.engine == Engine::Podman {
        if let Ok(path) = which::which("runsc") {
            found.push(format!("runsc ({})", path.display()));
        }
    }
    if found.is_empty() {
        found.push("unknown".into());
    }
    found
}
