//! Leader elections: Curator's [`LeaderLatch`] and [`LeaderSelector`], and the non-fair
//! [`RaceElection`] for one fixed node (Kafka's `/controller`). The protocol and its reasoning
//! are in `docs/election.md`; the layouts in `docs/recipes.md`.
//!
//! **Invariant:** on one path, at most one participant holds a valid term at any instant,
//! and each term's token is greater than the last. A path that also holds nodes the recipe
//! cannot order (kazoo's, a latch node in a selector path, junk) makes it refuse to lead with
//! [`Error::ForeignNodes`](crate::Error::ForeignNodes): such mixes give two leaders in every
//! implementation.
//!
//! The handles are thin: each is a [`Contender`] (the queue recipes' driver, shared with the
//! locks) with what its recipe adds: a latch's rejoin, a selector's task per term, a race's
//! epoch node.

pub(crate) mod latch;
pub(crate) mod race;
pub(crate) mod selector;

pub use crate::driver::contender::Contender;
pub use crate::driver::election_options::{
    CloseMode, ElectionOptions, LatchOptions, RaceOptions, SelectorOptions, WatchStrategy,
};
pub use crate::driver::status::{
    ElectionEvent, Events, JoinInfo, Metrics, Participant, Participants, Status,
};
pub use crate::term::ConnectionPolicy;
pub use latch::LeaderLatch;
pub use race::RaceElection;
pub use selector::LeaderSelector;
