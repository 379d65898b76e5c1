//! Invariants of the recipes whose holds are terms (locks, elections, the semaphore's
//! leases): the terms their holders believed they held, on the world's clock, and the guarded
//! writes the server acknowledged, on its zxids.

use std::fmt;

use crate::mix::Recipe;

/// One hold of a lock as its holder saw it, in milliseconds of world time.
#[derive(Debug, Clone)]
pub struct Term {
    /// What was held.
    pub recipe: Recipe,
    /// The process.
    pub process: usize,
    /// A read-write lock's read side (shared), not its write side.
    pub shared: bool,
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

/// A read-write lock's terms: a write term overlaps no other term, read or write; a term
/// that starts after a write term started has a larger token (it queued behind the writer's
/// node). Readers share, and among themselves hold in no token order: two readers behind one
/// writer both hold when it goes, in the order their watches fire.
///
/// # Errors
/// The first violation.
pub fn read_write_exclusive(terms: &[Term]) -> Result<(), String> {
    let overlap = |a: &Term, b: &Term| {
        a.start_ms < b.end_ms.unwrap_or(u64::MAX) && b.start_ms < a.end_ms.unwrap_or(u64::MAX)
    };
    for w in terms.iter().filter(|t| !t.shared) {
        for t in terms.iter().filter(|t| !std::ptr::eq(*t, w)) {
            if overlap(w, t) {
                return Err(format!("write {w} held while {t}"));
            }
            if t.start_ms > w.start_ms && t.token <= w.token {
                return Err(format!("token order broken: {t} began after write {w}"));
            }
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
        Term { recipe: Recipe::Mutex, process, shared: false, token, start_ms, end_ms }
    }

    fn read(process: usize, token: i64, start_ms: u64, end_ms: Option<u64>) -> Term {
        Term { shared: true, ..t(process, token, start_ms, end_ms) }
    }

    #[test]
    fn a_writer_beside_a_reader_and_a_late_small_token_are_caught() {
        let ok = [
            read(0, 1, 0, Some(10)),
            read(1, 2, 5, Some(20)),
            t(2, 3, 20, Some(30)),
            read(0, 4, 30, None),
            read(1, 5, 31, None),
        ];
        assert!(read_write_exclusive(&ok).is_ok());
        let beside = [read(0, 1, 0, Some(11)), t(1, 2, 10, Some(20))];
        assert!(read_write_exclusive(&beside).unwrap_err().contains("while"));
        let under = [t(0, 2, 0, Some(10)), read(1, 3, 5, Some(6))];
        assert!(read_write_exclusive(&under).unwrap_err().contains("while"));
        let back = [t(0, 5, 0, Some(10)), read(1, 4, 11, None)];
        assert!(read_write_exclusive(&back).unwrap_err().contains("token order"));
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
