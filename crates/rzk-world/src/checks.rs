//! The world's invariants over what the processes saw: the terms they believed they held
//! (on the world's clock) and the guarded writes the server acknowledged (on its zxids).

use std::fmt;

/// The recipe a term was held in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// The InterProcessMutex at `/world/lock`: one holder.
    Mutex,
    /// The InterProcessSemaphore at `/world/sem`: [`SEMAPHORE_LEASES`] holders.
    Semaphore,
    /// The LeaderLatch election at `/world/latch`: one leader.
    Latch,
}

impl Recipe {
    /// How many may hold at once.
    pub fn holders(self) -> usize {
        match self {
            Recipe::Mutex | Recipe::Latch => 1,
            Recipe::Semaphore => SEMAPHORE_LEASES as usize,
        }
    }
}

/// Leases of the world's semaphore.
pub const SEMAPHORE_LEASES: u32 = 2;

/// One hold of a lock as its holder saw it, in milliseconds of world time.
#[derive(Debug, Clone)]
pub struct Term {
    /// What was held.
    pub recipe: Recipe,
    /// The process.
    pub process: usize,
    /// Its fencing token (the lock node's czxid).
    pub token: i64,
    /// When `acquire` returned.
    pub start_ms: u64,
    /// When the holder released or learned of the loss; `None` while it still holds.
    pub end_ms: Option<u64>,
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.end_ms {
            Some(end) => write!(
                f,
                "p{} token {:#x} [{}, {}] ms",
                self.process, self.token, self.start_ms, end
            ),
            None => {
                write!(f, "p{} token {:#x} [{}, ..) ms", self.process, self.token, self.start_ms)
            }
        }
    }
}

/// At most `holders` terms overlap, and each term's token is larger than the token of every
/// term that started before it.
///
/// # Errors
/// The first violation.
pub fn terms_exclusive(terms: &[Term], holders: usize) -> Result<(), String> {
    let mut sorted: Vec<&Term> = terms.iter().collect();
    sorted.sort_by_key(|t| (t.start_ms, t.token));
    for (i, b) in sorted.iter().enumerate() {
        let earlier = &sorted[..i];
        let running: Vec<String> = earlier
            .iter()
            .filter(|a| a.end_ms.is_none_or(|end| end > b.start_ms))
            .map(|a| a.to_string())
            .collect();
        if running.len() >= holders {
            return Err(format!("{b} began while {holders} held: {running:?}"));
        }
        if let Some(a) = earlier.iter().find(|a| a.token >= b.token) {
            return Err(format!("token order broken: {a} began before {b}"));
        }
    }
    Ok(())
}

/// Acknowledged guarded writes `(mzxid, token)` of one node, with one holder at a time:
/// in the server's order the token never goes back (a stale holder's write never lands
/// after its successor's).
///
/// # Errors
/// The first write out of order.
pub fn fenced_writes(writes: &[(i64, i64)]) -> Result<(), String> {
    let mut sorted = writes.to_vec();
    sorted.sort_unstable();
    match sorted.windows(2).find(|w| w[0].1 > w[1].1) {
        Some(w) => Err(format!(
            "token {:#x} wrote at zxid {:#x} after token {:#x} at {:#x}",
            w[1].1, w[1].0, w[0].1, w[0].0
        )),
        None => Ok(()),
    }
}

/// Each acknowledged guarded write `(mzxid, token)` was carried by a connection that was
/// open during its term: `opened_ms(mzxid)` is when the server accepted that connection. A
/// write kept back through a disconnect and sent on a later connection would land after its
/// holder had stopped acting, fenced by nothing once no one else holds.
///
/// # Errors
/// The first write sent on a connection opened after its term ended.
pub fn writes_inside_terms(
    writes: &[(i64, i64)],
    terms: &[Term],
    opened_ms: impl Fn(i64) -> Option<u64>,
) -> Result<(), String> {
    for &(zxid, token) in writes {
        let Some(opened) = opened_ms(zxid) else { continue };
        let Some(term) = terms.iter().find(|t| t.token == token) else {
            return Err(format!(
                "a write at zxid {zxid:#x} under token {token:#x}, which no one held"
            ));
        };
        if term.end_ms.is_some_and(|end| opened > end) {
            return Err(format!(
                "the write at zxid {zxid:#x} came on a connection opened at {opened} ms, after {term}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(process: usize, token: i64, start_ms: u64, end_ms: Option<u64>) -> Term {
        Term { recipe: Recipe::Mutex, process, token, start_ms, end_ms }
    }

    #[test]
    fn overlapping_terms_and_tokens_going_back_are_caught() {
        let ok = [t(0, 1, 0, Some(10)), t(1, 2, 10, Some(20)), t(0, 3, 25, None)];
        assert!(terms_exclusive(&ok, 1).is_ok());
        let overlap = [t(0, 1, 0, Some(11)), t(1, 2, 10, None)];
        assert!(terms_exclusive(&overlap, 1).unwrap_err().contains("began while"));
        assert!(terms_exclusive(&overlap, 2).is_ok());
        let back = [t(0, 5, 0, Some(1)), t(1, 2, 10, None)];
        assert!(terms_exclusive(&back, 1).unwrap_err().contains("token order"));
        assert!(fenced_writes(&[(1, 1), (2, 2), (3, 2)]).is_ok());
        assert!(fenced_writes(&[(1, 1), (2, 3), (3, 2)]).is_err());
    }
}
