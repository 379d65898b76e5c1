//! ZooKeeper's four-letter words (`ruok`, `srvr`, `conf`, ...), sent on a connection of their
//! own; the server answers and closes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long the server may take to accept the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the server may take between two parts of its answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `word` to the server at `addr` and returns everything it answers before it closes.
pub fn four_letter(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)?;
    s.set_read_timeout(Some(READ_TIMEOUT))?;
    s.write_all(word.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// `four_letter` to the server on 127.0.0.1:`port`.
pub fn four_letter_local(port: u16, word: &str) -> std::io::Result<String> {
    four_letter(SocketAddr::from(([127, 0, 0, 1], port)), word)
}
