//! Curator-compatible leader election on ZooKeeper (work in progress).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
