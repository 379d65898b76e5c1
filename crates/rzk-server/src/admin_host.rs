//! The AdminServer commands answered from the configuration, the data directories and the
//! host rather than from the core: `hash`, `initial_configuration`, `last_snapshot`,
//! `system_properties`, `get_trace_mask` and `set_trace_mask`, in ZooKeeper 3.8's JSON
//! shapes. None of them takes the core's lock. Where ZooKeeper reports something rzk does not
//! have (a tree digest, a request trace, Java system properties), the answer says so in
//! ZooKeeper's own terms: an empty digest list, a trace mask of 0, and only the properties
//! that describe the host.

use std::path::Path;
use std::time::UNIX_EPOCH;

use rzk_storage::snapshot::list_snapshots;
use serde_json::{json, Map, Value};

use crate::config::{Durability, ServerConfig};

/// The trace mask in effect: rzk has no per-request trace log, so nothing is ever traced,
/// whatever a client sets.
const TRACE_MASK: i64 = 0;

/// The query parameter of `set_trace_mask`, ZooKeeper's name.
const TRACE_MASK_PARAMETER: &str = "traceMask";

/// The fields of `command` if it is one of this file's; `None` for the core's commands.
pub(crate) fn run(
    cfg: &ServerConfig,
    command: &str,
    query: Option<&str>,
) -> Option<Map<String, Value>> {
    let v = match command {
        // ZooKeeper lists the digests it logged of its tree; rzk keeps no tree digest.
        "hash" => json!({ "digests": [] }),
        "initial_configuration" => json!({ "initial_configuration": cfg.initial_configuration }),
        "last_snapshot" => last_snapshot(cfg),
        "system_properties" => system_properties(),
        "get_trace_mask" => json!({ "tracemask": TRACE_MASK }),
        "set_trace_mask" => set_trace_mask(query),
        _ => return None,
    };
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Where the snapshots and the log go, as `conf` shows them.
pub(crate) fn data_dirs(cfg: &ServerConfig) -> Option<(&Path, &Path)> {
    match &cfg.durability {
        Durability::InMemory => None,
        Durability::Disk(d) => Some((&d.snap_dir, &d.log_dir)),
    }
}

/// The newest snapshot's zxid (hex, as ZooKeeper's file names have it) and the second its
/// file was last modified; with no snapshot (a server in memory), ZooKeeper's -1 for both.
fn last_snapshot(cfg: &ServerConfig) -> Value {
    let newest = match &cfg.durability {
        Durability::InMemory => None,
        Durability::Disk(d) => list_snapshots(d.storage.as_ref(), &d.snap_dir)
            .ok()
            .and_then(|snaps| snaps.into_iter().next()),
    };
    let (zxid, timestamp) = match newest {
        None => (-1, -1),
        Some((zxid, path)) => (zxid, modified_secs(&path).unwrap_or(-1)),
    };
    json!({ "zxid": format!("{zxid:x}"), "timestamp": timestamp })
}

/// When `path` was last modified, in seconds since the epoch; `None` if the file system cannot
/// tell (an in-memory test disk).
fn modified_secs(path: &Path) -> Option<i64> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    i64::try_from(modified.duration_since(UNIX_EPOCH).ok()?.as_secs()).ok()
}

/// ZooKeeper validates the mask and sets it; rzk validates it the same way and answers the
/// mask in effect, which stays 0.
fn set_trace_mask(query: Option<&str>) -> Value {
    const USAGE: &str = "setTraceMask requires long traceMask argument";
    match parameter(query, TRACE_MASK_PARAMETER) {
        None => json!({ "error": USAGE }),
        Some(given) => match given.parse::<i64>() {
            Err(_) => json!({ "error": format!("{USAGE}, got {given}") }),
            Ok(mask) => {
                tracing::info!(mask, "set_trace_mask: rzk has no request trace; mask stays 0");
                json!({ "tracemask": TRACE_MASK })
            }
        },
    }
}

/// The first value of query parameter `name`, as given (a mask is digits, so nothing needs
/// decoding).
fn parameter<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

/// Java's system properties that describe the host rather than the JVM, with the values a JVM
/// on this host reports; the JVM's own (`java.*`, `sun.*`) and ZooKeeper's `zookeeper.*`
/// switches have no counterpart in rzk and are left out.
fn system_properties() -> Value {
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_string());
    let mut m = Map::new();
    let mut put = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            m.insert(key.into(), v.into());
        }
    };
    put("file.separator", Some(std::path::MAIN_SEPARATOR.to_string()));
    put("line.separator", Some("\n".into()));
    put("path.separator", Some(":".into()));
    put("os.name", read("/proc/sys/kernel/ostype").or(Some(std::env::consts::OS.into())));
    put("os.arch", Some(java_arch(std::env::consts::ARCH).into()));
    put("os.version", read("/proc/sys/kernel/osrelease"));
    put("user.dir", std::env::current_dir().ok().map(|d| d.display().to_string()));
    put("user.home", std::env::var("HOME").ok());
    put("user.name", std::env::var("USER").ok());
    Value::Object(m)
}

/// The JVM's name for a CPU architecture where it differs from Rust's.
fn java_arch(rust: &str) -> &str {
    match rust {
        "x86_64" => "amd64",
        "x86" => "i386",
        other => other,
    }
}
