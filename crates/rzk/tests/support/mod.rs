//! CLI test support: a server of either kind (the in-process rzk server, or Apache ZooKeeper
//! 3.8 from rzk-testkit's launcher) and `both_servers!`, which runs a scenario against each.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

use rzk_server::TestServer;

use rzk_testkit::tempdir::TempDir;
use rzk_testkit::zookeeper::{self, ZooKeeper};

pub use rzk_testkit::Kind;

/// The tick of either server: sessions of 200 ms to 2 s, as the CLI tests ask for.
pub const TICK_MS: u32 = 100;

/// A running server, stopped on drop (before its directory is removed).
pub enum Server {
    Rzk(Box<TestServer>),
    ZooKeeper(ZooKeeper, TempDir),
}

impl Server {
    pub fn start(kind: Kind) -> Server {
        match kind {
            Kind::Rzk => Server::Rzk(Box::new(
                TestServer::builder().tick_ms(TICK_MS).start().expect("start rzk"),
            )),
            Kind::ZooKeeper => {
                let dir = TempDir::new("rzk-cli-zk");
                let settings = zookeeper::Settings { tick_ms: TICK_MS, container_check_ms: 500 };
                Server::ZooKeeper(ZooKeeper::start(dir.path(), &settings), dir)
            }
        }
    }

    /// The connect string.
    pub fn hosts(&self) -> String {
        match self {
            Server::Rzk(s) => s.connect_string(),
            Server::ZooKeeper(zk, _) => zk.hosts(),
        }
    }
}

/// A heavy-scenario slot (`rzk_testkit::slots`), held for the scenario: the machine has 2
/// cores, a ZooKeeper JVM is heavy, and the scenarios have time bounds.
pub fn serial() -> rzk_testkit::slots::Slot {
    rzk_testkit::slots::heavy()
}

/// Defines `#[test]`s `<name>::rzk` and `<name>::zookeeper` running `scenario(kind)`;
/// `<name>::zookeeper` only with the `zookeeper-tests` feature.
#[macro_export]
macro_rules! both_servers {
    ($($name:ident => $scenario:ident;)*) => {
        $(
            mod $name {
                #[test]
                fn rzk() {
                    let _g = $crate::support::serial();
                    super::$scenario($crate::support::Kind::Rzk);
                }
                // Apache ZooKeeper only in the `zookeeper-tests` tier: the cfg is the test
                // crate's, where this expands.
                #[cfg(feature = "zookeeper-tests")]
                #[test]
                fn zookeeper() {
                    let _g = $crate::support::serial();
                    super::$scenario($crate::support::Kind::ZooKeeper);
                }
            }
        )*
    };
}

/// Runs `rzk --connect cs args...` to its end (standard input empty); panics if it died of a
/// signal.
pub fn rzk(cs: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some(),
        "rzk {args:?} died: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// [`rzk`], which must succeed; its standard output.
pub fn stdout_ok(cs: &str, args: &[&str]) -> String {
    let out = rzk(cs, args);
    assert!(out.status.success(), "rzk {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// An in-process rzk server with the CLI tests' tick and the extended types (TTL nodes) on.
pub fn in_process() -> TestServer {
    TestServer::builder().tick_ms(TICK_MS).extended_types(true).start().expect("start rzk")
}

/// A finished command's standard output, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A finished command's standard error, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Alive: present in /proc and not a zombie (a zombie has stopped; it only awaits its reaper).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}
