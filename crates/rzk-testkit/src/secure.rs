//! A server of either kind with a secure client port that requires a client certificate: the
//! in-process rzk server, or Apache ZooKeeper 3.8 with Netty TLS configured through the same
//! zoo.cfg keys tests/interop/tls_suite.py gives both. The certificates are made at start.

use std::net::{Ipv4Addr, SocketAddr};

use crate::certs::Certs;
use crate::ports::free_port;
use crate::tempdir::TempDir;
use crate::zookeeper::{Settings, ZooKeeper};
use crate::Kind;

enum Running {
    Rzk(Box<rzk_server::TestServer>),
    /// The directory outlives the server, which is dropped first.
    ZooKeeper {
        zk: ZooKeeper,
        _dir: TempDir,
    },
}

/// A running server with a plain and a secure port (`ssl.clientAuth=need`, x509 identities),
/// stopped on drop before its certificates are removed.
pub struct SecureServer {
    running: Running,
    secure_port: u16,
    certs: Certs,
}

impl SecureServer {
    /// Makes the certificates and starts a server of `kind` with `tick_ms`.
    ///
    /// # Panics
    /// If the server cannot start: a test that needs it cannot run without it.
    pub fn start(kind: Kind, tick_ms: u32) -> SecureServer {
        SecureServer::start_with(kind, tick_ms, &[])
    }

    /// [`SecureServer::start`], requiring SASL DIGEST-MD5 with `users` (name, password) too,
    /// as [`crate::enforcing::EnforcingServer::start_sasl`] does; none: no SASL.
    ///
    /// # Panics
    /// If the server cannot start.
    pub fn start_with(kind: Kind, tick_ms: u32, users: &[(&str, &str)]) -> SecureServer {
        let certs = Certs::generate();
        let secure_port = free_port();
        let running = match kind {
            Kind::Rzk => {
                let bind = SocketAddr::from((Ipv4Addr::LOCALHOST, secure_port));
                let tls = rzk_server::TlsConfig::new(
                    bind,
                    certs.server_cert(),
                    certs.server_key(),
                    Some(certs.ca()),
                );
                let users: std::collections::BTreeMap<String, String> =
                    users.iter().map(|(u, p)| ((*u).to_owned(), (*p).to_owned())).collect();
                let server = rzk_server::TestServer::builder()
                    .tick_ms(tick_ms)
                    .config(move |c| {
                        c.tls = Some(tls);
                        if !users.is_empty() {
                            c.core.sasl_users = rzk_core::config::SaslUsers(users);
                            c.core.enforced_auth_schemes = vec!["sasl".into()];
                        }
                    })
                    .start()
                    .expect("start rzk with a secure port");
                Running::Rzk(Box::new(server))
            }
            Kind::ZooKeeper => {
                let dir = TempDir::new("rzk-tls-zk");
                let settings = Settings { tick_ms, container_check_ms: 500 };
                let mut cfg = zoo_cfg(&certs, secure_port);
                let mut jvm = Vec::new();
                if !users.is_empty() {
                    let jaas = dir.path().join("jaas.conf");
                    std::fs::write(&jaas, crate::enforcing::server_jaas(users)).expect("jaas");
                    jvm.push(format!("-Djava.security.auth.login.config={}", jaas.display()));
                    cfg.push_str(crate::enforcing::REQUIRE_SASL);
                }
                let zk = ZooKeeper::start_with_properties(dir.path(), &settings, &cfg, &jvm);
                Running::ZooKeeper { zk, _dir: dir }
            }
        };
        SecureServer { running, secure_port, certs }
    }

    /// The secure port's connect string.
    pub fn secure_hosts(&self) -> String {
        format!("127.0.0.1:{}", self.secure_port)
    }

    /// The plain port's connect string.
    pub fn plain_hosts(&self) -> String {
        match &self.running {
            Running::Rzk(s) => s.connect_string(),
            Running::ZooKeeper { zk, .. } => zk.hosts(),
        }
    }

    /// The certificates: the server's, a client's its CA signed, a rogue client's.
    pub fn certs(&self) -> &Certs {
        &self.certs
    }
}

/// The zoo.cfg lines of a Netty secure port on 127.0.0.1:`port` that needs a client
/// certificate and maps it to an `x509` identity.
pub fn zoo_cfg(certs: &Certs, port: u16) -> String {
    let lines = [
        format!("secureClientPort={port}"),
        "secureClientPortAddress=127.0.0.1".to_string(),
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory".to_string(),
        format!("ssl.keyStore.location={}", certs.server_pem().display()),
        "ssl.keyStore.type=PEM".to_string(),
        format!("ssl.trustStore.location={}", certs.ca().display()),
        "ssl.trustStore.type=PEM".to_string(),
        "ssl.clientAuth=need".to_string(),
        "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider".to_string(),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}
