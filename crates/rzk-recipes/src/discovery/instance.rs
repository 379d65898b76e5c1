//! curator-x-discovery's `ServiceInstance` and its JSON (Jackson's field names and shapes), so
//! Java and Rust registries read each other's instances.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Error;

/// How an instance's node is created (curator-x-discovery's `ServiceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServiceType {
    /// EPHEMERAL at `<basePath>/<name>/<id>`: gone with the session (the default).
    #[default]
    Dynamic,
    /// PERSISTENT: stays until unregistered.
    Static,
    /// PERSISTENT, like `Static`.
    Permanent,
    /// EPHEMERAL_SEQUENTIAL: the server appends a sequence number to the id.
    DynamicSequential,
}

/// One part of a URI template (curator-x-discovery's `UriSpec.Part`): a literal, or a
/// variable such as `{scheme}`, `{address}` or `{port}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UriPart {
    /// The literal text, or the variable's name.
    #[serde(default)]
    pub value: String,
    /// True for a variable.
    #[serde(default)]
    pub variable: bool,
}

/// A URI template (curator-x-discovery's `UriSpec`), kept as its parts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UriSpec {
    /// The parts in order.
    #[serde(default)]
    pub parts: Vec<UriPart>,
}

impl UriSpec {
    /// Parses Curator's template syntax: `{name}` is a variable, anything else literal
    /// (`"{scheme}://{address}:{port}"`).
    pub fn parse(template: &str) -> UriSpec {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let (part, tail) = match (rest.strip_prefix('{'), rest.find('{')) {
                (Some(open), _) => match open.find('}') {
                    Some(end) => {
                        (UriPart { value: open[..end].into(), variable: true }, &open[end + 1..])
                    }
                    None => (UriPart { value: rest.into(), variable: false }, ""),
                },
                (None, Some(at)) => {
                    (UriPart { value: rest[..at].into(), variable: false }, &rest[at..])
                }
                (None, None) => (UriPart { value: rest.into(), variable: false }, ""),
            };
            parts.push(part);
            rest = tail;
        }
        UriSpec { parts }
    }
}

/// One instance of a service, in curator-x-discovery's JSON: `name`, `id`, `address`, `port`,
/// `sslPort`, `payload`, `registrationTimeUTC`, `serviceType`, `uriSpec`, `enabled`.
///
/// `T` is the payload: any serde type, or [`serde_json::Value`] for the raw JSON. Java writes
/// an object payload with Jackson's `"@class"` property; a typed `T` ignores it (unless it
/// denies unknown fields), the raw form keeps it. Reading is as lenient as Curator's: unknown
/// properties are ignored, and a missing one takes the value of Curator's empty instance
/// (`enabled` true, `serviceType` `DYNAMIC`, the time 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServiceInstance<T> {
    /// The service name: the node `<basePath>/<name>`.
    #[serde(default)]
    pub name: String,
    /// The instance id, unique within the service: the node `<basePath>/<name>/<id>`.
    #[serde(default)]
    pub id: String,
    /// The host or address clients connect to.
    #[serde(default)]
    pub address: Option<String>,
    /// The plain port.
    #[serde(default)]
    pub port: Option<u16>,
    /// The TLS port.
    #[serde(default, rename = "sslPort")]
    pub ssl_port: Option<u16>,
    /// The application's payload.
    #[serde(default = "none", bound(deserialize = "T: DeserializeOwned"))]
    pub payload: Option<T>,
    /// Registration time, milliseconds since the Unix epoch (UTC).
    #[serde(default, rename = "registrationTimeUTC")]
    pub registration_time_utc: i64,
    /// How the node is created.
    #[serde(default, rename = "serviceType")]
    pub service_type: ServiceType,
    /// The URI template.
    #[serde(default, rename = "uriSpec")]
    pub uri_spec: Option<UriSpec>,
    /// False for an instance that providers must not hand out.
    #[serde(default = "enabled")]
    pub enabled: bool,
}

fn none<T>() -> Option<T> {
    None
}

fn enabled() -> bool {
    true
}

/// The longest name or id accepted: one path segment well inside ZooKeeper's limits.
pub const MAX_SEGMENT_BYTES: usize = 1024;

impl<T> ServiceInstance<T> {
    /// A DYNAMIC, enabled instance of `name` with a random (UUID) id, registered now.
    pub fn new(name: &str, address: &str, port: u16) -> Self {
        ServiceInstance {
            name: name.to_string(),
            id: crate::naming::new_uuid().to_string(),
            address: Some(address.to_string()),
            port: Some(port),
            ssl_port: None,
            payload: None,
            registration_time_utc: now_ms(),
            service_type: ServiceType::Dynamic,
            uri_spec: None,
            enabled: true,
        }
    }

    /// The same instance with id `id`.
    pub fn with_id(mut self, id: &str) -> Self {
        self.id = id.to_string();
        self
    }

    /// The same instance with `payload`.
    pub fn with_payload(mut self, payload: T) -> Self {
        self.payload = Some(payload);
        self
    }

