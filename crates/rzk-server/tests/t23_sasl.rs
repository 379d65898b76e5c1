//! SASL on rzk server, checked by others: `zookeeper-client`'s own `test_auth_failed` and
//! `test_sasl_digest_md5` (its DIGEST-MD5, a mechanism written apart from rzk's), each on rzk
//! and on Apache ZooKeeper 3.8 with the same JAAS users and zoo.cfg keys; and a garbage token
//! answered with the bytes ZooKeeper sends.

#[cfg(feature = "zookeeper-tests")]
use std::net::SocketAddr;
use std::time::Duration;

#[cfg(feature = "zookeeper-tests")]
use rzk_proto::Request;
use rzk_testkit::enforcing::EnforcingServer;
#[cfg(feature = "zookeeper-tests")]
use rzk_testkit::raw::BlockingClient;
use rzk_testkit::Kind;
use zookeeper_client as zk;

/// Apache ZooKeeper too only in the `zookeeper-tests` tier (it needs Java and ZooKeeper).
#[cfg(feature = "zookeeper-tests")]
const KINDS: [Kind; 2] = [Kind::Rzk, Kind::ZooKeeper];
#[cfg(not(feature = "zookeeper-tests"))]
const KINDS: [Kind; 1] = [Kind::Rzk];
/// zookeeper-client's test users.
const USERS: [(&str, &str); 2] = [("client1", "password1"), ("client2", "password2")];

async fn start(kind: Kind) -> EnforcingServer {
    tokio::task::spawn_blocking(move || EnforcingServer::start_sasl(kind, &USERS)).await.unwrap()
}

fn connector() -> zk::Connector {
    zk::Client::connector().with_session_timeout(Duration::from_secs(10))
}

/// Its `test_auth_failed`: a client without SASL on a server that requires it is refused
/// with AuthFailed (the client pings at once to learn of enforcement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_test_auth_failed() {
    for kind in KINDS {
        let server = start(kind).await;
        let refusal = match connector().connect(&server.hosts()).await {
            Err(e) => e,
            Ok(client) => client.get_data("/").await.expect_err("served without SASL"),
        };
        assert_eq!(refusal, zk::Error::AuthFailed, "{kind:?}");
    }
}

/// Its `test_sasl_digest_md5`: both users log in, a wrong password is AuthFailed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_clients_test_sasl_digest_md5() {
    for kind in KINDS {
        let server = start(kind).await;
        for (user, password) in USERS {
            let options = zk::SaslOptions::digest_md5(user, password);
            let client = connector().with_sasl(options).connect(&server.hosts()).await;
            let client = client.unwrap_or_else(|e| panic!("{kind:?} {user}: {e}"));
            let who = client.list_auth_users().await.unwrap();
            assert!(who.contains(&zk::AuthUser::new("sasl", user)), "{kind:?}: {who:?}");
        }
        let options = zk::SaslOptions::digest_md5("client1", "password2");
        let err = connector().with_sasl(options).connect(&server.hosts()).await.unwrap_err();
        assert_eq!(err, zk::Error::AuthFailed, "{kind:?}");
    }
}

/// The frames a server sends after the handshake for an empty sasl packet (xid 1), then
/// `token` (xid 2), until it closes the connection.
#[cfg(feature = "zookeeper-tests")]
fn after_sasl(hosts: &str, token: &[u8]) -> Vec<Vec<u8>> {
    let addr: SocketAddr = hosts.parse().unwrap();
    let (mut raw, _) = BlockingClient::connect(addr, Duration::from_secs(10)).expect("session");
    raw.stream().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Request::Sasl { token: Vec::new() }.to_frame(1);
    out.extend(Request::Sasl { token: token.to_vec() }.to_frame(2));
    raw.write_raw(&out).unwrap();
    std::iter::from_fn(|| raw.read_frame().ok()).collect()
}

#[cfg(feature = "zookeeper-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_response_gets_the_bytes_zookeeper_sends() {
    let rzk = start(Kind::Rzk).await;
    let zookeeper = start(Kind::ZooKeeper).await;
    // The challenge, whose nonce differs, then (xid 2, zxid 0, -124) with a null token, then
    // the close.
    let refusal = [&2i32.to_be_bytes()[..], &[0; 8], &(-124i32).to_be_bytes(), &[0xff; 4]].concat();
    for token in [&b"x"[..], &[0xff; 300], b"username=\"client1\",nonce=\"forged\""] {
        for (kind, server) in [("rzk", &rzk), ("ZooKeeper 3.8", &zookeeper)] {
            let frames = tokio::task::block_in_place(|| after_sasl(&server.hosts(), token));
            assert_eq!(frames.len(), 2, "{kind}: {frames:?}");
            let (header, challenge) = frames[0].split_at(20);
            assert_eq!(header[..16], [&1i32.to_be_bytes()[..], &[0; 12]].concat(), "{kind}");
            let challenge = String::from_utf8_lossy(challenge);
            assert!(challenge.starts_with("realm=\"zk-sasl-md5\",nonce=\""), "{kind}: {challenge}");
            assert!(
                challenge.ends_with("\",charset=utf-8,algorithm=md5-sess"),
                "{kind}: {challenge}"
            );
            assert_eq!(frames[1], refusal, "{kind}");
        }
    }
}
