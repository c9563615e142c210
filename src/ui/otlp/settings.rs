//! Where and how a run's telemetry goes, from the standard OpenTelemetry variables
//! (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`).

/// Where and how the traces go, from the standard variables.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The full URL of the traces endpoint.
    pub(crate) endpoint: String,
    /// The metrics endpoint (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, or the base's
    /// `/v1/metrics`); `None` when only a traces endpoint is named.
    pub(crate) metrics: Option<String>,
    pub(crate) json: bool,
    /// `OTEL_EXPORTER_OTLP_HEADERS` (and `…_TRACES_HEADERS`): `key=value,…`.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`: `key=value,…`.
    pub(crate) resource: Vec<(String, String)>,
}

impl Settings {
    /// From `env` (eden's environment); `None` when no endpoint is set, or `OTEL_SDK_DISABLED`.
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Settings> {
        let set = |name: &str| env(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
            return None;
        }
        let base = set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| base.trim_end_matches('/').to_owned());
        let endpoint = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(endpoint) => endpoint,
            None => format!("{}/v1/traces", base.as_ref()?),
        };
        let metrics = set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
            .or_else(|| base.as_ref().map(|base| format!("{base}/v1/metrics")));
        let protocol = set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"));
        let mut headers = pairs(&set("OTEL_EXPORTER_OTLP_HEADERS").unwrap_or_default());
        headers.extend(pairs(&set("OTEL_EXPORTER_OTLP_TRACES_HEADERS").unwrap_or_default()));
        // `https://user:password@host/…`: the password goes as HTTP basic authentication, never
        // in the URL eden shows or connects by.
        let (endpoint, login) = without_userinfo(&endpoint);
        let metrics = metrics.map(|metrics| without_userinfo(&metrics).0);
        let has_authorization = headers.iter().any(|(key, _)| key.eq_ignore_ascii_case("authorization"));
        if let Some(login) = login.filter(|_| !has_authorization) {
            headers.push(("Authorization".to_owned(), format!("Basic {}", base64(login.as_bytes()))));
        }
        Some(Settings {
            endpoint,
            metrics,
            json: protocol.as_deref() == Some("http/json"),
            headers,
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "eden".to_owned()),
            resource: pairs(&set("OTEL_RESOURCE_ATTRIBUTES").unwrap_or_default()),
        })
    }
}

/// `url` without its `user:password@` (percent-decoded), and that login.
fn without_userinfo(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else { return (url.to_owned(), None) };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, host)) => {
            let login = match userinfo.split_once(':') {
                Some((user, password)) => format!("{}:{}", percent_decode(user), percent_decode(password)),
                None => format!("{}:", percent_decode(userinfo)),
            };
            (format!("{scheme}://{host}{}", &rest[authority_end..]), Some(login))
        }
        None => (url.to_owned(), None),
    }
}

/// Standard base64, padded (RFC 4648).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, byte)| n | u32::from(*byte) << (16 - 8 * i));
        for i in 0..4 {
            out.push(match i <= chunk.len() {
                true => ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char,
                false => '=',
            });
        }
    }
    out
}

/// `key=value,key=value`, each part percent-decoded, as the specification writes them.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (percent_decode(key.trim()), percent_decode(value.trim())))
        .filter(|(key, _)| !key.is_empty())
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|pair| std::str::from_utf8(pair).ok());
        match (bytes[i], hex.and_then(|hex| u8::from_str_radix(hex, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_follow_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| (*value).to_owned())
        };
        assert!(Settings::from_env(&env(&[])).is_none());
        let base = Settings::from_env(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])).unwrap();
        assert_eq!(base.endpoint, "http://collector:4318/v1/traces");
        let login = Settings::from_env(&|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "https://me:p%40ss@collector:4318".to_owned())
        })
        .unwrap();
        assert_eq!(login.endpoint, "https://collector:4318/v1/traces");
        assert_eq!(login.metrics.as_deref(), Some("https://collector:4318/v1/metrics"));
        assert_eq!(login.headers, [("Authorization".to_owned(), format!("Basic {}", base64(b"me:p@ss")))]);
        assert_eq!(base64(b"me:p@ss"), "bWU6cEBzcw==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert!(!base.json);
        let traces = Settings::from_env(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%3D,x=1"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci,team=ml"),
            ("OTEL_SERVICE_NAME", "agents"),
        ]))
        .unwrap();
        assert_eq!(traces.endpoint, "http://b:4318/custom");
        assert!(traces.json);
        assert_eq!(traces.headers, [("api-key".to_owned(), "abc=".to_owned()), ("x".to_owned(), "1".to_owned())]);
        assert_eq!(traces.service_name, "agents");
        assert_eq!(traces.resource[1], ("team".to_owned(), "ml".to_owned()));
        let off =
            Settings::from_env(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"), ("OTEL_SDK_DISABLED", "true")]));
        assert!(off.is_none());
    }
}
