//! One file per subcommand: arguments into settings, then the core.

pub mod image;
pub mod init;
pub mod run;
