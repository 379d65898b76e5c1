//! Reading ZooKeeper's `zoo.cfg` (a Java properties file of `key=value` lines). Every key of
//! ZooKeeper's administrator's guide is either applied, refused (when ignoring it would be
//! unsafe), or reported as not applying to rzk; anything else is reported as unknown.

mod ensemble;
mod keys;
mod tls;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};

use ensemble::ServerLine;
use keys::Ignored;

/// Settings from a `zoo.cfg`, validated. `None` means "not in the file".
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ZooCfg {
    pub tick_ms: Option<u32>,
    pub data_dir: Option<String>,
    pub data_log_dir: Option<String>,
    pub client_port: Option<u16>,
    pub client_port_address: Option<std::net::IpAddr>,
    pub max_client_cnxns: Option<usize>,
    /// `maxCnxns`: 0, ZooKeeper's default, for as many as the descriptors allow.
    pub max_cnxns: Option<usize>,
    /// `clientPortListenBacklog`: -1, ZooKeeper's default, for rzk's.
    pub listen_backlog: Option<i32>,
    pub min_session_timeout_ms: Option<i32>,
    pub max_session_timeout_ms: Option<i32>,
    pub snap_retain_count: Option<usize>,
    pub purge_interval_hours: Option<u64>,
    pub four_letter_words: Option<String>,
    pub max_packet_bytes: Option<usize>,
    pub extended_types: Option<bool>,
    pub snap_count: Option<u64>,
    pub prealloc_kb: Option<u64>,
    pub super_digest: Option<String>,
    pub container_check_interval_ms: Option<u64>,
    pub container_reaps_per_minute: Option<u64>,
    /// `zookeeper.datadir.autocreate`: when false, a missing data directory stops the server.
    pub datadir_autocreate: Option<bool>,
    /// `enforce.auth.schemes` when `enforce.auth.enabled=true`, validated: the schemes a
    /// connection must authenticate with before it is served.
    pub enforced_auth_schemes: Option<Vec<String>>,
    /// `metricsProvider.className`, `.httpPort` and `.httpHost`.
    pub metrics_class: Option<String>,
    pub metrics_port: Option<u16>,
    pub metrics_host: Option<std::net::IpAddr>,
    /// `admin.enableServer`, `.serverAddress`, `.serverPort` and `.commandURL`.
    pub admin_enable: Option<bool>,
    pub admin_address: Option<std::net::IpAddr>,
    pub admin_port: Option<u16>,
    pub admin_command_url: Option<String>,
    /// `secureClientPort` and the `ssl.*` keys as written, and the secure port they describe.
    tls_keys: tls::TlsKeys,
    pub secure: Option<tls::TlsSettings>,
    /// The one `server.N` line, when there is exactly one: rzk runs standalone.
    pub standalone: Option<ServerLine>,
    /// Documented ZooKeeper keys rzk does not apply, with why.
    pub ignored: Vec<(String, Ignored)>,
    /// Keys we do not know, each with the closest known key if one is near.
    pub unknown: Vec<(String, Option<String>)>,
    /// `server.N` lines of `zoo.cfg` and of its `dynamicConfigFile`.
    servers: Vec<ServerLine>,
    dynamic_config_file: Option<String>,
    enforce_auth_enabled: Option<bool>,
    enforce_auth_schemes: Option<String>,
    /// `sessionRequireClientSASLAuth`: serve only connections that logged in with SASL.
    pub require_sasl: Option<bool>,
    /// `superUser`: the SASL user that is also super.
    pub sasl_super_user: Option<String>,
    /// `kerberos.removeHostFromPrincipal`: a Kerberos client's `sasl` id drops `/host`.
    pub kerberos_remove_host: bool,
    /// `kerberos.removeRealmFromPrincipal`: a Kerberos client's `sasl` id drops `@REALM`.
    pub kerberos_remove_realm: bool,
    /// The static file's text as read, for the AdminServer's `initial_configuration`.
    pub text: Option<String>,
}

