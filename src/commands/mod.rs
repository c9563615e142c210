//! One file per subcommand: arguments into settings, then the core.

pub mod batch;
pub mod clean;
pub mod completions;
pub mod doctor;
pub mod from;
pub mod image;
pub mod init;
pub mod review;
pub mod run;
pub mod sessions;
pub mod settings;

/// The directory eden was started in.
pub(crate) fn current_dir() -> Result<std::path::PathBuf, crate::error::Error> {
    std::env::current_dir().map_err(|err| {
        crate::error::Error::internal("cannot read the current directory")
            .with_source(err)
            .with_hint("was it deleted while you were in it? `cd` there again")
    })
}
