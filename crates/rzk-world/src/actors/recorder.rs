//! What the processes saw, shared by the world's tasks: the terms their holders believed in,
//! the guarded writes the server acknowledged, the counter's and the queue's answers, and the
//! trace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rzk_recipes::{
    cache::TreeCache,
    discovery::{ServiceCache, ServiceInstance},
    session::Session,
    Leadership,
};

use crate::checks::{CounterLog, QueueLog, Term};
use crate::mix::Recipe;

/// An acknowledged guarded write: by a holder of `recipe`, under `token`, at `mzxid`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Write {
    pub recipe: Recipe,
    pub mzxid: i64,
    pub token: i64,
}

/// A discovery process's registry as the world follows it: its cache of the service, its
/// session, and the port of its instance's latest registration or update: the registrar
/// keeps the latest data it was given, so that is what the registry must hold once the faults
/// stop, whether or not the write that carried it was answered. `None` until a registration
/// of this life succeeds, and from an unregistration until the next one does.
pub(crate) struct Registry {
    pub cache: ServiceCache<()>,
    pub session: Session,
    pub port: Option<u16>,
}

/// A counter or queue operation whose answer is awaited: counted as unknown if its process
/// dies first (its future is dropped with the process's task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Op {
    Increment,
    Take,
}

#[derive(Default)]
pub(crate) struct Records {
    pub terms: Vec<Term>,
    /// Every acknowledged guarded write.
    pub writes: Vec<Write>,
    pub counter: CounterLog,
    pub queue: QueueLog,
    /// What happened, in order, with the world's time: the replay's record.
    pub trace: Vec<String>,
    /// The leadership of each term still running, by the term's index.
    running: Vec<(usize, Leadership)>,
    /// Operations sent and not answered, by kind.
    in_flight: BTreeSet<(Op, u64)>,
    next_op: u64,
    next_item: u64,
    /// Until when (world ms) each process's links, or the server for `None`, were disturbed
    /// by a fault.
    disturbed: BTreeMap<Option<usize>, u64>,
    /// Each cache process's current cache.
    pub caches: BTreeMap<usize, TreeCache>,
    /// Each discovery process's current registry.
    pub registries: BTreeMap<usize, Registry>,
    /// The faults have stopped.
    pub calm: bool,
}

impl Records {
    /// Operations of `op`'s kind still unanswered: their outcome is unknown.
    pub fn in_flight(&self, op: Op) -> usize {
        self.in_flight.iter().filter(|(o, _)| *o == op).count()
    }
}

/// The recorder, shared by the world's tasks.
pub(crate) struct Recorder {
    start: Instant,
    inner: Mutex<Records>,
}

/// An operation awaiting its answer; one dropped unanswered stays in flight, unknown.
pub(crate) struct Pending {
    key: (Op, u64),
}

impl Recorder {
    /// A recorder whose milliseconds count from `origin`, the world's start.
    pub fn new(origin: Instant) -> Arc<Recorder> {
        Arc::new(Recorder { start: origin, inner: Mutex::new(Records::default()) })
    }

