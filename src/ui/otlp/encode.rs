//! What is exported, and how it is written: spans and metric points, as OTLP's protobuf
//! (written by hand from the official definitions, `opentelemetry/proto/trace/v1/trace.proto`,
//! `metrics/v1/metrics.proto` and `common/v1/common.proto`; the tests decode it with `protoc`
//! and those files: the crates that do it pull in a gRPC stack this 2-core build would pay for
//! on every `cargo build`) or as its JSON mapping.

use super::settings::Settings;
use crate::trace::{hex, TraceContext};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
    Float(f64),
}

/// One finished span.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) id: [u8; 8],
    pub(crate) parent: Option<[u8; 8]>,
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) attributes: Vec<(String, Value)>,
    /// `Some(message)`: the span failed.
    pub(crate) error: Option<String>,
}

/// One number of a run's metrics.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    pub(crate) name: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) value: Value,
    /// A monotonic sum (a count) rather than a gauge.
    pub(crate) sum: bool,
    pub(crate) attributes: Vec<(String, Value)>,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// `ExportMetricsServiceRequest` of one `ResourceMetrics`: each point a metric of its own.
pub(crate) fn encode_metrics_protobuf(settings: &Settings, points: &[Point]) -> Vec<u8> {
    let metrics = points.iter().map(|point| {
        let mut data = Vec::new();
        for (key, value) in &point.attributes {
            bytes_field(&mut data, 7, &key_value(key, value));
        }
        fixed64_field(&mut data, 2, point.start);
        fixed64_field(&mut data, 3, point.end.max(point.start));
        match point.value {
            Value::Float(number) => fixed64_field(&mut data, 4, number.to_bits()),
            Value::Int(number) => fixed64_field(&mut data, 6, number as u64),
            _ => {}
        }
        let mut series = Vec::new();
        bytes_field(&mut series, 1, &data);
        if point.sum {
            // Delta, monotonic.
            varint_field(&mut series, 2, 1);
            varint_field(&mut series, 3, 1);
        }
        let mut metric = Vec::new();
        bytes_field(&mut metric, 1, point.name.as_bytes());
        bytes_field(&mut metric, 3, point.unit.as_bytes());
        bytes_field(&mut metric, if point.sum { 7 } else { 5 }, &series);
        metric
    });
    export_request(settings, metrics)
}

/// The OTLP/JSON mapping of the same.
pub(crate) fn encode_metrics_json(settings: &Settings, points: &[Point]) -> String {
    let metrics: Vec<serde_json::Value> = points
        .iter()
        .map(|point| {
            let mut data = serde_json::json!({
                "attributes": json_attributes(&point.attributes),
                "startTimeUnixNano": point.start.to_string(),
                "timeUnixNano": point.end.max(point.start).to_string(),
            });
            match point.value {
                Value::Float(number) => data["asDouble"] = serde_json::json!(number),
                Value::Int(number) => data["asInt"] = serde_json::json!(number.to_string()),
                _ => {}
            }
            let mut metric = serde_json::json!({"name": point.name, "unit": point.unit});
            match point.sum {
                true => {
                    metric["sum"] =
                        serde_json::json!({"dataPoints": [data], "aggregationTemporality": 1, "isMonotonic": true})
                }
                false => metric["gauge"] = serde_json::json!({"dataPoints": [data]}),
            }
            metric
        })
        .collect();
    serde_json::json!({"resourceMetrics": [{
        "resource": {"attributes": json_attributes(&resource_attributes(settings))},
        "scopeMetrics": [{"scope": {"name": "eden", "version": env!("CARGO_PKG_VERSION")}, "metrics": metrics}],
    }]})
    .to_string()
}

fn json_attributes(attributes: &[(String, Value)]) -> Vec<serde_json::Value> {
    attributes
        .iter()
        .map(|(key, value)| {
            let value = match value {
                Value::Text(text) => serde_json::json!({"stringValue": text}),
                Value::Int(number) => serde_json::json!({"intValue": number.to_string()}),
                Value::Float(number) => serde_json::json!({"doubleValue": number}),
            };
            serde_json::json!({"key": key, "value": value})
        })
        .collect()
}

/// Protobuf, by hand: `ExportTraceServiceRequest` of one `ResourceSpans`.
pub(crate) fn encode_protobuf(settings: &Settings, context: &TraceContext, spans: &[Span]) -> Vec<u8> {
    export_request(settings, spans.iter().map(|span| span_bytes(context, span)))
}

