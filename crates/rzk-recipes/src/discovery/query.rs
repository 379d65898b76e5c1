//! Reading a registry: a parent's children with their data, retried as the plain recipes
//! retry reads, a child that vanishes between the listing and its read left out.

use crate::session::ops;
use crate::session::Session;
use crate::zk_error::ZkError;
use crate::Error;

/// A node whose data is not what the registry expects: skipped by queries, and reported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MalformedInstance {
    /// The node.
    pub path: String,
    /// What is wrong with its data.
    pub reason: String,
}

impl std::fmt::Display for MalformedInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

/// The children of `path` (`None` when it does not exist).
pub(crate) async fn children(session: &Session, path: &str) -> Result<Option<Vec<String>>, Error> {
    loop {
        let client = ops::client(session).await?;
        match client.list_children(path).await {
            Ok(names) => return Ok(Some(names)),
            Err(ZkError::NoNode) => return Ok(None),
            Err(e) => ops::pause_or_fail(e, path).await?,
        }
    }
}

/// The data of `path` (`None` when it does not exist).
pub(crate) async fn data(session: &Session, path: &str) -> Result<Option<Vec<u8>>, Error> {
    loop {
        let client = ops::client(session).await?;
        match client.get_data(path).await {
            Ok((bytes, _)) => return Ok(Some(bytes)),
            Err(ZkError::NoNode) => return Ok(None),
            Err(e) => ops::pause_or_fail(e, path).await?,
        }
    }
}

/// Every child of `parent` with its data, sorted by name; empty when `parent` does not exist.
pub(crate) async fn children_with_data(
    session: &Session,
    parent: &str,
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut names = children(session, parent).await?.unwrap_or_default();
    names.sort();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let path = crate::naming::child_path(parent, &name);
        if let Some(bytes) = data(session, &path).await? {
            out.push((path, bytes));
        }
    }
    Ok(out)
}
