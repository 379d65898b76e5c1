//! Enforced authentication (`enforce.auth.enabled=true`, `enforce.auth.schemes=digest`) on
//! the wire: rzk answers every scenario with the bytes Apache ZooKeeper 3.8 sends for the same
//! zoo.cfg keys, and `zookeeper-client` is refused with AuthFailed or served as with ZooKeeper.

// Every test compares rzk with Apache ZooKeeper: the `zookeeper-tests` tier only.
#![cfg(feature = "zookeeper-tests")]

use std::net::SocketAddr;
use std::time::Duration;

use rzk_proto::{PathWatch, Request};
use rzk_server::TestServer;
use rzk_testkit::enforcing::ENFORCE_DIGEST;
use rzk_testkit::raw::BlockingClient;
use rzk_testkit::tempdir::TempDir;
use rzk_testkit::zookeeper::{Settings, ZooKeeper};

/// How long a test's read waits for the server before it fails.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// rzk enforcing digest authentication, and ZooKeeper started with [`ENFORCE_DIGEST`].
fn servers() -> (TestServer, ZooKeeper, TempDir) {
    let rzk = TestServer::builder()
        .config(|c| c.core.enforced_auth_schemes = vec!["digest".into()])
        .start()
        .expect("start rzk");
    let dir = TempDir::new("rzk-enforced-auth-zk");
    let settings = Settings { tick_ms: 500, container_check_ms: 60_000 };
    let zk = ZooKeeper::start_with(dir.path(), &settings, ENFORCE_DIGEST);
    (rzk, zk, dir)
}

fn exists(path: &str) -> Request {
    Request::Exists(PathWatch { path: path.into(), watch: false })
}

fn auth(scheme: &str, credentials: &str) -> Request {
    Request::Auth { auth_type: 0, scheme: scheme.into(), auth: credentials.into() }
}

/// Every frame the server sends after the handshake for `requests` (written at once), until
/// it closes the connection or has been quiet for the read timeout; each reply's zxid zeroed
/// where it is not zero, since the two servers count transactions differently.
fn transcript(addr: SocketAddr, requests: &[(Request, i32)], close: bool) -> Vec<Vec<u8>> {
    let (mut raw, _) = BlockingClient::connect(addr, Duration::from_secs(10)).expect("session");
    raw.stream().set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let bytes: Vec<u8> = requests.iter().flat_map(|(r, xid)| r.to_frame(*xid)).collect();
    raw.write_raw(&bytes).unwrap();
    let mut frames = Vec::new();
    let expected = if close { usize::MAX } else { requests.len() };
    while frames.len() < expected {
        let Ok(mut frame) = raw.read_frame() else { break };
        // The xid, then the zxid.
        if frame.len() >= 16 && frame[4..12] != [0; 8] {
            frame[4..12].fill(0xee);
        }
        frames.push(frame);
    }
    frames
}

/// A frame (without its length prefix) of a reply header alone: `(xid, zxid 0, err)`.
fn bare_header(xid: i32, err: i32) -> Vec<u8> {
    [&xid.to_be_bytes()[..], &[0; 8], &err.to_be_bytes()].concat()
}

/// What it does, its requests with their xids, whether the server closes the connection, and
/// the frames expected when they are known whatever the zxids.
type Scenario = (&'static str, Vec<(Request, i32)>, bool, Option<Vec<Vec<u8>>>);

#[test]
fn unauthenticated_requests_get_the_bytes_zookeeper_sends_and_authenticated_ones_are_served() {
    let (rzk, zk, _dir) = servers();
    let zk_addr: SocketAddr = format!("127.0.0.1:{}", zk.port()).parse().unwrap();
    let refused = |xid| vec![bare_header(xid, -124)];
    let scenarios: Vec<Scenario> = vec![
        ("a read", vec![(exists("/"), 1)], true, Some(refused(1))),
        ("a ping", vec![(Request::Ping, -2)], true, Some(refused(-2))),
        (
            "pipelined requests: only the first is answered",
            vec![(exists("/"), 1), (exists("/zookeeper"), 2), (Request::Ping, -2)],
            true,
            Some(refused(1)),
        ),
        (
            "an ip auth, which is not the enforced scheme",
            vec![(auth("ip", ""), -4), (exists("/"), 1)],
            true,
            Some(vec![bare_header(-4, 0), bare_header(1, -124)]),
        ),
        (
            "a digest auth, then a read",
            vec![(auth("digest", "u:pw"), -4), (exists("/"), 1)],
            false,
            None,
        ),
        (
            "a digest auth, then a sync",
            vec![(auth("digest", "u:pw"), -4), (Request::Sync { path: "/".into() }, 1)],
            false,
            None,
        ),
    ];
    for (what, requests, closes, expected) in scenarios {
        let ours = transcript(rzk.addr(), &requests, closes);
        let theirs = transcript(zk_addr, &requests, closes);
        assert_eq!(ours, theirs, "{what}: rzk, then ZooKeeper 3.8");
        match expected {
            Some(frames) => assert_eq!(ours, frames, "{what}"),
            // Served: an answer to every request, each Ok.
            None => {
                assert_eq!(ours.len(), requests.len(), "{what}: {ours:?}");
                assert!(ours.iter().all(|f| f[12..16] == [0; 4]), "{what}: {ours:?}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_client_is_refused_with_auth_failed_until_it_authenticates_with_digest() {
    let (rzk, zk, _dir) = tokio::task::spawn_blocking(servers).await.unwrap();
    for (name, hosts) in [("rzk", rzk.connect_string()), ("ZooKeeper", zk.hosts())] {
        let connector =
            || zookeeper_client::Client::connector().with_session_timeout(Duration::from_secs(10));
        // The client pings at once to learn of enforcement, so the refusal may come at
        // connect or at the first request.
        let refusal = match connector().connect(&hosts).await {
            Err(e) => e,
            Ok(client) => client.get_data("/").await.expect_err("served unauthenticated"),
        };
        assert_eq!(refusal, zookeeper_client::Error::AuthFailed, "{name}");

        let client = connector().with_auth("digest", b"u:pw").connect(&hosts).await.unwrap();
        let open = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        client.create("/served", b"yes", &open).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        let (data, _) = client.get_data("/served").await.unwrap();
        assert_eq!(data, b"yes", "{name}");
    }
}
