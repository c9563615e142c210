//! The filesystem, namespaces and privileges of an `isolated` sandbox: what bubblewrap is told
//! to build. The agent gets a world made for it, not this machine's with a few folders made
//! read-only:
//!
//! - the system's program and library folders (`/usr`, `/bin`, `/sbin`, `/lib*`) read-only, and
//!   `/etc` read-only without what holds secrets (`shadow`, `ssh/`, `sudoers`, private keys,
//!   and every entry that other users may not read);
//! - its copy of the worktree, a private `/tmp` and home, its private state folders (writable);
//! - the host's object stores (the copy's alternates), eden's executable, the agent's own
//!   program (and its npm package) and eden's proxy folder, read-only;
//! - what the manifest hands over by name (`sandbox.mounts`);
//! - nothing else: no `/run`, `/var`, home folders or host `/tmp`, so no socket of this machine
//!   (docker's, an ssh-agent's, a session bus, other runs' proxies) is there to connect to.
//!
//! Every capability is dropped and no-new-privileges set, as root too (`--cap-drop ALL`; a user
//! namespace alone keeps a full set inside it), and no user namespace can be made inside. The
//! agent has PID, IPC, UTS and (unless `network = "host"`) network namespaces of its own, and
//! `/dev/tty` is not the person's terminal. Its environment is only what it is handed.

use crate::manifest::plan::MountPlan;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The system's program and library folders: read-only inside, where this machine has them.
const SYSTEM: [&str; 7] = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// Never visible inside, whatever their permissions (relative to `/etc`).
const ETC_HIDDEN: [&str; 14] = [
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl/private",
    "security/opasswd",
    "docker",
    "containers/auth.json",
    "kubernetes",
    "credstore",
    "credstore.encrypted",
];

/// The agent's home inside: a private folder of the run's.
pub(crate) const HOME_INSIDE: &str = "/home/agent";

/// Variables of eden's own environment that an isolated agent still gets: where programs are,
/// and the locale, time zone and user name. Nothing else of eden's environment goes in.
const PASSED: [&str; 13] = [
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "USER",
    "LOGNAME",
    "TERM",
];

/// What the sandbox is made of, on the host.
pub(crate) struct View<'a> {
    pub(crate) copy: &'a Path,
    /// The host folders behind the private `/tmp` and home.
    pub(crate) tmp: &'a Path,
    pub(crate) home: &'a Path,
    /// The agent's private state folders (writable, where they are).
    pub(crate) writable: &'a [PathBuf],
    /// Read-only where they are: the host's object stores.
    pub(crate) read_only: &'a [PathBuf],
    /// Programs the sandbox runs from this machine (eden, the agent's executable), as found.
    pub(crate) programs: &'a [PathBuf],
    /// eden's proxy folder, seen at `crate::sandbox::PROXY_INSIDE`.
    pub(crate) proxy: Option<&'a Path>,
    pub(crate) mounts: &'a [MountPlan],
    /// `network = "host"`: what name resolution needs of `/run` is given too.
    pub(crate) host_network: bool,
}

/// bubblewrap's arguments that build the sandbox's filesystem, namespaces and privileges (all
/// but the network and the working directory).
pub(crate) fn tree(view: &View<'_>) -> Vec<OsString> {
    let mut args = Args::default();
    for folder in SYSTEM {
        let path = Path::new(folder);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    args.push(["--symlink".as_ref(), target.as_os_str(), path.as_os_str()]);
                }
            }
            Ok(meta) if meta.is_dir() => args.bind("--ro-bind", path, path),
            _ => {}
        }
    }
    args.bind("--ro-bind", Path::new("/etc"), Path::new("/etc"));
    for (hidden, is_dir) in etc_hidden(Path::new("/etc")) {
        if is_dir {
            args.push(["--tmpfs".as_ref(), hidden.as_os_str(), "--remount-ro".as_ref(), hidden.as_os_str()]);
        } else {
            // A device node under a nodev mount: opening it is refused.
            args.bind("--ro-bind", Path::new("/dev/null"), &hidden);
        }
    }
    if view.host_network {
        // `/etc/resolv.conf` may be a link into `/run` (systemd-resolved): only that file.
        if let Ok(resolv) = std::fs::canonicalize("/etc/resolv.conf") {
            if !resolv.starts_with("/etc") {
                args.bind("--ro-bind-try", &resolv, &resolv);
            }
        }
    }
    args.push(["--dev", "/dev", "--proc", "/proc"]);
    // `/dev/tty` would be the terminal eden runs in (a way to type into the person's shell).
    args.bind("--ro-bind", Path::new("/dev/null"), Path::new("/dev/tty"));
    // The private `/tmp` first: what is bound below it (the copy may be) goes over it.
    args.bind("--bind", view.tmp, Path::new("/tmp"));
    args.push(["--symlink", "/tmp", "/var/tmp"]);
    args.bind("--bind", view.home, Path::new(HOME_INSIDE));
    args.bind("--bind", view.copy, view.copy);
    for folder in view.writable {
        args.bind("--bind", folder, folder);
    }
    for folder in view.read_only {
        args.bind("--ro-bind", folder, folder);
    }
    for program in view.programs {
        if let Some(exposed) = program_folder(program) {
            args.bind("--ro-bind", &exposed, &exposed);
        }
        for (target, link) in program_links(program) {
            args.push(["--symlink".as_ref(), target.as_os_str(), link.as_os_str()]);
        }
    }
    if let Some(proxy) = view.proxy {
        args.bind("--ro-bind", proxy, Path::new(crate::sandbox::PROXY_INSIDE));
    }
    for mount in view.mounts {
        let flag = if mount.read_only { "--ro-bind" } else { "--bind" };
        args.bind(flag, &mount.host, Path::new(&mount.sandbox));
    }
    // Namespaces of its own, no capability (as root too), no user namespace of its own making.
    args.push([
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
    ]);
    args.0
}

