//! The sessions that hold ephemeral nodes, and the nodes each holds, from the tree itself:
//! every listed node's `Stat` names its owner. It works on any ZooKeeper-protocol server and
//! needs no four-letter word; a session with no ephemeral node does not appear.

use std::collections::BTreeMap;

use rzk_client::Client;
use rzk_recipes::session::is_session_owner;

use super::walk::Walk;

/// The sessions found, each with its ephemeral nodes in path order.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    /// Owner session id to its nodes.
    pub by_owner: BTreeMap<i64, Vec<String>>,
    /// Nodes listed.
    pub listed: usize,
    /// A bound cut the walk short: more sessions or nodes may exist.
    pub truncated: bool,
}

/// Walks the tree, listing at most `max_nodes` nodes, into every node.
///
/// # Errors
/// The client's error when a listing fails for another reason than the node being gone.
pub(crate) async fn read(client: &Client, max_nodes: usize) -> Result<Sessions, rzk_client::Error> {
    let mut out = Sessions::default();
    let mut walk = Walk::new(client, max_nodes);
    while let Some(node) = walk.next().await? {
        if is_session_owner(node.stat.ephemeral_owner) {
            out.by_owner.entry(node.stat.ephemeral_owner).or_default().push(node.path.clone());
        }
        walk.descend(&node);
    }
    for nodes in out.by_owner.values_mut() {
        nodes.sort_unstable();
    }
    (out.listed, out.truncated) = (walk.listed, walk.truncated);
    Ok(out)
}
