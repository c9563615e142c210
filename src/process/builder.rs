//! A command description that prints itself quoted (for errors and logs), runs to completion
//! for short helper commands (git), or spawns into its own process group for supervision.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

#[derive(Clone, Default)]
pub(crate) enum Stdin {
    #[default]
    Null,
    /// Written to the child's stdin, which is then closed.
    Bytes(Vec<u8>),
    /// eden's own stdin, stdout and stderr, handed over (`eden interactive`); `tty` when they
    /// are a terminal the child is to own (a container engine then allocates one inside).
    Terminal { tty: bool },
}

#[derive(Clone)]
pub(crate) struct ProcessBuilder {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    /// `None` removes the variable.
    env: Vec<(OsString, Option<OsString>)>,
    /// What the child reads. Environment values are never part of `Display`: secrets travel in
    /// the environment, and the printed command line goes into errors and logs.
    stdin: Stdin,
    /// Run under eden's containment (see `contain`) when spawned for supervision.
    contained: bool,
    /// Start from an empty environment instead of eden's (`env` on top).
    clear_env: bool,
    /// The most bytes any one file it writes may hold (`RLIMIT_FSIZE`).
    file_size_limit: Option<u64>,
    /// Run to completion (`output` and the like): stopped, with its process group, past this.
    timeout: Option<std::time::Duration>,
    /// Cleaning up (removing a sandbox): a signal already received does not stop it, a further
    /// one does.
    finishing: bool,
}

/// What `output_to_file_capped` did: the command's result, the bytes written, and whether it
/// went past the limit (and was killed).
#[derive(Debug)]
pub(crate) struct Capped {
    pub(crate) output: Output,
    pub(crate) over: bool,
}

/// The result of a command run to completion.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) status: std::process::ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Output {
    pub(crate) fn success(&self) -> bool {
        self.status.success()
    }
}

impl ProcessBuilder {
    pub(crate) fn new(program: impl AsRef<OsStr>) -> Self {
        ProcessBuilder {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            stdin: Stdin::Null,
            contained: false,
            clear_env: false,
            file_size_limit: None,
            timeout: None,
            finishing: false,
        }
    }

    /// This command's environment, working directory and stdin, running `program` with `args`
    /// instead (a wrapper in front of the command it replaces, or the same command found
    /// elsewhere).
    pub(crate) fn with_program<I, S>(self, program: impl AsRef<OsStr>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        ProcessBuilder { program: program.as_ref().to_owned(), args: Vec::new(), ..self }.args(args)
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `flag value` when there is a value, nothing otherwise.
    pub(crate) fn option(self, flag: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.arg(flag).arg(value),
            None => self,
        }
    }

