//! The discovery processes: each registers one instance of the world's service, changes it
//! (a new port, or an unregistration and a new registration) while the faults last, and keeps
//! a ServiceCache of the service. The recorder keeps what each last asked for; the world
//! compares it, and every cache, with the server once the faults stop.

use std::time::Duration;

use rzk_recipes::{
    discovery::{ServiceCache, ServiceDiscovery, ServiceInstance},
    session::Session,
};

use super::Me;

/// The registry's base path.
pub(super) const SERVICES: &str = "/world/services";
/// The one service every discovery process registers an instance of.
const SERVICE: &str = "svc";
/// The service's node, whose children are its instances.
pub(crate) fn service_path() -> String {
    format!("{SERVICES}/{SERVICE}")
}

/// The pause between two changes of a process's instance.
const CHANGE_GAP_MS: std::ops::RangeInclusive<u64> = 50..=300;
/// The pause before a failed registration is tried again.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Register this process's instance (`p<N>`, so that a new life registers the same id over
/// its last life's node), then change it now and then while the faults last.
pub(super) async fn register_and_follow(mut me: Me, session: &Session) {
    let discovery =
        ServiceDiscovery::<()>::new(session, SERVICES).expect("the registry path is valid");
    let cache =
        ServiceCache::<()>::new(session, SERVICES, SERVICE).expect("the service name is valid");
    me.rec.registry(me.process, cache, session.clone());
    let mut instance = instance_of(me.process, me.rng.u16(1..));
    register(&me, &discovery, &instance).await;
    loop {
        tokio::time::sleep(Duration::from_millis(me.rng.u64(CHANGE_GAP_MS))).await;
        if me.rec.is_calm() {
            continue;
        }
        instance = instance_of(me.process, me.rng.u16(1..));
        if me.rng.u32(0..3) < 2 {
            // The registrar takes the new data before it writes it: the registry must hold
            // it in the end, answered or not.
            me.rec.registered(me.process, instance.port);
            if let Err(e) = discovery.update(&instance).await {
                me.note(format_args!("update to port {:?} failed: {e}", instance.port));
            }
        } else {
            me.rec.registered(me.process, None);
            if let Err(e) = discovery.unregister(&instance).await {
                me.note(format_args!("unregister failed: {e}"));
            }
            register(&me, &discovery, &instance).await;
        }
    }
}

/// This process's instance on `port`, its registration time fixed so that a seed writes the
/// same bytes every run.
fn instance_of(process: usize, port: u16) -> ServiceInstance<()> {
    let mut instance =
        ServiceInstance::new(SERVICE, "10.0.0.1", port).with_id(&format!("p{process}"));
    instance.registration_time_utc = 0;
    instance
}

/// Registers `instance` until the registry says it is.
async fn register(me: &Me, discovery: &ServiceDiscovery<()>, instance: &ServiceInstance<()>) {
    loop {
        match discovery.register(instance).await {
            Ok(path) => {
                me.note(format_args!("registered {path} on port {:?}", instance.port));
                me.rec.registered(me.process, instance.port);
                return;
            }
            Err(e) => me.note(format_args!("register failed: {e}")),
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}
