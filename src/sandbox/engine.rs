//! The container engine's client: one command line (`docker …`, `podman …`) and running it to
//! completion. Every call eden makes to an engine starts here.

use crate::error::Error;
use crate::manifest::plan::Engine;
use crate::process::{Output, ProcessBuilder};

/// `docker` or `podman`, ready for its arguments.
pub(super) fn command(engine: Engine) -> ProcessBuilder {
    ProcessBuilder::new(engine.binary())
}

/// Run an engine command to completion; not starting at all is a sandbox error.
pub(super) fn run(command: ProcessBuilder) -> Result<Output, Error> {
    command.output().map_err(|err| Error::sandbox(format!("cannot run `{command}`: {err}")))
}