impl ZooCfg {
    /// Logs what rzk does not apply, so a typo stands out from a key that is fine to ignore.
    pub(crate) fn report(&self) {
        if let Some(s) = &self.standalone {
            tracing::info!(
                "zoo.cfg: {}={} names a single server: rzk runs it standalone, as ZooKeeper \
                 does with standaloneEnabled",
                s.key,
                s.value
            );
        }
        for (key, why) in &self.ignored {
            match why {
                Ignored::NotApplicable(why) => tracing::info!("zoo.cfg: {key}: {why}"),
                Ignored::NotSupported(why) => {
                    tracing::warn!("zoo.cfg: {key}: not supported, ignored: {why}")
                }
            }
        }
        for (key, hint) in &self.unknown {
            match hint {
                Some(k) => {
                    tracing::warn!("zoo.cfg: ignoring unknown key {key:?} (did you mean {k}?)")
                }
                None => tracing::warn!("zoo.cfg: ignoring unknown key {key:?}"),
            }
        }
    }
}

fn parse_value<T: std::str::FromStr>(
    file: &str,
    line: usize,
    key: &str,
    v: &str,
) -> anyhow::Result<T>
where
    T::Err: std::fmt::Display,
{
    v.parse::<T>().map_err(|e| anyhow::anyhow!("{file}:{line}: bad value {v:?} for {key}: {e}"))
}

fn parse_bool(file: &str, line: usize, key: &str, v: &str) -> anyhow::Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" => Ok(true),
        "false" | "no" => Ok(false),
        _ => bail!("{file}:{line}: bad value {v:?} for {key}: expected true or false"),
    }
}

/// Parses `zoo.cfg` text (without reading a `dynamicConfigFile`). `file` names it in errors.
#[cfg(test)]
fn parse(file: &str, text: &str) -> anyhow::Result<ZooCfg> {
    let mut cfg = ZooCfg::default();
    read_into(&mut cfg, file, text)?;
    finish(cfg, file)
}

/// The `key=value` lines of a properties file, by key, with their line numbers.
fn entries(file: &str, text: &str) -> anyhow::Result<BTreeMap<String, (usize, String)>> {
    let mut raw = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some((k, v)) = line.split_once('=').or_else(|| line.split_once(':')) else {
            bail!("{file}:{line_no}: expected key=value, found {line:?}");
        };
        raw.insert(k.trim().to_string(), (line_no, v.trim().to_string()));
    }
    Ok(raw)
}

/// Applies one file's keys to `cfg`; refuses every key that rzk cannot safely ignore.
fn read_into(cfg: &mut ZooCfg, file: &str, text: &str) -> anyhow::Result<()> {
    let mut refused = Vec::new();
    for (key, (line, v)) in &entries(file, text)? {
        // ZooKeeper turns unknown zoo.cfg keys into `zookeeper.<key>` system properties, so
        // both spellings of the system-property settings are accepted.
        let k = key.strip_prefix("zookeeper.").unwrap_or(key);
        if let Some(why) = keys::refusal(k, v).or_else(|| tls::refusal(k, v)) {
            refused.push(format!("{file}:{line}: {key}={v}: {why}"));
        } else if keys::numbered(k, "server.").is_some() {
            let place = format!("{file}:{line}");
            cfg.servers.push(ServerLine { place, key: key.clone(), value: v.clone() });
        } else if !apply(cfg, file, *line, key, v)? {
            match tls::ignored(k).or_else(|| keys::ignored(k)) {
                Some(why) => cfg.ignored.push((key.clone(), why)),
                None => cfg.unknown.push((key.clone(), keys::closest(k))),
            }
        }
    }
    if !refused.is_empty() {
        bail!("refusing to start: {}", refused.join("; "));
    }
    Ok(())
}

