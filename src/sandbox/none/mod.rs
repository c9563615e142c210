//! `none`: the agent runs on this machine, as the person, in the run's worktree. The one kind
//! that is no boundary; `eden doctor` and `--dry-run` say so.

use crate::error::Error;
use crate::process::ProcessBuilder;
use crate::sandbox::provider::Reach;
use crate::sandbox::provider::{self, Start, Started};
use crate::sandbox::{Prepared, SandboxHandle};
use std::path::{Path, PathBuf};

/// No sandbox: commands run on the host as they are.
pub(crate) struct Host;

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

/// `none` bound to a plan: nothing to check, nothing to start.
pub(crate) struct Provider;

impl provider::Provider for Provider {
    fn name(&self) -> &'static str {
        "none"
    }

    fn sandboxed(&self) -> bool {
        false
    }

    fn preflight(&mut self, _holds_keys: bool) -> Result<(), Error> {
        Ok(())
    }

    fn start(&self, _start: &Start<'_>) -> Result<Started, Error> {
        Ok(Started::quietly(Box::new(Host)))
    }

    fn reach(&self) -> Reach {
        Reach {
            reads: vec!["everything you can: it runs as you, on this machine, with your environment".into()],
            connects: "everywhere this machine can".into(),
            privileges: "yours".into(),
        }
    }

    fn proxy_inside(&self, dir: &Path) -> PathBuf {
        dir.to_owned()
    }

    fn interactive(&self) -> Result<bool, Error> {
        Ok(false)
    }
}

/// `none` leaves nothing behind of its own.
pub(crate) struct NoSandbox;

impl provider::Kind for NoSandbox {}

pub(crate) static KIND: NoSandbox = NoSandbox;
