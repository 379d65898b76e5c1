//! What the tree says, as plain values the pages render: no HTML here, and nothing written.
//!
//! **Invariant:** every read is bounded (a page of children, a scan's node budget, one read
//! per member) and read-only; a node that vanishes between a listing and a read is skipped,
//! not an error.

pub(crate) mod node;
pub(crate) mod recipe;
pub(crate) mod scan;
pub(crate) mod servers;
pub(crate) mod services;
pub(crate) mod sessions;
pub(crate) mod walk;

/// The path of `parent`'s child `name`.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Why a read failed: the recipes' reader's error, or the client's.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// A recipe's reader failed.
    #[error(transparent)]
    Recipes(#[from] rzk_recipes::Error),
    /// A ZooKeeper request failed.
    #[error(transparent)]
    Zookeeper(#[from] rzk_client::Error),
}

impl ReadError {
    /// The node is not there (a page for a path that is gone says so, with a 404).
    pub(crate) fn is_no_node(&self) -> bool {
        matches!(
            self,
            ReadError::Recipes(rzk_recipes::Error::NoNode { .. })
                | ReadError::Zookeeper(rzk_client::Error::NoNode)
        )
    }

    /// The session may not read the node (its ACL).
    pub(crate) fn is_no_auth(&self) -> bool {
        matches!(
            self,
            ReadError::Recipes(rzk_recipes::Error::NoAuth { .. })
                | ReadError::Zookeeper(rzk_client::Error::NoAuth)
        )
    }

    /// The path or a request is malformed (the user's to mend: a 400).
    pub(crate) fn is_bad_request(&self) -> bool {
        matches!(
            self,
            ReadError::Recipes(rzk_recipes::Error::BadArguments(_))
                | ReadError::Zookeeper(rzk_client::Error::BadArguments(_))
        )
    }
}
