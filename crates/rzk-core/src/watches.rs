//! Watches: which connection hears about which change.
//!
//! Like ZooKeeper there are two tables. The data table holds watches left by `exists` and
//! `getData`, plus persistent and persistent-recursive watches; the child table holds watches
//! left by `getChildren`, plus persistent ones. A connection may hold several modes on one path
//! at once (ZOOKEEPER-4466 semantics, as in 3.9), kept as bit flags. A trigger notifies each
//! connection at most once, and watches belong to connections, not sessions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rzk_proto::EventType;

use crate::path;
use crate::state::Trigger;

/// A connection, as numbered by the shell.
pub type ConnId = u64;

const STANDARD: u8 = 1;
const PERSISTENT: u8 = 2;
const RECURSIVE: u8 = 4;

/// `WatcherType` in checkWatches / removeWatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatcherType {
    /// 1: child watches.
    Children,
    /// 2: data and exist watches.
    Data,
    /// 3: any.
    Any,
    /// 4: persistent (3.9).
    Persistent,
    /// 5: persistent recursive (3.9).
    PersistentRecursive,
}

impl WatcherType {
    /// The type for a wire value.
    pub fn from_i32(v: i32) -> Option<WatcherType> {
        Some(match v {
            1 => WatcherType::Children,
            2 => WatcherType::Data,
            3 => WatcherType::Any,
            4 => WatcherType::Persistent,
            5 => WatcherType::PersistentRecursive,
            _ => return None,
        })
    }
}

/// `addWatch` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddWatchMode {
    /// 0: data and child events on one path, not removed when triggered.
    Persistent,
    /// 1: data events on a path and all its descendants.
    PersistentRecursive,
}

type Table = HashMap<Box<str>, BTreeMap<ConnId, u8>>;

#[derive(Debug, Default, Clone)]
struct ConnPaths {
    data: BTreeSet<Box<str>>,
    child: BTreeSet<Box<str>>,
    /// Bytes of the paths in `data` and `child`.
    path_bytes: usize,
}

/// All watches of all connections.
#[derive(Debug, Default, Clone)]
pub struct Watches {
    data: Table,
    child: Table,
    by_conn: HashMap<ConnId, ConnPaths>,
    recursive: usize,
    limits: Option<WatchLimits>,
    /// Connections refused a new watch since the last [`Watches::take_refused`].
    refused: Vec<ConnId>,
}

/// What one connection may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchLimits {
    /// Watches, one per path and table (data or child).
    pub watches_max: usize,
    /// Bytes of the watched paths.
    pub path_bytes_max: usize,
}

#[derive(Clone, Copy)]
enum Which {
    Data,
    Child,
}

impl Watches {
    fn table(&mut self, which: Which) -> &mut Table {
        match which {
            Which::Data => &mut self.data,
            Which::Child => &mut self.child,
        }
    }

    /// Tables bounded per connection: a watch that would take a connection past `limits`
    /// is not added, and the connection is reported by [`Watches::take_refused`].
    pub fn with_limits(limits: WatchLimits) -> Watches {
        Watches { limits: Some(limits), ..Watches::default() }
    }

    /// Connections refused a watch since the last call; the core closes them.
    pub fn take_refused(&mut self) -> Vec<ConnId> {
        std::mem::take(&mut self.refused)
    }

    fn set(&mut self, which: Which, p: &str, conn: ConnId, flag: u8) {
        if let Some(l) = self.limits {
            let present = self.by_conn.get(&conn).is_some_and(|c| match which {
                Which::Data => c.data.contains(p),
                Which::Child => c.child.contains(p),
            });
            let (watches, bytes) = self.load_of(conn);
            if !present && (watches >= l.watches_max || bytes + p.len() > l.path_bytes_max) {
                if !self.refused.contains(&conn) {
                    self.refused.push(conn);
                }
                return;
            }
        }
        let entry = self.table(which).entry(p.into()).or_default().entry(conn).or_insert(0);
        let had_recursive = *entry & RECURSIVE != 0;
        *entry |= flag;
        if flag == RECURSIVE && !had_recursive {
            self.recursive += 1;
        }
        let paths = self.by_conn.entry(conn).or_default();
        let new = match which {
            Which::Data => paths.data.insert(p.into()),
            Which::Child => paths.child.insert(p.into()),
        };
        if new {
            paths.path_bytes += p.len();
        }
    }