/// Applies a key rzk honours; false if it is not one of them.
fn apply(cfg: &mut ZooCfg, f: &str, l: usize, key: &str, v: &str) -> anyhow::Result<bool> {
    let k = key.strip_prefix("zookeeper.").unwrap_or(key);
    match k {
        "tickTime" => cfg.tick_ms = Some(parse_value(f, l, key, v)?),
        "dataDir" => cfg.data_dir = Some(v.to_string()),
        "dataLogDir" => cfg.data_log_dir = Some(v.to_string()),
        "clientPort" => cfg.client_port = Some(parse_value(f, l, key, v)?),
        "clientPortAddress" => cfg.client_port_address = Some(parse_value(f, l, key, v)?),
        "maxClientCnxns" => cfg.max_client_cnxns = Some(parse_value(f, l, key, v)?),
        "maxCnxns" => cfg.max_cnxns = Some(parse_value(f, l, key, v)?),
        "clientPortListenBacklog" => cfg.listen_backlog = Some(parse_value(f, l, key, v)?),
        "minSessionTimeout" => cfg.min_session_timeout_ms = Some(parse_value(f, l, key, v)?),
        "maxSessionTimeout" => cfg.max_session_timeout_ms = Some(parse_value(f, l, key, v)?),
        "autopurge.snapRetainCount" => cfg.snap_retain_count = Some(parse_value(f, l, key, v)?),
        "autopurge.purgeInterval" => cfg.purge_interval_hours = Some(parse_value(f, l, key, v)?),
        "4lw.commands.whitelist" => cfg.four_letter_words = Some(v.to_string()),
        "jute.maxbuffer" => {
            let n = match v.strip_prefix("0x") {
                Some(hex) => usize::from_str_radix(hex, 16)
                    .map_err(|e| anyhow::anyhow!("{f}:{l}: bad value {v:?} for {key}: {e}"))?,
                None => parse_value(f, l, key, v)?,
            };
            cfg.max_packet_bytes = Some(n);
        }
        "extendedTypesEnabled" => cfg.extended_types = Some(parse_bool(f, l, key, v)?),
        "snapCount" => cfg.snap_count = Some(parse_value(f, l, key, v)?),
        "preAllocSize" => cfg.prealloc_kb = Some(parse_value(f, l, key, v)?),
        "DigestAuthenticationProvider.superDigest" => cfg.super_digest = Some(v.to_string()),
        "znode.container.checkIntervalMs" => {
            cfg.container_check_interval_ms = Some(parse_value(f, l, key, v)?)
        }
        "znode.container.maxPerMinute" => {
            cfg.container_reaps_per_minute = Some(parse_value(f, l, key, v)?)
        }
        "datadir.autocreate" => cfg.datadir_autocreate = Some(parse_bool(f, l, key, v)?),
        "dynamicConfigFile" => cfg.dynamic_config_file = Some(v.to_string()),
        "metricsProvider.className" => cfg.metrics_class = Some(v.to_string()),
        "metricsProvider.httpPort" => cfg.metrics_port = Some(parse_value(f, l, key, v)?),
        "metricsProvider.httpHost" => cfg.metrics_host = Some(parse_value(f, l, key, v)?),
        "admin.enableServer" => cfg.admin_enable = Some(parse_bool(f, l, key, v)?),
        "admin.serverAddress" => cfg.admin_address = Some(parse_value(f, l, key, v)?),
        "admin.serverPort" => cfg.admin_port = Some(parse_value(f, l, key, v)?),
        "admin.commandURL" => {
            if !v.starts_with('/') {
                bail!("{f}:{l}: bad value {v:?} for {key}: a path starting with '/'");
            }
            cfg.admin_command_url = Some(v.to_string());
        }
        "enforce.auth.enabled" => cfg.enforce_auth_enabled = Some(parse_bool(f, l, key, v)?),
        "enforce.auth.schemes" => cfg.enforce_auth_schemes = Some(v.to_string()),
        "sessionRequireClientSASLAuth" => cfg.require_sasl = Some(parse_bool(f, l, key, v)?),
        "superUser" => cfg.sasl_super_user = Some(v.to_string()),
        "kerberos.removeHostFromPrincipal" => cfg.kerberos_remove_host = parse_bool(f, l, key, v)?,
        "kerberos.removeRealmFromPrincipal" => {
            cfg.kerberos_remove_realm = parse_bool(f, l, key, v)?;
        }
        // The SASL provider is built in; naming it is what makes `sasl:` ACLs match in
        // ZooKeeper, and changes nothing here.
        k if k.starts_with("authProvider.") && v == SASL_PROVIDER => {}
        _ => {
            return tls::apply(&mut cfg.tls_keys, k, v)
                .map_err(|e| anyhow::anyhow!("{f}:{l}: bad value {v:?} for {key}: {e}"))
        }
    }
    Ok(true)
}

