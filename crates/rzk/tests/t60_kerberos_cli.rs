//! The CLI on a Kerberized ZooKeeper 3.8 (a Krb5LoginModule `Server` section,
//! `sessionRequireClientSASLAuth=true`, Debian's MIT KDC on loopback), configured as zkCli
//! is: a JAAS `Client` section with a keytab, and the krb5.conf named by
//! `-Djava.security.krb5.conf` in CLIENT_JVMFLAGS. Commands are served as the principal; a
//! stale keytab exits 2 at once, naming GSSAPI.
//!
//! Then rzk server itself, Kerberized the same way (the JAAS `Server` section and krb5.conf
//! through SERVER_JVMFLAGS, sasl enforced): the CLI and ZooKeeper's Java client both log in,
//! as the same `sasl` id ZooKeeper gives them, and a client with no SASL is turned away.

// A Kerberized Apache ZooKeeper, and ZooKeeper's Java client against rzk: `gssapi` (its
// [[test]] requires it too) and `zookeeper-tests`.
#![cfg(all(feature = "gssapi", feature = "zookeeper-tests"))]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
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
    let jaas = kdc.keytab_jaas("Client", "cli", &kdc.add_principal("cli"));
    let server = EnforcingServer::start_kerberos(&kdc);
    cli_is_served_as_its_principal(&kdc, &server.hosts(), &jaas);
    stale_keytab_is_refused(&kdc, &server.hosts(), &jaas);
}

/// `cli@REALM`, logged in from `jaas`, creates a node only it may use, reads it, and the
/// server reports the ACL with its `sasl` id.
fn cli_is_served_as_its_principal(kdc: &Kdc, hosts: &str, jaas: &Path) {
    let acl = format!("sasl:cli@{REALM}:cdrwa");
    let o = rzk(kdc, hosts, jaas, &["create", "--acl", &acl, "/kerberos", "served"]);
    assert!(o.status.success(), "create: {}", text(&o.stderr));
    let o = rzk(kdc, hosts, jaas, &["get", "/kerberos"]);
    assert_eq!(text(&o.stdout).trim(), "served", "{}", text(&o.stderr));
    let o = rzk(kdc, hosts, jaas, &["acl", "get", "/kerberos"]);
    assert_eq!(text(&o.stdout).lines().next(), Some(acl.as_str()), "{}", text(&o.stderr));
}

/// The principal's key changes, so the keytab `jaas` names is stale: the command exits 2 at
/// once, naming GSSAPI.
fn stale_keytab_is_refused(kdc: &Kdc, hosts: &str, jaas: &Path) {
    kdc.export("cli", &kdc.dir().join("cli-new.keytab"));
    let started = Instant::now();
    let o = rzk(kdc, hosts, jaas, &["get", "/kerberos"]);
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("SASL GSSAPI authentication failed"), "{}", text(&o.stderr));
    assert!(took < REFUSAL_MAX, "{took:?}");
}

/// `rzk server` Kerberized as ZooKeeper is (`zookeeper/localhost` from a keytab, named by a
/// JAAS `Server` section, with the krb5.conf, in SERVER_JVMFLAGS), sasl enforced; killed on
/// drop.
struct KerberizedRzk {
    child: Child,
    hosts: String,
}

impl KerberizedRzk {
    fn start(kdc: &Kdc) -> KerberizedRzk {
        let keytab = kdc.add_principal("zookeeper/localhost");
        let jaas = kdc.keytab_jaas("Server", "zookeeper/localhost", &keytab);
        let flags = format!(
            "-Djava.security.auth.login.config={} -Djava.security.krb5.conf={}",
            jaas.display(),
            kdc.krb5_conf().display()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_rzk"))
            .args(["server", "--in-memory", "--bind", "127.0.0.1", "--port", "0"])
            .args(["--enforce-auth-schemes", "sasl"])
            .env("SERVER_JVMFLAGS", flags)
            .env_remove("KRB5_CONFIG")
            .env_remove("KRB5_KTNAME")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut log = String::new();
        let hosts = loop {
            let Some(line) = lines.next() else { panic!("rzk server exited:\n{log}") };
            let line = line.unwrap();
            log.push_str(&line);
            log.push('\n');
            if let Some(at) = line.split("serving on ").nth(1) {
                break at.trim().to_owned();
            }
        };
        assert!(log.contains("SASL GSSAPI (Kerberos) logins on"), "{log}");
        std::thread::spawn(move || lines.for_each(drop));
        KerberizedRzk { child, hosts }
    }
}

impl Drop for KerberizedRzk {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn rzk_server_logs_in_the_cli_and_the_java_client_with_kerberos() {
    let kdc = Kdc::start();
    let server = KerberizedRzk::start(&kdc);
    let cli = kdc.keytab_jaas("Client", "cli", &kdc.add_principal("cli"));

    cli_is_served_as_its_principal(&kdc, &server.hosts, &cli);

    // ZooKeeper's Java client, from its own JAAS section and krb5.conf.
    let java_jaas = kdc.keytab_jaas("Client", "java", &kdc.add_principal("java"));
    let classes = rzk_testkit::tempdir::TempDir::new("rzk-t60-java");
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/java/SaslClient.java");
    let dir = rzk_testkit::java::compile(&source, classes.path());
    let o = rzk_testkit::java::java(&[&dir])
        .arg(format!("-Djava.security.krb5.conf={}", kdc.krb5_conf().display()))
        .args(["SaslClient", &server.hosts, "zookeeper", java_jaas.to_str().unwrap(), "/java"])
        .output()
        .unwrap();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(out.contains("request: ok sasl"), "{out}");
    let whoami = out.lines().find(|l| l.starts_with("whoami:")).unwrap_or_default();
    assert!(whoami.split(' ').any(|id| id == format!("sasl:java@{REALM}")), "{out}");
    assert!(out.contains(&format!("acl: sasl:java@{REALM}:31")), "{out}");
    assert!(out.contains("SaslAuthenticated"), "{out}");

    stale_keytab_is_refused(&kdc, &server.hosts, &cli);

    // No SASL login: refused before any request, as sasl is enforced.
    let o = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", &server.hosts, "get", "/kerberos"])
        .env_remove("CLIENT_JVMFLAGS")
        .env_remove("JVMFLAGS")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
