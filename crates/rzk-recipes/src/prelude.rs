//! The names most programs use, for `use rzk_recipes::prelude::*`: a session, the error, a
//! term and its token, the elections and the locks. Everything else is in its family's module.

pub use crate::election::{
    LatchOptions, LeaderLatch, LeaderSelector, RaceElection, SelectorOptions,
};
pub use crate::lock::{InterProcessMutex, InterProcessReadWriteLock, InterProcessSemaphore};
pub use crate::session::{Session, SessionConfig};
pub use crate::{Error, FencingToken, Leadership, LossReason};
