//! Service registry and discovery: curator-x-discovery's layout and JSON
//! ([`ServiceDiscovery`], [`ServiceInstance`], [`ServiceProvider`]), and the plain
//! EPHEMERAL_SEQUENTIAL `host:port` layout ([`ServerList`]), both kept registered across
//! session losses by one registrar; live views of both ([`ServiceCache`], [`ServerCache`]) on
//! one-level tree caches.

mod instance;
mod live;
mod provider;
mod query;
mod registrar;
mod server_cache;
mod server_list;
mod service_cache;
mod service_discovery;

pub use instance::{ServiceInstance, ServiceType, UriPart, UriSpec, MAX_SEGMENT_BYTES};
pub use provider::{DownInstancePolicy, ProviderStrategy, Random, RoundRobin, ServiceProvider};
pub use query::MalformedInstance;
pub use server_list::{ServerEntry, ServerList, Servers, SERVER_PREFIX};
pub use service_discovery::{Instances, ServiceDiscovery, DEFAULT_BASE_PATH};

pub use live::LiveChanges;
pub use server_cache::{ServerCache, ServerChanges};
pub use service_cache::{ServiceCache, ServiceChanges};
