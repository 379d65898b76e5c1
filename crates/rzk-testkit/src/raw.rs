//! The one raw ZooKeeper client of the test suites: rzk-wirekit's, which writes exactly the
//! frames it is given (malformed ones too, with `write_raw`) and hands back the frames it
//! reads. Re-exported so that a test has one import for its scaffolding.

pub use rzk_wirekit::raw::*;
