//! An Apache ZooKeeper 3.8 ensemble (`QuorumPeerMain`) on loopback, from the Debian jars, each
//! node's SIGKILL and restart in the test's hands, and a fault-injecting proxy in front of
//! every node's client port (cut, black-hole, heal) for clients that connect through
//! [`Ensemble::proxied_hosts`]. Optionally the members reach each other through proxies too,
//! so a test can partition one from the quorum, and run with ZooKeeper's read-only mode.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Child;
use std::time::Instant;

use crate::four_letter::four_letter_local;
use crate::ports::free_ports;
use crate::proxy::Proxy;
use crate::tempdir::TempDir;
use crate::zookeeper::{assert_served_by, spawn, READY_TIMEOUT};

/// How often the nodes are probed while the ensemble forms.
const READY_POLL: std::time::Duration = std::time::Duration::from_millis(50);
/// How many of its last lines each node's log contributes to a failure message.
const LOG_TAIL_LINES: usize = 30;

/// One node of the ensemble.
struct Node {
    client_port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// In front of `client_port`.
    proxy: Proxy,
}

/// How [`Ensemble::start_with_options`] sets the nodes up.
#[derive(Default)]
pub struct Options<'a> {
    /// zoo.cfg lines appended to node `i`'s, as [`Ensemble::start_with`] takes them.
    pub extra: Option<&'a dyn Fn(usize) -> String>,
    /// Every member reaches every other through a proxy of its own, one per direction and
    /// port, so that [`Ensemble::partition`] can cut a member off.
    pub partitionable: bool,
    /// Started with `readonlymode.enabled=true`: a member cut off from its quorum serves
    /// reads to clients that ask for a read-only session.
    pub read_only_mode: bool,
}

impl Options<'static> {
    /// Read-only mode as ZooKeeper's own read-only tests set it up (a read-only server opens
    /// only local sessions: `localSessionsEnabled`, `localSessionsUpgradingEnabled`), with
    /// partitionable members.
    pub fn read_only() -> Options<'static> {
        Options { extra: Some(&local_sessions), partitionable: true, read_only_mode: true }
    }
}

fn local_sessions(_: usize) -> String {
    "localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=true\n".to_owned()
}

/// The proxies through which node `from` reaches node `to`'s quorum and election ports.
struct Link {
    from: usize,
    to: usize,
    quorum: Proxy,
    election: Proxy,
}

impl Link {
    /// A link for every ordered pair of `n` nodes whose ports are `ports` (three per node:
    /// client, quorum, election).
    fn all(n: usize, ports: &[u16]) -> Vec<Link> {
        let mut links = Vec::new();
        for from in 0..n {
            for to in (0..n).filter(|&t| t != from) {
                let quorum = Proxy::start(format!("127.0.0.1:{}", ports[3 * to + 1]));
                let election = Proxy::start(format!("127.0.0.1:{}", ports[3 * to + 2]));
                links.push(Link { from, to, quorum, election });
            }
        }
        links
    }
}

/// An n-node ensemble on 127.0.0.1, every process killed and its directory removed on drop.
pub struct Ensemble {
    nodes: Vec<Node>,
    /// Between members, when started partitionable.
    links: Vec<Link>,
    /// The JVM properties every node starts (and restarts) with.
    properties: Vec<String>,
    _dir: TempDir,
}

/// The JVM of the node in `dir`, its log appended to.
fn spawn_node(dir: &std::path::Path, properties: &[String]) -> Child {
    let main = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
    spawn(main, &dir.join("zoo.cfg"), &dir.join("server.log"), properties)
}

/// A node's role, as `srvr` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
}

impl Ensemble {
    /// Starts `n` nodes (`tickTime=200`, sessions up to 12 s) and waits until every one
    /// serves as leader or follower.
    pub fn start(n: usize) -> Ensemble {
        Ensemble::start_with(n, |_| String::new())
    }

