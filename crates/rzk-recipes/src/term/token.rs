//! The fencing token a term carries.

/// A fencing token: the `czxid` of the holder's own node.
///
/// It strictly increases from term to term within one election or lock path
/// (docs/election.md §2.4), across parent deletions and, on a server that never reuses zxids,
/// across restarts. A resumed LeaderLatch term (same node) carries the same token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub i64);

impl FencingToken {
    /// The ZAB epoch: the high 32 bits of the zxid.
    pub fn epoch(self) -> u32 {
        ((self.0 as u64) >> 32) as u32
    }

    /// The counter within the epoch: the low 32 bits.
    pub fn counter(self) -> u32 {
        self.0 as u32
    }
}

impl std::fmt::Display for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::LowerHex for FencingToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}
