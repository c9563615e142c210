//! A connection to a host named by a URL: its first address that answers, then TLS with the
//! platform's roots (or `SSL_CERT_FILE` / `SSL_CERT_DIR`), certificates always verified, when
//! the URL is `https`. A plain `http://` host is only ever one the person named themselves.

use crate::error::Error;
use crate::values::BaseUrl;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// A connection, plain or TLS.
pub(crate) enum Connection {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Connection {
    fn tcp(&self) -> &TcpStream {
        match self {
            Connection::Plain(tcp) => tcp,
            Connection::Tls(tls) => tls.get_ref(),
        }
    }

    /// The longest a read or a write may wait from now on (`None`: for ever).
    pub(crate) fn wait_at_most(&self, wait: Option<Duration>) -> std::io::Result<()> {
        // A zero timeout is refused by the socket: the deadline has passed, so the least.
        let wait = wait.map(|wait| wait.max(Duration::from_millis(1)));
        self.tcp().set_read_timeout(wait)?;
        self.tcp().set_write_timeout(wait)
    }
}

impl Read for Connection {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.read(buffer),
            Connection::Tls(tls) => tls.read(buffer),
        }
    }
}

impl Write for Connection {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.write(buffer),
            Connection::Tls(tls) => tls.write(buffer),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Connection::Plain(tcp) => tcp.flush(),
            Connection::Tls(tls) => tls.flush(),
        }
    }
}

/// A connection to `url`'s host, TLS with verified certificates when `https`; each address
/// gets at most `within` to answer.
pub(crate) fn connect(url: &BaseUrl, tls: &Arc<rustls::ClientConfig>, within: Duration) -> std::io::Result<Connection> {
    let tcp = connect_any(&url.host, url.port, within)?;
    tcp.set_nodelay(true)?;
    if !url.tls {
        return Ok(Connection::Plain(tcp));
    }
    let name = rustls::pki_types::ServerName::try_from(url.host.clone())
        .map_err(|err| std::io::Error::new(std::io::ErrorKind::InvalidInput, err))?;
    let session = rustls::ClientConnection::new(tls.clone(), name).map_err(std::io::Error::other)?;
    Ok(Connection::Tls(Box::new(rustls::StreamOwned::new(session, tcp))))
}

/// Whether `host` takes a TCP connection on `port` within `within` (`eden doctor`'s look at a
/// model host).
pub(crate) fn answers(host: &str, port: u16, within: Duration) -> bool {
    connect_any(host, port, within).is_ok()
}

/// The first of the host's addresses that answers within `within`.
fn connect_any(host: &str, port: u16, within: Duration) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, format!("`{host}` has no address"));
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, within.max(Duration::from_millis(1))) {
            Ok(tcp) => return Ok(tcp),
            Err(err) => last = err,
        }
    }
    Err(last)
}

/// The TLS settings eden's connections use: the platform's roots (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` honoured), verification always on. `needed`: without TLS, no roots are
/// looked for.
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