    /// [`Ensemble::start`] with `extra(i)` appended to node `i`'s zoo.cfg (`key=value` lines,
    /// each ending in a newline; a key given again overrides the default), for members that
    /// differ, e.g. in `maxSessionTimeout`.
    pub fn start_with(n: usize, extra: impl Fn(usize) -> String) -> Ensemble {
        Ensemble::start_with_options(n, &Options { extra: Some(&extra), ..Options::default() })
    }

    /// An ensemble set up as `options` says.
    pub fn start_with_options(n: usize, options: &Options<'_>) -> Ensemble {
        let dir = TempDir::new("rzk-testkit-ensemble");
        let ports = free_ports(3 * n);
        let links = if options.partitionable { Link::all(n, &ports) } else { Vec::new() };
        let mut properties = Vec::new();
        if options.read_only_mode {
            properties.push("-Dreadonlymode.enabled=true".to_owned());
        }
        let mut nodes = Vec::new();
        for i in 0..n {
            let servers: String = (0..n)
                .map(|t| {
                    let (q, e) = match links.iter().find(|l| l.from == i && l.to == t) {
                        Some(l) => (l.quorum.addr().port(), l.election.addr().port()),
                        None => (ports[3 * t + 1], ports[3 * t + 2]),
                    };
                    format!("server.{}=127.0.0.1:{q}:{e}\n", t + 1)
                })
                .collect();
            let ndir = dir.join(format!("n{}", i + 1));
            let data = ndir.join("data");
            std::fs::create_dir_all(&data).expect("data dir");
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).expect("myid");
            let extra = options.extra.map(|f| f(i)).unwrap_or_default();
            std::fs::write(
                ndir.join("zoo.cfg"),
                format!(
                    "tickTime=200\ninitLimit=20\nsyncLimit=10\ndataDir={}\nclientPort={}\n\
                     clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n\
                     4lw.commands.whitelist=*\nextendedTypesEnabled=true\n\
                     maxSessionTimeout=12000\n{servers}{extra}",
                    data.display(),
                    ports[3 * i],
                ),
            )
            .expect("zoo.cfg");
            let child = spawn_node(&ndir, &properties);
            let proxy = Proxy::start(format!("127.0.0.1:{}", ports[3 * i]));
            nodes.push(Node { client_port: ports[3 * i], dir: ndir, child: Some(child), proxy });
        }
        let e = Ensemble { nodes, links, properties, _dir: dir };
        e.wait_until("every node serves", |e| (0..n).all(|i| e.role(i).is_some()));
        for node in &e.nodes {
            assert_served_by(node.client_port, &node.dir.join("data"));
        }
        e
    }

    /// Cuts node `i` off from every other member, both ways, quorum and election links alike
    /// (its clients still reach it): a partition. The ensemble must have been started
    /// [`Options::partitionable`].
    ///
    /// The node is restarted behind the cut links. ZooKeeper's election answers a connection
    /// from a lower server id by connecting back to the address that server advertises, its
    /// own listening port, not to the proxy a configuration names; such a connection survives
    /// any cut of the proxies and only ends with the process. A restarted node has none, and
    /// every connection it makes or gets goes through the links. Its clients lose their
    /// connections either way: a member that loses its leader closes them.
    pub fn partition(&mut self, i: usize) {
        self.each_link_of(i, |l| {
            l.quorum.cut();
            l.election.cut();
        });
        self.kill(i);
        self.nodes[i].child = Some(spawn_node(&self.nodes[i].dir, &self.properties));
    }

    /// Partitions node `i` ([`Ensemble::partition`]) and waits until it serves read-only. The
    /// ensemble must have been started with [`Options::read_only`].
    pub fn partition_to_read_only(&mut self, i: usize) {
        self.partition(i);
        self.wait_until(&format!("node {} serves read-only", i + 1), |e| e.is_read_only(i));
    }

    /// A node serving as follower.
    ///
    /// # Panics
    /// When none does.
    pub fn follower(&self) -> usize {
        (0..self.nodes.len()).find(|&i| self.role(i) == Some(Role::Follower)).expect("a follower")
    }

    /// Ends [`Ensemble::partition`] of node `i`.
    pub fn heal_partition(&self, i: usize) {
        self.each_link_of(i, |l| {
            l.quorum.heal();
            l.election.heal();
        });
    }

    fn each_link_of(&self, i: usize, f: impl Fn(&Link)) {
        assert!(!self.links.is_empty(), "the ensemble was not started partitionable");
        self.links.iter().filter(|l| l.from == i || l.to == i).for_each(f);
    }

    /// Whether node `i` serves as a read-only server (`isro` says `ro`): cut off from its
    /// quorum, with [`Options::read_only_mode`].
    pub fn is_read_only(&self, i: usize) -> bool {
        self.nodes[i].child.is_some()
            && four_letter_local(self.nodes[i].client_port, "isro").is_ok_and(|o| o.trim() == "ro")
    }

    /// Waits until `done` holds, or panics with `what` and the logs after [`READY_TIMEOUT`].
    pub fn wait_until(&self, what: &str, done: impl Fn(&Ensemble) -> bool) {
        let deadline = Instant::now() + READY_TIMEOUT;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "{what}: not after {READY_TIMEOUT:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(READY_POLL);
        }
    }

    /// How many nodes there are.
    pub fn size(&self) -> usize {
        self.nodes.len()
    }

    /// The connect string naming every node's proxy, in node order.
    pub fn proxied_hosts(&self) -> String {
        self.nodes.iter().map(|n| n.proxy.hosts()).collect::<Vec<_>>().join(",")
    }

    /// The proxy in front of node `i`'s client port.
    pub fn proxy(&self, i: usize) -> &Proxy {
        &self.nodes[i].proxy
    }

    /// Starts node `i` again on its data (after [`Ensemble::kill`]) and waits until it serves
    /// as leader or follower: it has rejoined the quorum.
    pub fn restart(&mut self, i: usize) {
        if self.nodes[i].child.is_none() {
            self.nodes[i].child = Some(spawn_node(&self.nodes[i].dir, &self.properties));
        }
        self.wait_until(&format!("node {} rejoins", i + 1), |e| e.role(i).is_some());
    }

    /// The connect string naming every node.
    pub fn hosts(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i`'s role while it serves; `None` if it is down or LOOKING.
    pub fn role(&self, i: usize) -> Option<Role> {
        self.nodes[i].child.as_ref()?;
        let out = four_letter_local(self.nodes[i].client_port, "srvr").ok()?;
        if out.contains("Mode: leader") {
            Some(Role::Leader)
        } else if out.contains("Mode: follower") {
            Some(Role::Follower)
        } else {
            None
        }
    }

    /// The node serving as leader, if any.
    pub fn leader(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.role(i) == Some(Role::Leader))
    }

    /// The session ids (`0x…`) with a connection on node `i` (`cons`).
    pub fn sessions_on(&self, i: usize) -> HashSet<String> {
        let out = four_letter_local(self.nodes[i].client_port, "cons").unwrap_or_default();
        out.split([',', '(', ')'])
            .filter_map(|f| f.trim().strip_prefix("sid="))
            .map(str::to_string)
            .collect()
    }

    /// The node the session `sid` (`0x…`) is connected to.
    pub fn node_of(&self, sid: &str) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.sessions_on(i).contains(sid))
    }

    /// SIGKILL of node `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGSTOP of node `i`: a member that lags, as in a long GC pause. Its sockets stay open
    /// and nothing answers; the others elect without it if it led.
    pub fn freeze(&self, i: usize) {
        self.signal(i, "-STOP");
    }

    /// SIGCONT of node `i` after [`Ensemble::freeze`].
    pub fn thaw(&self, i: usize) {
        self.signal(i, "-CONT");
    }

    fn signal(&self, i: usize, signal: &str) {
        let pid = self.nodes[i].child.as_ref().expect("the node runs").id();
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid}: {status}");
    }

    /// The last lines of every node's log, for a failure message.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let log = std::fs::read_to_string(n.dir.join("server.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(LOG_TAIL_LINES).collect();
                format!(
                    "--- {}:\n{}",
                    n.dir.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}
