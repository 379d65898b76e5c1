//! Reading ZooKeeper's `zoo.cfg` (a Java properties file of `key=value` lines).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};

/// Settings from a `zoo.cfg`, validated. `None` means "not in the file".
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ZooCfg {
    pub tick_ms: Option<u32>,
    pub data_dir: Option<String>,
    pub data_log_dir: Option<String>,
    pub client_port: Option<u16>,
    pub client_port_address: Option<std::net::IpAddr>,
    pub max_client_cnxns: Option<usize>,
    pub min_session_timeout_ms: Option<i32>,
    pub max_session_timeout_ms: Option<i32>,
    pub snap_retain_count: Option<usize>,
    pub purge_interval_hours: Option<u64>,
    pub four_letter_words: Option<String>,
    pub max_packet_bytes: Option<usize>,
    pub extended_types: Option<bool>,
    pub snap_count: Option<u64>,
    pub prealloc_kb: Option<u64>,
    /// Keys we do not know, reported as warnings.
    pub unknown: Vec<String>,
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

/// Parses `zoo.cfg` text. `file` names it in errors.
pub(crate) fn parse(file: &str, text: &str) -> anyhow::Result<ZooCfg> {
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
    let mut cfg = ZooCfg::default();
    for (key, (line, v)) in &raw {
        // ZooKeeper turns unknown zoo.cfg keys into `zookeeper.<key>` system properties, so
        // both spellings of the system-property settings are accepted.
        let k = key.strip_prefix("zookeeper.").unwrap_or(key);
        let (f, l) = (file, *line);
        match k {
            "tickTime" => cfg.tick_ms = Some(parse_value(f, l, key, v)?),
            "dataDir" => cfg.data_dir = Some(v.clone()),
            "dataLogDir" => cfg.data_log_dir = Some(v.clone()),
            "clientPort" => cfg.client_port = Some(parse_value(f, l, key, v)?),
            "clientPortAddress" => cfg.client_port_address = Some(parse_value(f, l, key, v)?),
            "maxClientCnxns" => cfg.max_client_cnxns = Some(parse_value(f, l, key, v)?),
            "minSessionTimeout" => cfg.min_session_timeout_ms = Some(parse_value(f, l, key, v)?),
            "maxSessionTimeout" => cfg.max_session_timeout_ms = Some(parse_value(f, l, key, v)?),
            "autopurge.snapRetainCount" => cfg.snap_retain_count = Some(parse_value(f, l, key, v)?),
            "autopurge.purgeInterval" => {
                cfg.purge_interval_hours = Some(parse_value(f, l, key, v)?)
            }
            "4lw.commands.whitelist" => cfg.four_letter_words = Some(v.clone()),
            "jute.maxbuffer" => {
                let s = v.trim_start_matches("0x");
                let n = if v.starts_with("0x") {
                    usize::from_str_radix(s, 16)
                        .map_err(|e| anyhow::anyhow!("{f}:{l}: bad value {v:?} for {key}: {e}"))?
                } else {
                    parse_value(f, l, key, v)?
                };
                cfg.max_packet_bytes = Some(n);
            }
            "extendedTypesEnabled" => cfg.extended_types = Some(parse_bool(f, l, key, v)?),
            "snapCount" => cfg.snap_count = Some(parse_value(f, l, key, v)?),
            "preAllocSize" => cfg.prealloc_kb = Some(parse_value(f, l, key, v)?),
            _ => cfg.unknown.push(key.clone()),
        }
    }
    if cfg.tick_ms == Some(0) {
        bail!("{file}: tickTime must be positive");
    }
    if cfg.snap_count == Some(0) {
        bail!("{file}: snapCount must be positive");
    }
    Ok(cfg)
}

/// Reads and parses a `zoo.cfg` file.
pub(crate) fn load(path: &Path) -> anyhow::Result<ZooCfg> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&path.display().to_string(), &text)
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
        assert_eq!(cfg.unknown, ["initLimit", "syncLimit"]);
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
}
