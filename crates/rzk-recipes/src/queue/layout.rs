//! How a queue's items are named and read ([`Layout`]: raw `qn-` items for the simple queue,
//! Curator's envelopes for `DistributedQueue`), what a layout's check finds, and the queue
//! path's creation: what both queues' takes share below the take itself.

use rzk_client::{Client, CreateMode};

use crate::session::acl_provider::NodeAcls;
use crate::session::ops;
use crate::zk_error::ZkError;
use crate::Error;

/// The name prefix of a queue item (Curator's and ZooKeeper's `qn-`).
pub(crate) const ITEM_PREFIX: &str = "qn-";

/// How a queue's items are named and read: raw `qn-` items here, Curator's `DistributedQueue`
/// envelopes in `distributed.rs`.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    /// The name prefix of an item node (the server appends the sequence).
    pub prefix: &'static str,
    /// Checks an item's data before a take deletes it: data that fails is left in place and
    /// reported once per handle as [`Error::BadData`], then skipped by that handle.
    pub check: fn(&[u8]) -> Result<(), String>,
    /// The mode the queue path itself is created in (its missing parents are containers).
    pub path_mode: CreateMode,
}

/// SimpleDistributedQueue's layout: any data is an item; the queue path is a container, as
/// Curator's `EnsureContainers` makes it.
pub(crate) const SIMPLE: Layout =
    Layout { prefix: ITEM_PREFIX, check: |_| Ok(()), path_mode: CreateMode::Container };

/// What the layout's check found in an item's data.
pub(crate) enum Checked {
    /// An item.
    Item,
    /// Not an item, first seen by this handle: reported, and left in place.
    Refused(String),
    /// Not an item, reported before by this handle: skipped.
    RefusedBefore,
}

/// The item names among `names`, lowest sequence first (Curator sorts the names; for
/// `<prefix><10 digits>` that is the sequence order). Foreign children are skipped.
pub(crate) fn items(mut names: Vec<String>, prefix: &str) -> Vec<String> {
    names.retain(|n| n.starts_with(prefix));
    names.sort_unstable();
    names
}

/// Creates the node `path` in `mode` (no data), its missing parents as containers; one that
/// exists already is fine. A failure a retry can cure is `Ok` after a pause.
pub(crate) async fn ensure_node(
    client: &Client,
    path: &str,
    mode: CreateMode,
    acls: &NodeAcls,
) -> Result<(), Error> {
    let created = match mode {
        CreateMode::Container => ops::mkdirs(client, path, mode, acls).await,
        _ => ops::create_with_parents(client, path, &[], mode, CreateMode::Container, acls)
            .await
            .map(drop),
    };
    match created {
        Ok(()) | Err(ZkError::NodeExists) => Ok(()),
        Err(e) => ops::pause_or_fail(e, path).await,
    }
}
