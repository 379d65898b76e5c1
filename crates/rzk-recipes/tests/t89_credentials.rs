//! Credentials in the library (`SessionConfig::with_auth`) on servers that enforce digest
//! authentication (rzk's `enforced_auth_schemes`; ZooKeeper 3.8's `enforce.auth.enabled`): a
//! LeaderLatch leads on a session with credentials, and leads again on the session the
//! manager rebuilds after an expiry, which sends them too. A session without credentials ends
//! in `Failed` at once instead of reconnecting.

use std::time::{Duration, Instant};

use rzk_client::Client;
use rzk_recipes::{ConnectionState, LatchOptions, LeaderLatch, Session, SessionConfig};
use rzk_testkit::enforcing::EnforcingServer;
use rzk_testkit::proxy::Proxy;
use rzk_testkit::Kind;

const T: Duration = Duration::from_secs(4);
const LIMIT: Duration = Duration::from_secs(30);
const CREDENTIAL: &[u8] = b"app:secret";

async fn leads(latch: &LeaderLatch) {
    let l = tokio::time::timeout(LIMIT, latch.await_leadership()).await.expect("leads in time");
    l.expect("leadership");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuilt_session_sends_the_credentials_too() {
    for kind in [Kind::Rzk, Kind::ZooKeeper] {
        let server = tokio::task::block_in_place(|| EnforcingServer::start(kind));
        let proxy = Proxy::start(server.hosts());
        let config = SessionConfig::new(proxy.hosts())
            .with_session_timeout(T)
            .with_auth("digest", CREDENTIAL);
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
        let other = Client::connector()
            .with_session(info)
            .with_auth("digest", CREDENTIAL)
            .connect(&server.hosts())
            .await
            .unwrap();
        other.close().await;
        proxy.heal();
        let deadline = Instant::now() + LIMIT;
        while s.generation() < 2 {
            assert!(Instant::now() < deadline, "{kind:?}: no new session");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        leads(&latch).await;
        assert_eq!(s.generation(), 2, "{kind:?}");
        assert!(s.state().is_connected(), "{kind:?}: {:?}", s.state());
        latch.close().await.unwrap();
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_credentials_fails_instead_of_reconnecting() {
    for kind in [Kind::Rzk, Kind::ZooKeeper] {
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
