//! Which recipe lives under a path, from its children's names (pure), and the overview's
//! walk of the tree that finds them all, within a bound on the nodes it lists.

use rzk_client::Client;

use super::child;
use super::walk::Walk;

/// The layouts the console recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// Curator's LeaderLatch: `_c_<uuid>-latch-<seq>`.
    LeaderLatch,
    /// Curator's InterProcessMutex, which LeaderSelector runs on: `_c_<uuid>-lock-<seq>`.
    Mutex,
    /// Curator's InterProcessReadWriteLock: `__READ__` and `__WRIT__` nodes.
    ReadWriteLock,
    /// Curator's InterProcessSemaphoreV2: `leases/` and `locks/`.
    Semaphore,
    /// The race for one fixed EPHEMERAL node, beside its `_epoch` node.
    RaceElection,
    /// The plain election of ZooKeeper's recipe: EPHEMERAL_SEQUENTIAL `<prefix><seq>`.
    PlainElection,
    /// SimpleDistributedQueue: `qn-<seq>`.
    Queue,
    /// Curator's DistributedQueue: `queue-<seq>`.
    CuratorQueue,
    /// Curator's DistributedDoubleBarrier: members and `ready`.
    DoubleBarrier,
    /// A curator-x-discovery registry: `<base>/<service>/<instance JSON>`.
    Registry,
}

impl Kind {
    /// The name a person knows it by.
    pub fn title(self) -> &'static str {
        match self {
            Kind::LeaderLatch => "LeaderLatch",
            Kind::Mutex => "Mutex / LeaderSelector",
            Kind::ReadWriteLock => "Read-write lock",
            Kind::Semaphore => "Semaphore",
            Kind::RaceElection => "Race election",
            Kind::PlainElection => "Election (ephemeral sequential)",
            Kind::Queue => "Queue",
            Kind::CuratorQueue => "DistributedQueue",
            Kind::DoubleBarrier => "Double barrier",
            Kind::Registry => "Service registry",
        }
    }

    /// Every kind, for parsing a link's `kind=`.
    pub const ALL: [Kind; 10] = [
        Kind::LeaderLatch,
        Kind::Mutex,
        Kind::ReadWriteLock,
        Kind::Semaphore,
        Kind::RaceElection,
        Kind::PlainElection,
        Kind::Queue,
        Kind::CuratorQueue,
        Kind::DoubleBarrier,
        Kind::Registry,
    ];

    /// Its name in a link.
    pub fn slug(self) -> &'static str {
        match self {
            Kind::LeaderLatch => "latch",
            Kind::Mutex => "mutex",
            Kind::ReadWriteLock => "rwlock",
            Kind::Semaphore => "semaphore",
            Kind::RaceElection => "race",
            Kind::PlainElection => "election",
            Kind::Queue => "queue",
            Kind::CuratorQueue => "curator-queue",
            Kind::DoubleBarrier => "double-barrier",
            Kind::Registry => "registry",
        }
    }

    /// The kind named `slug` in a link.
    pub fn from_slug(slug: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.slug() == slug)
    }

    /// The overview's group.
    pub fn group(self) -> &'static str {
        match self {
            Kind::LeaderLatch | Kind::RaceElection | Kind::PlainElection => "Elections",
            Kind::Mutex | Kind::ReadWriteLock | Kind::Semaphore => "Locks",
            Kind::Queue | Kind::CuratorQueue => "Queues",
            Kind::DoubleBarrier => "Barriers",
            Kind::Registry => "Services",
        }
    }
}

/// The sequence suffix ZooKeeper appends: 10 digits.
const SEQUENCE_DIGITS: usize = 10;

/// `name` split into its prefix and a 10-digit sequence suffix.
pub(crate) fn sequence_of(name: &str) -> Option<(&str, u64)> {
    let cut = name.len().checked_sub(SEQUENCE_DIGITS)?;
    let (prefix, digits) = name.split_at_checked(cut)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix, digits.parse().ok()?))
}

/// The layout a node's children make, by their names alone. A plain election (sequential
/// children of one prefix) needs the caller to check that they are ephemeral.
pub(crate) fn classify(children: &[String]) -> Option<Kind> {
    let protected = |marker: &str| {
        children
            .iter()
            .any(|c| c.starts_with("_c_") && c.contains(marker) && sequence_of(c).is_some())
    };
    if protected("-latch-") {
        return Some(Kind::LeaderLatch);
    }
    if children.iter().any(|c| c.contains("__READ__") || c.contains("__WRIT__")) {
        return Some(Kind::ReadWriteLock);
    }
    if protected("-lock-") {
        return Some(Kind::Mutex);
    }
    if children.iter().any(|c| c == "leases") && children.iter().any(|c| c == "locks") {
        return Some(Kind::Semaphore);
    }
    let all_sequential_with = |prefix: &str| {
        !children.is_empty()
            && children.iter().all(|c| sequence_of(c).is_some_and(|(p, _)| p == prefix))
    };
    if all_sequential_with("qn-") {
        return Some(Kind::Queue);
    }
    if all_sequential_with("queue-") {
        return Some(Kind::CuratorQueue);
    }
    if children.iter().any(|c| c == "ready") && children.len() > 1 {
        return Some(Kind::DoubleBarrier);
    }
    let first = children.first().and_then(|c| sequence_of(c))?;
    all_sequential_with(first.0).then_some(Kind::PlainElection)
}

/// Nodes a scan reads a grandchild of to tell a registry (two reads each): the nearest to the
/// root first, where registries live.
const REGISTRY_PROBES_MAX: usize = 64;

/// A recipe found under `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Where it lives.
    pub path: String,
    /// What it is.
    pub kind: Kind,
    /// Its children (participants, items, services).
    pub children: usize,
}