    /// The same instance with TLS port `port`.
    pub fn with_ssl_port(mut self, port: u16) -> Self {
        self.ssl_port = Some(port);
        self
    }

    /// The same instance created as `service_type`.
    pub fn with_service_type(mut self, service_type: ServiceType) -> Self {
        self.service_type = service_type;
        self
    }

    /// The same instance with the URI template `template` (see [`UriSpec::parse`]).
    pub fn with_uri_spec(mut self, template: &str) -> Self {
        self.uri_spec = Some(UriSpec::parse(template));
        self
    }

    /// The same instance, enabled or not.
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Checks that the name and the id are each one path segment.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        validate_segment("service name", &self.name)?;
        validate_segment("instance id", &self.id)
    }
}

impl<T: Serialize> ServiceInstance<T> {
    /// The JSON curator-x-discovery's `JsonInstanceSerializer` writes (every field, `null`s
    /// included).
    ///
    /// # Errors
    /// [`Error::BadArguments`] when the payload cannot be serialised.
    pub fn to_json(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(|e| Error::BadArguments(format!("instance JSON: {e}")))
    }
}

impl<T: DeserializeOwned> ServiceInstance<T> {
    /// Reads curator-x-discovery's JSON, as leniently as Curator does.
    ///
    /// # Errors
    /// The parser's message, for bytes that are not an instance (or whose payload is not a `T`).
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        // Only an object is an instance (serde would also take an array, Jackson does not).
        match serde_json::from_slice(bytes).map_err(|e| e.to_string())? {
            object @ serde_json::Value::Object(_) => {
                serde_json::from_value(object).map_err(|e| e.to_string())
            }
            serde_json::Value::Array(_) => Err("expected a JSON object, found an array".into()),
            _ => Err("expected a JSON object, found a scalar".into()),
        }
    }
}

/// Checks one path segment of a discovery layout.
pub(crate) fn validate_segment(what: &str, s: &str) -> Result<(), Error> {
    let ok = !s.is_empty()
        && s.len() <= MAX_SEGMENT_BYTES
        && s != "."
        && s != ".."
        && !s.contains('/')
        && !s.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(Error::BadArguments(format!("{what} {s:?} is not one path segment")))
    }
}

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What Java's `JsonInstanceSerializer` wrote for a Map payload (field order as Jackson's).
    const JAVA: &str = r#"{"name":"api","id":"a1","address":"10.0.0.1","port":8080,
        "sslPort":8443,"payload":{"@class":"java.util.HashMap","zone":"eu"},
        "registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC",
        "uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false}]},
        "enabled":true}"#;

    #[test]
    fn reads_java_json_typed_and_raw() {
        #[derive(Deserialize, Serialize, Debug, PartialEq)]
        struct Zone {
            zone: String,
        }
        let typed = ServiceInstance::<Zone>::from_json(JAVA.as_bytes()).unwrap();
        assert_eq!(typed.payload, Some(Zone { zone: "eu".into() }));
        assert_eq!((typed.port, typed.ssl_port), (Some(8080), Some(8443)));
        assert_eq!(typed.registration_time_utc, 1_700_000_000_000);
        assert_eq!(typed.uri_spec, Some(UriSpec::parse("{scheme}://")));
        let raw = ServiceInstance::<Value>::from_json(JAVA.as_bytes()).unwrap();
        assert_eq!(raw.payload.unwrap()["@class"], "java.util.HashMap");
    }

    #[test]
    fn missing_fields_take_curators_defaults() {
        let i = ServiceInstance::<Value>::from_json(br#"{"name":"x","extra":1}"#).unwrap();
        assert!(i.enabled);
        assert_eq!(i.service_type, ServiceType::Dynamic);
        assert_eq!((i.id.as_str(), i.port, i.payload), ("", None, None));
    }

    #[test]
    fn writes_every_field_as_jackson_names_them() {
        let i = ServiceInstance::<Value>::new("api", "h", 1).with_id("x");
        let v: Value = serde_json::from_slice(&i.to_json().unwrap()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        for k in ["name", "id", "address", "port", "sslPort", "payload", "registrationTimeUTC"] {
            assert!(keys.contains(&k), "{k} missing from {keys:?}");
        }
        assert_eq!(v["serviceType"], "DYNAMIC");
        assert_eq!(v["enabled"], true);
        assert!(v["sslPort"].is_null() && v["uriSpec"].is_null());
    }

    #[test]
    fn malformed_is_an_error_not_a_panic() {
        for bad in [&b"{"[..], b"[]", b"\xff", br#"{"port":"x"}"#, br#"{"serviceType":"NOPE"}"#] {
            assert!(ServiceInstance::<Value>::from_json(bad).is_err());
        }
    }

    #[test]
    fn uri_templates() {
        let s = UriSpec::parse("{scheme}://{address}:{port}/x");
        let shown: Vec<(bool, &str)> =
            s.parts.iter().map(|p| (p.variable, p.value.as_str())).collect();
        assert_eq!(
            shown,
            [
                (true, "scheme"),
                (false, "://"),
                (true, "address"),
                (false, ":"),
                (true, "port"),
                (false, "/x")
            ]
        );
    }
}