    /// Clears `mask` on (p, conn); returns whether any of those bits were set.
    fn clear(&mut self, which: Which, p: &str, conn: ConnId, mask: u8) -> bool {
        let Some(conns) = self.table(which).get_mut(p) else { return false };
        let Some(flags) = conns.get_mut(&conn) else { return false };
        let hit = *flags & mask;
        *flags &= !mask;
        let now_empty = *flags == 0;
        if now_empty {
            conns.remove(&conn);
            if conns.is_empty() {
                self.table(which).remove(p);
            }
            if let Some(paths) = self.by_conn.get_mut(&conn) {
                let gone = match which {
                    Which::Data => paths.data.remove(p),
                    Which::Child => paths.child.remove(p),
                };
                if gone {
                    paths.path_bytes -= p.len();
                }
                if paths.data.is_empty() && paths.child.is_empty() {
                    self.by_conn.remove(&conn);
                }
            }
        }
        if hit & RECURSIVE != 0 {
            self.recursive -= 1;
        }
        hit != 0
    }

    /// A one-shot data watch (`exists` / `getData`).
    pub fn add_data(&mut self, p: &str, conn: ConnId) {
        self.set(Which::Data, p, conn, STANDARD);
    }

    /// A one-shot child watch (`getChildren`).
    pub fn add_child(&mut self, p: &str, conn: ConnId) {
        self.set(Which::Child, p, conn, STANDARD);
    }

    /// A persistent or persistent-recursive watch (`addWatch`).
    pub fn add_persistent(&mut self, p: &str, conn: ConnId, mode: AddWatchMode) {
        match mode {
            AddWatchMode::Persistent => {
                self.set(Which::Data, p, conn, PERSISTENT);
                self.set(Which::Child, p, conn, PERSISTENT);
            }
            AddWatchMode::PersistentRecursive => self.set(Which::Data, p, conn, RECURSIVE),
        }
    }

    fn flags(&self, which: Which, p: &str, conn: ConnId) -> u8 {
        let t = match which {
            Which::Data => &self.data,
            Which::Child => &self.child,
        };
        t.get(p).and_then(|c| c.get(&conn)).copied().unwrap_or(0)
    }

    /// `checkWatches`: whether `conn` holds a watch of this type on `p`.
    pub fn contains(&self, p: &str, conn: ConnId, t: WatcherType) -> bool {
        let (d, c) = (self.flags(Which::Data, p, conn), self.flags(Which::Child, p, conn));
        match t {
            WatcherType::Children => c != 0,
            WatcherType::Data => d != 0,
            WatcherType::Any => c != 0 || d != 0,
            WatcherType::Persistent => (d | c) & PERSISTENT != 0,
            WatcherType::PersistentRecursive => d & RECURSIVE != 0,
        }
    }

    /// `removeWatches`: removes the watches of this type; returns whether any existed.
    pub fn remove(&mut self, p: &str, conn: ConnId, t: WatcherType) -> bool {
        let all = STANDARD | PERSISTENT | RECURSIVE;
        match t {
            WatcherType::Children => self.clear(Which::Child, p, conn, all),
            WatcherType::Data => self.clear(Which::Data, p, conn, all),
            WatcherType::Any => {
                let c = self.clear(Which::Child, p, conn, all);
                self.clear(Which::Data, p, conn, all) | c
            }
            WatcherType::Persistent => {
                let c = self.clear(Which::Child, p, conn, PERSISTENT);
                self.clear(Which::Data, p, conn, PERSISTENT) | c
            }
            WatcherType::PersistentRecursive => self.clear(Which::Data, p, conn, RECURSIVE),
        }
    }