    pub(crate) fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_owned());
        self
    }

    /// Set a variable (replacing an earlier setting or removal of it).
    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.retain(|(set, _)| set != key.as_ref());
        self.env.push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Set a variable unless the command already sets (or removes) it: defaults under the
    /// command's own environment.
    pub(crate) fn env_default(self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        if self.env.iter().any(|(set, _)| set == key.as_ref()) {
            return self;
        }
        self.env(key, value)
    }

    /// No file the command writes may grow past `bytes` (`RLIMIT_FSIZE`: the write fails and
    /// the command gets SIGXFSZ).
    pub(crate) fn file_size_limit(mut self, bytes: u64) -> Self {
        self.file_size_limit = Some(bytes);
        self
    }

    /// Run to completion (`output`, `output_to_file`, `pipe_into`) within `timeout`, else stopped
    /// with its whole process group (a signal to eden stops it in any case).
    pub(crate) fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A clean-up that must run after Ctrl-C too (removing what a run made): only a signal that
    /// comes while it runs stops it.
    pub(crate) fn finishing(mut self) -> Self {
        self.finishing = true;
        self
    }

    /// The child inherits nothing of eden's environment: only what `env` sets.
    pub(crate) fn env_clear(mut self) -> Self {
        self.clear_env = true;
        self.env.retain(|(_, value)| value.is_some());
        self
    }

    pub(crate) fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.retain(|(set, _)| set != key.as_ref());
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    pub(crate) fn stdin(mut self, stdin: Stdin) -> Self {
        self.stdin = stdin;
        self
    }

    /// Nothing this command starts may outlive it: `spawn_group` runs it under the containment
    /// in force (a PID namespace of its own, or the subreaper's sweep afterwards).
    pub(crate) fn contained(mut self) -> Self {
        self.contained = true;
        self
    }

    pub(crate) fn program(&self) -> &OsStr {
        &self.program
    }

    pub(crate) fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    pub(crate) fn get_args(&self) -> &[OsString] {
        &self.args
    }

    /// Variables set (`Some`) or removed (`None`) for the child, in order.
    pub(crate) fn get_env(&self) -> &[(OsString, Option<OsString>)] {
        &self.env
    }

    pub(crate) fn take_stdin(&mut self) -> Stdin {
        std::mem::take(&mut self.stdin)
    }

    fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.args);
        if self.clear_env {
            command.env_clear();
        }
        if let Some(bytes) = self.file_size_limit {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit(2) is async-signal-safe.
            unsafe {
                command.pre_exec(move || {
                    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_FSIZE, bytes, bytes)
                        .map_err(std::io::Error::from)
                });
            }
        }
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
            // Programs that honour `$PWD` over getcwd() (opencode does) must not see the
            // directory eden was started in: that is the user's checkout, not the worktree.
            command.env("PWD", cwd);
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
    }

    /// Run to completion, capturing output. For short helper commands such as git. The child
    /// gets its own process group so the terminal's Ctrl-C reaches only eden, which finishes
    /// (or undoes) what it started instead of leaving a half-done `git worktree add` or merge.
    pub(crate) fn output(&self) -> std::io::Result<Output> {
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        command.process_group(0);
        command.stdin(match self.stdin {
            Stdin::Null => Stdio::null(),
            Stdin::Bytes(_) => Stdio::piped(),
            Stdin::Terminal { .. } => Stdio::inherit(),
        });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let stdin = child.stdin.take();
        let watched = super::watch::Watched::new(child, self.timeout, self.finishing);
        if let (Stdin::Bytes(bytes), Some(mut stdin)) = (&self.stdin, stdin) {
            use std::io::Write;
            // On a thread: a child that does not read its stdin must not hold eden here.
            let bytes = bytes.clone();
            std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
        }
        let output = watched.wait()?;
        Ok(Output {
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// `output_to_file`, at most `limit` bytes of it: past that the command's process group is
    /// killed and `Capped` says so (what was written stays in `file` for the caller to remove).
    /// The count is kept as the bytes arrive, so nothing past the limit is ever written.
    pub(crate) fn output_to_file_capped(&self, file: std::fs::File, limit: u64) -> std::io::Result<Capped> {
        use std::io::{Read, Write};
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        let stdin = if matches!(self.stdin, Stdin::Bytes(_)) { Stdio::piped() } else { Stdio::null() };
        command.process_group(0).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let group = nix::unistd::Pid::from_raw(child.id() as i32);
        let mut stdout = child.stdout.take().expect("stdout is piped");
        // What it reads, fed on a thread of its own (a full pipe must not stall the copy).
        if let (Stdin::Bytes(bytes), Some(mut pipe)) = (&self.stdin, child.stdin.take()) {
            let bytes = bytes.clone();
            std::thread::spawn(move || pipe.write_all(&bytes));
        }
        // Counted as it arrives, on a thread of its own: past `limit` the group is killed.
        let copier = std::thread::spawn(move || -> std::io::Result<(u64, bool)> {
            let mut file = file;
            let mut total = 0u64;
            let mut buffer = vec![0u8; 64 * 1024];
            loop {
                let read = match stdout.read(&mut buffer) {
                    Ok(0) => return Ok((total, false)),
                    Ok(read) => read,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(err) => return Err(err),
                };
                if total + read as u64 > limit {
                    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                    return Ok((total, true));
                }
                file.write_all(&buffer[..read])?;
                total += read as u64;
            }
        });
        let waited = super::watch::Watched::new(child, self.timeout, self.finishing).wait()?;
        let (_, over) = copier.join().map_err(|_| std::io::Error::other("the copy panicked"))??;
        let stderr = String::from_utf8_lossy(&waited.stderr).into_owned();
        let output = Output { status: waited.status, stdout: String::new(), stderr };
        Ok(Capped { output, over })
    }

    /// Run this command with its stdout piped into `consumer`'s stdin (`tar -c … | docker exec
    /// -i …`), both to completion, each in a process group of its own. Returns this command's
    /// result (its stderr) and the consumer's (its stdout and stderr). When the consumer fails,
    /// this one is killed rather than left writing into a closed pipe.
    pub(crate) fn pipe_into(&self, consumer: &ProcessBuilder) -> std::io::Result<(Output, Output)> {
        use std::os::unix::process::CommandExt;
        let mut producer = self.command();
        producer.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut producer = producer.spawn()?;
        let pipe = producer.stdout.take().expect("stdout is piped");
        // Read on the side: a producer that fills its stderr pipe must not stall the stream.
        let mut errors = producer.stderr.take().expect("stderr is piped");
        let errors = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = std::io::Read::read_to_end(&mut errors, &mut text);
            text
        });
        let mut command = consumer.command();
        command.process_group(0).stdin(Stdio::from(pipe)).stdout(Stdio::piped()).stderr(Stdio::piped());
        let producer_group = producer.id() as i32;
        let consumed = command.spawn().and_then(|child| {
            super::watch::Watched::new(child, self.timeout, self.finishing).with_group(producer_group).wait()
        });
        if !consumed.as_ref().is_ok_and(|output| output.status.success()) {
            let _ = producer.kill();
        }
        let produced = producer.wait()?;
        let consumed = consumed?;
        let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
        Ok((
            Output { status: produced, stdout: String::new(), stderr: text(errors.join().unwrap_or_default()) },
            Output { status: consumed.status, stdout: text(consumed.stdout), stderr: text(consumed.stderr) },
        ))
    }

    /// `output`, without blocking the async runtime: for short commands run beside a supervised
    /// one (signalling its processes inside a container).
    pub(crate) async fn output_async(&self) -> std::io::Result<Output> {
        let mut command = tokio::process::Command::from(self.command());
        command.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // Given up on (a timeout around it): it goes too.
        command.kill_on_drop(true);
        let output = command.output().await?;
        Ok(Output {
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// Run to completion on eden's own terminal and output, as if the person had typed it: for
    /// `git diff` with their pager. It stays in eden's process group, as `status_to_stderr`.
    pub(crate) fn status_inherited(&self) -> std::io::Result<std::process::ExitStatus> {
        self.command().stdin(Stdio::inherit()).stdout(Stdio::inherit()).stderr(Stdio::inherit()).status()
    }

    /// Run to completion, handing each line of the child's stdout to `on_line` as it comes (its
    /// stderr goes to eden's). It stays in eden's process group, as `status_to_stderr`.
    pub(crate) fn status_with_lines(&self, on_line: &mut dyn FnMut(&str)) -> std::io::Result<std::process::ExitStatus> {
        use std::io::BufRead;
        let mut command = self.command();
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().expect("piped");
        for line in std::io::BufReader::new(stdout).lines() {
            match line {
                Ok(line) => on_line(&line),
                Err(err) if err.kind() == std::io::ErrorKind::InvalidData => continue,
                Err(_) => break,
            }
        }
        child.wait()
    }

    /// Spawn into a new process group with piped stdout and stderr, and stdin piped when there
    /// is something to write (null otherwise, so the child never waits on a terminal).
    ///
    /// The child is also killed if eden dies without cleaning up (SIGKILL, a crash): the kernel
    /// sends it SIGKILL when its parent goes (`PR_SET_PDEATHSIG`), so an agent never keeps
    /// working — and spending — for nobody. Only the leader gets it; its own children are
    /// orphaned, and the next run's prune and `killpg` cover the rest where they can. The
    /// "parent" is the thread that spawns: call this from the runtime's own thread (eden's
    /// runtime is single-threaded), never from a short-lived helper thread.
    pub(crate) fn spawn_group(&self) -> std::io::Result<tokio::process::Child> {
        let mut command = tokio::process::Command::from(self.supervised_command()?);
        command
            .process_group(0)
            .stdin(match self.stdin {
                Stdin::Null => Stdio::null(),
                Stdin::Bytes(_) => Stdio::piped(),
                Stdin::Terminal { .. } => Stdio::inherit(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        command.spawn()
    }

    /// Spawn with eden's stdin, stdout and stderr, in a process group of its own that becomes
    /// the terminal's foreground group when `foreground` (so Ctrl-C, Ctrl-Z and the keys go to
    /// it, not to eden). Contained and tied to eden's life like `spawn_group`.
    pub(crate) fn spawn_terminal(&self, foreground: bool) -> std::io::Result<tokio::process::Child> {
        use std::os::unix::process::CommandExt;
        let mut std_command = self.supervised_command()?;
        if foreground {
            // SAFETY: between fork and exec only async-signal-safe calls: signal(2), tcsetpgrp(3)
            // (an ioctl), getpid(2).
            unsafe {
                std_command.pre_exec(|| {
                    use nix::sys::signal::{signal, SigHandler, Signal};
                    // Still in the background: taking the terminal would stop us without this.
                    signal(Signal::SIGTTOU, SigHandler::SigIgn).map_err(std::io::Error::from)?;
                    let taken = nix::unistd::tcsetpgrp(std::io::stdin(), nix::unistd::getpid());
                    signal(Signal::SIGTTOU, SigHandler::SigDfl).map_err(std::io::Error::from)?;
                    taken.map_err(std::io::Error::from)
                });
            }
        }
        let mut command = tokio::process::Command::from(std_command);
        command.process_group(0).stdin(Stdio::inherit()).stdout(Stdio::inherit()).stderr(Stdio::inherit());
        command.spawn()
    }

    /// The std command a supervised spawn runs: under eden's init when contained, and killed
    /// by the kernel if eden dies.
    fn supervised_command(&self) -> std::io::Result<std::process::Command> {
        let mut std_command = self.command();
        if self.contained && super::contain::current() == Some(super::contain::Containment::PidNamespace) {
            // eden's init runs the command; a program that cannot start must still fail here,
            // as it would without the init, rather than as the init's exit code.
            self.check_runnable()?;
            let mut wrapped = self.clone();
            wrapped.program = std::env::current_exe()?.into_os_string();
            wrapped.args = [OsString::from(super::contain::INIT_SUBCOMMAND), self.program.clone()]
                .into_iter()
                .chain(self.args.iter().cloned())
                .collect();
            std_command = wrapped.command();
        }
        die_with_parent(&mut std_command, nix::sys::signal::Signal::SIGKILL, false);
        Ok(std_command)
    }
}

/// The child gets `signal` when this thread's process goes (`PR_SET_PDEATHSIG`), and with
/// `unblock` starts with no signal blocked (a coordinator blocks them to `sigwait`).
fn die_with_parent(command: &mut std::process::Command, signal: nix::sys::signal::Signal, unblock: bool) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: between fork and exec only async-signal-safe calls: sigprocmask(2), prctl(2) and
    // getppid(2).
    unsafe {
        command.pre_exec(move || {
            use nix::sys::signal::{sigprocmask, SigSet, SigmaskHow};
            if unblock {
                sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None).map_err(std::io::Error::from)?;
            }
            nix::sys::prctl::set_pdeathsig(signal).map_err(std::io::Error::from)?;
            // eden may have died before the line above: then nobody will ever wait for us.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other("eden exited while starting the process"));
            }
            Ok(())
        });
    }
}

impl ProcessBuilder {
    /// Spawn in eden's own process group and terminal with stdin piped from eden and the output
    /// inherited: a pager that eden writes a long text into.
    pub(crate) fn spawn_pager(&self) -> std::io::Result<std::process::Child> {
        self.command().stdin(Stdio::piped()).spawn()
    }

    /// Spawn one run of several (`eden run A.toml B.toml`): an eden of its own in its own
    /// process group (the coordinator forwards signals; the terminal's Ctrl-C reaches only the
    /// coordinator), stdin closed, stdout and stderr piped, every signal unblocked (the
    /// coordinator collects its own with `sigwait`), and SIGTERM when the coordinator dies —
    /// so a killed coordinator still has its runs stop cleanly. Call it from the thread that
    /// lives as long as the runs: the death signal follows the spawning thread.
    pub(crate) fn spawn_member(&self) -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        command.process_group(0).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        die_with_parent(&mut command, nix::sys::signal::Signal::SIGTERM, true);
        command.spawn()
    }

    /// Spawn a channel that lives beside the run (a tunnel through an engine's exec): stdin,
    /// stdout and stderr piped, in a process group of its own (the terminal's Ctrl-C reaches
    /// only eden), SIGKILLed when the spawning thread's process dies.
    pub(crate) fn spawn_channel(&self) -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        command.process_group(0).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        die_with_parent(&mut command, nix::sys::signal::Signal::SIGKILL, false);
        command.spawn()
    }

    /// Spawn a command a door runs for its caller (`sandbox::door`), as an engine's `exec`
    /// would: in a process group of its own, stdout and stderr piped, stdin piped when `stdin`.
    pub(crate) fn spawn_for_caller(&self, stdin: bool) -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        command.process_group(0).stdin(if stdin { Stdio::piped() } else { Stdio::null() });
        command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()
    }

    /// Become this command (`exec`): its stdin, stdout, stderr and environment this process's.
    /// Returns only when it could not.
    pub(crate) fn become_it(&self) -> std::io::Error {
        use std::os::unix::process::CommandExt;
        self.command().exec()
    }

    /// Spawn in a session of its own (no signal for eden's group or terminal reaches it), with
    /// stdin piped from eden and no output: for guards that must outlive eden (see `guard`).
    pub(crate) fn spawn_detached(&self) -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        let mut command = self.command();
        // SAFETY: setsid(2) is async-signal-safe.
        unsafe {
            command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
        }
        command.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()
    }

    /// Fail as `exec` would if the program cannot be found or run: not found on the `PATH` the
    /// child will have, or not an executable file.
    fn check_runnable(&self) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let program = Path::new(&self.program);
        let path = if program.components().count() > 1 {
            let path = match &self.cwd {
                Some(cwd) if program.is_relative() => cwd.join(program),
                _ => program.to_path_buf(),
            };
            if !path.exists() {
                return Err(nix::errno::Errno::ENOENT.into());
            }
            path
        } else {
            let search = match self.env.iter().rev().find(|(key, _)| key == "PATH") {
                Some((_, value)) => value.clone(),
                None => std::env::var_os("PATH"),
            };
            let cwd = self.cwd.clone().unwrap_or_else(|| PathBuf::from("."));
            which::which_in(program, search, cwd).map_err(|_| std::io::Error::from(nix::errno::Errno::ENOENT))?
        };
        let metadata = std::fs::metadata(&path)?;
        if metadata.is_dir() || metadata.permissions().mode() & 0o111 == 0 {
            return Err(nix::errno::Errno::EACCES.into());
        }
        Ok(())
    }
}

