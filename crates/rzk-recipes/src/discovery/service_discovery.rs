//! curator-x-discovery's `ServiceDiscovery`: instances registered at
//! `<basePath>/<name>/<id>`, kept registered across session losses, and the queries.

use std::marker::PhantomData;

use rzk_client::{Acls, CreateMode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::instance::{validate_segment, ServiceInstance, ServiceType};
use super::query::{self, MalformedInstance};
use super::registrar::{Entry, Registrar};
use crate::naming;
use crate::session::Session;
use crate::Error;

/// The base path of the `rzk` commands and the examples (Curator has no default).
pub const DEFAULT_BASE_PATH: &str = "/services";

/// What a query found: the instances it could read, and the nodes it could not.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Instances<T> {
    /// The instances, by id.
    pub instances: Vec<ServiceInstance<T>>,
    /// Nodes whose data is not an instance (with a `T` payload): skipped.
    pub malformed: Vec<MalformedInstance>,
}

/// A service registry in curator-x-discovery's layout and JSON: Java `ServiceDiscovery`s and
/// these share one base path.
///
/// An instance is a node `<basePath>/<name>/<id>` (EPHEMERAL for [`ServiceType::Dynamic`],
/// EPHEMERAL_SEQUENTIAL for `DynamicSequential`, PERSISTENT otherwise) holding the instance's
/// JSON; missing parents are created as containers, so an unused service node is reaped.
/// Registered instances stay registered: after every reconnection, and on a new session after
/// expiry, each is checked and re-created with the same id and its **current** data (the
/// latest [`update`](ServiceDiscovery::update), not the first registration's).
///
/// Queries skip nodes that are not instances (malformed JSON from another client) and log
/// them; [`query_for_instances_reporting`](ServiceDiscovery::query_for_instances_reporting)
/// returns them too.
///
/// ```no_run
/// # async fn demo() -> Result<(), rzk_recipes::Error> {
/// use rzk_recipes::{discovery::{ServiceDiscovery, ServiceInstance}, session::{Session, SessionConfig}};
///
/// let session = Session::connect(SessionConfig::new("127.0.0.1:2181")).await?;
/// let discovery = ServiceDiscovery::<serde_json::Value>::new(&session, "/services")?;
/// let me = ServiceInstance::new("api", "10.0.0.7", 8080)
///     .with_payload(serde_json::json!({ "zone": "eu-1" }));
/// discovery.register(&me).await?;
/// for instance in discovery.query_for_instances("api").await? {
///     println!("{} at {:?}:{:?}", instance.id, instance.address, instance.port);
/// }
/// discovery.close().await?;
/// # Ok(()) }
/// ```
pub struct ServiceDiscovery<T> {
    registrar: Registrar,
    base_path: String,
    payload: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ServiceDiscovery<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceDiscovery").field("base_path", &self.base_path).finish()
    }
}

impl<T: Serialize + DeserializeOwned> ServiceDiscovery<T> {
    /// A registry at `base_path`, its nodes created with the ACLs of the session's
    /// [`crate::session::AclProvider`] (nothing is written before a registration).
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn new(session: &Session, base_path: &str) -> Result<Self, Error> {
        Self::with_registrar(session, base_path, None)
    }

    /// A registry whose nodes are created with `acls`.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad path.
    pub fn with_acls(
        session: &Session,
        base_path: &str,
        acls: Acls<'static>,
    ) -> Result<Self, Error> {
        Self::with_registrar(session, base_path, Some(acls))
    }

    fn with_registrar(
        session: &Session,
        base_path: &str,
        acls: Option<Acls<'static>>,
    ) -> Result<Self, Error> {
        naming::validate_path(base_path)?;
        Ok(ServiceDiscovery {
            registrar: Registrar::new(session, acls),
            base_path: base_path.to_string(),
            payload: PhantomData,
        })
    }

    /// The base path.
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// Registers `instance` (or, for an id already registered here, replaces its data), and
    /// keeps it registered until unregistered or closed; returns the node's path.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a name or id that is not one path segment, or a payload
    /// that cannot be serialised; [`Error::NoAuth`] and other fatal ZooKeeper errors (the
    /// registration is then dropped); [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Dropping the future may leave the instance registered (or half-way): it stays in the
    /// registry's list and the next reconnection, `unregister` or `close` settles it.
    pub async fn register(&self, instance: &ServiceInstance<T>) -> Result<String, Error> {
        instance.validate()?;
        let mode = match instance.service_type {
            ServiceType::Dynamic => CreateMode::Ephemeral,
            ServiceType::DynamicSequential => CreateMode::EphemeralSequential,
            ServiceType::Static | ServiceType::Permanent => CreateMode::Persistent,
        };
        let target = self.instance_path(&instance.name, &instance.id);
        let entry = Entry::new(target, mode, instance.to_json()?);
        self.registrar.register(&instance.id, entry).await
    }

