//! `server.N` lines: one may run standalone; two or more describe an ensemble, which rzk, having
//! no replication, must refuse rather than serve as separate trees that look like one service.

use std::net::IpAddr;

use anyhow::bail;

/// One `server.N=host:port:port[:role][;[clientAddress:]clientPort]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerLine {
    /// Where it was read: `zoo.cfg:7`.
    pub place: String,
    /// `server.N`.
    pub key: String,
    pub value: String,
}

impl ServerLine {
    /// The client address after `;`, as ZooKeeper 3.5+ writes it in a dynamic file:
    /// `;2181` or `;0.0.0.0:2181`.
    pub(crate) fn client_address(&self) -> anyhow::Result<Option<(Option<IpAddr>, u16)>> {
        let Some((_, client)) = self.value.split_once(';') else { return Ok(None) };
        let client = client.trim();
        let parsed = match client.rsplit_once(':') {
            Some((host, port)) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                host.parse().ok().zip(port.parse().ok()).map(|(h, p)| (Some(h), p))
            }
            None => client.parse().ok().map(|p| (None, p)),
        };
        match parsed {
            Some(a) => Ok(Some(a)),
            None => bail!("{}: bad client address {client:?} in {}", self.place, self.key),
        }
    }
}

/// Refuses two or more servers; returns the single server line, if there is one.
pub(crate) fn single_server(lines: &[ServerLine]) -> anyhow::Result<Option<&ServerLine>> {
    let mut ids: Vec<&str> = lines.iter().map(|l| l.key.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() < 2 {
        return Ok(lines.first());
    }
    let places: Vec<&str> = lines.iter().map(|l| l.place.as_str()).collect();
    bail!(
        "{} describe an ensemble of {} servers ({}), but rzk is a single server without \
         replication: each host would serve its own separate tree, so clients of different \
         hosts would see different data, two leaders and two lock holders. Run Apache \
         ZooKeeper for an ensemble; for rzk, keep at most one server.N line",
        ids.join(", "),
        ids.len(),
        places.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32, value: &str) -> ServerLine {
        ServerLine {
            place: format!("zoo.cfg:{n}"),
            key: format!("server.{n}"),
            value: value.into(),
        }
    }

    #[test]
    fn one_server_runs_and_two_are_refused() {
        assert_eq!(single_server(&[]).unwrap(), None);
        let one = [line(1, "zoo1:2888:3888")];
        assert_eq!(single_server(&one).unwrap(), Some(&one[0]));
        let two = [line(1, "zoo1:2888:3888"), line(2, "zoo2:2888:3888")];
        let err = single_server(&two).unwrap_err().to_string();
        assert!(err.contains("server.1, server.2") && err.contains("Apache ZooKeeper"), "{err}");
    }

    #[test]
    fn client_addresses_of_dynamic_lines() {
        assert_eq!(line(1, "zoo1:2888:3888").client_address().unwrap(), None);
        assert_eq!(line(1, "zoo1:2888:3888;2181").client_address().unwrap(), Some((None, 2181)));
        let any = Some((Some(IpAddr::from([0, 0, 0, 0])), 2182));
        assert_eq!(
            line(1, "zoo1:2888:3888:participant;0.0.0.0:2182").client_address().unwrap(),
            any
        );
        assert!(line(1, "zoo1:2888:3888;nonsense").client_address().is_err());
    }
}
