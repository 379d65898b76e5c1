//! DIGEST-MD5 (RFC 2831) as ZooKeeper uses it: authentication only (qop `auth`), the
//! `zookeeper` service on the fixed server name `zk-sasl-md5`, one initial authentication per
//! connection (no subsequent authentication, no integrity or privacy layer).
//!
//! rsasl 2, the SASL crate `zookeeper-client` uses, has no DIGEST-MD5 (its README lists it as
//! not yet ported from rsasl 1's C library), so rzk has its own; the exchange is three
//! tokens and the only primitive is MD5.

mod client;
mod server;
mod sums;

pub use client::DigestMd5Client;
pub use server::{DigestMd5Server, ServerStep};
pub use sums::{hex, DIGEST_URI, SERVER_NAME, SERVICE};

#[cfg(test)]
mod tests;
