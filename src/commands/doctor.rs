//! `eden doctor`: what a first run needs, checked, one line each with what to fix — git and its
//! identity, the repository, the container engines and whether they answer, bubblewrap, each
//! agent CLI and its version and whether it has a key or login (never shown), and with
//! `--network` whether the model hosts answer. Given a manifest, what that manifest needs is
//! required: its engine and image, its agents. Exit 0 when nothing required is missing.

use crate::agent::{AgentKind, AgentPlan};
use crate::cli::DoctorArgs;
use crate::error::Error;
use crate::git::Git;
use crate::manifest::plan::Plan;
use crate::process::ProcessBuilder;
use crate::ui::{print_data, print_note};
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Serialize)]
struct Finding {
    check: String,
    /// `ok`, `missing` (required and not there), or `absent` (not there, not needed).
    state: State,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Ok,
    Missing,
    Absent,
}

fn ok(check: impl Into<String>, detail: impl Into<String>) -> Finding {
    Finding { check: check.into(), state: State::Ok, detail: detail.into(), fix: None }
}

/// Not there: `Missing` when `needed`, else `Absent`.
fn not_there(check: impl Into<String>, needed: bool, detail: impl Into<String>, fix: impl Into<String>) -> Finding {
    let state = if needed { State::Missing } else { State::Absent };
    Finding { check: check.into(), state, detail: detail.into(), fix: Some(fix.into()) }
}

pub(crate) fn doctor(args: DoctorArgs) -> Result<i32, Error> {
    let current = crate::commands::current_dir()?;
    if let Some(repo) = args.repo.as_ref().filter(|repo| !current.join(repo).is_dir()) {
        return Err(Error::usage(format!("`--repo {}` is not a folder", repo.display()))
            .with_hint("give the folder of the repository to check, or leave `--repo` out for the current one"));
    }
    let mut findings = Vec::new();
    findings.extend(git_checks(&current, args.repo.as_ref()));
    // The `${VAR}`s the manifest hands over that are not set here.
    let mut unset = Vec::new();
    let plan = match &args.manifest {
        Some(path) => {
            let settings = super::settings::RunSettings::plain(args.repo.clone());
            match super::settings::load(&settings, Some(path), &[], super::settings::Purpose::Doctor, &current) {
                Ok(loaded) => {
                    findings.push(ok("manifest", format!("`{}` loads", path.display())));
                    findings.extend(placeholder(&loaded.plan));
                    unset = loaded.unset.clone();
                    unset.sort();
                    unset.dedup();
                    findings.extend(unset.iter().map(|name| {
                        not_there(
                            "environment",
                            true,
                            format!("`{name}` is not set, and the manifest hands it over (`${{{name}}}`)"),
                            format!("export `{name}` before running eden, or add it to `.eden/.env`"),
                        )
                    }));
                    Some(loaded.plan)
                }
                Err(err) => {
                    let fix = err.hint.clone().unwrap_or_else(|| "fix the manifest".into());
                    findings.push(not_there("manifest", true, err.message, fix));
                    None
                }
            }
        }
        None => None,
    };
    let host = match &args.host {
        Some(text) => Some(crate::manifest::plan::EngineHost::parse(text).map_err(|why| {
            Error::usage(format!("`--host`: {}", why.message)).with_hint(
                "give `tcp://HOST:2376`, `ssh://USER@HOST`, `unix:///SOCKET`, or a docker context or podman connection name",
            )
        })?),
        None => None,
    };
    findings.extend(sandbox_checks(plan.as_ref(), host.as_ref()));
    findings.extend(warm_pools(&args.repo.as_deref().map_or_else(|| current.clone(), |repo| current.join(repo))));
    findings.extend(agent_checks(plan.as_ref(), args.network));
    findings.extend(plan.iter().flat_map(|plan| keys_in_the_sandbox(plan, &unset)));
    if let Some(plan) = &plan {
        let reach = crate::sandbox::registry::reach(&plan.sandbox);
        findings.push(ok("the agent reads", reach.reads.join("; ")));
        findings.push(ok("the agent connects to", reach.connects));
        findings.push(ok("the agent's privileges", reach.privileges));
        findings.extend(host_hooks(plan, args.repo.as_deref().unwrap_or(&current)));
    }
    let failed = findings.iter().any(|finding| finding.state == State::Missing);
    if args.json {
        print_data(&serde_json::to_string_pretty(&findings).expect("findings serialize"));
    } else {
        for finding in &findings {
            let mark = match finding.state {
                State::Ok => console::style("✓").green(),
                State::Missing => console::style("✗").red(),
                State::Absent => console::style("–").dim(),
            };
            let fix = finding.fix.as_ref().filter(|_| finding.state != State::Ok);
            let fix = fix.map(|fix| format!(" — {fix}")).unwrap_or_default();
            print_note(&format!("{mark} {}: {}{fix}", finding.check, finding.detail));
        }
    }
    Ok(if failed { 1 } else { 0 })
}

