//! Elections over TLS, against rzk's secure port and Apache ZooKeeper 3.8's Netty secure port,
//! both requiring a client certificate: two LeaderLatch sessions made with
//! `SessionConfig::with_tls` elect, and leadership passes to the second with a larger token
//! when the first closes. Nothing here installs a rustls crypto provider: the sessions must
//! choose one themselves although two are compiled in. A session that does not trust the
//! server's CA fails within its connect timeout, and `TlsConfig::probe` says why. On a
//! secure port that also requires SASL, a DIGEST-MD5 login over TLS is served as both its
//! certificate's `x509` id and its `sasl` user, and a wrong password is refused.

mod support;

use std::time::{Duration, Instant};

use rzk_recipes::tls::TlsError;
use rzk_recipes::{
    election::ConnectionPolicy,
    session::{Session, SessionConfig},
    tls::TlsConfig,
    Error,
};
use rzk_testkit::secure::SecureServer;
use support::candidate::{Candidate, Recipe};
use support::checker::Checker;
use support::{Kind, T};

/// How long an election or a handoff may take on a loaded machine.
const WAIT: Duration = Duration::from_secs(10);
/// The tick of both servers.
const TICK_MS: u32 = 500;

both_servers! {
    t28_handoff => a_latch_election_over_tls_hands_leadership_over;
    t28_untrusted => a_session_that_does_not_trust_the_server_fails_and_the_probe_says_why;
    t28_sasl_over_tls => a_sasl_login_over_tls_is_served_as_both_identities;
}

fn start(kind: Kind) -> SecureServer {
    SecureServer::start(kind, TICK_MS)
}

fn client_tls(s: &SecureServer, ca: std::path::PathBuf) -> TlsConfig {
    let certs = s.certs();
    TlsConfig::from_ca_file(ca)
        .and_then(|t| t.with_identity_files(certs.client_cert(), certs.client_key()))
        .expect("the test certificates make a client configuration")
}

async fn a_latch_election_over_tls_hands_leadership_over(kind: Kind) {
    let s = start(kind);
    let tls = client_tls(&s, s.certs().ca());
    let config =
        || SessionConfig::new(s.secure_hosts()).with_session_timeout(T).with_tls(tls.clone());
    let (a, b) =
        (Session::connect(config()).await.unwrap(), Session::connect(config()).await.unwrap());
    let checker = Checker::new();
    let policy = ConnectionPolicy::default();
    let first = Candidate::start(Recipe::Latch, &a, "/t28", "tls-1", policy, &checker).await;
    let led = first.await_leadership_timeout(WAIT).await.expect("the first leads");
    let second = Candidate::start(Recipe::Latch, &b, "/t28", "tls-2", policy, &checker).await;
    assert!(!second.has_leadership(), "two leaders");
    first.close().await.unwrap();
    let next = second.await_leadership_timeout(WAIT).await.expect("the second leads after");
    assert!(next.token() > led.token(), "{:?} after {:?}", next.token(), led.token());
    checker.assert_ok();
    second.close().await.unwrap();
    a.close().await;
    b.close().await;
}

async fn a_session_that_does_not_trust_the_server_fails_and_the_probe_says_why(kind: Kind) {
    let s = start(kind);
    let tls = client_tls(&s, s.certs().dir().join("rogue-ca.crt"));
    let limit = Duration::from_secs(2);
    let config =
        SessionConfig::new(s.secure_hosts()).with_connect_timeout(limit).with_tls(tls.clone());
    let started = Instant::now();
    let e = Session::connect(config).await.expect_err("a session with an untrusted server");
    assert!(matches!(e, Error::OperationTimeout), "{e:?}");
    assert!(started.elapsed() < limit + WAIT, "not bounded by the connect timeout");
    match tls.probe(&s.secure_hosts()).await {
        Err(TlsError::Handshake { reason, .. }) => {
            assert!(reason.contains("UnknownIssuer"), "{reason}")
        }
        other => panic!("the probe should name the handshake's failure: {other:?}"),
    }
    // The trusted configuration passes the same probe: the probe can tell them apart.
    client_tls(&s, s.certs().ca()).probe(&s.secure_hosts()).await.expect("a trusted probe");
}

async fn a_sasl_login_over_tls_is_served_as_both_identities(kind: Kind) {
    let s = SecureServer::start_with(kind, TICK_MS, &[("app", "app-secret")]);
    let tls = client_tls(&s, s.certs().ca());
    let config = |password: &str| {
        SessionConfig::new(s.secure_hosts())
            .with_session_timeout(T)
            .with_connect_timeout(WAIT)
            .with_tls(tls.clone())
            .with_sasl(rzk_recipes::session::SaslLogin::digest_md5("app", password))
    };
    let session = Session::connect(config("app-secret")).await.unwrap();
    let client = session.client().expect("connected");
    let who = client.list_auth_users().await.unwrap();
    let schemes: Vec<&str> = who.iter().map(|u| u.scheme.as_str()).collect();
    assert!(schemes.contains(&"x509") && schemes.contains(&"sasl"), "{kind:?}: {who:?}");
    session.close().await;
    let started = Instant::now();
    let refused = Session::connect(config("wrong")).await.unwrap_err();
    assert!(matches!(refused, Error::AuthFailed { .. }), "{kind:?}: {refused:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{kind:?}: {:?}", started.elapsed());
}