    /// Replaces the data of a registered instance (Curator's `updateService`); a later
    /// re-registration writes this data.
    ///
    /// # Errors
    /// [`Error::NoNode`] (naming the id) when the instance is not registered here; otherwise
    /// as [`ServiceDiscovery::register`].
    ///
    /// # Cancellation safety
    /// As [`ServiceDiscovery::register`]: the new data is recorded before it is written.
    pub async fn update(&self, instance: &ServiceInstance<T>) -> Result<String, Error> {
        instance.validate()?;
        self.registrar.update(&instance.id, instance.to_json()?).await
    }

    /// Unregisters `instance` (by id) and deletes its node; false if it was not registered.
    ///
    /// # Errors
    /// [`Error::Closed`]; fatal ZooKeeper errors such as [`Error::NoAuth`].
    ///
    /// # Cancellation safety
    /// The registration is forgotten first; a dropped future may leave an EPHEMERAL node
    /// until the session ends.
    pub async fn unregister(&self, instance: &ServiceInstance<T>) -> Result<bool, Error> {
        self.registrar.unregister(&instance.id).await
    }

    /// Unregisters every instance registered here. Dropping the registry without closing it
    /// stops the re-registration but leaves EPHEMERAL nodes until the session ends.
    ///
    /// # Errors
    /// The first failed delete's; the others are still attempted.
    ///
    /// # Cancellation safety
    /// As [`ServiceDiscovery::unregister`].
    pub async fn close(self) -> Result<(), Error> {
        self.registrar.unregister_all().await
    }

    /// The names of the services (the children of the base path), sorted.
    ///
    /// # Errors
    /// [`Error::NoNode`] when the base path does not exist (as Curator's `queryForNames`);
    /// [`Error::NoAuth`]; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_names(&self) -> Result<Vec<String>, Error> {
        let names = query::children(self.registrar.session(), &self.base_path).await?;
        let mut names = names.ok_or_else(|| Error::NoNode { path: self.base_path.clone() })?;
        names.sort();
        Ok(names)
    }

    /// The instances of `name` (empty when the service does not exist); nodes that are not
    /// instances are skipped and logged.
    ///
    /// # Errors
    /// [`Error::BadArguments`] for a bad name; [`Error::NoAuth`]; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_instances(&self, name: &str) -> Result<Vec<ServiceInstance<T>>, Error> {
        Ok(self.query_for_instances_reporting(name).await?.instances)
    }

    /// [`ServiceDiscovery::query_for_instances`], with the nodes it skipped.
    ///
    /// # Errors
    /// As [`ServiceDiscovery::query_for_instances`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_instances_reporting(&self, name: &str) -> Result<Instances<T>, Error> {
        validate_segment("service name", name)?;
        let parent = naming::child_path(&self.base_path, name);
        let nodes = query::children_with_data(self.registrar.session(), &parent).await?;
        let mut found = Instances { instances: Vec::new(), malformed: Vec::new() };
        for (path, bytes) in nodes {
            match ServiceInstance::from_json(&bytes) {
                Ok(instance) => found.instances.push(instance),
                Err(reason) => {
                    tracing::warn!(%path, %reason, "skipping a node that is not a service instance");
                    found.malformed.push(MalformedInstance { path, reason });
                }
            }
        }
        Ok(found)
    }

    /// The instance `id` of `name`, or `None`.
    ///
    /// # Errors
    /// [`Error::BadData`] when the node is not an instance; [`Error::BadArguments`] for a bad
    /// name or id; [`Error::NoAuth`]; [`Error::Closed`].
    ///
    /// # Cancellation safety
    /// Safe: it only reads.
    pub async fn query_for_instance(
        &self,
        name: &str,
        id: &str,
    ) -> Result<Option<ServiceInstance<T>>, Error> {
        validate_segment("service name", name)?;
        validate_segment("instance id", id)?;
        let path = self.instance_path(name, id);
        let Some(bytes) = query::data(self.registrar.session(), &path).await? else {
            return Ok(None);
        };
        let instance = ServiceInstance::from_json(&bytes);
        instance.map(Some).map_err(|reason| Error::BadData { path, reason })
    }

    fn instance_path(&self, name: &str, id: &str) -> String {
        naming::child_path(&naming::child_path(&self.base_path, name), id)
    }
}
