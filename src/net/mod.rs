//! eden's own network I/O, in one place: reaching a host over TCP and TLS (`connect`: the
//! platform's roots, certificates always verified) and the small HTTP/1.1 client eden's own
//! requests go through (`http`: statuses, redirects and a deadline handled once). The
//! telemetry exporter posts through it, the forge client will; the key-holding proxy connects
//! to its upstream through `connect`.
//!
//! A new network client goes here (its protocol on top of `http`), never a socket of its own
//! elsewhere.

pub(crate) mod connect;
pub(crate) mod http;
