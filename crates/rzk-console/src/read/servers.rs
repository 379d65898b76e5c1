//! Each server of the connect string as it describes itself through the `srvr` four-letter
//! word (allowed by default on ZooKeeper 3.5+ and on rzk server): version, mode, last zxid,
//! connections, latencies, node count; and, where `mntr` is allowed too, its figures. A server
//! that refuses a word, or listens only with TLS, is shown as not answering it; nothing else
//! depends on them.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a server has to answer a four-letter word.
const WORD_WITHIN: Duration = Duration::from_secs(1);

/// The bytes of an answer read at most (`srvr` answers a few hundred, `mntr` a few thousand).
const WORD_BYTES_MAX: u64 = 64 * 1024;

/// One server's answer, as `Field: value` pairs in its order, or why there is none.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `host:port`, as the connect string names it.
    pub host: String,
    /// The `srvr` answer's fields, or why there is none.
    pub fields: Result<Vec<(String, String)>, String>,
    /// The `mntr` answer's figures, or why there are none.
    pub figures: Result<Vec<(String, String)>, String>,
}

/// The `host:port`s of a connect string (`h1:p1,h2[/chroot]`), as the client reads it (a host
/// without a port is on 2181); none for a string the client would refuse too.
pub(crate) fn hosts(connect: &str) -> Vec<String> {
    rzk_client::ConnectString::parse(connect).map(|c| c.hosts).unwrap_or_default()
}

/// Asks every server in `hosts` at once.
pub(crate) async fn identify(hosts: &[String]) -> Vec<Identity> {
    let asks: Vec<_> = hosts
        .iter()
        .map(|h| {
            let (srvr, mntr) = (ask(h.clone(), "srvr", ": "), ask(h.clone(), "mntr", "\t"));
            (tokio::spawn(srvr), tokio::spawn(mntr))
        })
        .collect();
    let mut out = Vec::with_capacity(asks.len());
    for (host, (srvr, mntr)) in hosts.iter().zip(asks) {
        let fields = srvr.await.unwrap_or_else(|e| Err(e.to_string()));
        let figures = mntr.await.unwrap_or_else(|e| Err(e.to_string()));
        out.push(Identity { host: host.clone(), fields, figures });
    }
    out
}

/// `word`'s answer from `host`, as its `key<separator>value` lines.
async fn ask(
    host: String,
    word: &'static str,
    separator: &str,
) -> Result<Vec<(String, String)>, String> {
    let asked = async {
        let mut s = TcpStream::connect(&host).await?;
        s.write_all(word.as_bytes()).await?;
        let mut text = String::new();
        s.take(WORD_BYTES_MAX).read_to_string(&mut text).await?;
        Ok::<_, std::io::Error>(text)
    };
    let text = match tokio::time::timeout(WORD_WITHIN, asked).await {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("no answer within {WORD_WITHIN:?}")),
    };
    let fields = parse(&text, separator);
    if fields.is_empty() {
        let first = text.lines().next().unwrap_or("an empty answer");
        return Err(format!("{word} refused: {first}"));
    }
    Ok(fields)
}

/// `key<separator>value` lines; anything else (a refusal such as "mntr is not executed
/// because it is not in the whitelist.") gives none.
fn parse(text: &str, separator: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once(separator))
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
        // As the client reads it: a host without a port is on 2181.
        assert_eq!(hosts("zk1,zk2:2182"), ["zk1:2181", "zk2:2182"]);
    }

    #[test]
    fn an_answer_is_its_field_lines() {
        let text = "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f\nLatency min/avg/max: 0/0.1/4\nMode: standalone\n";
        let f = parse(text, ": ");
        assert_eq!(f[2], ("Mode".to_string(), "standalone".to_string()));
        let refusal = "mntr is not executed because it is not in the whitelist.\n";
        assert!(parse(refusal, "\t").is_empty());
        assert_eq!(parse("zk_znode_count\t12\n", "\t"), [("zk_znode_count".into(), "12".into())]);
    }
}