/// What each host hook executes on this machine, and what it sources that eden cannot name.
fn host_hooks(plan: &Plan, dir: &std::path::Path) -> Vec<Finding> {
    use crate::orchestrator::host_reads;
    let Ok(found) = crate::git::Git::discover(dir) else { return Vec::new() };
    let sandboxed = crate::sandbox::provider(&plan.sandbox).sandboxed();
    let mut findings = Vec::new();
    for hook in host_reads::of(plan, &host_reads::in_checkout(&found.root)) {
        findings.push(ok("host hook", host_reads::describe(&hook, sandboxed)));
        if !hook.unresolved.is_empty() {
            findings.push(not_there(
                "host hook",
                false,
                format!("`{}` sources {}, which eden cannot name", hook.cmd, hook.unresolved.join(", ")),
                "list the files it reads in `hooks.host.reads`, so a run cannot change them unreviewed",
            ));
        }
    }
    findings
}

/// A step whose prompt is still `eden init`'s placeholder (a run would refuse it): one finding,
/// and the rest of the manifest checked all the same.
fn placeholder(plan: &Plan) -> Option<Finding> {
    let waiting = plan.steps.iter().find(|step| {
        !matches!(step.agent, AgentPlan::Simulated { .. })
            && step.prompt.template.contains(crate::manifest::PLACEHOLDER_TASK)
    })?;
    Some(not_there(
        "prompt",
        true,
        format!(
            "step `{}` still says `{}`: `eden init`'s placeholder",
            waiting.name,
            crate::manifest::PLACEHOLDER_TASK
        ),
        "write the task in the prompt before running a real agent on it",
    ))
}

/// Git, its identity, the repository.
fn git_checks(current: &std::path::Path, repo: Option<&std::path::PathBuf>) -> Vec<Finding> {
    let mut findings = Vec::new();
    match crate::sandbox::provider::first_line(ProcessBuilder::new("git").arg("--version")) {
        Some(version) => findings.push(ok("git", version)),
        None => {
            findings.push(not_there("git", true, "not found", "install git (Debian: `apt-get install git`)"));
            return findings;
        }
    }
    let dir = repo.map_or_else(|| current.to_path_buf(), |repo| current.join(repo));
    let found = match Git::discover(&dir) {
        Ok(found) => found,
        Err(err) => {
            findings.push(not_there("repository", true, err.message, "run eden inside a git repository (`git init`)"));
            return findings;
        }
    };
    let git = Git::new(&found.root);
    // As git finds it for a commit: its configuration, else its variables.
    let var = |names: &[&str]| names.iter().find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()));
    let name = git.run(["config", "user.name"]).ok().filter(|name| !name.is_empty());
    let name = name.or_else(|| var(&["GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"]));
    let email = git.run(["config", "user.email"]).ok().filter(|email| !email.is_empty());
    let email = email.or_else(|| var(&["GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL", "EMAIL"]));
    match (name, email) {
        (Some(name), Some(email)) => findings.push(ok("git identity", format!("{name} <{email}>"))),
        _ => findings.push(not_there(
            "git identity",
            true,
            "no `user.name`/`user.email`: the agent's commits would fail",
            "`git config --global user.name \"You\"` and `git config --global user.email you@example.com`",
        )),
    }
    match git.resolve("HEAD") {
        Ok(Some(_)) => {
            let branch = git.current_branch().ok().flatten().unwrap_or_else(|| "detached HEAD".into());
            findings.push(ok("repository", format!("{} (on {branch})", found.root.display())));
        }
        _ => findings.push(not_there(
            "repository",
            true,
            format!("{} has no commit yet", found.root.display()),
            "make a first commit: a run's worktree starts from one",
        )),
    }
    findings
}

