//! The CLI over TLS, against rzk's secure port and Apache ZooKeeper 3.8's Netty secure port,
//! both requiring a client certificate: `rzk lock` runs its command and `create`/`get` work
//! with `--tls-ca/--tls-cert/--tls-key`; a client that does not trust the server's CA, one
//! whose certificate the server does not trust, and one without a certificate are refused
//! at once with the handshake's reason, not after the connect timeout.

mod support;

use std::process::Output;
use std::time::{Duration, Instant};

use rzk_testkit::secure::SecureServer;
use support::{rzk, Kind, TICK_MS};

/// The connect timeout the refused clients get: a refusal must come well before it.
const CONNECT_TIMEOUT_MS: &str = "30000";
/// How soon a refusal must be reported: far below the connect timeout, generous for a loaded
/// machine.
const REFUSAL_LIMIT: Duration = Duration::from_secs(15);

both_servers! {
    lock_and_nodes => lock_create_and_get_over_tls_with_a_client_certificate;
    untrusted_server => a_client_that_does_not_trust_the_servers_ca_is_refused_at_once;
    untrusted_client => a_client_certificate_the_server_does_not_trust_is_refused_at_once;
    no_certificate => a_client_without_a_certificate_is_refused_at_once;
}

fn start(kind: Kind) -> SecureServer {
    SecureServer::start(kind, TICK_MS)
}

fn path(p: std::path::PathBuf) -> String {
    p.to_str().expect("temporary paths are UTF-8").to_string()
}

/// `rzk --connect <secure port> --tls-ca CA [--tls-cert C --tls-key K] args...`.
fn rzk_tls(
    s: &SecureServer,
    ca: String,
    identity: Option<(String, String)>,
    args: &[&str],
) -> Output {
    let mut all = vec!["--tls-ca".to_string(), ca];
    if let Some((cert, key)) = identity {
        all.extend(["--tls-cert".to_string(), cert, "--tls-key".to_string(), key]);
    }
    all.extend(args.iter().map(|a| a.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    rzk(&s.secure_hosts(), &all)
}

fn trusted_identity(s: &SecureServer) -> Option<(String, String)> {
    Some((path(s.certs().client_cert()), path(s.certs().client_key())))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn lock_create_and_get_over_tls_with_a_client_certificate(kind: Kind) {
    let s = start(kind);
    let ca = path(s.certs().ca());
    let run = |args: &[&str]| {
        let o = rzk_tls(&s, ca.clone(), trusted_identity(&s), args);
        assert!(o.status.success(), "rzk {args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    };
    run(&["create", "/tls", "over-tls"]);
    assert_eq!(run(&["get", "/tls"]).trim(), "over-tls");
    let printed = run(&["lock", "/tls/lock", "--", "sh", "-c", "echo token=$RZK_FENCING_TOKEN"]);
    assert!(printed.contains("token="), "the command did not run under the lock: {printed}");
    // The node is there for a plain client too: one server, two ports.
    let plain = support::stdout_ok(&s.plain_hosts(), &["get", "/tls"]);
    assert_eq!(plain.trim(), "over-tls");
}

/// Runs `args` as a client that must be refused; its message.
fn refused(s: &SecureServer, ca: String, identity: Option<(String, String)>) -> String {
    let started = Instant::now();
    let o = rzk_tls(s, ca, identity, &["--connect-timeout-ms", CONNECT_TIMEOUT_MS, "get", "/"]);
    let took = started.elapsed();
    let message = text(&o.stderr);
    assert!(!o.status.success(), "a refused client succeeded: {}", text(&o.stdout));
    assert!(took < REFUSAL_LIMIT, "refused only after {took:?} (a hang): {message}");
    assert!(message.contains("TLS handshake with"), "no handshake reason: {message}");
    message
}

fn a_client_that_does_not_trust_the_servers_ca_is_refused_at_once(kind: Kind) {
    let s = start(kind);
    // The rogue CA signed neither the server nor this directory's client certificate.
    let rogue_ca = path(s.certs().dir().join("rogue-ca.crt"));
    let message = refused(&s, rogue_ca, trusted_identity(&s));
    assert!(message.contains("UnknownIssuer"), "{message}");
}

fn a_client_certificate_the_server_does_not_trust_is_refused_at_once(kind: Kind) {
    let s = start(kind);
    let rogue = Some((path(s.certs().rogue_cert()), path(s.certs().rogue_key())));
    refused(&s, path(s.certs().ca()), rogue);
}

fn a_client_without_a_certificate_is_refused_at_once(kind: Kind) {
    let s = start(kind);
    refused(&s, path(s.certs().ca()), None);
}
