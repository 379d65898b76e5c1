//! Caches: a subtree or one node mirrored in memory and kept equal to the server (Curator's
//! `CuratorCache` and `NodeCache`), on one engine.
//!
//! - `options.rs`: what is cached and how, and the limits;
//! - `event.rs`: the cached node, the events and the subscriber's stream;
//! - `model.rs`: the mirror and the events each change of it makes (pure);
//! - `state.rs`: what the engine and the handles share, changed and published under one lock;
//! - `engine.rs`: the task that watches, reads and resynchronizes;
//! - `tree.rs`, `node.rs`, `json.rs`: the public types.

mod engine;
mod event;
mod json;
mod model;
mod node;
mod options;
mod state;
mod tree;

pub use event::{CacheEvent, CacheEvents, CacheItem, CachedNode};
pub use json::{JsonChanges, JsonNodeCache, Versioned};
pub use node::{NodeCache, NodeChanges, NodeState};
pub use options::{CacheOptions, CacheWatch, DEFAULT_EVENT_QUEUE, DEFAULT_MAX_NODES};
pub use tree::TreeCache;
