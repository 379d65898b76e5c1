//! A server of either kind for the suites that need only a running one: the in-process rzk
//! test server, or a standalone Apache ZooKeeper in a temporary directory. Both stop on drop.

use rzk_server::TestServer;

use crate::tempdir::TempDir;
use crate::zookeeper::{self, ZooKeeper};
use crate::Kind;

/// A running server.
pub enum AnyServer {
    /// rzk, in process.
    Rzk(Box<TestServer>),
    /// Apache ZooKeeper, stopped before its directory is removed.
    ZooKeeper(ZooKeeper, TempDir),
}

impl AnyServer {
    /// Starts a server of `kind` with a tick of `tick_ms` (sessions may be as short as two
    /// ticks), TTL and container nodes on (rzk-testkit's ZooKeeper has them on too).
    ///
    /// # Panics
    /// When the server cannot start.
    pub fn start(kind: Kind, tick_ms: u32) -> AnyServer {
        match kind {
            Kind::Rzk => {
                let s = TestServer::builder()
                    .tick_ms(tick_ms)
                    .extended_types(true)
                    .start()
                    .expect("start rzk");
                AnyServer::Rzk(Box::new(s))
            }
            Kind::ZooKeeper => {
                let dir = TempDir::new("rzk-testkit-zk");
                let settings = zookeeper::Settings { tick_ms, container_check_ms: 500 };
                AnyServer::ZooKeeper(ZooKeeper::start(dir.path(), &settings), dir)
            }
        }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        match self {
            AnyServer::Rzk(s) => s.connect_string(),
            AnyServer::ZooKeeper(z, _) => z.hosts(),
        }
    }
}