    /// Drops every watch of a closed connection.
    pub fn remove_conn(&mut self, conn: ConnId) {
        let Some(paths) = self.by_conn.remove(&conn) else { return };
        for (which, set) in [(Which::Data, paths.data), (Which::Child, paths.child)] {
            for p in set {
                let table = self.table(which);
                if let Some(conns) = table.get_mut(&*p) {
                    if let Some(flags) = conns.remove(&conn) {
                        if flags & RECURSIVE != 0 {
                            self.recursive -= 1;
                        }
                    }
                    let table = self.table(which);
                    if table.get(&*p).is_some_and(|c| c.is_empty()) {
                        table.remove(&*p);
                    }
                }
            }
        }
    }

    /// Fires the data table at `p`: one-shot watches are consumed, persistent ones stay, and
    /// recursive watches on `p` or any ancestor hear every data event.
    fn fire_data(&mut self, p: &str, out: &mut Vec<ConnId>) {
        if let Some(conns) = self.data.get(p) {
            out.extend(conns.iter().filter(|(_, f)| **f != 0).map(|(c, _)| *c));
            let standard: Vec<ConnId> =
                conns.iter().filter(|(_, f)| **f & STANDARD != 0).map(|(c, _)| *c).collect();
            for c in standard {
                self.clear(Which::Data, p, c, STANDARD);
            }
        }
        if self.recursive > 0 {
            for a in path::ancestors(p) {
                if let Some(conns) = self.data.get(a) {
                    out.extend(conns.iter().filter(|(_, f)| **f & RECURSIVE != 0).map(|(c, _)| *c));
                }
            }
        }
    }

    /// Fires the child table at `p` (never recursive watches).
    fn fire_child(&mut self, p: &str, out: &mut Vec<ConnId>) {
        if let Some(conns) = self.child.get(p) {
            out.extend(conns.keys().copied());
            let standard: Vec<ConnId> =
                conns.iter().filter(|(_, f)| **f & STANDARD != 0).map(|(c, _)| *c).collect();
            for c in standard {
                self.clear(Which::Child, p, c, STANDARD);
            }
        }
    }

    /// Expands a change into the notifications it causes, as (connection, event type, path),
    /// in a deterministic order: node events first, then the parent's child event.
    pub fn trigger(&mut self, t: &Trigger) -> Vec<(ConnId, EventType, String)> {
        let mut out = Vec::new();
        let mut conns = Vec::new();
        match t {
            Trigger::Created(p) => {
                self.fire_data(p, &mut conns);
                push_events(&mut out, &mut conns, EventType::NodeCreated, p);
                self.fire_parent(p, &mut conns, &mut out);
            }
            Trigger::Deleted(p) => {
                // A connection already told through the data table is not told again through
                // the child table for the same delete.
                self.fire_data(p, &mut conns);
                let mut child = Vec::new();
                self.fire_child(p, &mut child);
                conns.extend(child);
                push_events(&mut out, &mut conns, EventType::NodeDeleted, p);
                self.fire_parent(p, &mut conns, &mut out);
            }
            Trigger::DataChanged(p) => {
                self.fire_data(p, &mut conns);
                push_events(&mut out, &mut conns, EventType::NodeDataChanged, p);
            }
        }
        out
    }

    fn fire_parent(
        &mut self,
        p: &str,
        conns: &mut Vec<ConnId>,
        out: &mut Vec<(ConnId, EventType, String)>,
    ) {
        if let Some(parent) = path::parent(p).filter(|_| p != "/") {
            self.fire_child(parent, conns);
            push_events(out, conns, EventType::NodeChildrenChanged, parent);
        }
    }

    /// What one connection holds: (watches, one per path and table; bytes of their paths).
    pub fn load_of(&self, conn: ConnId) -> (usize, usize) {
        self.by_conn.get(&conn).map_or((0, 0), |p| (p.data.len() + p.child.len(), p.path_bytes))
    }