/// The manifest's sandbox (its engine and image, its cluster), then what this machine has for
/// every kind (the engines, bubblewrap): each kind says.
fn sandbox_checks(plan: Option<&Plan>, host: Option<&crate::manifest::plan::EngineHost>) -> Vec<Finding> {
    let provider = plan.map(|plan| crate::sandbox::provider(&plan.sandbox));
    let mut checks = match (plan, &provider) {
        (Some(plan), Some(provider)) => provider.doctor(plan, host),
        _ => Vec::new(),
    };
    let wanted = plan.map(|plan| plan.sandbox.kind());
    for row in &crate::sandbox::registry::KINDS {
        let named: Vec<String> = checks.iter().map(|check| check.name.clone()).collect();
        let machine = row.kind.machine(host, wanted.is_some_and(|wanted| row.names.contains(&wanted)), &named);
        checks.extend(machine);
    }
    checks.into_iter().map(finding).collect()
}

/// The repository's warm pools (`eden pool`): how many members are idle, and whose the
/// claimed ones are. A pool whose engine does not answer is said, never required.
fn warm_pools(dir: &std::path::Path) -> Vec<Finding> {
    let Ok(found) = crate::git::Git::discover(dir) else { return Vec::new() };
    let layout = crate::layout::Layout::new(found.root, found.common_dir);
    let mut findings = Vec::new();
    for row in &crate::sandbox::registry::KINDS {
        match row.kind.pools(&layout) {
            Ok(pools) => findings.extend(pools.iter().map(|pool| {
                let idle = pool.members.iter().filter(|member| member.state == "idle").count();
                let claimed = pool.members.iter().filter(|member| member.state == "claimed").count();
                let detail = format!(
                    "`{}` on {} (`{}`): {idle} of {} idle, {claimed} claimed by runs",
                    pool.pool, pool.engine, pool.image, pool.size
                );
                match idle {
                    0 => not_there(
                        "warm pool",
                        false,
                        detail,
                        "`eden pool up MANIFEST` tops it up; runs start cold meanwhile",
                    ),
                    _ => ok("warm pool", detail),
                }
            })),
            Err(err) => findings.push(not_there(
                "warm pool",
                false,
                err.message,
                "`eden pool down` forgets a pool whose engine is gone",
            )),
        }
    }
    findings
}

fn finding(check: crate::sandbox::provider::Check) -> Finding {
    match check.found {
        Ok(detail) => ok(check.name, detail),
        Err(missing) => not_there(check.name, missing.required, missing.detail, missing.fix),
    }
}

