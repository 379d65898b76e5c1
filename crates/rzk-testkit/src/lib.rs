//! Test scaffolding shared by every rzk test suite, and only by tests: each crate lists it
//! under `[dev-dependencies]`. The raw ZooKeeper client (rzk-wirekit's, re-exported), free
//! ports, temporary directories, a fault-injecting TCP proxy, four-letter words, Apache
//! ZooKeeper 3.8 (one server, one that enforces authentication, or an ensemble), an MIT Kerberos KDC, and other Java processes on the Debian jars named
//! in `tests/support/java-classpath.txt`, the lines a child process prints, misbehaving HTTP
//! clients, and waiting with a deadline.
#![forbid(unsafe_code)]

pub mod certs;
pub mod enforcing;
pub mod ensemble;
pub mod four_letter;
pub mod http_abuse;
pub mod java;
pub mod kerberos;
pub mod lines;
pub mod ports;
pub mod proxy;
pub mod raw;
pub mod secure;
pub mod server;
pub mod slots;
pub mod tempdir;
pub mod wait;
pub mod zookeeper;

/// Which server a scenario runs against: the suites run each scenario on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rzk,
    ZooKeeper,
}
