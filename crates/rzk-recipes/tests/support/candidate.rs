//! One candidate of an election, a LeaderLatch or a race election, behind one face: the
//! fault scenarios that hold for both (a network cut, a server restart) run on either.

use std::time::Duration;

use rzk_recipes::{
    election::{ConnectionPolicy, LatchOptions, LeaderLatch, RaceElection, RaceOptions, Status},
    session::Session,
    Error, Leadership,
};

use super::checker::Checker;

/// Which election a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    Latch,
    Race,
}

pub enum Candidate {
    Latch(LeaderLatch),
    Race(RaceElection),
}

impl Candidate {
    /// A started candidate `id` on `path`, reported to `checker`.
    pub async fn start(
        recipe: Recipe,
        session: &Session,
        path: &str,
        id: &str,
        policy: ConnectionPolicy,
        checker: &Checker,
    ) -> Candidate {
        match recipe {
            Recipe::Latch => {
                let options = LatchOptions::default().with_id(id).with_policy(policy);
                let l = LeaderLatch::new(session, path, options).unwrap();
                checker.attach(id, l.events(), None);
                l.start().await.unwrap();
                Candidate::Latch(l)
            }
            Recipe::Race => {
                let options = RaceOptions::default().with_id(id).with_policy(policy);
                let r = RaceElection::new(session, path, options).unwrap();
                checker.attach(id, r.events(), None);
                r.start().await.unwrap();
                Candidate::Race(r)
            }
        }
    }

    pub fn has_leadership(&self) -> bool {
        match self {
            Candidate::Latch(l) => l.has_leadership(),
            Candidate::Race(r) => r.has_leadership(),
        }
    }

    pub fn current(&self) -> Option<Leadership> {
        match self {
            Candidate::Latch(l) => l.current(),
            Candidate::Race(r) => r.current(),
        }
    }

    pub async fn await_leadership(&self) -> Result<Leadership, Error> {
        match self {
            Candidate::Latch(l) => l.await_leadership().await,
            Candidate::Race(r) => r.await_leadership().await,
        }
    }

    pub async fn await_leadership_timeout(&self, d: Duration) -> Option<Leadership> {
        match self {
            Candidate::Latch(l) => l.await_leadership_timeout(d).await.unwrap(),
            Candidate::Race(r) => r.await_leadership_timeout(d).await.unwrap(),
        }
    }

    pub async fn close(self) -> Result<(), Error> {
        match self {
            Candidate::Latch(l) => l.close().await,
            Candidate::Race(r) => r.close().await,
        }
    }

    /// In the election on a session after `old`'s: a latch has a node other than `old`'s; a
    /// race candidate has decided a round (waits or leads) since.
    pub fn rejoined_after(&self, old: &Leadership) -> bool {
        match self {
            Candidate::Latch(l) => l.our_path().is_some_and(|p| p != old.node_path()),
            Candidate::Race(r) => match r.status() {
                Status::Following { .. } => true,
                Status::Leading { token } => token > old.token(),
                _ => false,
            },
        }
    }

    /// Who is in the election, read from the server, with their tokens: a latch's queue in
    /// node order; a race's holder.
    pub async fn members(&self) -> Vec<(String, i64)> {
        let list = match self {
            Candidate::Latch(l) => l.participants().await.unwrap().list,
            Candidate::Race(r) => r.holder().await.unwrap().into_iter().collect(),
        };
        list.into_iter().map(|p| (p.id, p.token.0)).collect()
    }
}
