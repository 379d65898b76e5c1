//! One connection attempt's I/O: the ConnectRequest out, the ConnectResponse in, then the
//! SASL exchange if the session has a login. What the frames mean is decided elsewhere
//! (`sasl.rs`, the codec); this file only moves them.

use rzk_proto::jute::Reader;
use rzk_proto::{ConnectRequest, ConnectResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::sasl::SaslLogin;
use crate::transport::{Stream, Transport};
use crate::Error;

/// The largest reply or notification accepted; a longer frame drops the connection.
pub(crate) const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// A connection with its handshake done.
pub(crate) type Io = Box<dyn Stream>;

/// Why an attempt failed.
pub(crate) enum Attempt {
    /// The connection failed or was closed: another host may do. A server that closes the
    /// connection instead of answering reads as [`std::io::ErrorKind::UnexpectedEof`].
    Io(std::io::Error),
    /// The server refused the SASL login ([`Error::SaslAuthFailed`]): no host will accept it.
    Refused(Error),
}

impl From<std::io::Error> for Attempt {
    fn from(e: std::io::Error) -> Attempt {
        Attempt::Io(e)
    }
}

/// Connects to `host`, does the handshake and, for a live session with a `sasl` login,
/// the exchange: the connection returned is authenticated.
pub(crate) async fn attempt(
    transport: &dyn Transport,
    host: &str,
    req: &ConnectRequest,
    sasl: Option<&SaslLogin>,
) -> Result<(Io, ConnectResponse), Attempt> {
    let mut io = transport.open(host).await?;
    let mut w = rzk_proto::jute::Writer::frame();
    req.write(&mut w);
    io.write_all(&w.finish_frame()).await?;
    io.flush().await?;
    let body = read_frame(&mut io).await?;
    let resp = ConnectResponse::read(&mut Reader::new(&body))
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    if let (Some(login), true) = (sasl, resp.timeout_ms > 0) {
        let mut cnonce = [0; 16];
        getrandom::getrandom(&mut cnonce).map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut exchange = login.start(cnonce);
        let mut next = Some(exchange.first());
        while let Some(frame) = next {
            io.write_all(&frame).await?;
            io.flush().await?;
            let reply = read_frame(&mut io).await?;
            next = exchange.on_reply(&reply).map_err(|e| match e {
                Error::Protocol(p) => Attempt::Io(std::io::Error::other(p)),
                e => Attempt::Refused(e),
            })?;
        }
    }
    Ok((io, resp))
}

/// One frame's body.
async fn read_frame(io: &mut Io) -> std::io::Result<Vec<u8>> {
    let mut prefix = [0; 4];
    io.read_exact(&mut prefix).await?;
    let len = usize::try_from(i32::from_be_bytes(prefix)).unwrap_or(usize::MAX);
    if len > MAX_FRAME_BYTES {
        return Err(std::io::Error::other("frame too long during the handshake"));
    }
    let mut body = vec![0; len];
    io.read_exact(&mut body).await?;
    Ok(body)
}
