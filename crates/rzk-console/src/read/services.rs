//! A curator-x-discovery registry: its services, and each service's instances with address,
//! port, payload and registration time; instances whose JSON does not parse are listed as
//! such, not dropped.

use rzk_client::Client;
use rzk_recipes::discovery::ServiceInstance;

use super::child;

/// An instance, with any payload as JSON.
pub(crate) type Instance = ServiceInstance<serde_json::Value>;

/// curator-x-discovery's JSON, or `None` for anything else.
pub(crate) fn parse_instance(data: &[u8]) -> Option<Instance> {
    Instance::from_json(data).ok()
}

/// One service.
#[derive(Debug, Clone)]
pub(crate) struct Service {
    /// Its name.
    pub name: String,
    /// Its instances, by id.
    pub instances: Vec<Instance>,
    /// Instance nodes whose data is not an instance: the node's name and why.
    pub malformed: Vec<(String, String)>,
}

/// Reads every service under `base` and its instances (a listing per service and a read per
/// instance).
///
/// # Errors
/// The client's error (`NoNode` for a base that does not exist).
pub(crate) async fn read(client: &Client, base: &str) -> Result<Vec<Service>, rzk_client::Error> {
    let mut names = client.list_children(base).await?;
    names.sort_unstable();
    let mut services = Vec::with_capacity(names.len());
    for name in names {
        let path = child(base, &name);
        let mut ids = match client.list_children(&path).await {
            Ok(ids) => ids,
            Err(rzk_client::Error::NoNode) => continue,
            Err(e) => return Err(e),
        };
        ids.sort_unstable();
        let mut service = Service { name, instances: Vec::new(), malformed: Vec::new() };
        for id in ids {
            match client.get_data(&child(&path, &id)).await {
                Ok((data, _)) => match Instance::from_json(&data) {
                    Ok(i) => service.instances.push(i),
                    Err(why) => service.malformed.push((id, why)),
                },
                Err(rzk_client::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        services.push(service);
    }
    Ok(services)
}
