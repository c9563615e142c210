//! One file per subcommand: arguments into settings, then the core.

pub mod clean;
pub mod image;
pub mod init;
pub mod run;
