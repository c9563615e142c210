//! `eden completions SHELL`: a completion script generated from the clap definitions, on stdout.

use crate::cli::{Cli, CompletionsArgs};
use crate::error::Error;
use clap::CommandFactory;

pub fn completions(args: CompletionsArgs) -> Result<i32, Error> {
    use std::io::Write;
    let script = script(args.shell);
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&script).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(0),
        // `eden completions bash | head` is not a failure worth a message.
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(err) => Err(Error::internal("cannot write the completion script").with_source(err)),
    }
}

/// The completion script for `shell`, as `completions/` holds it.
pub fn script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "eden", &mut script);
    script
}
