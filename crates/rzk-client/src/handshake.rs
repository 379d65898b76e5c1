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
        authenticate(&mut io, login, host).await?;
    }
    Ok((io, resp))
}

/// Runs a SASL exchange on `io` to the end.
async fn authenticate(io: &mut Io, login: &SaslLogin, host: &str) -> Result<(), Attempt> {
    let mut cnonce = [0; 16];
    getrandom::getrandom(&mut cnonce).map_err(|e| std::io::Error::other(e.to_string()))?;
    let blocks = login.blocks();
    let (login, host) = (login.clone(), host_name(host).to_owned());
    let (mut exchange, mut next) = off_thread(blocks, move || {
        let mut exchange = login.start(&host, cnonce)?;
        let first = exchange.first()?;
        Ok((exchange, first))
    })
    .await?
    .map_err(Attempt::Refused)?;
    loop {
        io.write_all(&next).await?;
        io.flush().await?;
        let reply = read_frame(io).await?;
        let (back, outcome) = off_thread(blocks, move || {
            let outcome = exchange.on_reply(&reply);
            (exchange, outcome)
        })
        .await?;
        exchange = back;
        match outcome {
            Ok(Some(frame)) => next = frame,
            Ok(None) => return Ok(()),
            Err(Error::Protocol(p)) => return Err(Attempt::Io(std::io::Error::other(p))),
            Err(e) => return Err(Attempt::Refused(e)),
        }
    }
}

/// Runs `f` here, or on tokio's blocking threads when it may block (a GSS-API call can wait
/// for the KDC). Dropped midway, the blocking call finishes and its result is discarded.
async fn off_thread<T: Send + 'static>(
    blocks: bool,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Attempt> {
    if !blocks {
        return Ok(f());
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Attempt::Io(std::io::Error::other(format!("the SASL step failed: {e}"))))
}

/// The host of `host:port` (`[v6]:port` too), as a server principal names it.
fn host_name(host: &str) -> &str {
    let name = host.rsplit_once(':').map_or(host, |(name, _port)| name);
    name.trim_start_matches('[').trim_end_matches(']')
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
