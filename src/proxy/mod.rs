//! Held credentials: the agent never holds the provider's key. For each run eden listens on a
//! socket of the run's own (`.eden/tmp/<run>/proxy/`), which only the run's sandbox is given;
//! the agent gets a placeholder for its key and a base URL at a small relay inside the sandbox
//! (`relay`: `127.0.0.1:<port>` there, forwarding to the socket). A request that carries the
//! run's placeholder in its credential header gets the real credential in its place and goes
//! to the configured upstream only (`forward`), over TLS with verification (`upstream`);
//! anything else is refused. Each request is noted for the run's log (`Audit`: time, method,
//! host, path, status, bytes, duration; never a header or a body).

mod forward;
pub(crate) mod held;
mod ledger;
pub(crate) mod relay;
mod server;
pub(crate) mod tunnel;
pub(crate) mod upstream;

pub use server::Proxy;

use crate::agent::credentials::CredentialHeader;
use crate::redact::Secret;

/// One credential the proxy holds: the header that carries it, the run's placeholder for it,
/// and the real value.
#[derive(Debug, Clone)]
pub struct HeldKey {
    pub header: CredentialHeader,
    pub placeholder: String,
    pub value: Secret,
}

impl CredentialHeader {
    /// The real header value if `name: value` is this header carrying `placeholder`.
    fn swap(&self, name: &str, value: &str, placeholder: &str, real: &str) -> Option<String> {
        let api_key = || name.eq_ignore_ascii_case("x-api-key") && value == placeholder;
        let bearer =
            || name.eq_ignore_ascii_case("authorization") && value.strip_prefix("Bearer ") == Some(placeholder);
        match self {
            CredentialHeader::XApiKey => api_key().then(|| real.to_owned()),
            CredentialHeader::Bearer => bearer().then(|| format!("Bearer {real}")),
            CredentialHeader::Either if api_key() => Some(real.to_owned()),
            CredentialHeader::Either => bearer().then(|| format!("Bearer {real}")),
        }
    }
}

/// One request, as the run's log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Audit {
    pub(crate) at: String,
    pub(crate) method: String,
    pub(crate) host: String,
    pub(crate) path: String,
    /// The upstream's status, or eden's own when it refused or could not reach it.
    pub status: Option<u16>,
    pub(crate) bytes_up: u64,
    pub(crate) bytes_down: u64,
    pub(crate) duration_ms: u64,
    /// Why eden refused it or it failed, if it did.
    pub refused: Option<String>,
    /// Still in flight when the agent was stopped (no status yet).
    #[serde(default)]
    pub(crate) in_flight: bool,
}

impl Audit {
    fn new(method: &str, host: &str, path: &str) -> Audit {
        // The path without its query: a query could carry what the agent was told to leak.
        let path = path.split('?').next().unwrap_or("").chars().take(200).collect();
        Audit {
            at: crate::record::now_rfc3339(),
            method: method.chars().take(16).collect(),
            host: host.to_owned(),
            path,
            status: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
            refused: None,
            in_flight: false,
        }
    }
}
