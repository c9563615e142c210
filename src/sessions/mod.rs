//! The run history behind `eden sessions`: the agents' transcripts captured after each
//! iteration (`capture`), and the run records read back as one list (`history`).

pub mod capture;
pub mod cost;
pub mod history;
pub mod transfer;
