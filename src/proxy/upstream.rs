//! Where held requests go: the provider's API as a base URL (`https://api.anthropic.com`, or the
//! one the person set), reached through `net::connect` (TLS with the system's roots,
//! certificates always verified). A plain `http://` upstream is only ever one the person named
//! themselves.

use crate::net::connect::Connection;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use crate::net::connect::client_config;
pub(crate) use crate::values::BaseUrl as Upstream;

/// A connection to `upstream`: 30 s to answer, then up to 10 minutes for each read (a model
/// thinking before its first token).
pub(crate) fn connect(upstream: &Upstream, tls: &Arc<rustls::ClientConfig>) -> std::io::Result<Connection> {
    let connection = crate::net::connect::connect(upstream, tls, Duration::from_secs(30))?;
    connection.wait_at_most(Some(Duration::from_secs(600)))?;
    Ok(connection)
}
