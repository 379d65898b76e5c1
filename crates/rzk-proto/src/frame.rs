//! Length-prefixed framing, check-then-parse.
//!
//! [`split_frame`] looks at the front of a receive buffer without copying. It says "need more
//! bytes" with `Ok(None)`; an `Err` means the stream can no longer be trusted and the
//! connection must be closed.

use thiserror::Error;

/// ZooKeeper's default `jute.maxbuffer`: 0xfffff bytes, "just under 1M".
pub const DEFAULT_MAX_PACKET_BYTES: usize = 0xfffff;

/// A frame header that cannot start a valid frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The length prefix is negative.
    #[error("frame length {0} is negative")]
    NegativeLength(i32),
    /// The length prefix exceeds `jute.maxbuffer`.
    #[error("frame length {len} exceeds the maximum packet size of {max_packet_bytes} bytes")]
    TooLarge {
        /// The length the peer announced.
        len: usize,
        /// The configured limit.
        max_packet_bytes: usize,
    },
}

/// If `buf` starts with a whole frame, returns the length of its body (the frame occupies
/// `4 + len` bytes of `buf`). `Ok(None)` means more bytes are needed.
pub fn split_frame(buf: &[u8], max_packet_bytes: usize) -> Result<Option<usize>, FrameError> {
    let Some(header) = buf.get(..4) else { return Ok(None) };
    let len = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if len < 0 {
        return Err(FrameError::NegativeLength(len));
    }
    let len = len as usize;
    if len > max_packet_bytes {
        return Err(FrameError::TooLarge { len, max_packet_bytes });
    }
    if buf.len() - 4 < len {
        return Ok(None);
    }
    Ok(Some(len))
}

/// The four-letter admin words ZooKeeper recognises in the first four bytes of a connection.
pub const FOUR_LETTER_WORDS: &[&str] = &[
    "conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk", "srvr", "srst", "stat",
    "wchc", "wchp", "wchs", "mntr", "isro",
];

/// If the first four bytes of a fresh connection name a four-letter word, returns it.
///
/// ZooKeeper reads these bytes as the would-be frame length; every word decodes to a length far
/// above any sane `jute.maxbuffer`, so the check cannot be confused with a real handshake.
pub fn four_letter_word(first: &[u8]) -> Option<&'static str> {
    let first = first.get(..4)?;
    FOUR_LETTER_WORDS.iter().copied().find(|w| w.as_bytes() == first)
}
