//! The ZooKeeper client wire protocol: jute primitives, records, op and error codes, framing.
//!
//! This crate does no I/O and knows nothing about sessions or the data tree. It turns bytes
//! into typed values and back.
//!
//! # Layout
//! - [`jute`]: the big-endian primitives; the only place byte order is decided.
//! - [`frame`]: length-prefixed framing, check-then-parse ([`split_frame`]).
//! - [`records`]: fixed records: [`Stat`], [`Acl`], [`ConnectRequest`], [`ReplyHeader`], ...
//! - [`request`] and [`response`]: bodies keyed by [`OpCode`], in both directions, so a server,
//!   a simulated client and the fuzzer share one codec.
//!
//! # Errors
//! Decoding a whole frame either succeeds or returns a [`DecodeError`], after which the
//! connection should be closed. "Need more bytes" exists only at the framing layer, as
//! `Ok(None)` from [`split_frame`].
//!
//! ```
//! use rzk_proto::{jute::Reader, OpCode, Request, split_frame, RequestHeader};
//! let frame = Request::Sync { path: "/a".into() }.to_frame(7);
//! let len = split_frame(&frame, rzk_proto::DEFAULT_MAX_PACKET_BYTES).unwrap().unwrap();
//! let mut r = Reader::new(&frame[4..4 + len]);
//! let header = RequestHeader::read(&mut r).unwrap();
//! assert_eq!(header.xid, 7);
//! let op = OpCode::from_i32(header.op).unwrap();
//! assert_eq!(Request::read(op, &mut r).unwrap(), Request::Sync { path: "/a".into() });
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(clippy::little_endian_bytes, clippy::host_endian_bytes)]

pub mod error_code;
pub mod frame;
pub mod jute;
pub mod op_code;
pub mod records;
pub mod request;
pub mod response;

pub use error_code::ErrorCode;
pub use frame::{four_letter_word, split_frame, FrameError, DEFAULT_MAX_PACKET_BYTES};
pub use op_code::{xid, OpCode};
pub use records::{
    perms, Acl, ClientInfo, ConnectRequest, ConnectResponse, CreateMode, EventType, Id,
    ReplyHeader, RequestHeader, Stat, WatcherEvent, STATE_SYNC_CONNECTED,
};
pub use request::{CreateOp, CreateRequest, MultiOp, PathWatch, Request, SetWatches};
pub use response::{MultiResult, Response};

/// A frame whose contents cannot be decoded. The connection it came from must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A field runs past the end of the frame.
    #[error("record truncated: needed {needed} bytes, {remaining} remain in the frame")]
    UnexpectedEof {
        /// Bytes the field needed.
        needed: usize,
        /// Bytes left in the frame.
        remaining: usize,
    },
    /// A length prefix below -1.
    #[error("negative length {0}")]
    NegativeLength(i32),
    /// An op code ZooKeeper does not define.
    #[error("unknown op code {0}")]
    UnknownOpCode(i32),
    /// An op that may not appear inside this multi.
    #[error("op code {0} is not allowed inside a multi")]
    BadMultiOp(i32),
    /// A multi with more ops than [`request::MAX_MULTI_OPS`].
    #[error("multi has more than {0} ops")]
    TooManyOps(usize),
    /// A watcher event type ZooKeeper does not define.
    #[error("unknown watcher event type {0}")]
    UnknownEventType(i32),
}
