//! `multi` and `multiRead`: several operations in one request, all or none for writes.

use std::future::Future;

use rzk_proto::{MultiOp, MultiResult, Request, Response};

use crate::core::WhileAway;
use crate::types::{CreateOptions, Stat};
use crate::{Client, Error};

/// One write's result in a committed [`MultiWriter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiWriteResult {
    /// A version check passed.
    Check,
    /// A node was deleted.
    Delete,
    /// A node was created. ZooKeeper 3.8 answers a create inside a multi without its stat:
    /// then every field of `stat` is -1 (times 0).
    Create {
        /// The node's path, relative to the chroot.
        path: String,
        /// Its stat.
        stat: Stat,
    },
    /// A node's data was set.
    SetData {
        /// Its new stat.
        stat: Stat,
    },
}

/// Why a multi failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MultiWriteError {
    /// The request itself failed (connection loss, session ended, bad arguments).
    #[error("{source}")]
    RequestFailed {
        /// Why.
        #[from]
        source: Error,
    },
    /// The operation at `index` failed, so none was applied.
    #[error("operation at index {index} failed: {source}")]
    OperationFailed {
        /// Its position among the operations added.
        index: usize,
        /// Its error.
        source: Error,
    },
}

impl From<MultiWriteError> for Error {
    fn from(e: MultiWriteError) -> Error {
        match e {
            MultiWriteError::RequestFailed { source }
            | MultiWriteError::OperationFailed { source, .. } => source,
        }
    }
}

/// One read's result in a committed [`MultiReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiReadResult {
    /// A node's data and stat.
    Data {
        /// The data.
        data: Vec<u8>,
        /// The stat.
        stat: Stat,
    },
    /// A node's children's names.
    Children {
        /// The names.
        children: Vec<String>,
    },
    /// This read failed; the others are unaffected.
    Error {
        /// Why.
        err: Error,
    },
}

/// Writes applied together or not at all ([`Client::new_multi_writer`]).
#[derive(Debug)]
pub struct MultiWriter<'a> {
    client: &'a Client,
    ops: Vec<MultiOp>,
}

/// Reads answered together ([`Client::new_multi_reader`]).
#[derive(Debug)]
pub struct MultiReader<'a> {
    client: &'a Client,
    ops: Vec<MultiOp>,
}

impl Client {
    /// An empty [`MultiWriter`].
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter { client: self, ops: Vec::new() }
    }

    /// An empty [`MultiReader`].
    pub fn new_multi_reader(&self) -> MultiReader<'_> {
        MultiReader { client: self, ops: Vec::new() }
    }
}

/// Queues `ops` as a multi or multiRead (`make`) now; their results to come. No ops send
/// nothing and have no results.
fn send_ops(
    client: &Client,
    ops: Vec<MultiOp>,
    make: fn(Vec<MultiOp>) -> Request,
    away: WhileAway,
) -> impl Future<Output = Result<Vec<MultiResult>, Error>> + Send + 'static {
    let answer = (!ops.is_empty()).then(|| client.submit_with(Ok(make(ops)), None, away));
    async move {
        let Some(answer) = answer else { return Ok(Vec::new()) };
        match answer.await? {
            Response::Multi(results) => Ok(results),
            r => Err(Error::Protocol(format!("a multi answered with {r:?}"))),
        }
    }
}

fn stat_unknown() -> Stat {
    Stat {
        czxid: -1,
        mzxid: -1,
        pzxid: -1,
        version: -1,
        cversion: -1,
        aversion: -1,
        ephemeral_owner: -1,
        data_length: -1,
        num_children: -1,
        ctime: 0,
        mtime: 0,
    }
}

