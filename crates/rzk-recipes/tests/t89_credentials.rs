//! Credentials in the library (`SessionConfig::with_auth`, `with_sasl`) on servers that enforce
//! digest or SASL authentication (rzk's `enforced_auth_schemes`; ZooKeeper 3.8's
//! `enforce.auth.enabled`, `sessionRequireClientSASLAuth`): a LeaderLatch leads on a session
//! with credentials, and leads again on the session the manager rebuilds after an expiry,
//! which sends them too (the SASL exchange runs again). A session without credentials ends in
//! `Failed` at once instead of reconnecting.

use std::time::{Duration, Instant};

use rzk_client::{Client, Connector};
use rzk_recipes::{
    election::{LatchOptions, LeaderLatch},
    session::{ConnectionState, SaslLogin, Session, SessionConfig},
};
use rzk_testkit::enforcing::EnforcingServer;
use rzk_testkit::proxy::Proxy;
use rzk_testkit::Kind;

/// Apache ZooKeeper too only in the `zookeeper-tests` tier (it needs Java and ZooKeeper).
#[cfg(feature = "zookeeper-tests")]
const KINDS: [Kind; 2] = [Kind::Rzk, Kind::ZooKeeper];
#[cfg(not(feature = "zookeeper-tests"))]
const KINDS: [Kind; 1] = [Kind::Rzk];
const T: Duration = Duration::from_secs(4);
const LIMIT: Duration = Duration::from_secs(30);
const CREDENTIAL: &[u8] = b"app:secret";

/// How the session authenticates.
#[derive(Debug, Clone, Copy)]
enum Login {
    Digest,
    Sasl,
}

impl Login {
    fn server(self, kind: Kind) -> EnforcingServer {
        match self {
            Login::Digest => EnforcingServer::start(kind),
            Login::Sasl => EnforcingServer::start_sasl(kind, &[("app", "secret")]),
        }
    }

    fn config(self, c: SessionConfig) -> SessionConfig {
        match self {
            Login::Digest => c.with_auth("digest", CREDENTIAL),
            Login::Sasl => c.with_sasl(SaslLogin::digest_md5("app", "secret")),
        }
    }

    fn connector(self, c: Connector) -> Connector {
        match self {
            Login::Digest => c.with_auth("digest", CREDENTIAL),
            Login::Sasl => c.with_sasl(SaslLogin::digest_md5("app", "secret")),
        }
    }
}

async fn leads(latch: &LeaderLatch) {
    let l = tokio::time::timeout(LIMIT, latch.await_leadership()).await.expect("leads in time");
    l.expect("leadership");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuilt_session_sends_the_credentials_too() {
    for (login, kind) in
        [Login::Digest, Login::Sasl].into_iter().flat_map(|l| KINDS.map(|k| (l, k)))
    {
        let server = tokio::task::block_in_place(|| login.server(kind));
        let proxy = Proxy::start(server.hosts());
        let config = login.config(SessionConfig::new(proxy.hosts()).with_session_timeout(T));
        assert!(!format!("{config:?}").contains("secret"), "Debug keeps the secret");
        let s = Session::connect(config).await.unwrap();
        let latch = LeaderLatch::new(&s, "/t89/latch", LatchOptions::default()).unwrap();
        latch.start().await.unwrap();
        leads(&latch).await;

        // The server ends the session (another connection of it, with the credentials,
        // closes it while this one is cut off): the manager opens a new one, which must
        // authenticate before the latch can join again.
        let info = s.session_info().expect("session info");
        proxy.cut();
        let connector = login.connector(Client::connector().with_session(info));
        let other = connector.connect(&server.hosts()).await.unwrap();
        other.close().await;
        proxy.heal();
        let deadline = Instant::now() + LIMIT;
        while s.generation() < 2 {
            assert!(Instant::now() < deadline, "{login:?} {kind:?}: no new session");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        leads(&latch).await;
        assert_eq!(s.generation(), 2, "{login:?} {kind:?}");
        assert!(s.state().is_connected(), "{login:?} {kind:?}: {:?}", s.state());
        latch.close().await.unwrap();
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_credentials_fails_instead_of_reconnecting() {
    for kind in KINDS {
        let server = tokio::task::block_in_place(|| EnforcingServer::start(kind));
        let s = Session::connect(SessionConfig::new(server.hosts()).with_session_timeout(T))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while s.state() != ConnectionState::Failed {
            assert!(Instant::now() < deadline, "{kind:?}: still {:?}", s.state());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