/// What is fed in, without its bytes: stdin can carry a secret (a key, a patch).
impl fmt::Debug for Stdin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stdin::Null => write!(f, "Null"),
            Stdin::Bytes(bytes) => write!(f, "Bytes({} bytes)", bytes.len()),
            Stdin::Terminal { tty } => write!(f, "Terminal {{ tty: {tty} }}"),
        }
    }
}

/// The command line and the names of the variables it sets, never their values or stdin's bytes:
/// a `{:?}` in a log or a panic shows no secret.
impl fmt::Debug for ProcessBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .env
            .iter()
            .map(|(key, value)| match value {
                Some(_) => key.to_string_lossy().into_owned(),
                None => format!("-{}", key.to_string_lossy()),
            })
            .collect();
        f.debug_struct("ProcessBuilder")
            .field("command", &self.to_string())
            .field("cwd", &self.cwd)
            .field("env", &names)
            .field("stdin", &self.stdin)
            .field("contained", &self.contained)
            .field("clear_env", &self.clear_env)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl fmt::Display for ProcessBuilder {
    /// The command line, shell-quoted. Environment values are never part of it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quote = |s: &OsStr| {
            let s = s.to_string_lossy();
            shlex::try_quote(&s).map(|q| q.into_owned()).unwrap_or_else(|_| format!("{s:?}"))
        };
        write!(f, "{}", quote(&self.program))?;
        for arg in &self.args {
            write!(f, " {}", quote(arg))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_value_and_no_stdin() {
        let command = ProcessBuilder::new("agent")
            .arg("--go")
            .env("API_KEY", "sk-very-secret")
            .env_remove("GIT_DIR")
            .stdin(Stdin::Bytes(b"sk-stdin-secret".to_vec()));
        let shown = format!("{command:?}");
        assert!(shown.contains("API_KEY") && shown.contains("-GIT_DIR") && shown.contains("agent --go"), "{shown}");
        assert!(!shown.contains("sk-very-secret") && !shown.contains("sk-stdin-secret"), "{shown}");
        assert!(shown.contains("Bytes(15 bytes)"), "{shown}");
    }

    #[test]
    fn pwd_follows_the_working_directory() {
        let output = ProcessBuilder::new("sh").args(["-c", "echo \"$PWD\""]).cwd("/tmp").output().unwrap();
        assert_eq!(output.stdout.trim(), "/tmp");
    }

    #[test]
    fn capped_output_stops_at_the_limit_and_kills_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let started = std::time::Instant::now();
        let capped = ProcessBuilder::new("sh")
            .args(["-c", "yes 0123456789; echo never"])
            .output_to_file_capped(std::fs::File::create(&path).unwrap(), 100_000)
            .unwrap();
        assert!(capped.over, "{capped:?}");
        assert!(std::fs::metadata(&path).unwrap().len() <= 100_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the writer was killed");
        let small = ProcessBuilder::new("sh")
            .args(["-c", "printf abc; echo oops >&2"])
            .output_to_file_capped(std::fs::File::create(&path).unwrap(), 100)
            .unwrap();
        assert!(!small.over && small.output.stderr.trim() == "oops", "{small:?}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 3);
    }

    #[test]
    fn a_cleared_environment_holds_only_what_is_set() {
        assert!(std::env::var_os("HOME").is_some());
        let output = ProcessBuilder::new("/bin/sh")
            .args(["-c", "echo \"${HOME:-none} $ONLY\""])
            .env_clear()
            .env("ONLY", "set")
            .output()
            .unwrap();
        assert_eq!(output.stdout.trim(), "none set");
    }

    #[test]
    fn display_quotes_arguments_and_hides_env() {
        let command = ProcessBuilder::new("git").args(["commit", "-m", "two words"]).env("TOKEN", "s3cret");
        assert_eq!(command.to_string(), "git commit -m 'two words'");
    }
}
