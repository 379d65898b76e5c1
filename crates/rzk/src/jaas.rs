//! The JAAS file a command logs in with: named by `--jaas`, or found where a ZooKeeper
//! installation already names it, `-Djava.security.auth.login.config=` in the JVM flags of
//! `zkEnv.sh` (`CLIENT_JVMFLAGS` for zkCli, `SERVER_JVMFLAGS` for the server), so one file
//! and one environment serve the Java processes and rzk alike.

use std::path::{Path, PathBuf};

use rzk_client::Jaas;

/// The JVM system property that names the file.
const JAAS_PROPERTY: &str = "java.security.auth.login.config";
/// The variables a client command reads the JVM flags from, in order.
pub(crate) const CLIENT_FLAG_VARS: &[&str] = &["CLIENT_JVMFLAGS", "JVMFLAGS"];
/// The variables the server reads the JVM flags from, in order.
pub(crate) const SERVER_FLAG_VARS: &[&str] = &["SERVER_JVMFLAGS", "JVMFLAGS"];

/// `flag`, or the file the JVM flags of the first of `vars` that names one name.
pub(crate) fn locate(flag: Option<&Path>, vars: &[&str]) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        vars.iter()
            .filter_map(|v| std::env::var(v).ok())
            .find_map(|flags| property(&flags, JAAS_PROPERTY))
            .map(PathBuf::from)
    })
}

/// The value of `-Dname=value` among `flags` (split at white space; quotes around the value
/// dropped, as a shell would have).
fn property(flags: &str, name: &str) -> Option<String> {
    let prefix = format!("-D{name}=");
    flags
        .split_whitespace()
        .filter_map(|f| f.strip_prefix(&prefix))
        .next_back()
        .map(|v| v.trim_matches(|c| c == '"' || c == '\'').to_owned())
}

/// Sets what the Kerberos library reads only from the environment, each variable only when
/// unset, from the JAAS `section` of `path` and the client's JVM flags: `KRB5_CONFIG` from
/// `-Djava.security.krb5.conf=`; from a Krb5LoginModule with `useKeyTab=true`, its keytab as
/// `KRB5_CLIENT_KTNAME`; and with `useTicketCache=false` a private in-memory ticket cache, so
/// that a login leaves the user's cache alone, as Java's does.
///
/// It must run before any thread starts: the environment is the process's. A file that
/// cannot be read is left for the command to report when it connects.
pub(crate) fn prepare_kerberos(path: Option<&Path>, section: &str) {
    let Some(jaas) = krb5_config_and_jaas(path, CLIENT_FLAG_VARS) else { return };
    if let Ok(rzk_sasl::ClientLogin::Kerberos { keytab, use_ticket_cache, .. }) =
        jaas.client_login(section)
    {
        if let Some(keytab) = keytab {
            set_unset("KRB5_CLIENT_KTNAME", keytab.as_ref());
        }
        if !use_ticket_cache {
            set_unset("KRB5CCNAME", "MEMORY:rzk".as_ref());
        }
    }
}

/// For a server: `KRB5_CONFIG` from `-Djava.security.krb5.conf=` in the server's JVM flags,
/// and, when the JAAS `section` of `path` logs in with Kerberos from a keytab, that keytab as
/// `KRB5_KTNAME`, where the acceptor reads its keys; each only when unset. Before any thread
/// starts, as [`prepare_kerberos`].
pub(crate) fn prepare_kerberos_server(path: Option<&Path>, section: &str) {
    let Some(jaas) = krb5_config_and_jaas(path, SERVER_FLAG_VARS) else { return };
    if let Ok(rzk_sasl::ServerLogin::Kerberos { keytab: Some(keytab), .. }) =
        jaas.server_login(section)
    {
        set_unset("KRB5_KTNAME", keytab.as_ref());
    }
}

/// Sets `KRB5_CONFIG` from `-Djava.security.krb5.conf=` in the JVM flags of `vars`, then
/// reads the JAAS file `path` or those flags name, if one can be read.
fn krb5_config_and_jaas(path: Option<&Path>, vars: &[&str]) -> Option<Jaas> {
    let flags: Vec<String> = vars.iter().filter_map(|v| std::env::var(v).ok()).collect();
    if let Some(conf) = flags.iter().find_map(|f| property(f, "java.security.krb5.conf")) {
        set_unset("KRB5_CONFIG", conf.as_ref());
    }
    read(&locate(path, vars)?).ok()
}

/// Sets the environment variable `name` unless it is set already.
fn set_unset(name: &str, value: &std::ffi::OsStr) {
    if std::env::var_os(name).is_none() {
        std::env::set_var(name, value);
    }
}

/// Reads and parses `path`.
///
/// # Errors
/// A message naming the file: unreadable, over [`rzk_sasl::JAAS_BYTES_MAX`], or not JAAS.
pub(crate) fn read(path: &Path) -> Result<Jaas, String> {
    let at = |e: &dyn std::fmt::Display| format!("JAAS file {}: {e}", path.display());
    let len = std::fs::metadata(path).map_err(|e| at(&e))?.len();
    if len > u64::try_from(rzk_sasl::JAAS_BYTES_MAX).unwrap_or(u64::MAX) {
        return Err(at(&"larger than a JAAS file can be"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
    Jaas::parse(&text).map_err(|e| at(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_property_among_jvm_flags() {
        let flags = "-Xmx1g -Djava.security.auth.login.config=\"/etc/zk/jaas.conf\" -Dfoo=bar";
        assert_eq!(property(flags, JAAS_PROPERTY).as_deref(), Some("/etc/zk/jaas.conf"));
        assert_eq!(property("-Xmx1g", JAAS_PROPERTY), None);
        let flag = Path::new("/given");
        assert_eq!(locate(Some(flag), &[]), Some(PathBuf::from("/given")));
    }

    #[test]
    fn a_bad_file_is_named_in_the_error() {
        let err = read(Path::new("/nonexistent/jaas.conf")).unwrap_err();
        assert!(err.contains("/nonexistent/jaas.conf"), "{err}");
    }
}
