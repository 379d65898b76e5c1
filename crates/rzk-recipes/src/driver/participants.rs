//! Reading who participates: a queue recipe's children and their data (one getChildren and
//! one multi-read), or a race election's one node.

use rzk_client::SessionId;

use crate::driver::rule::Rule;
use crate::driver::status::{Participant, Participants};
use crate::naming;
use crate::session::Session;
use crate::term::token::FencingToken;
use crate::Error;

/// Reads the participants of `path` whose nodes `rule` orders, in node order, and the
/// children that are not ours to order.
pub(crate) async fn read_participants(
    session: &Session,
    path: &str,
    rule: &Rule,
) -> Result<Participants, Error> {
    let client = session.client()?;
    let children = match client.list_children(path).await {
        Ok(c) => c,
        Err(rzk_client::Error::NoNode) => return Ok(Participants::default()),
        Err(e) => return Err(Error::from_zk(e, path)),
    };
    let (sorted, foreign) = rule.sort_children(&children);
    let mut list = Vec::with_capacity(sorted.len());
    if !sorted.is_empty() {
        let mut reader = client.new_multi_reader();
        for name in &sorted {
            reader.add_get_data(&naming::child_path(path, name)).map_err(Error::from)?;
        }
        let results = reader.commit().await.map_err(|e| Error::from_zk(e, path))?;
        for (name, r) in sorted.iter().zip(results) {
            // A node deleted between the two reads is simply not listed.
            if let rzk_client::MultiReadResult::Data { data, stat } = r {
                list.push(Participant {
                    id: String::from_utf8_lossy(&data).into_owned(),
                    node: naming::child_path(path, name),
                    token: FencingToken(stat.czxid),
                    session: SessionId(stat.ephemeral_owner),
                    is_leader: list.is_empty(),
                });
            }
        }
    }
    Ok(Participants { list, foreign })
}

/// Reads the holder of a race election's node `path`: its data as the id, its czxid as the
/// token; `Ok(None)` when nobody holds it.
pub(crate) async fn read_race_holder(
    session: &Session,
    path: &str,
) -> Result<Option<Participant>, Error> {
    let client = session.client()?;
    match client.get_data(path).await {
        Ok((data, stat)) => Ok(Some(Participant {
            id: String::from_utf8_lossy(&data).into_owned(),
            node: path.to_string(),
            token: FencingToken(stat.czxid),
            session: SessionId(stat.ephemeral_owner),
            is_leader: true,
        })),
        Err(rzk_client::Error::NoNode) => Ok(None),
        Err(e) => Err(Error::from_zk(e, path)),
    }
}