/// An `Export…ServiceRequest` (traces and metrics have the same shape): one resource (eden, and
/// `OTEL_RESOURCE_ATTRIBUTES`), one scope (`eden` and its version), and `items` in it (spans or
/// metrics, each field 2 of its scope and already encoded).
fn export_request(settings: &Settings, items: impl Iterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut scope = Vec::new();
    bytes_field(&mut scope, 1, b"eden");
    bytes_field(&mut scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
    let mut in_scope = Vec::new();
    bytes_field(&mut in_scope, 1, &scope);
    for item in items {
        bytes_field(&mut in_scope, 2, &item);
    }
    let mut resource = Vec::new();
    for (key, value) in resource_attributes(settings) {
        bytes_field(&mut resource, 1, &key_value(&key, &value));
    }
    let mut in_resource = Vec::new();
    bytes_field(&mut in_resource, 1, &resource);
    bytes_field(&mut in_resource, 2, &in_scope);
    let mut request = Vec::new();
    bytes_field(&mut request, 1, &in_resource);
    request
}

fn resource_attributes(settings: &Settings) -> Vec<(String, Value)> {
    let mut attributes = vec![("service.name".to_owned(), Value::Text(settings.service_name.clone()))];
    for (key, value) in &settings.resource {
        if key != "service.name" {
            attributes.push((key.clone(), Value::Text(value.clone())));
        }
    }
    attributes.push(("service.version".to_owned(), Value::Text(env!("CARGO_PKG_VERSION").to_owned())));
    attributes
}

fn span_bytes(context: &TraceContext, span: &Span) -> Vec<u8> {
    let mut out = Vec::new();
    bytes_field(&mut out, 1, &context.trace_id);
    bytes_field(&mut out, 2, &span.id);
    if let Some(parent) = span.parent {
        bytes_field(&mut out, 4, &parent);
    }
    bytes_field(&mut out, 5, span.name.as_bytes());
    // SPAN_KIND_INTERNAL
    varint_field(&mut out, 6, 1);
    fixed64_field(&mut out, 7, span.start);
    fixed64_field(&mut out, 8, span.end.max(span.start));
    for (key, value) in &span.attributes {
        bytes_field(&mut out, 9, &key_value(key, value));
    }
    let mut status = Vec::new();
    match &span.error {
        Some(message) => {
            bytes_field(&mut status, 2, message.as_bytes());
            varint_field(&mut status, 3, 2);
        }
        None => varint_field(&mut status, 3, 1),
    }
    bytes_field(&mut out, 15, &status);
    out
}

fn key_value(key: &str, value: &Value) -> Vec<u8> {
    let mut any = Vec::new();
    match value {
        Value::Text(text) => bytes_field(&mut any, 1, text.as_bytes()),
        Value::Int(number) => varint_field(&mut any, 3, *number as u64),
        Value::Float(number) => {
            varint(&mut any, (4 << 3) | 1);
            any.extend_from_slice(&number.to_le_bytes());
        }
    }
    let mut out = Vec::new();
    bytes_field(&mut out, 1, key.as_bytes());
    bytes_field(&mut out, 2, &any);
    out
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u64, value: u64) {
    varint(out, field << 3);
    varint(out, value);
}

fn bytes_field(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn fixed64_field(out: &mut Vec<u8>, field: u64, value: u64) {
    varint(out, (field << 3) | 1);
    out.extend_from_slice(&value.to_le_bytes());
}

/// The OTLP/JSON mapping of the same request: ids in hex, 64-bit integers as strings.
pub(crate) fn encode_json(settings: &Settings, context: &TraceContext, spans: &[Span]) -> String {
    let spans: Vec<serde_json::Value> = spans
        .iter()
        .map(|span| {
            let mut json = serde_json::json!({
                "traceId": hex(&context.trace_id),
                "spanId": hex(&span.id),
                "name": span.name,
                "kind": 1,
                "startTimeUnixNano": span.start.to_string(),
                "endTimeUnixNano": span.end.max(span.start).to_string(),
                "attributes": json_attributes(&span.attributes),
                "status": match &span.error {
                    Some(message) => serde_json::json!({"code": 2, "message": message}),
                    None => serde_json::json!({"code": 1}),
                },
            });
            if let Some(parent) = span.parent {
                json["parentSpanId"] = serde_json::json!(hex(&parent));
            }
            json
        })
        .collect();
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": json_attributes(&resource_attributes(settings))},
        "scopeSpans": [{"scope": {"name": "eden", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
    }]})
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_varints_and_fields() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        let mut out = Vec::new();
        bytes_field(&mut out, 5, b"hi");
        assert_eq!(out, [0x2a, 2, b'h', b'i']);
        let mut out = Vec::new();
        varint_field(&mut out, 3, (-1i64) as u64);
        assert_eq!(out.len(), 11, "a negative int64 is ten bytes");
    }
}