    /// (connections with watches, watched paths, total watches), for `wchs` and `mntr`.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut paths: BTreeSet<&str> = self.data.keys().map(|k| &**k).collect();
        paths.extend(self.child.keys().map(|k| &**k));
        let total = self.data.values().map(|c| c.len()).sum::<usize>()
            + self.child.values().map(|c| c.len()).sum::<usize>();
        (self.by_conn.len(), paths.len(), total)
    }

    /// Watched paths per connection, for `wchc`.
    pub fn paths_by_conn(&self) -> BTreeMap<ConnId, BTreeSet<&str>> {
        let mut out: BTreeMap<ConnId, BTreeSet<&str>> = BTreeMap::new();
        for (c, p) in &self.by_conn {
            out.entry(*c).or_default().extend(p.data.iter().chain(&p.child).map(|s| &**s));
        }
        out
    }

    /// Connections per watched path, for `wchp`.
    pub fn conns_by_path(&self) -> BTreeMap<&str, BTreeSet<ConnId>> {
        let mut out: BTreeMap<&str, BTreeSet<ConnId>> = BTreeMap::new();
        for (p, c) in self.data.iter().chain(&self.child) {
            out.entry(&**p).or_default().extend(c.keys().copied());
        }
        out
    }
}

fn push_events(
    out: &mut Vec<(ConnId, EventType, String)>,
    conns: &mut Vec<ConnId>,
    t: EventType,
    p: &str,
) {
    conns.sort_unstable();
    conns.dedup();
    out.extend(conns.drain(..).map(|c| (c, t, p.to_string())));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(w: &mut Watches, t: Trigger) -> Vec<(ConnId, EventType, String)> {
        w.trigger(&t)
    }

    #[test]
    fn one_shot_fires_once() {
        let mut w = Watches::default();
        w.add_data("/a", 1);
        w.add_data("/a", 1);
        assert_eq!(
            fire(&mut w, Trigger::DataChanged("/a".into())),
            [(1, EventType::NodeDataChanged, "/a".into())]
        );
        assert!(fire(&mut w, Trigger::DataChanged("/a".into())).is_empty());
        assert_eq!(w.counts(), (0, 0, 0));
    }

    #[test]
    fn delete_notifies_each_connection_once() {
        let mut w = Watches::default();
        w.add_data("/a", 1);
        w.add_child("/a", 1);
        w.add_child("/a", 2);
        w.add_child("/", 3);
        let ev = fire(&mut w, Trigger::Deleted("/a".into()));
        assert_eq!(
            ev,
            [
                (1, EventType::NodeDeleted, "/a".into()),
                (2, EventType::NodeDeleted, "/a".into()),
                (3, EventType::NodeChildrenChanged, "/".into()),
            ]
        );
    }

    #[test]
    fn persistent_and_recursive() {
        let mut w = Watches::default();
        w.add_persistent("/a", 1, AddWatchMode::Persistent);
        w.add_persistent("/a", 2, AddWatchMode::PersistentRecursive);
        for _ in 0..2 {
            let ev = fire(&mut w, Trigger::Created("/a/b".into()));
            assert_eq!(
                ev,
                [
                    (2, EventType::NodeCreated, "/a/b".into()),
                    (1, EventType::NodeChildrenChanged, "/a".into()),
                ]
            );
        }
        assert!(w.contains("/a", 2, WatcherType::PersistentRecursive));
        assert!(w.contains("/a", 2, WatcherType::Data));
        assert!(!w.contains("/a", 2, WatcherType::Children));
        assert!(w.remove("/a", 2, WatcherType::Any));
        assert!(!w.remove("/a", 2, WatcherType::Any));
        assert!(fire(&mut w, Trigger::DataChanged("/a/b".into())).is_empty());
        w.remove_conn(1);
        assert_eq!(w.counts(), (0, 0, 0));
    }

    #[test]
    fn standard_and_persistent_coexist() {
        let mut w = Watches::default();
        w.add_persistent("/a", 1, AddWatchMode::Persistent);
        w.add_data("/a", 1);
        assert_eq!(fire(&mut w, Trigger::DataChanged("/a".into())).len(), 1);
        assert_eq!(fire(&mut w, Trigger::DataChanged("/a".into())).len(), 1, "persistent stays");
    }
}
