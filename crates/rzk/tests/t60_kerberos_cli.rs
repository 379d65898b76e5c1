//! The CLI on a Kerberized ZooKeeper 3.8 (a Krb5LoginModule `Server` section,
//! `sessionRequireClientSASLAuth=true`, Debian's MIT KDC on loopback), configured as zkCli
//! is: a JAAS `Client` section with a keytab, and the krb5.conf named by
//! `-Djava.security.krb5.conf` in CLIENT_JVMFLAGS. Commands are served as the principal; a
//! stale keytab exits 2 at once, naming GSSAPI.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use rzk_testkit::enforcing::EnforcingServer;
use rzk_testkit::kerberos::{Kdc, REALM};

/// How soon a refused command must exit: one exchange, not a round of retries.
const REFUSAL_MAX: Duration = Duration::from_secs(1);

fn rzk(kdc: &Kdc, hosts: &str, jaas: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", hosts, "--jaas", jaas.to_str().unwrap()])
        .args(args)
        .env("CLIENT_JVMFLAGS", format!("-Djava.security.krb5.conf={}", kdc.krb5_conf().display()))
        .env_remove("KRB5_CONFIG")
        .env_remove("KRB5_CLIENT_KTNAME")
        .env_remove("KRB5CCNAME")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn cli_commands_log_in_with_kerberos_from_a_jaas_file() {
    let kdc = Kdc::start();
    let keytab = kdc.add_principal("cli");
    let server = EnforcingServer::start_kerberos(&kdc);
    let hosts = server.hosts();
    let jaas = kdc.dir().join("client-jaas.conf");
    std::fs::write(
        &jaas,
        format!(
            "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n    \
             useKeyTab=true keyTab=\"{}\" storeKey=false useTicketCache=false\n    \
             principal=\"cli@{REALM}\";\n}};\n",
            keytab.display()
        ),
    )
    .unwrap();

    let acl = format!("sasl:cli@{REALM}:cdrwa");
    let o = rzk(&kdc, &hosts, &jaas, &["create", "--acl", &acl, "/kerberos", "served"]);
    assert!(o.status.success(), "create: {}", text(&o.stderr));
    let o = rzk(&kdc, &hosts, &jaas, &["get", "/kerberos"]);
    assert_eq!(text(&o.stdout).trim(), "served", "{}", text(&o.stderr));
    let o = rzk(&kdc, &hosts, &jaas, &["acl", "get", "/kerberos"]);
    assert_eq!(text(&o.stdout).lines().next(), Some(acl.as_str()), "{}", text(&o.stderr));

    // The principal's key changes: the keytab the file names is stale.
    kdc.export("cli", &kdc.dir().join("cli-new.keytab"));
    let started = Instant::now();
    let o = rzk(&kdc, &hosts, &jaas, &["get", "/kerberos"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("SASL GSSAPI authentication failed"), "{}", text(&o.stderr));
    assert!(took < REFUSAL_MAX, "{took:?}");
}