/// Each agent CLI: on PATH, its version, a key or login (never shown); the model host with
/// `network`. The manifest's agents are required (on this machine when there is no container).
fn agent_checks(plan: Option<&Plan>, network: bool) -> Vec<Finding> {
    let in_container = plan.is_some_and(|plan| !crate::sandbox::provider(&plan.sandbox).agents_on_this_machine());
    let wanted: Vec<(AgentKind, Option<std::path::PathBuf>)> = plan
        .map(|plan| {
            plan.steps
                .iter()
                .filter_map(|step| match &step.agent {
                    AgentPlan::Adapter(settings) => Some((settings.kind, Some(settings.binary.clone()))),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut findings = Vec::new();
    for spec in crate::agent::spec::SPECS.iter().filter(|spec| spec.binary.is_some()) {
        let binary = wanted
            .iter()
            .find(|(kind, _)| *kind == spec.kind)
            .and_then(|(_, binary)| binary.clone())
            .unwrap_or_else(|| spec.binary.unwrap_or_default().into());
        let needed = !in_container && wanted.iter().any(|(kind, _)| *kind == spec.kind);
        let install = spec.npm_package.map_or_else(
            || format!("install `{}`", binary.display()),
            |package| format!("install it: `npm install -g {package}`"),
        );
        let Some(version) = crate::sandbox::provider::first_line(ProcessBuilder::new(&binary).arg("--version")) else {
            findings.push(not_there(spec.name, needed, format!("`{}` is not on PATH", binary.display()), install));
            continue;
        };
        match credentials(spec.kind) {
            Some(how) => findings.push(ok(spec.name, format!("{version}; {how}"))),
            None => {
                findings.push(not_there(spec.name, needed, format!("{version}; no key or login found"), spec.login))
            }
        }
        if network {
            findings.push(reachable(spec.kind, model_endpoint(plan, spec), needed));
        }
    }
    findings
}

/// What a sandboxed step's agent is actually given to reach its provider: a held key (named),
/// its key or login in what the manifest hands it, or nothing — which this machine's key, in
/// eden's own environment only, does not change. A key the manifest hands over from a variable
/// not set here (`unset`) is that variable's finding, not a missing hand-over.
fn keys_in_the_sandbox(plan: &Plan, unset: &[String]) -> Vec<Finding> {
    use crate::manifest::held_plan::Held;
    if !crate::sandbox::provider(&plan.sandbox).sandboxed() {
        return Vec::new();
    }
    let mut findings: Vec<Finding> = Vec::new();
    for step in &plan.steps {
        let AgentPlan::Adapter(settings) = &step.agent else { continue };
        let spec = settings.kind.spec();
        let check = format!("{} key in the sandbox", spec.name);
        if findings.iter().any(|finding| finding.check == check) {
            continue;
        }
        let handed = |var: &&&str| {
            settings.env.contains_key(**var)
                || plan.env.sandbox.contains_key(**var)
                || plan.env.dotenv.contains_key(**var)
        };
        findings.push(match (&step.held, spec.doctor.key_vars.iter().find(handed)) {
            (Held::Keys { keys, login: None, .. }, _) if !keys.is_empty() => {
                ok(check, format!("`{}` is held by eden: the agent sees a placeholder", keys[0].var))
            }
            (Held::Keys { login: Some(login), .. }, _) => {
                ok(check, format!("its login (`{}`) is held by eden", login.file))
            }
            (_, Some(var)) => ok(check, format!("`{var}` is handed to it")),
            _ if let Some(var) = spec.doctor.key_vars.iter().find(|var| unset.iter().any(|name| name == *var)) => {
                not_there(
                    check,
                    true,
                    format!(
                        "the manifest hands over `${{{var}}}`, which is not set here, so the sandbox would get no key"
                    ),
                    format!("export `{var}` before running eden, or add it to `.eden/.env`"),
                )
            }
            _ => {
                let var = spec.init_key.or(spec.doctor.key_vars.first().copied()).unwrap_or("THE_KEY");
                not_there(
                    check,
                    true,
                    "the sandbox is given no key: one in eden's environment alone does not reach it",
                    format!("hand it over under `[agent]`: `env = {{ {var} = \"${{{var}}}\" }}`"),
                )
            }
        });
    }
    findings
}

/// Where an agent's requests go: the base URL the manifest's step gives it (held or in its
/// `env`), else its provider's usual host.
fn model_endpoint(plan: Option<&Plan>, spec: &crate::agent::AgentSpec) -> (String, u16) {
    use crate::agent::credentials::Fronting;
    use crate::manifest::held_plan::Held;
    let usual = (spec.doctor.model_host.to_owned(), 443);
    let Some(step) = plan.and_then(|plan| plan.steps.iter().find(|step| step.agent.kind() == spec.kind)) else {
        return usual;
    };
    let given = match (&step.held, &step.agent, spec.credentials) {
        (Held::Keys { upstream, .. }, _, _) => Some(upstream.clone()),
        (_, AgentPlan::Adapter(settings), Ok(Fronting::Env(credentials))) => settings
            .env
            .get(credentials.base_url)
            .map(|value| value.0.clone())
            .or_else(|| std::env::var(credentials.base_url).ok()),
        _ => None,
    };
    given.and_then(|url| crate::values::BaseUrl::parse(&url)).map_or(usual, |url| (url.host, url.port))
}

/// Where the agent's key or login is, named but never shown.
fn credentials(kind: AgentKind) -> Option<String> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|value| !value.is_empty());
    let env = |name: &str| std::env::var(name).ok();
    let (vars, files) = (kind.spec().doctor.key_vars, kind.spec().doctor.login_files);
    if let Some(var) = vars.iter().find(|var| set(var)) {
        return Some(format!("a key in `{var}`"));
    }
    let folder = kind.spec().state_dirs.first()?.folder(&env);
    files
        .iter()
        .map(|file| folder.join(file))
        .find(|path| path.is_file())
        .map(|path| format!("a login in `{}`", path.display()))
}

/// Whether the agent's model host answers on 443 (a TCP connection, within 3 seconds).
fn reachable(kind: AgentKind, (host, port): (String, u16), needed: bool) -> Finding {
    let check = format!("{} network", kind.as_str());
    match crate::net::connect::answers(&host, port, Duration::from_secs(3)) {
        true => ok(check, format!("{host}:{port} answers")),
        false => not_there(
            check,
            needed,
            format!("{host}:{port} does not answer"),
            "check the network, a proxy (`HTTPS_PROXY`), or a base URL of your own",
        ),
    }
}
