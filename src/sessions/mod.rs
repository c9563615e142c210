//! The run history behind `eden sessions`: the agents' transcripts captured after each
//! iteration (`capture`), and the run records read back as one list (`history`).

pub(crate) mod capture;
pub(crate) mod cost;
pub(crate) mod history;
pub(crate) mod transfer;