/// The environment an isolated command starts with: eden's variables in `PASSED`, the private
/// home and `/tmp`. The command's own variables go on top.
pub(crate) fn base_env() -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> =
        PASSED.iter().filter_map(|key| std::env::var_os(key).map(|value| (OsString::from(key), value))).collect();
    env.push(("HOME".into(), HOME_INSIDE.into()));
    env.push(("TMPDIR".into(), "/tmp".into()));
    env
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize, S: AsRef<std::ffi::OsStr>>(&mut self, items: [S; N]) {
        self.0.extend(items.iter().map(|item| item.as_ref().to_owned()));
    }

    fn bind(&mut self, flag: &str, source: &Path, place: &Path) {
        self.push([flag.as_ref(), source.as_os_str(), place.as_os_str()]);
    }
}

/// Is `path` inside the system folders every isolated sandbox sees?
fn in_system(path: &Path) -> bool {
    SYSTEM.iter().any(|folder| path.starts_with(folder))
}

/// What of `/etc` is hidden: the fixed list, and every entry (not following links) that other
/// users may not read. Each with whether it is a folder.
fn etc_hidden(etc: &Path) -> Vec<(PathBuf, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut hidden: Vec<(PathBuf, bool)> = Vec::new();
    for name in ETC_HIDDEN {
        let path = etc.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.file_type().is_symlink() {
                hidden.push((path, meta.is_dir()));
            }
        }
    }
    let mut pending = vec![(etc.to_path_buf(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.file_type().is_symlink() || hidden.iter().any(|(known, _)| path.starts_with(known)) {
                continue;
            }
            if meta.permissions().mode() & 0o004 == 0 {
                hidden.push((path, meta.is_dir()));
            } else if meta.is_dir() && depth < 8 {
                pending.push((path, depth + 1));
            }
        }
    }
    hidden.sort();
    hidden
}

/// A program the sandbox runs from this machine, when it is outside the system folders: its
/// file (where it really is), or the npm package it belongs to.
fn program_folder(found: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(found).ok()?;
    if in_system(&real) {
        return None;
    }
    Some(package_root(&real).unwrap_or(real))
}

/// The links that lead to a program as it was found (`~/.local/bin/claude` to where it
/// really is), where the sandbox would otherwise not have them. `(target, link)`.
fn program_links(found: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(real) = std::fs::canonicalize(found) else { return Vec::new() };
    if real == found || in_system(found) || !found.is_absolute() {
        return Vec::new();
    }
    vec![(real, found.to_path_buf())]
}

/// The folder of the npm package `path` is in (`…/node_modules/name` or
/// `…/node_modules/@scope/name`): a CLI from npm needs its whole package.
fn package_root(path: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = path.components().collect();
    let at = parts.iter().rposition(|part| part.as_os_str() == "node_modules")?;
    let scoped = parts.get(at + 1)?.as_os_str().to_string_lossy().starts_with('@');
    let end = at + if scoped { 3 } else { 2 };
    (end < parts.len()).then(|| parts[..end].iter().collect())
}

/// Where `program` (a name on `PATH`, or a path) is on this machine, if anywhere.
pub(crate) fn find_program(program: &Path) -> Option<PathBuf> {
    if program.is_absolute() {
        return program.exists().then(|| program.to_path_buf());
    }
    which::which(program).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_packages_are_exposed_whole() {
        assert_eq!(
            package_root(Path::new("/home/u/.npm-global/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe")),
            Some(PathBuf::from("/home/u/.npm-global/lib/node_modules/@anthropic-ai/claude-code"))
        );
        assert_eq!(
            package_root(Path::new("/opt/n/lib/node_modules/opencode-ai/bin/opencode")),
            Some(PathBuf::from("/opt/n/lib/node_modules/opencode-ai"))
        );
        assert_eq!(package_root(Path::new("/home/u/bin/agent.sh")), None);
    }

    #[test]
    fn unreadable_and_secret_entries_of_etc_are_hidden() {
        use std::os::unix::fs::PermissionsExt;
        let etc = tempfile::tempdir().unwrap();
        let at = |name: &str| etc.path().join(name);
        std::fs::write(at("passwd"), "root:x:0:0::/root:/bin/sh\n").unwrap();
        std::fs::write(at("shadow"), "root:*:1::::::\n").unwrap();
        std::fs::create_dir_all(at("ssh")).unwrap();
        std::fs::create_dir_all(at("app/conf.d")).unwrap();
        std::fs::write(at("app/conf.d/token"), "secret\n").unwrap();
        std::fs::set_permissions(at("app/conf.d/token"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(at("app/public"), "ok\n").unwrap();
        let hidden: Vec<PathBuf> = etc_hidden(etc.path()).into_iter().map(|(path, _)| path).collect();
        assert!(hidden.contains(&at("shadow")) && hidden.contains(&at("ssh")), "{hidden:?}");
        assert!(hidden.contains(&at("app/conf.d/token")), "{hidden:?}");
        assert!(!hidden.contains(&at("passwd")) && !hidden.contains(&at("app/public")), "{hidden:?}");
    }
}
