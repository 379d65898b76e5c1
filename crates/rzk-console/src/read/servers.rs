//! Each server of the connect string as it describes itself through the `srvr` four-letter
//! word (allowed by default on ZooKeeper 3.5+ and on rzk server): version, mode, last zxid,
//! connections, latencies, node count. A server that refuses the word, or listens only with
//! TLS, is shown as not answering; nothing else depends on it.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a server has to answer `srvr`.
const SRVR_WITHIN: Duration = Duration::from_secs(1);

/// The bytes of an answer read at most (a `srvr` answer is a few hundred).
const SRVR_BYTES_MAX: u64 = 16 * 1024;

/// One server's answer, as `Field: value` pairs in its order, or why there is none.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `host:port`, as the connect string names it.
    pub host: String,
    /// The answer's fields, or why there is none.
    pub fields: Result<Vec<(String, String)>, String>,
}

/// The `host:port`s of a connect string (`h1:p1,h2:p2[/chroot]`).
pub(crate) fn hosts(connect: &str) -> Vec<String> {
    let hosts = connect.split_once('/').map_or(connect, |(hosts, _chroot)| hosts);
    hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect()
}

/// Asks every server in `hosts` at once.
pub(crate) async fn identify(hosts: &[String]) -> Vec<Identity> {
    let asks: Vec<_> = hosts.iter().map(|h| tokio::spawn(srvr(h.clone()))).collect();
    let mut out = Vec::with_capacity(asks.len());
    for (host, ask) in hosts.iter().zip(asks) {
        let fields = ask.await.unwrap_or_else(|e| Err(e.to_string()));
        out.push(Identity { host: host.clone(), fields });
    }
    out
}

async fn srvr(host: String) -> Result<Vec<(String, String)>, String> {
    let ask = async {
        let mut s = TcpStream::connect(&host).await?;
        s.write_all(b"srvr").await?;
        let mut text = String::new();
        s.take(SRVR_BYTES_MAX).read_to_string(&mut text).await?;
        Ok::<_, std::io::Error>(text)
    };
    let text = match tokio::time::timeout(SRVR_WITHIN, ask).await {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("no answer within {SRVR_WITHIN:?}")),
    };
    let fields = parse(&text);
    if fields.is_empty() {
        let first = text.lines().next().unwrap_or("an empty answer");
        return Err(format!("srvr refused: {first}"));
    }
    Ok(fields)
}

/// `Field: value` lines; anything else (a refusal such as "srvr is not executed because it
/// is not in the whitelist.") gives none.
fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{hosts, parse};

    #[test]
    fn a_connect_string_names_its_hosts() {
        assert_eq!(hosts("a:1,b:2/chroot/x"), ["a:1", "b:2"]);
        assert_eq!(hosts("127.0.0.1:2181"), ["127.0.0.1:2181"]);
    }

    #[test]
    fn an_answer_is_its_field_lines() {
        let text = "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f\nLatency min/avg/max: 0/0.1/4\nMode: standalone\n";
        let f = parse(text);
        assert_eq!(f[2], ("Mode".to_string(), "standalone".to_string()));
        assert!(parse("srvr is not executed because it is not in the whitelist.\n").is_empty());
    }
}
