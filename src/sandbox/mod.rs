//! Where agent commands run: on the host, or inside one long-lived container per run. The
//! orchestrator only sees `SandboxHandle`: turn a command into one that runs in the sandbox,
//! reach the processes it started there when they must be killed, and clean up.

pub mod container;
pub mod firewall;
pub mod isolated;

pub use container::{prune_abandoned, start as start_container};

use crate::error::Error;
use crate::process::{Inside, ProcessBuilder};

/// A command ready to start on the host, and how to reach what it runs inside the sandbox.
pub struct Prepared {
    pub command: ProcessBuilder,
    /// Reaches the command's processes inside the sandbox (killing the host-side client of a
    /// `docker exec` leaves them running). `None` when the host process group is everything.
    pub inside: Option<Box<dyn Inside>>,
}

pub trait SandboxHandle: Send {
    /// `none`, `docker`, `podman`.
    fn kind(&self) -> &'static str;
    /// The container (engine, name, id, image), if there is one.
    fn container(&self) -> Option<crate::record::ContainerRecord>;
    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error>;
    /// After each iteration: bring the agent's work into the worktree where it lives elsewhere
    /// (the isolated copy). Returns a note for the display, if any.
    fn sync(&self) -> Result<Option<String>, Error> {
        Ok(None)
    }
    /// After a command in the sandbox failed (with `exit_code`): is the sandbox itself still
    /// there? An error here (exit 6) replaces the command's own failure, which was only a symptom.
    fn check_alive(&self, _exit_code: Option<i32>) -> Result<(), Error> {
        Ok(())
    }
    /// Remove the sandbox, bringing back what must come back first. Idempotent. Returns a note
    /// for the display, if any.
    fn close(&mut self) -> Result<Option<String>, Error>;
}

/// No sandbox: commands run on the host as they are.
pub struct Host;

impl SandboxHandle for Host {
    fn kind(&self) -> &'static str {
        "none"
    }

    fn container(&self) -> Option<crate::record::ContainerRecord> {
        None
    }

    fn prepare(&self, command: ProcessBuilder) -> Result<Prepared, Error> {
        Ok(Prepared { command: command.contained(), inside: None })
    }

    fn close(&mut self) -> Result<Option<String>, Error> {
        Ok(None)
    }
}