/// A node without children that holds data: a config node, a counter, a flag.
#[derive(Debug, Clone)]
pub(crate) struct DataNode {
    /// Where it is.
    pub path: String,
    /// Its stat (size, version, last change).
    pub stat: rzk_client::Stat,
}

/// Data nodes an overview lists; the rest are counted.
const DATA_NODES_SHOWN_MAX: usize = 200;

/// What the walk found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The recipes, in path order.
    pub found: Vec<Found>,
    /// Data nodes outside the recipes, in the walk's order, at most `DATA_NODES_SHOWN_MAX`.
    pub data: Vec<DataNode>,
    /// Data nodes found, shown or not.
    pub data_total: usize,
    /// Nodes listed.
    pub listed: usize,
    /// The bound stopped the walk before the tree's end.
    pub truncated: bool,
}

/// Walks the tree (`walk`), listing at most `max_nodes` nodes, and classifies each. A
/// recipe's own children are not walked into (a semaphore's `leases/` and `locks/` are its
/// own), nor are a registry's instances.
///
/// # Errors
/// The client's error when a listing fails for another reason than the node being gone.
pub(crate) async fn scan(client: &Client, max_nodes: usize) -> Result<Scan, rzk_client::Error> {
    let mut scan = Scan::default();
    let mut probes = 0;
    let mut walk = Walk::new(client, max_nodes);
    while let Some(node) = walk.next().await? {
        let (path, children, stat) = (&node.path, &node.children, &node.stat);
        if children.is_empty() && stat.data_length > 0 && path != "/" {
            scan.data_total += 1;
            if scan.data.len() < DATA_NODES_SHOWN_MAX {
                scan.data.push(DataNode { path: path.clone(), stat: *stat });
            }
        }
        for name in children.iter().filter_map(|c| c.strip_suffix("_epoch")) {
            let node = child(path, name);
            scan.found.push(Found { path: node, kind: Kind::RaceElection, children: 0 });
        }
        let kind = match classify(children) {
            Some(Kind::PlainElection) => plain_election(client, path, children).await,
            None if !children.is_empty() && probes < REGISTRY_PROBES_MAX => {
                probes += 1;
                registry(client, path, children).await.then_some(Kind::Registry)
            }
            other => other,
        };
        match kind {
            Some(kind) => {
                let children = children.len();
                scan.found.push(Found { path: node.path, kind, children });
            }
            None => walk.descend(&node),
        }
    }
    (scan.listed, scan.truncated) = (walk.listed, walk.truncated);
    scan.found.sort_by(|a, b| a.path.cmp(&b.path));
    scan.data.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(scan)
}

/// Sequential children of one prefix are an election when they are ephemeral (the first
/// one's owner says so); persistent ones are some other sequence (ids, a queue of its own).
async fn plain_election(client: &Client, path: &str, children: &[String]) -> Option<Kind> {
    let first = children.first()?;
    let stat = client.check_stat(&child(path, first)).await.ok()??;
    rzk_recipes::session::is_session_owner(stat.ephemeral_owner).then_some(Kind::PlainElection)
}

/// A registry's services each hold instances whose data is curator-x-discovery's JSON, named
/// for its service and id: the first instance of the first service decides (two reads). JSON
/// alone is not enough: a config node's object may parse as an instance with defaults.
async fn registry(client: &Client, path: &str, children: &[String]) -> bool {
    let Some(service) = children.first() else { return false };
    let service_path = child(path, service);
    let Ok(instances) = client.list_children(&service_path).await else { return false };
    let Some(node) = instances.first() else { return false };
    let Ok((data, _)) = client.get_data(&child(&service_path, node)).await else { return false };
    crate::read::services::parse_instance(&data)
        .is_some_and(|i| is_registered_as(&i, service, node))
}

/// Whether `instance` is the one curator-x-discovery writes at `<service>/<node>`: its name is
/// the service's, and the node is named for its id (a DYNAMIC_SEQUENTIAL one has the server's
/// sequence after it).
pub(crate) fn is_registered_as(
    instance: &crate::read::services::Instance,
    service: &str,
    node: &str,
) -> bool {
    !instance.id.is_empty() && instance.name == service && node.starts_with(instance.id.as_str())
}

#[cfg(test)]
mod tests {
    use super::{classify, sequence_of, Kind};

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_layout_is_recognised_by_its_names() {
        let uuid = "_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
        let cases = [
            (vec![format!("{uuid}-latch-0000000001")], Some(Kind::LeaderLatch)),
            (vec![format!("{uuid}-lock-0000000003")], Some(Kind::Mutex)),
            (vec![format!("{uuid}-__READ__0000000003")], Some(Kind::ReadWriteLock)),
            (names(&["leases", "locks"]), Some(Kind::Semaphore)),
            (names(&["qn-0000000001", "qn-0000000002"]), Some(Kind::Queue)),
            (names(&["queue-0000000007"]), Some(Kind::CuratorQueue)),
            (names(&["ready", "0f1e2d3c"]), Some(Kind::DoubleBarrier)),
            (names(&["n_0000000004", "n_0000000005"]), Some(Kind::PlainElection)),
            (names(&["config", "jobs"]), None),
            (names(&["n_0000000004", "other"]), None),
            (vec![], None),
        ];
        for (children, want) in cases {
            assert_eq!(classify(&children), want, "{children:?}");
        }
    }

    #[test]
    fn a_sequence_is_ten_digits_at_the_end() {
        assert_eq!(sequence_of("qn-0000000042"), Some(("qn-", 42)));
        assert_eq!(sequence_of("0000000042"), Some(("", 42)));
        assert_eq!(sequence_of("qn-000000042"), None);
        assert_eq!(sequence_of("é-000000004x"), None);
        assert_eq!(sequence_of("short"), None);
    }
}
