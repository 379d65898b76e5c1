//! Events, status, metrics and participants of the recipes.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use rzk_client::SessionId;
use tokio::sync::broadcast;

use crate::loss::LossReason;
use crate::session::ConnectionEvent;
use crate::subscription::Subscription;
use crate::term::leadership::Leadership;
use crate::term::token::FencingToken;
use crate::Error;

/// What `start()` returns: our node once it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct JoinInfo {
    /// Full path of our node.
    pub node: String,
    /// Its sequence number.
    pub sequence: i64,
    /// Its czxid (the token it would lead with).
    pub czxid: i64,
    /// The session generation that created it.
    pub generation: u64,
}

/// Something that happened to a recipe.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum ElectionEvent {
    /// A connection-state change of the session (only the ones the recipe reacted to).
    Connection(ConnectionEvent),
    /// Our node was created.
    Joined {
        /// Full path of our node.
        node: String,
        /// Its sequence number.
        sequence: i64,
        /// Its czxid.
        czxid: i64,
        /// The session generation.
        generation: u64,
    },
    /// We follow: `position` nodes sort before ours; we watch `predecessor`.
    Following {
        /// How many nodes sort before ours.
        position: usize,
        /// The node we watch.
        predecessor: String,
    },
    /// We lead.
    Elected {
        /// The fencing token.
        token: FencingToken,
        /// Full path of our node.
        node: String,
        /// The local term counter.
        term: u64,
        /// True if this continues an earlier term on the same node.
        resumed: bool,
        /// The term itself.
        leadership: Leadership,
    },
    /// A term ended. Not emitted when a leading LeaderLatch closes in `CloseMode::Silent`.
    Lost {
        /// The term's token.
        token: FencingToken,
        /// The local term counter.
        term: u64,
        /// Why.
        reason: LossReason,
    },
    /// Our node vanished (or belongs to an old session); we rejoin.
    NodeGone {
        /// Its path.
        node: String,
    },
    /// A leftover node with our UUID was deleted.
    OrphanDeleted {
        /// Its path.
        node: String,
    },
    /// The election path (or an ancestor) was missing and has been created as a container.
    ParentRecreated {
        /// The election path.
        path: String,
    },
    /// The election path holds children this recipe cannot order; it refuses to lead.
    ForeignNodes {
        /// The foreign children.
        names: Vec<String>,
    },
    /// A LeaderSelector released its node after a term.
    Released {
        /// The node deleted.
        node: String,
    },
    /// The recipe is closed.
    Closed,
    /// The subscriber fell behind and missed events.
    Lagged {
        /// How many.
        missed: u64,
    },
}

/// Where a recipe stands.
///
/// Intermediate: `Latent`, `Joining`, `Following`, `Leading`, `SteppedDown`, `Idle`.
/// Terminal: `Closed`, `Failed`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Not started.
    Latent,
    /// Creating our node, or waiting for a session to create it on.
    Joining,
    /// Waiting behind `position` nodes.
    Following {
        /// How many nodes sort before ours.
        position: usize,
    },
    /// Leading.
    Leading {
        /// The fencing token.
        token: FencingToken,
    },
    /// Stepped down (Suspended or lease), node kept; may resume.
    SteppedDown,
    /// A LeaderSelector that is not queued (no auto-requeue).
    Idle,
    /// Closed.
    Closed,
    /// Gave up for good.
    Failed(Error),
}

impl Status {
    /// True for `Closed` and `Failed`.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Status::Closed | Status::Failed(_))
    }
}

/// Counters for benchmarks and tests (docs/election.md §2.8).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Follower-side notifications: predecessor watch or herd watch events.
    pub wakeups: u64,
    /// The leader's own-node and children-watch events.
    pub leader_watch_events: u64,
    /// Decision steps run.
    pub evaluations: u64,
    /// getChildren requests sent.
    pub get_children_calls: u64,
    /// Creates of our node sent.
    pub creates: u64,
    /// Deletes sent (own node, orphans).
    pub deletes: u64,
}

#[derive(Default)]
pub(crate) struct MetricCells {
    pub wakeups: AtomicU64,
    pub leader_watch_events: AtomicU64,
    pub evaluations: AtomicU64,
    pub get_children_calls: AtomicU64,
    pub creates: AtomicU64,
    pub deletes: AtomicU64,
}

impl MetricCells {
    pub fn inc(cell: &AtomicU64) {
        cell.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Metrics {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Metrics {
            wakeups: g(&self.wakeups),
            leader_watch_events: g(&self.leader_watch_events),
            evaluations: g(&self.evaluations),
            get_children_calls: g(&self.get_children_calls),
            creates: g(&self.creates),
            deletes: g(&self.deletes),
        }
    }
}

/// One participant, read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Participant {
    /// Its id (the node data as UTF-8, lossy).
    pub id: String,
    /// Full path of its node.
    pub node: String,
    /// The czxid of its node (its token if it leads).
    pub token: FencingToken,
    /// The session owning its node.
    pub session: SessionId,
    /// True for the first node.
    pub is_leader: bool,
}

/// The participants in node order, and the children this recipe cannot order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Participants {
    /// Participants, leader first.
    pub list: Vec<Participant>,
    /// Foreign children (docs/election.md §2.7).
    pub foreign: Vec<String>,
}

/// A stream of [`ElectionEvent`]s (edge-triggered). A subscriber that falls more than 1024
/// events behind gets [`ElectionEvent::Lagged`].
pub struct Events {
    sub: Subscription<ElectionEvent>,
}

impl Events {
    pub(crate) fn new(rx: broadcast::Receiver<ElectionEvent>) -> Self {
        Events { sub: Subscription::new(rx, |missed| Some(ElectionEvent::Lagged { missed })) }
    }

    /// The next event; `None` once the recipe is gone.
    ///
    /// # Errors
    /// None; a subscriber that fell behind gets [`ElectionEvent::Lagged`] instead.
    ///
    /// # Cancellation safety
    /// Safe: no event is lost if the future is dropped.
    pub async fn recv(&mut self) -> Option<ElectionEvent> {
        self.sub.recv().await
    }

    /// The next event if one is ready.
    pub fn try_recv(&mut self) -> Option<ElectionEvent> {
        self.sub.try_recv()
    }
}

impl futures_core::Stream for Events {
    type Item = ElectionEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ElectionEvent>> {
        self.sub.poll_next(cx)
    }
}
