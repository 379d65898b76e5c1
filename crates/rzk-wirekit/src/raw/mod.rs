//! A hand-written ZooKeeper client that speaks raw frames, for load generation and for tests.
//!
//! The managed clients (rzk-client, rzk-recipes) hide what a load generator and a
//! protocol test need to control: which xid a request carries, how many requests are
//! outstanding, when bytes are written and read, and what a malformed frame does to the
//! server. This client does none of a session's bookkeeping (no reconnects, no watch
//! registry, no pings unless asked): it writes the frames it is given and hands back the
//! frames it reads, decoded only as far as their [`ReplyHeader`](rzk_proto::ReplyHeader).
//! Encoding and decoding are rzk-proto's; this module only moves bytes.
//!
//! Two clients share one API:
//! - [`AsyncClient`], on tokio: the pipelined sessions of `rzk bench`, many per thread. Its
//!   methods are not cancellation safe (see its documentation): drop the client rather than
//!   a half-finished read or write.
//! - [`BlockingClient`], on `std::net`: one session per thread, woken by its socket directly
//!   (the protocol-level handoff's participants, whose latency must be the server's and not a
//!   reactor's), and the protocol tests, which run without a runtime. A read waits as long as
//!   the socket's read timeout allows.
//!
//! Both offer: [`connect`](BlockingClient::connect) (a new session with a timeout) or
//! [`connect_with`](BlockingClient::connect_with) any
//! [`ConnectRequest`](rzk_proto::ConnectRequest) (to resume a session with its id and
//! password, see [`resume`]); [`call`](BlockingClient::call) (one request and its reply);
//! [`send`](BlockingClient::send) and [`send_all`](BlockingClient::send_all) then
//! [`read_reply`](BlockingClient::read_reply) to pipeline;
//! [`read_notification`](BlockingClient::read_notification); [`ping`](BlockingClient::ping);
//! [`close`](BlockingClient::close); and [`write_raw`](BlockingClient::write_raw) /
//! [`read_frame`](BlockingClient::read_frame) for bytes that need not be a valid request.
//! Errors are [`RawError`]; [`RawError::is_closed`] tells a connection the server closed.
//!
//! ```no_run
//! use rzk_wirekit::raw::BlockingClient;
//! use rzk_proto::{PathWatch, Request};
//! use std::time::Duration;
//!
//! let (mut c, session) = BlockingClient::connect("127.0.0.1:2181", Duration::from_secs(10))?;
//! let reply = c.call(&Request::Exists(PathWatch { path: "/".into(), watch: false }), 1)?;
//! assert_eq!(reply.header.err, 0);
//! println!("session {:#x}", session.session_id);
//! c.close()?;
//! # Ok::<(), rzk_wirekit::raw::RawError>(())
//! ```

mod async_client;
mod blocking_client;
mod error;
mod transport;
mod wire;

pub use async_client::AsyncClient;
pub use blocking_client::BlockingClient;
pub use error::RawError;
pub use wire::{is_notification, new_session, resume, Reply, MAX_FRAME_BYTES};

#[cfg(test)]
mod tests;