    fn lock(&self) -> MutexGuard<'_, Records> {
        self.inner.lock().expect("a world task panicked holding the records")
    }

    /// Milliseconds of world time at `at`.
    pub fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_millis() as u64
    }

    /// Milliseconds of world time now.
    pub fn now_ms(&self) -> u64 {
        self.ms(rzk_now())
    }

    /// Appends a line to the trace.
    pub fn note(&self, line: String) {
        let ms = self.now_ms();
        self.lock().trace.push(format!("{ms:>7} {line}"));
    }

    /// `process` holds `recipe` (its shared side, for a read lock) under `leadership`; returns
    /// the term's index for [`Recorder::ended`].
    pub fn started(
        &self,
        recipe: Recipe,
        shared: bool,
        process: usize,
        leadership: &Leadership,
    ) -> usize {
        let start_ms = self.now_ms();
        let token = leadership.token().0;
        let mut r = self.lock();
        r.terms.push(Term { recipe, process, shared, token, start_ms, end_ms: None });
        let side = if shared { " (read)" } else { "" };
        r.trace.push(format!("{start_ms:>7} p{process} holds {recipe:?}{side} {token:#x}"));
        let i = r.terms.len() - 1;
        r.running.push((i, leadership.clone()));
        i
    }

    /// Ends the term at index `i` where its holder stopped believing in it: the recipe's
    /// loss signal or lease deadline, or now, whichever came first.
    pub fn ended(&self, i: usize) {
        let now = rzk_now();
        let mut r = self.lock();
        let Some(k) = r.running.iter().position(|(j, _)| *j == i) else { return };
        let (_, l) = r.running.swap_remove(k);
        let end_ms = self.ms(l.lost_at().unwrap_or(now).min(l.deadline()).min(now));
        r.terms[i].end_ms = Some(end_ms);
        let line = format!("{end_ms:>7} p{} ends {:#x}", r.terms[i].process, r.terms[i].token);
        r.trace.push(line);
    }

    /// `process` died: its running terms end (at their loss, if the recipe saw one first).
    pub fn crashed(&self, process: usize) {
        let held: Vec<usize> = {
            let r = self.lock();
            r.running.iter().map(|(i, _)| *i).filter(|&i| r.terms[i].process == process).collect()
        };
        for i in held {
            self.ended(i);
        }
    }

    pub fn wrote(&self, recipe: Recipe, mzxid: i64, token: i64) {
        self.lock().writes.push(Write { recipe, mzxid, token });
    }

    /// An operation is sent.
    pub fn sent(&self, op: Op) -> Pending {
        let mut r = self.lock();
        r.next_op += 1;
        let key = (op, r.next_op);
        r.in_flight.insert(key);
        Pending { key }
    }

    /// The answer came: the operation is no longer in flight.
    fn answered(r: &mut Records, p: Pending) {
        r.in_flight.remove(&p.key);
    }

    /// An increment was acknowledged, replacing `pre` with `post`.
    pub fn incremented(&self, p: Pending, pre: i64, post: i64) {
        let mut r = self.lock();
        Self::answered(&mut r, p);
        r.counter.acked.push((pre, post));
    }

    /// An operation failed: with `unknown`, it may have been applied.
    pub fn failed(&self, p: Pending, unknown: bool) {
        let op = p.key.0;
        let mut r = self.lock();
        Self::answered(&mut r, p);
        match (op, unknown) {
            (Op::Increment, true) => r.counter.unknown += 1,
            (Op::Take, true) => r.queue.unknown_takes += 1,
            (_, false) => {}
        }
    }

    /// A new queue item's id, unique in the world; its offer is recorded as unknown until
    /// [`Recorder::offered`].
    pub fn new_item(&self) -> u64 {
        let mut r = self.lock();
        r.next_item += 1;
        let id = r.next_item;
        r.queue.offered.insert(id, false);
        id
    }

    /// The offer of `id` was acknowledged.
    pub fn offered(&self, id: u64) {
        self.lock().queue.offered.insert(id, true);
    }

    /// A take returned `id` to `process` (`None`: the queue was empty until its timeout).
    pub fn took(&self, p: Pending, item: Option<(u64, usize)>) {
        let mut r = self.lock();
        Self::answered(&mut r, p);
        r.queue.taken.extend(item);
    }

    /// A queue handle was made: it may keep one item at its end.
    pub fn queue_handle(&self) {
        self.lock().queue.handles += 1;
    }

    /// A fault disturbs `process`'s links (`None`: the server) until `until_ms`.
    pub fn disturbed(&self, process: Option<usize>, until_ms: u64) {
        let mut r = self.lock();
        let d = r.disturbed.entry(process).or_default();
        *d = (*d).max(until_ms);
    }

    /// The faults stop: nothing is disturbed past now, and the writers of the cached subtree
    /// stop writing.
    pub fn calm(&self) {
        let now = self.now_ms();
        let mut r = self.lock();
        r.calm = true;
        for d in r.disturbed.values_mut() {
            *d = (*d).min(now);
        }
    }

    /// Whether the faults have stopped.
    pub fn is_calm(&self) -> bool {
        self.lock().calm
    }

    /// `process`'s cache is `cache` (a new life's replaces its last).
    pub fn cache(&self, process: usize, cache: TreeCache) {
        self.lock().caches.insert(process, cache);
    }

    /// The processes whose cache differs from `truth` (the server's subtree: path to data),
    /// each with the first difference.
    pub fn stale_caches(&self, truth: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
        let r = self.lock();
        let mut stale = Vec::new();
        for (p, cache) in &r.caches {
            let seen: BTreeMap<String, Vec<u8>> =
                cache.snapshot().into_iter().map(|(path, n)| (path, n.data)).collect();
            if &seen != truth {
                let diff = (truth.keys().chain(seen.keys()))
                    .find(|k| truth.get(*k) != seen.get(*k))
                    .map_or_else(|| "its content".to_string(), |k| k.clone());
                stale.push(format!("p{p} differs at {diff}"));
            }
        }
        stale
    }

    /// `process`'s registry is followed by `cache` on `session` (a new life's replaces its
    /// last); nothing is registered yet.
    pub fn registry(&self, process: usize, cache: ServiceCache<()>, session: Session) {
        self.lock().registries.insert(process, Registry { cache, session, port: None });
    }

    /// `process`'s instance is now registered with `port` (`None`: unregistered).
    pub fn registered(&self, process: usize, port: Option<u16>) {
        if let Some(r) = self.lock().registries.get_mut(&process) {
            r.port = port;
        }
    }

    /// The discovery processes whose instance is not registered as they last asked, on their
    /// current session, in `truth` (the service's nodes: id to owner and data), or whose cache
    /// differs from it; each with what differs.
    pub fn stale_registries(&self, truth: &BTreeMap<String, (i64, Vec<u8>)>) -> Vec<String> {
        let ports: BTreeMap<&str, Option<u16>> = (truth.iter())
            .map(|(id, (_, data))| {
                (id.as_str(), ServiceInstance::<()>::from_json(data).ok().and_then(|i| i.port))
            })
            .collect();
        let r = self.lock();
        let mut stale = Vec::new();
        for (p, registry) in &r.registries {
            let id = format!("p{p}");
            let session = registry.session.client().ok().map(|c| c.session_id().0);
            let node = truth.get(&id).map(|(owner, _)| (*owner, ports[id.as_str()]));
            match (registry.port, node) {
                (None, _) => stale.push(format!("p{p} is not registered")),
                (Some(_), None) => stale.push(format!("p{p}'s instance is missing")),
                (Some(port), Some((owner, at))) if (Some(owner), Some(port)) != (session, at) => {
                    stale.push(format!(
                        "p{p} registered port {port} on session {:#x}; the registry has port \
                         {at:?} on session {owner:#x}",
                        session.unwrap_or_default()
                    ))
                }
                (Some(_), Some(_)) => {}
            }
            let cached: BTreeMap<String, Option<u16>> =
                registry.cache.instances().into_iter().map(|i| (i.id, i.port)).collect();
            let same = cached.len() == ports.len()
                && cached.iter().all(|(id, port)| ports.get(id.as_str()) == Some(port));
            if !same {
                stale.push(format!("p{p}'s service cache holds {cached:?}, the server {ports:?}"));
            }
        }
        stale
    }

    /// Whether no fault disturbed `process` or the server since `since_ms`.
    pub fn quiet_since(&self, process: usize, since_ms: u64) -> bool {
        let r = self.lock();
        [Some(process), None].iter().all(|k| r.disturbed.get(k).is_none_or(|&d| d < since_ms))
    }

    /// Puts taken records back, so that a failure can report their trace.
    pub fn restore(&self, records: Records) {
        *self.lock() = records;
    }

    /// Takes the records, at the end of a run.
    pub fn take(&self) -> Records {
        std::mem::take(&mut *self.lock())
    }

    /// How far `recipe` got so far: its holds, acknowledged increments, or items taken.
    pub fn progress(&self, recipe: Recipe) -> usize {
        let r = self.lock();
        match recipe {
            Recipe::Counter => r.counter.acked.len(),
            Recipe::Queue => r.queue.taken.len(),
            // Progress of a cache or a registry is convergence, which the world checks.
            r if r.converges() => 0,
            _ => r.terms.iter().filter(|t| t.recipe == recipe).count(),
        }
    }
}

/// The clock the recipes read (tokio's, paused in the world).
pub(crate) fn rzk_now() -> Instant {
    tokio::time::Instant::now().into_std()
}
