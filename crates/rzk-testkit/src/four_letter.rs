//! ZooKeeper's four-letter words (`ruok`, `srvr`, `conf`, ...), sent on a connection of their
//! own with the raw client; the server answers and closes. Bounded in time, unlike
//! `BlockingClient::four_letter_word`, so that a server that hangs fails the test.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::raw::{BlockingClient, RawError};

/// How long the server may take to accept the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the server may take between two parts of its answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `word` to the server at `addr` and returns everything it answers before it closes.
pub fn four_letter(addr: SocketAddr, word: &str) -> Result<String, RawError> {
    let stream = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .map_err(|source| RawError::Connect { addr: addr.to_string(), source })?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut c = BlockingClient::from_stream(stream)?;
    c.write_raw(word.as_bytes())?;
    c.read_to_close()
}

/// `four_letter` to the server on 127.0.0.1:`port`.
pub fn four_letter_local(port: u16, word: &str) -> Result<String, RawError> {
    four_letter(SocketAddr::from(([127, 0, 0, 1], port)), word)
}
