//! A breadth-first walk of the tree from `/` (not `/zookeeper`), listing with getChildren2 so
//! that each node's `Stat` comes with its children, a batch of listings in flight at a time on
//! the one connection, within a bound on the nodes listed and on the children of one node
//! walked into. The overview's scan and the sessions page walk with it; each decides which
//! children to descend into.

use std::collections::VecDeque;

use rzk_client::{Client, Stat};

use super::child;

/// Listings kept in flight on the connection.
const WALK_BATCH: usize = 256;

/// Children of one node walked into; a node with more (a flat store of many nodes) is listed
/// and its first ones walked, and the walk says it was cut short.
const CHILDREN_WALKED_MAX: usize = 1_000;

/// One listed node.
pub(crate) struct Listed {
    /// Its path.
    pub path: String,
    /// Its children, sorted.
    pub children: Vec<String>,
    /// Its stat.
    pub stat: Stat,
}

/// The walk's state.
pub(crate) struct Walk<'a> {
    client: &'a Client,
    queue: VecDeque<String>,
    /// Listed nodes not handed out yet.
    ready: VecDeque<Listed>,
    max_nodes: usize,
    /// Nodes listed so far.
    pub listed: usize,
    /// A bound cut the walk short.
    pub truncated: bool,
}

impl<'a> Walk<'a> {
    pub fn new(client: &'a Client, max_nodes: usize) -> Walk<'a> {
        let queue = VecDeque::from([String::from("/")]);
        Walk { client, queue, ready: VecDeque::new(), max_nodes, listed: 0, truncated: false }
    }

    /// The next listed node (nodes gone meanwhile skipped), `None` when the walk is over. A
    /// batch of listings is sent whenever the last one is handed out.
    ///
    /// # Errors
    /// A listing's error other than the node being gone.
    ///
    /// # Cancellation safety
    /// Not safe: a batch dropped in flight is lost from the walk; a page's request is dropped
    /// whole, with its walk.
    pub async fn next(&mut self) -> Result<Option<Listed>, rzk_client::Error> {
        while self.ready.is_empty() {
            if !self.list_batch().await? {
                return Ok(None);
            }
        }
        Ok(self.ready.pop_front())
    }

    /// Lists the next batch into `ready`; false when the walk is over.
    async fn list_batch(&mut self) -> Result<bool, rzk_client::Error> {
        let n = self.queue.len().min(WALK_BATCH).min(self.max_nodes - self.listed);
        if n == 0 {
            self.truncated |= !self.queue.is_empty();
            return Ok(false);
        }
        let batch: Vec<String> = self.queue.drain(..n).collect();
        // Each request is sent as its future is made: the batch is in flight together.
        let listings: Vec<_> = batch.iter().map(|p| self.client.get_children(p)).collect();
        for (path, listing) in batch.into_iter().zip(listings) {
            self.listed += 1;
            match listing.await {
                Ok((mut children, stat)) => {
                    children.sort_unstable();
                    self.ready.push_back(Listed { path, children, stat });
                }
                Err(rzk_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Walks into `node`'s children: its first `CHILDREN_WALKED_MAX`, and no more than the
    /// node budget has room for, so the queue never outgrows what will be listed.
    pub fn descend(&mut self, node: &Listed) {
        let room = self.max_nodes.saturating_sub(self.listed + self.queue.len());
        let take = CHILDREN_WALKED_MAX.min(room);
        self.truncated |= node.children.len() > take;
        let walked = node.children.iter().take(take);
        let walked = walked.filter(|c| !(node.path == "/" && *c == "zookeeper"));
        self.queue.extend(walked.map(|c| child(&node.path, c)));
    }
}
