//! SASL GSSAPI (Kerberos) against Apache ZooKeeper 3.8 configured for it
//! (`sessionRequireClientSASLAuth=true`, a Krb5LoginModule `Server` section with the keytab
//! of `zookeeper/localhost`), in a realm of Debian's MIT KDC on loopback: a session logged in
//! from a client keytab is served as `sasl:bob@RZK.TEST`, resumes across a restart with its
//! watch (the exchange runs again), and keeps its node from another principal; a keytab whose
//! key has changed, an unknown principal, or a ticket that has expired fail at once with the
//! reason.
//!
//! One test in its own binary: the Kerberos library reads its configuration and credentials
//! from the environment, which the test sets between phases with no runtime running.

// A Kerberized Apache ZooKeeper: `gssapi` (its [[test]] requires it too) and `zookeeper-tests`.
#![cfg(all(feature = "gssapi", feature = "zookeeper-tests"))]

use std::time::{Duration, Instant};

use rzk_client::{Acls, Client, CreateMode, Error, EventType, Jaas, SaslLogin};
use rzk_testkit::enforcing::EnforcingServer;
use rzk_testkit::kerberos::{Kdc, REALM};
use rzk_testkit::wait::{resumed, within};

const LIMIT: Duration = Duration::from_secs(30);
/// How soon bad credentials must be reported: one exchange, not a round of retries.
const REFUSAL_MAX: Duration = Duration::from_secs(2);
/// The lifetime of carol's tickets, in seconds.
const TICKET_LIFE_S: u32 = 3;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn connector(login: SaslLogin) -> rzk_client::Connector {
    Client::connector().with_session_timeout(Duration::from_secs(6)).with_sasl(login)
}

/// Points the Kerberos library at `keytab` with an empty ticket cache of its own.
fn credentials(kdc: &Kdc, keytab: &std::path::Path, cache: &str) {
    std::env::set_var("KRB5_CONFIG", kdc.krb5_conf());
    std::env::set_var("KRB5_CLIENT_KTNAME", keytab);
    std::env::set_var("KRB5CCNAME", format!("FILE:{}/{cache}", kdc.dir().display()));
}

#[test]
fn kerberos_sessions_are_served_as_their_principal_and_bad_credentials_fail_clearly() {
    let kdc = Kdc::start();
    let bob = kdc.add_principal("bob");
    let eve = kdc.add_principal("eve");
    let mut server = EnforcingServer::start_kerberos(&kdc);
    let hosts = server.hosts();

    credentials(&kdc, &bob, "bob.ccache");
    let jaas = format!(
        "Client {{\n  com.sun.security.auth.module.Krb5LoginModule required\n    \
         useKeyTab=true keyTab=\"{}\" principal=\"bob@{REALM}\";\n}};\n",
        bob.display()
    );
    let login = SaslLogin::from_jaas(&Jaas::parse(&jaas).unwrap(), "Client").unwrap();
    let rt = runtime();
    rt.block_on(async {
        let c = within(LIMIT, "connect", connector(login).connect(&hosts)).await.unwrap();
        let who = c.list_auth_users().await.unwrap();
        let id = format!("bob@{REALM}");
        assert!(who.iter().any(|u| u.scheme == "sasl" && u.user == id), "{who:?}");
        let mode = CreateMode::Persistent.with_acls(Acls::creator_all());
        c.create("/bob", b"0", &mode).await.unwrap();
        let (acl, _) = c.get_acl("/bob").await.unwrap();
        assert_eq!(
            (acl[0].auth_id().scheme.as_ref(), acl[0].auth_id().id.as_ref()),
            ("sasl", id.as_str())
        );
        let (_, _, once) = c.get_and_watch_data("/bob").await.unwrap();
        let mut states = c.state_watcher();
        tokio::task::block_in_place(|| server.restart());
        resumed(&mut states, LIMIT).await;
        c.set_data("/bob", b"1", None).await.unwrap();
        let ev = within(LIMIT, "watch", once.changed()).await;
        assert_eq!(ev.event_type, EventType::NodeDataChanged);
        c.close().await;
    });
    drop(rt);

    credentials(&kdc, &eve, "eve.ccache");
    let rt = runtime();
    rt.block_on(async {
        let login = SaslLogin::gssapi(Some(format!("eve@{REALM}")));
        let c = within(LIMIT, "eve", connector(login).connect(&hosts)).await.unwrap();
        assert_eq!(c.get_data("/bob").await, Err(Error::NoAuth), "eve is kept out");
        c.close().await;
    });
    drop(rt);

    // carol's tickets last 3 s: one taken from her keytab into a cache serves, then expires,
    // and with no keytab left to renew it the login fails.
    let carol = kdc.add_principal("carol");
    kdc.set_max_life("carol", TICKET_LIFE_S);
    credentials(&kdc, &carol, "carol.ccache");
    let login = || SaslLogin::gssapi(Some(format!("carol@{REALM}")));
    let rt = runtime();
    rt.block_on(async {
        let c = within(LIMIT, "carol", connector(login()).connect(&hosts)).await.unwrap();
        c.close().await;
    });
    std::env::set_var("KRB5_CLIENT_KTNAME", kdc.dir().join("no-such.keytab"));
    std::thread::sleep(Duration::from_secs(u64::from(TICKET_LIFE_S) + 1));
    let err = rt.block_on(connector(login()).connect(&hosts)).unwrap_err();
    eprintln!("an expired ticket: {err}");
    assert!(matches!(&err, Error::SaslAuthFailed { mechanism: "GSSAPI", .. }), "{err:?}");
    assert!(err.to_string().contains("xpired"), "{err}");
    drop(rt);

    // bob's key changes: the keytab the client has is stale.
    kdc.export("bob", &kdc.dir().join("bob-new.keytab"));
    credentials(&kdc, &bob, "stale.ccache");
    let rt = runtime();
    for (what, principal) in [("a stale keytab", "bob"), ("no such principal", "mallory")] {
        let login = SaslLogin::gssapi(Some(format!("{principal}@{REALM}")));
        let started = Instant::now();
        let err = rt.block_on(connector(login).connect(&hosts)).unwrap_err();
        let took = started.elapsed();
        eprintln!("{what}: {err} in {took:?}");
        assert!(
            matches!(&err, Error::SaslAuthFailed { mechanism: "GSSAPI", .. }),
            "{what}: {err:?}"
        );
        assert!(took < REFUSAL_MAX, "{what}: {took:?}");
    }
}
