//! Where held requests go: the provider's API as a base URL (`https://api.anthropic.com`, or the
//! one the person set), reached over TLS with the system's roots (or `SSL_CERT_FILE` /
//! `SSL_CERT_DIR`), certificates always verified. A plain `http://` upstream is only ever one
//! the person named themselves.

use crate::error::Error;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use crate::values::BaseUrl as Upstream;

/// A connection to `upstream`, TLS with verified certificates when `https`.
pub(crate) fn connect(upstream: &Upstream, tls: &Arc<rustls::ClientConfig>) -> std::io::Result<Box<dyn Stream>> {
    let this = upstream;
    let tcp = connect_any(&this.host, this.port)?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(Duration::from_secs(600)))?;
    if !this.tls {
        return Ok(Box::new(tcp));
    }
    let name = rustls::pki_types::ServerName::try_from(this.host.clone())
        .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    let session = rustls::ClientConnection::new(tls.clone(), name).map_err(std::io::Error::other)?;
    Ok(Box::new(rustls::StreamOwned::new(session, tcp)))
}

/// The first of the host's addresses that answers within 30 s.
fn connect_any(host: &str, port: u16) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, format!("`{host}` has no address"));
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, Duration::from_secs(30)) {
            Ok(tcp) => return Ok(tcp),
            Err(err) => last = err,
        }
    }
    Err(last)
}

/// A connection to the upstream, plain or TLS.
pub(crate) trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// The TLS settings every held request uses: the platform's roots (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` honoured), verification always on. `needed`: without TLS upstream, no roots
/// are looked for.
pub(crate) fn client_config(needed: bool) -> Result<Arc<rustls::ClientConfig>, Error> {
    let mut roots = rustls::RootCertStore::empty();
    let found = if needed { rustls_native_certs::load_native_certs() } else { Default::default() };
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if needed && added == 0 {
        let why = found.errors.first().map(|err| err.to_string()).unwrap_or_else(|| "none found".into());
        return Err(Error::sandbox(format!("no trusted root certificates ({why})")));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::internal(err.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