impl MultiWriter<'_> {
    /// Fails the multi unless `path` is at `version`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path.
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<(), Error> {
        self.ops.push(MultiOp::Check { path: self.client.server_path(path)?, version });
        Ok(())
    }

    /// Creates a node.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path or options.
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<(), Error> {
        self.ops.push(MultiOp::Create(self.client.create_request(path, data, options)?));
        Ok(())
    }

    /// Sets a node's data, at `expected_version` if given.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path.
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<(), Error> {
        let path = self.client.server_path(path)?;
        self.ops.push(MultiOp::SetData {
            path,
            data: Some(data.to_vec()),
            version: expected_version.unwrap_or(-1),
        });
        Ok(())
    }

    /// Deletes a node, at `expected_version` if given.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path.
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<(), Error> {
        let path = self.client.server_path(path)?;
        self.ops.push(MultiOp::Delete { path, version: expected_version.unwrap_or(-1) });
        Ok(())
    }

    /// Sends the operations added (and empties the writer); one result per operation.
    ///
    /// # Errors
    /// [`MultiWriteError::OperationFailed`] with the first failing operation's index and
    /// error (nothing was applied); [`MultiWriteError::RequestFailed`] as any request fails.
    ///
    /// Made while the session is disconnected, the multi waits for the session to be
    /// resumed, as every request does; see [`MultiWriter::commit_connected`].
    ///
    /// # Cancellation safety
    /// The multi is sent when called; dropping the future drops only its answer.
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'static {
        self.commit_while_away(WhileAway::Defer)
    }

    /// [`MultiWriter::commit`], except that while the session is disconnected the multi is
    /// not kept for the next connection: it fails at once with [`Error::ConnectionLoss`] and
    /// is never sent. For a write that must not land at some later moment, after its caller
    /// has stopped acting (a leader's fenced write once its loss signal fired).
    ///
    /// # Errors
    /// As [`MultiWriter::commit`]. [`Error::ConnectionLoss`] still leaves the outcome unknown
    /// when the connection failed after the multi was written to it.
    ///
    /// # Cancellation safety
    /// As [`MultiWriter::commit`].
    pub fn commit_connected(
        &mut self,
    ) -> impl Future<Output = Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'static {
        let away =
            if crate::bugs::connected_commit_kept() { WhileAway::Defer } else { WhileAway::Fail };
        self.commit_while_away(away)
    }

    fn commit_while_away(
        &mut self,
        away: WhileAway,
    ) -> impl Future<Output = Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'static {
        let answer = send_ops(self.client, std::mem::take(&mut self.ops), Request::Multi, away);
        let chroot = self.client.shared.chroot.clone();
        async move {
            let results = answer.await?;
            if let Some((index, err)) = results.iter().enumerate().find_map(|(i, r)| match r {
                MultiResult::Error { err } if *err != 0 && *err != -2 => Some((i, *err)),
                _ => None,
            }) {
                let source = Error::from_code(err).unwrap_or(Error::Unexpected(err));
                return Err(MultiWriteError::OperationFailed { index, source });
            }
            results
                .into_iter()
                .map(|r| match r {
                    MultiResult::Check => Ok(MultiWriteResult::Check),
                    MultiResult::Delete => Ok(MultiWriteResult::Delete),
                    MultiResult::Create { path } => Ok(MultiWriteResult::Create {
                        path: chroot.to_client(path),
                        stat: stat_unknown(),
                    }),
                    MultiResult::Create2 { path, stat } => {
                        Ok(MultiWriteResult::Create { path: chroot.to_client(path), stat })
                    }
                    MultiResult::SetData { stat } => Ok(MultiWriteResult::SetData { stat }),
                    other => {
                        Err(Error::Protocol(format!("unexpected multi result {other:?}")).into())
                    }
                })
                .collect()
        }
    }
}

impl MultiReader<'_> {
    /// Reads a node's data and stat.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path.
    pub fn add_get_data(&mut self, path: &str) -> Result<(), Error> {
        self.ops.push(MultiOp::GetData { path: self.client.server_path(path)? });
        Ok(())
    }

    /// Lists a node's children.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a malformed path.
    pub fn add_get_children(&mut self, path: &str) -> Result<(), Error> {
        self.ops.push(MultiOp::GetChildren { path: self.client.server_path(path)? });
        Ok(())
    }

    /// Sends the reads added (and empties the reader); one result per read.
    ///
    /// # Errors
    /// As any request; a failed read is a [`MultiReadResult::Error`] in the results.
    ///
    /// # Cancellation safety
    /// The request is sent when called; dropping the future drops only its answer.
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = Result<Vec<MultiReadResult>, Error>> + Send + 'static {
        let answer = send_ops(
            self.client,
            std::mem::take(&mut self.ops),
            Request::MultiRead,
            WhileAway::Defer,
        );
        async move {
            let results = answer.await?;
            results
                .into_iter()
                .map(|r| match r {
                    MultiResult::GetData { data, stat } => {
                        Ok(MultiReadResult::Data { data: data.unwrap_or_default(), stat })
                    }
                    MultiResult::GetChildren { children } => {
                        Ok(MultiReadResult::Children { children })
                    }
                    MultiResult::Error { err } => Ok(MultiReadResult::Error {
                        err: Error::from_code(err).unwrap_or(Error::Unexpected(err)),
                    }),
                    other => Err(Error::Protocol(format!("unexpected multiRead result {other:?}"))),
                })
                .collect()
        }
    }
}