/// Checks what no single key can: the server lines, and values that must be positive.
fn finish(mut cfg: ZooCfg, file: &str) -> anyhow::Result<ZooCfg> {
    let single = ensemble::single_server(&cfg.servers)
        .with_context(|| format!("refusing to start with {file}"))?
        .cloned();
    if let Some(line) = &single {
        // ZooKeeper 3.5+ may give the client port only on the server line.
        if let (None, Some((address, port))) = (cfg.client_port, line.client_address()?) {
            cfg.client_port = Some(port);
            cfg.client_port_address = cfg.client_port_address.or(address);
        }
    }
    cfg.standalone = single;
    cfg.secure = cfg.tls_keys.finish(file)?;
    if cfg.tick_ms == Some(0) {
        bail!("{file}: tickTime must be positive");
    }
    if cfg.snap_count == Some(0) {
        bail!("{file}: snapCount must be positive");
    }
    if cfg.enforce_auth_enabled == Some(true) {
        // ZooKeeper refuses to start without the schemes too.
        let Some(list) = &cfg.enforce_auth_schemes else {
            bail!("{file}: enforce.auth.enabled is true: enforce.auth.schemes must be configured");
        };
        let schemes = enforced_auth_schemes(list).with_context(|| file.to_string())?;
        cfg.enforced_auth_schemes = Some(schemes);
    }
    Ok(cfg)
}

/// The class that turns ZooKeeper's Prometheus endpoint on.
pub(crate) const PROMETHEUS_PROVIDER: &str =
    "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";
/// ZooKeeper's default `metricsProvider.httpPort`.
pub(crate) const PROMETHEUS_DEFAULT_PORT: u16 = 7000;

impl ZooCfg {
    /// Where zoo.cfg asks for Prometheus metrics: only with ZooKeeper's Prometheus provider,
    /// on its default port 7000 and all addresses unless given.
    pub(crate) fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        (self.metrics_class.as_deref() == Some(PROMETHEUS_PROVIDER)).then(|| {
            let host = self.metrics_host.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
            (host, self.metrics_port.unwrap_or(PROMETHEUS_DEFAULT_PORT)).into()
        })
    }
}

/// ZooKeeper's default `admin.serverPort`.
pub(crate) const ADMIN_DEFAULT_PORT: u16 = 8080;

impl ZooCfg {
    /// Where zoo.cfg asks for the AdminServer. Unlike ZooKeeper, whose AdminServer is on
    /// unless `admin.enableServer=false`, rzk serves it only when asked, by
    /// `admin.enableServer=true` or by naming `admin.serverPort`: an embedded or test server
    /// that grabbed port 8080 unasked would surprise, and would fail to start beside a second
    /// one. `false` wins over a named port.
    pub(crate) fn admin(&self) -> Option<rzk_server::AdminConfig> {
        let on = self.admin_enable.unwrap_or(self.admin_port.is_some());
        on.then(|| {
            let host = self.admin_address.unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
            let mut admin = rzk_server::AdminConfig::new(
                (host, self.admin_port.unwrap_or(ADMIN_DEFAULT_PORT)).into(),
            );
            if let Some(url) = &self.admin_command_url {
                admin.command_url = url.clone();
            }
            admin
        })
    }

    /// Whether zoo.cfg says anything about the AdminServer, for the start-up notice of a
    /// file written for ZooKeeper, where it would be on.
    pub(crate) fn mentions_admin(&self) -> bool {
        self.admin_enable.is_some() || self.admin_port.is_some()
    }
}

/// The authentication schemes rzk can enforce (ZooKeeper's built-in providers, sasl for
/// DIGEST-MD5 users of a JAAS file, and x509 for connections on the secure port with a
/// verified certificate).
const ENFORCEABLE_SCHEMES: &[&str] = &["digest", "ip", "sasl", "x509"];
/// ZooKeeper's SASL provider, as `authProvider.N` names it.
pub(crate) const SASL_PROVIDER: &str =
    "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

