//! A server of either kind that enforces authentication: digest (the in-process rzk server
//! with `enforced_auth_schemes = ["digest"]`, or Apache ZooKeeper 3.8 with
//! `enforce.auth.enabled=true` and `enforce.auth.schemes=digest`), or SASL DIGEST-MD5 with
//! the users of a JAAS `Server` section (`sessionRequireClientSASLAuth=true`). Both keep
//! their data and sessions in a directory of their own, so a restart resumes the sessions.

use std::collections::BTreeMap;

use rzk_server::TestServer;

use crate::tempdir::TempDir;
use crate::zookeeper::{Settings, ZooKeeper};
use crate::Kind;

/// The zoo.cfg keys, as an operator writes them.
pub const ENFORCE_DIGEST: &str = "enforce.auth.enabled=true\nenforce.auth.schemes=digest\n";
/// The zoo.cfg keys of a ZooKeeper that requires SASL: the provider that makes `sasl:` ACLs
/// match, and the requirement.
pub const REQUIRE_SASL: &str =
    "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n\
                                sessionRequireClientSASLAuth=true\n";
/// The tick of either server: sessions may be as short as 400 ms.
const TICK_MS: u32 = 200;

enum Running {
    Rzk(Box<TestServer>),
    ZooKeeper(ZooKeeper),
}

/// A running enforcing server, stopped on drop before its directory is removed.
pub struct EnforcingServer {
    running: Running,
    _dir: TempDir,
}

impl EnforcingServer {
    /// Starts a durable server of `kind`.
    ///
    /// # Panics
    /// When the server cannot start.
    pub fn start(kind: Kind) -> EnforcingServer {
        let dir = TempDir::new("rzk-testkit-enforcing");
        let running = match kind {
            Kind::Rzk => Running::Rzk(Box::new(
                TestServer::builder()
                    .tick_ms(TICK_MS)
                    .data_dir(dir.path().join("data"))
                    .config(|c| c.core.enforced_auth_schemes = vec!["digest".into()])
                    .start()
                    .expect("start rzk"),
            )),
            Kind::ZooKeeper => {
                let settings = Settings { tick_ms: TICK_MS, container_check_ms: 60_000 };
                Running::ZooKeeper(ZooKeeper::start_with(dir.path(), &settings, ENFORCE_DIGEST))
            }
        };
        EnforcingServer { running, _dir: dir }
    }

    /// Starts a durable server of `kind` that requires SASL, DIGEST-MD5 with `users` (name,
    /// password), as a JAAS `Server` section lists them.
    ///
    /// # Panics
    /// When the server cannot start.
    pub fn start_sasl(kind: Kind, users: &[(&str, &str)]) -> EnforcingServer {
        let dir = TempDir::new("rzk-testkit-sasl");
        let running = match kind {
            Kind::Rzk => {
                let users: BTreeMap<String, String> =
                    users.iter().map(|(u, p)| ((*u).to_owned(), (*p).to_owned())).collect();
                Running::Rzk(Box::new(
                    TestServer::builder()
                        .tick_ms(TICK_MS)
                        .data_dir(dir.path().join("data"))
                        .config(move |c| {
                            c.core.sasl_users = rzk_core::config::SaslUsers(users);
                            c.core.enforced_auth_schemes = vec!["sasl".into()];
                        })
                        .start()
                        .expect("start rzk"),
                ))
            }
            Kind::ZooKeeper => {
                let jaas = dir.path().join("jaas.conf");
                std::fs::write(&jaas, server_jaas(users)).expect("jaas.conf");
                let settings = Settings { tick_ms: TICK_MS, container_check_ms: 60_000 };
                let jvm = [format!("-Djava.security.auth.login.config={}", jaas.display())];
                Running::ZooKeeper(ZooKeeper::start_with_properties(
                    dir.path(),
                    &settings,
                    REQUIRE_SASL,
                    &jvm,
                ))
            }
        };
        EnforcingServer { running, _dir: dir }
    }

    /// Starts Apache ZooKeeper requiring SASL with Kerberos: its principal
    /// `zookeeper/localhost` in `kdc`'s realm, from a keytab, as ZooKeeper's docs configure
    /// it.
    ///
    /// # Panics
    /// When the server cannot start.
    pub fn start_kerberos(kdc: &crate::kerberos::Kdc) -> EnforcingServer {
        let dir = TempDir::new("rzk-testkit-kerberos");
        let keytab = kdc.add_principal("zookeeper/localhost");
        let jaas = kdc.keytab_jaas("Server", "zookeeper/localhost", &keytab);
        let settings = Settings { tick_ms: TICK_MS, container_check_ms: 60_000 };
        let jvm = [
            format!("-Djava.security.auth.login.config={}", jaas.display()),
            format!("-Djava.security.krb5.conf={}", kdc.krb5_conf().display()),
        ];
        let zk = ZooKeeper::start_with_properties(dir.path(), &settings, REQUIRE_SASL, &jvm);
        EnforcingServer { running: Running::ZooKeeper(zk), _dir: dir }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        match &self.running {
            Running::Rzk(s) => s.connect_string(),
            Running::ZooKeeper(z) => z.hosts(),
        }
    }

    /// Stops the server and starts it again on the same port and data; blocks until it
    /// serves.
    ///
    /// # Panics
    /// When it cannot start again.
    pub fn restart(&mut self) {
        match &mut self.running {
            Running::Rzk(s) => s.restart().expect("restart rzk"),
            Running::ZooKeeper(z) => z.restart(),
        }
    }
}

/// A JAAS `Server` section with DIGEST-MD5 `users`, as ZooKeeper's docs write one.
pub fn server_jaas(users: &[(&str, &str)]) -> String {
    let options: String = users.iter().map(|(u, p)| format!("\n    user_{u}=\"{p}\"")).collect();
    format!(
        "Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required{options};\n}};\n"
    )
}

/// A JAAS `Client` section that logs in with DIGEST-MD5 as `user`.
pub fn client_jaas(user: &str, password: &str) -> String {
    format!(
        "Client {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n    \
         username=\"{user}\"\n    password=\"{password}\";\n}};\n"
    )
}
