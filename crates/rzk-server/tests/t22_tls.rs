//! The secure client port: `zookeeper-client` runs CRUD and watches over TLS, a verified client
//! certificate authenticates its connection as `x509:<subject DN>`, untrusted and missing
//! certificates are refused under `need`, and garbage or stalled handshakes are bounded while
//! the plain port keeps serving.
//!
//! The session here goes through a relay that does the TLS client side with rustls's `ring`
//! provider and a config of its own, so the server meets a second TLS client beside
//! `zookeeper-client`'s (which the CLI and recipe TLS tests use); the Java client and kazoo
//! speak TLS themselves in the interop suite.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rzk_server::{ClientAuth, Server, ServerConfig, TlsConfig};
use rzk_testkit::certs::{Certs, CLIENT_DN};
use rzk_testkit::wait::within;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;
use zk::{Acls, CreateMode, EventType};
use zookeeper_client as zk;

/// How long a test waits for an event, a close or a session.
const WAIT: Duration = Duration::from_secs(10);
/// The handshake timeout of the servers under test: long enough that a connection closed for
/// another reason is closed well before it.
const HANDSHAKE_TIMEOUT_MS: u64 = 3_000;

async fn server(certs: &Certs, client_auth: ClientAuth, handshakes_max: usize) -> Server {
    Server::start(config(certs, client_auth, handshakes_max)).await.expect("start rzk with TLS")
}

fn config(certs: &Certs, client_auth: ClientAuth, handshakes_max: usize) -> ServerConfig {
    let local = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let mut cfg = ServerConfig::new(local);
    cfg.max_client_connections_per_ip = 0;
    let mut tls = TlsConfig::new(local, certs.server_cert(), certs.server_key(), Some(certs.ca()));
    tls.client_auth = client_auth;
    tls.handshake_timeout_ms = HANDSHAKE_TIMEOUT_MS;
    tls.handshakes_max = handshakes_max;
    cfg.tls = Some(tls);
    cfg
}

/// A rustls client trusting the test CA, presenting `identity` (certificate, key) if given.
fn connector(
    certs: &Certs,
    identity: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(certs.ca()).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert).unwrap().map(|c| c.unwrap()).collect();
            builder
                .with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(key).unwrap())
                .unwrap()
        }
    };
    TlsConnector::from(Arc::new(config))
}

/// A plain port that carries each connection to `secure` over TLS with `tls`: the relay a
/// plain client reaches the secure port through.
async fn relay(secure: SocketAddr, tls: TlsConnector) -> SocketAddr {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut plain, _)) = listener.accept().await {
            let tls = tls.clone();
            tokio::spawn(async move {
                let tcp = TcpStream::connect(secure).await.unwrap();
                let name = ServerName::try_from("localhost").unwrap();
                let Ok(mut secure) = tls.connect(name, tcp).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut plain, &mut secure).await;
            });
        }
    });
    addr
}

async fn client(addr: SocketAddr) -> zk::Client {
    let addr = addr.to_string();
    let connect =
        zk::Client::connector().with_session_timeout(Duration::from_millis(4000)).connect(&addr);
    within(WAIT, "a session", connect).await.expect("session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_watches_and_the_x509_identity_over_tls() {
    let certs = Certs::generate();
    let s = server(&certs, ClientAuth::Need, 16).await;
    let identity = Some((certs.client_cert(), certs.client_key()));
    let c = client(relay(s.secure_addr().unwrap(), connector(&certs, identity)).await).await;
    let anyone = CreateMode::Persistent.with_acls(Acls::anyone_all());

    c.create("/t", b"one", &anyone).await.unwrap();
    let (data, stat, changed) = c.get_and_watch_data("/t").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"one"[..], 0));
    let (_, _, kids) = c.get_and_watch_children("/t").await.unwrap();
    c.set_data("/t", b"two", Some(0)).await.unwrap();
    let ev = within(WAIT, "NodeDataChanged", changed.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDataChanged);
    // A reply larger than one TLS record (16 KiB) and than a socket's first write.
    let big = vec![7u8; 900 * 1024];
    c.create("/t/big", &big, &anyone).await.unwrap();
    let ev = within(WAIT, "NodeChildrenChanged", kids.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeChildrenChanged);
    assert_eq!(c.get_data("/t/big").await.unwrap().0, big);
    c.delete("/t/big", None).await.unwrap();
    assert_eq!(c.list_children("/t").await.unwrap(), Vec::<String>::new());

    // The certificate's subject is the connection's identity, as ZooKeeper's x509 provider.
    let users = c.list_auth_users().await.unwrap();
    assert!(users.iter().any(|u| u.scheme() == "x509" && u.user() == CLIENT_DN), "{users:?}");
    let mine = CreateMode::Persistent.with_acls(Acls::creator_all());
    c.create("/mine", b"m", &mine).await.unwrap();
    let (acl, _) = c.get_acl("/mine").await.unwrap();
    assert_eq!((acl[0].scheme(), acl[0].id()), ("x509", CLIENT_DN), "{acl:?}");
    assert_eq!(c.get_data("/mine").await.unwrap().0, b"m");
    let stranger = client(s.local_addr()).await;
    assert_eq!(stranger.get_data("/mine").await, Err(zk::Error::NoAuth));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secure_port_alone_and_enforced_x509_authentication() {
    let certs = Certs::generate();
    let good = || Some((certs.client_cert(), certs.client_key()));
    let mut cfg = config(&certs, ClientAuth::Need, 16);
    cfg.plain_port = false;
    let s = Server::start(cfg).await.unwrap();
    assert_eq!(Some(s.local_addr()), s.secure_addr(), "the secure port stands for the server");
    assert!(session_works(s.local_addr(), connector(&certs, good())).await);
    s.shutdown().await;

    // Certificates optional, x509 enforced: only a connection with one is served.
    let mut cfg = config(&certs, ClientAuth::Want, 16);
    cfg.core.enforced_auth_schemes = vec!["x509".into()];
    let s = Server::start(cfg).await.unwrap();
    let secure = s.secure_addr().unwrap();
    let c = client(relay(secure, connector(&certs, good())).await).await;
    assert_eq!(c.get_data("/zookeeper").await.unwrap().0, b"");
    for hosts in [relay(secure, connector(&certs, None)).await, s.local_addr()] {
        let refusal = match zk::Client::connector().connect(&hosts.to_string()).await {
            Err(e) => e,
            Ok(c) => c.get_data("/").await.expect_err("served without a certificate"),
        };
        assert_eq!(refusal, zk::Error::AuthFailed, "{hosts}");
    }
    s.shutdown().await;
}