/// A comma list of schemes to enforce, checked as ZooKeeper checks `enforce.auth.schemes` at
/// start-up: each must be a scheme the server can authenticate (sasl also needs users, which
/// the server checks once it has read the JAAS file).
pub(crate) fn enforced_auth_schemes(list: &str) -> anyhow::Result<Vec<String>> {
    let schemes: Vec<String> =
        list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    anyhow::ensure!(!schemes.is_empty(), "enforce.auth.schemes must name at least one scheme");
    for scheme in &schemes {
        anyhow::ensure!(
            ENFORCEABLE_SCHEMES.contains(&scheme.as_str()),
            "authentication scheme {scheme:?} is not available (rzk has {})",
            ENFORCEABLE_SCHEMES.join(", ")
        );
    }
    Ok(schemes)
}

/// Reads and parses a `zoo.cfg` file and the `dynamicConfigFile` it names, whose `server.N`
/// lines count as the static file's do.
pub(crate) fn load(path: &Path) -> anyhow::Result<ZooCfg> {
    let read =
        |p: &Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
    let file = path.display().to_string();
    let mut cfg = ZooCfg::default();
    let text = read(path)?;
    read_into(&mut cfg, &file, &text)?;
    cfg.text = Some(text);
    if let Some(dynamic) = cfg.dynamic_config_file.clone() {
        let dynamic = Path::new(&dynamic);
        let text = read(dynamic).with_context(|| format!("dynamicConfigFile in {file}"))?;
        read_into(&mut cfg, &dynamic.display().to_string(), &text)?;
    }
    finish(cfg, &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_zookeeper_sample_config() {
        let cfg = parse(
            "zoo.cfg",
            "# The number of milliseconds of each tick\ntickTime=2000\ninitLimit=10\nsyncLimit=5\n\
             dataDir=/var/lib/zookeeper\nclientPort=2181\n#maxClientCnxns=60\n\
             autopurge.snapRetainCount=3\nautopurge.purgeInterval=1\n\
             4lw.commands.whitelist=*\nzookeeper.extendedTypesEnabled=true\njute.maxbuffer=0xfffff\n",
        )
        .unwrap();
        assert_eq!(cfg.tick_ms, Some(2000));
        assert_eq!(cfg.data_dir.as_deref(), Some("/var/lib/zookeeper"));
        assert_eq!(cfg.client_port, Some(2181));
        assert_eq!(cfg.snap_retain_count, Some(3));
        assert_eq!(cfg.purge_interval_hours, Some(1));
        assert_eq!(cfg.extended_types, Some(true));
        assert_eq!(cfg.max_packet_bytes, Some(0xfffff));
        assert!(cfg.unknown.is_empty(), "{:?}", cfg.unknown);
        let ignored: Vec<&str> = cfg.ignored.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(ignored, ["initLimit", "syncLimit"]);
    }

    #[test]
    fn bad_values_name_the_line() {
        let err = parse("zoo.cfg", "tickTime=2000\nclientPort=abc\n").unwrap_err().to_string();
        assert!(err.contains("zoo.cfg:2") && err.contains("clientPort"), "{err}");
        let err = parse("zoo.cfg", "extendedTypesEnabled=maybe\n").unwrap_err().to_string();
        assert!(err.contains("expected true or false"), "{err}");
        let err = parse("zoo.cfg", "nonsense line\n").unwrap_err().to_string();
        assert!(err.contains("expected key=value"), "{err}");
    }

    /// A real deployment's ensemble config (three hosts).
    const ENSEMBLE: &str = "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/data/zookeeper\n\
        clientPort=2181\nserver.1=192.168.1.101:2888:3888\nserver.2=192.168.1.102:2888:3888\n\
        server.3=192.168.1.103:2888:3888\nautopurge.purgeInterval=24\n";

    #[test]
    fn an_ensemble_is_refused_naming_its_keys() {
        let err = format!("{:#}", parse("zoo.cfg", ENSEMBLE).unwrap_err());
        for needle in
            ["server.1, server.2, server.3", "replication", "Apache ZooKeeper", "zoo.cfg:6"]
        {
            assert!(err.contains(needle), "{needle:?} not in {err}");
        }
        // One server line runs standalone, taking its client port from the line if need be.
        let cfg = parse("zoo.cfg", "server.1=zoo1:2888:3888;127.0.0.1:2191\n").unwrap();
        assert_eq!(cfg.standalone.map(|s| s.key), Some("server.1".to_string()));
        assert_eq!(cfg.client_port, Some(2191));
    }

    #[test]
    fn unsafe_keys_are_refused_and_typos_get_a_hint() {
        for text in ["ssl.crl=true\n", "client.portUnification=true\n"] {
            let key = text.split('=').next().unwrap();
            let err = parse("zoo.cfg", text).unwrap_err().to_string();
            assert!(err.contains(key) && err.contains("refusing"), "{err}");
        }
        let cfg =
            parse("zoo.cfg", "enforce.auth.enabled=false\ntickTme=100\nreconfigEnabled=true\n")
                .unwrap();
        assert_eq!(cfg.unknown, [("tickTme".to_string(), Some("tickTime".to_string()))]);
        let ignored: Vec<&str> = cfg.ignored.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(ignored, ["reconfigEnabled"]);
        assert_eq!(cfg.enforced_auth_schemes, None, "enforcement is off");
    }

    #[test]
    fn the_prometheus_provider_turns_metrics_on() {
        let class = format!("metricsProvider.className={PROMETHEUS_PROVIDER}\n");
        let cfg = parse("zoo.cfg", &class).unwrap();
        assert_eq!(cfg.metrics_addr(), Some(([0, 0, 0, 0], 7000).into()));
        let text =
            format!("{class}metricsProvider.httpPort=7070\nmetricsProvider.httpHost=127.0.0.1\n");
        assert_eq!(
            parse("zoo.cfg", &text).unwrap().metrics_addr(),
            Some(([127, 0, 0, 1], 7070).into())
        );
        let other =
            "metricsProvider.className=org.apache.zookeeper.metrics.impl.NullMetricsProvider\n";
        assert_eq!(parse("zoo.cfg", other).unwrap().metrics_addr(), None);
        let cfg = parse("zoo.cfg", "metricsProvider.exportJvmInfo=true\n").unwrap();
        assert!(cfg.unknown.is_empty() && cfg.ignored.len() == 1, "{cfg:?}");
    }

    #[test]
    fn the_admin_server_is_on_when_asked() {
        assert_eq!(parse("zoo.cfg", "tickTime=2000\n").unwrap().admin(), None, "off by default");
        let on = parse("zoo.cfg", "admin.enableServer=true\n").unwrap().admin().unwrap();
        assert_eq!((on.addr, on.command_url.as_str()), (([0, 0, 0, 0], 8080).into(), "/commands"));
        let text = "zookeeper.admin.serverPort=9090\nadmin.serverAddress=127.0.0.1\n\
                    admin.commandURL=/zk\n";
        let named = parse("zoo.cfg", text).unwrap().admin().unwrap();
        assert_eq!(
            (named.addr, named.command_url.as_str()),
            (([127, 0, 0, 1], 9090).into(), "/zk")
        );
        let off = parse("zoo.cfg", "admin.serverPort=9090\nadmin.enableServer=false\n").unwrap();
        assert_eq!(off.admin(), None, "false wins");
        let err = parse("zoo.cfg", "admin.commandURL=commands\n").unwrap_err().to_string();
        assert!(err.contains("admin.commandURL"), "{err}");
        let cfg = parse("zoo.cfg", "admin.idleTimeout=30000\n").unwrap();
        assert!(cfg.unknown.is_empty() && cfg.ignored.len() == 1, "{cfg:?}");
    }

    #[test]
    fn enforced_authentication_needs_schemes_rzk_can_authenticate() {
        let on = "zookeeper.enforce.auth.enabled=true\n";
        let cfg = parse("zoo.cfg", &format!("{on}enforce.auth.schemes=digest, ip\n")).unwrap();
        assert_eq!(cfg.enforced_auth_schemes, Some(vec!["digest".into(), "ip".into()]));
        for (schemes, needle) in [
            ("", "must be configured"),
            ("enforce.auth.schemes=,\n", "at least one"),
            ("enforce.auth.schemes=kerberos\n", "\"kerberos\" is not available"),
        ] {
            let err = format!("{:#}", parse("zoo.cfg", &format!("{on}{schemes}")).unwrap_err());
            assert!(err.contains(needle), "{schemes:?}: {err}");
        }
        let off = parse("zoo.cfg", "enforce.auth.enabled=false\nenforce.auth.schemes=sasl\n");
        assert_eq!(off.unwrap().enforced_auth_schemes, None, "ZooKeeper ignores them too");
        let sasl = parse("zoo.cfg", &format!("{on}enforce.auth.schemes=digest,sasl\n")).unwrap();
        assert_eq!(sasl.enforced_auth_schemes, Some(vec!["digest".into(), "sasl".into()]));
        let text = format!("sessionRequireClientSASLAuth=true\nauthProvider.1={SASL_PROVIDER}\n");
        let cfg = parse("zoo.cfg", &format!("{text}superUser=admin\n")).unwrap();
        assert_eq!((cfg.require_sasl, cfg.sasl_super_user.as_deref()), (Some(true), Some("admin")));
        assert!(cfg.ignored.is_empty() && cfg.unknown.is_empty(), "{cfg:?}");
    }

    #[test]
    fn the_secure_client_port_is_read_the_zookeeper_way() {
        let base = "secureClientPort=2281\nserverCnxnFactory=org.apache.zookeeper.server.\
                    NettyServerCnxnFactory\nssl.keyStore.location=/etc/zk/server.pem\n\
                    ssl.keyStore.type=PEM\nssl.keyStore.password=\n";
        let auth = format!("authProvider.x509={}\n", tls::X509_PROVIDER);
        let trust = "ssl.trustStore.location=/etc/zk/ca.pem\nssl.trustStore.type=PEM\n";
        let cfg = parse("zoo.cfg", &format!("{base}{auth}{trust}")).unwrap();
        let secure = cfg.secure.clone().expect("secure port");
        assert_eq!((secure.port, secure.client_auth), (2281, None));
        assert_eq!(secure.trust_store.as_deref(), Some(Path::new("/etc/zk/ca.pem")));
        assert_eq!(secure.handshake_timeout_ms, 5_000);
        assert!(cfg.unknown.is_empty(), "{:?}", cfg.unknown);
        let ignored: Vec<&str> = cfg.ignored.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(ignored, ["serverCnxnFactory", "ssl.keyStore.password"]);
        let want = parse("zoo.cfg", &format!("{base}{trust}ssl.clientAuth=want\n")).unwrap();
        assert_eq!(want.secure.unwrap().client_auth, Some(rzk_server::ClientAuth::Want));
        for (text, needle) in [
            ("secureClientPort=2281\n", "needs ssl.keyStore.location"),
            ("secureClientPort=2281\nssl.keyStore.location=/k.p12\n", "PKCS12"),
            (&format!("{base}ssl.keyStore.type=JKS\n"), "ssl.keyStore.type JKS"),
            (&format!("{base}ssl.trustStore.location=/t.jks\n"), "ssl.trustStore.type JKS"),
            (&format!("{base}ssl.clientAuth=need\n"), "needs ssl.trustStore.location"),
            (&format!("{base}ssl.clientAuth=sometimes\n"), "none, want or need"),
            (&format!("{base}ssl.ocsp=true\n"), "revocation"),
        ] {
            let err = format!("{:#}", parse("zoo.cfg", text).unwrap_err());
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_dynamic_file_counts_its_servers() {
        let dir = std::env::temp_dir().join(format!("rzk-zoocfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dynamic = dir.join("zoo.cfg.dynamic");
        let cfg_path = dir.join("zoo.cfg");
        let write = |p: &Path, t: &str| std::fs::write(p, t).unwrap();
        write(&cfg_path, &format!("tickTime=2000\ndynamicConfigFile={}\n", dynamic.display()));
        write(&dynamic, "server.1=zoo1:2888:3888:participant;2181\n");
        assert_eq!(load(&cfg_path).unwrap().client_port, Some(2181));
        write(&dynamic, "server.1=zoo1:2888:3888;2181\nserver.2=zoo2:2888:3888;2181\n");
        let err = format!("{:#}", load(&cfg_path).unwrap_err());
        assert!(err.contains("server.1, server.2") && err.contains("zoo.cfg.dynamic:2"), "{err}");
        std::fs::remove_file(&dynamic).unwrap();
        let err = format!("{:#}", load(&cfg_path).unwrap_err());
        assert!(err.contains("dynamicConfigFile"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
