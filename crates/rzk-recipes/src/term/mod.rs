//! One term, as every recipe that holds something has it: a leader's term, a mutex's or a
//! lock side's hold, a semaphore's lease.
//!
//! **Invariant:** a term is valid only while the lease says the server cannot yet have
//! expired the session. [`Leadership::lost`] resolves by `last_ack_sent + T − safety_margin −
//! stop_budget`, and [`Leadership::is_valid`] and the guarded-write gate read that deadline
//! synchronously, so nothing the holder does after it can pass. The fencing token is the czxid
//! of the node the term is held on, strictly increasing from term to term on one path.
//!
//! - `guard`: the state one term's handles share, and the task that ends it when the lease or
//!   the connection says it may be over (under the [`ConnectionPolicy`]);
//! - `issuer`: the one constructor of a term, and what every term of one handle shares;
//! - `leadership`: the term as the application holds it; `guarded`: writes fenced by it;
//!   `token`: the fencing token;
//! - `control`, `mailbox`: the command channel from handles and terms to the task that owns
//!   the recipe (a driver, or the semaphore's reaper), nudges coalesced. A term knows its
//!   driver only through it.

pub(crate) mod control;
pub(crate) mod guard;
pub(crate) mod guarded;
pub(crate) mod issuer;
pub(crate) mod leadership;
pub(crate) mod mailbox;
pub(crate) mod token;

pub use control::BoxError;
pub use guard::ConnectionPolicy;
pub use guarded::GuardedWrite;
pub use leadership::Leadership;
pub use token::FencingToken;