/// Whether the server lets a TLS session through `tls` complete a ZooKeeper handshake.
async fn session_works(secure: SocketAddr, tls: TlsConnector) -> bool {
    let addr = relay(secure, tls).await.to_string();
    let connect = zk::Client::connector()
        .with_session_timeout(Duration::from_millis(2000))
        .with_connection_timeout(Duration::from_millis(2000))
        .connect(&addr);
    matches!(tokio::time::timeout(WAIT, connect).await, Ok(Ok(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_and_missing_client_certificates_are_refused_under_need() {
    let certs = Certs::generate();
    let s = server(&certs, ClientAuth::Need, 16).await;
    let secure = s.secure_addr().unwrap();
    let rogue = Some((certs.rogue_cert(), certs.rogue_key()));
    assert!(!session_works(secure, connector(&certs, rogue)).await, "untrusted cert served");
    assert!(!session_works(secure, connector(&certs, None)).await, "no cert served");
    let good = Some((certs.client_cert(), certs.client_key()));
    assert!(session_works(secure, connector(&certs, good)).await, "trusted cert refused");
    s.shutdown().await;

    // Under `want`, no certificate is served, an untrusted one still is not.
    let s = server(&certs, ClientAuth::Want, 16).await;
    let secure = s.secure_addr().unwrap();
    assert!(session_works(secure, connector(&certs, None)).await, "want: no cert refused");
    let rogue = Some((certs.rogue_cert(), certs.rogue_key()));
    assert!(!session_works(secure, connector(&certs, rogue)).await, "want: untrusted served");
    s.shutdown().await;
}

/// Waits until the server closes `stream` (EOF or reset), draining anything it sends.
async fn closed_by_server(mut stream: TcpStream) {
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_stalled_handshakes_are_bounded_and_the_plain_port_serves() {
    let certs = Certs::generate();
    const HANDSHAKES_MAX: usize = 4;
    let s = server(&certs, ClientAuth::Need, HANDSHAKES_MAX).await;
    let secure = s.secure_addr().unwrap();
    let plain = client(s.local_addr()).await;

    // Garbage instead of a ClientHello: the server gives up on it at once.
    let mut garbage = TcpStream::connect(secure).await.unwrap();
    garbage.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3]).await.unwrap();
    garbage.write_all(b"GET / HTTP/1.0\r\n\r\n").await.unwrap();
    within(WAIT, "garbage handshake closed", closed_by_server(garbage)).await;
    let mut text = TcpStream::connect(secure).await.unwrap();
    text.write_all(b"ruok").await.unwrap();
    within(WAIT, "plain-text word on the secure port closed", closed_by_server(text)).await;

    // Clients that send nothing fill the handshake slots; one more is closed at accept, and
    // the stalled ones at the handshake timeout, while the plain port serves throughout.
    let mut stalled = Vec::new();
    for _ in 0..HANDSHAKES_MAX {
        stalled.push(TcpStream::connect(secure).await.unwrap());
    }
    // Half a ClientHello, then silence: slowloris.
    stalled[0].write_all(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let extra = TcpStream::connect(secure).await.unwrap();
    within(WAIT, "connection past the handshake limit closed", closed_by_server(extra)).await;
    for stream in &stalled {
        let open = matches!(stream.try_read(&mut [0u8; 16]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(open, "a stalled handshake was closed before its timeout");
    }
    plain
        .create("/still", b"up", &CreateMode::Ephemeral.with_acls(Acls::anyone_all()))
        .await
        .unwrap();
    for stream in stalled {
        within(WAIT, "stalled handshake closed", closed_by_server(stream)).await;
    }
    assert_eq!(plain.get_data("/still").await.unwrap().0, b"up");

    // The slots are free again.
    let good = Some((certs.client_cert(), certs.client_key()));
    assert!(session_works(secure, connector(&certs, good)).await, "secure port stuck");
    s.shutdown().await;
}
