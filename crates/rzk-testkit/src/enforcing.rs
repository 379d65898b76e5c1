//! A server of either kind that enforces digest authentication: the in-process rzk server
//! with `enforced_auth_schemes = ["digest"]`, or Apache ZooKeeper 3.8 with
//! `enforce.auth.enabled=true` and `enforce.auth.schemes=digest`. Both keep their data and
//! sessions in a directory of their own, so a restart resumes the sessions.

use rzk_server::TestServer;

use crate::tempdir::TempDir;
use crate::zookeeper::{Settings, ZooKeeper};
use crate::Kind;

/// The zoo.cfg keys, as an operator writes them.
pub const ENFORCE_DIGEST: &str = "enforce.auth.enabled=true\nenforce.auth.schemes=digest\n";
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
