//! A service registry: each service and its instances, with address, port, payload and
//! registration time; instance nodes whose JSON does not parse are listed with why.

use maud::html;

use super::{age, now_ms, tree_link, utc, Page};
use crate::read::child;
use crate::read::services::Service;

/// The page of the registry at `base`.
pub(crate) fn page(base: &str, services: &[Service]) -> Page {
    let now = now_ms();
    let body = html! {
        h1 { "Services " code { (base) } }
        @if services.is_empty() { p { "No service is registered." } }
        @for s in services {
            section {
                h2 { (s.name) span.meta { " " (s.instances.len()) " instances" } }
                table.instances {
                    thead { tr { th { "Id" } th { "Address" } th.num { "Port" } th.num { "SSL port" } th { "Registered" } th { "Payload" } } }
                    tbody {
                        @for i in &s.instances {
                            tr class=(if i.enabled { "up" } else { "disabled" }) {
                                td { a href=(tree_link(&child(&child(base, &s.name), &i.id))) { code { (i.id) } } }
                                td { (i.address.as_deref().unwrap_or("")) }
                                td.num { (i.port.map(|p| p.to_string()).unwrap_or_default()) }
                                td.num { (i.ssl_port.map(|p| p.to_string()).unwrap_or_default()) }
                                td { (utc(i.registration_time_utc)) " (" (age(i.registration_time_utc, now)) " ago)" }
                                td { @if let Some(p) = &i.payload { code { (p.to_string()) } } }
                            }
                        }
                    }
                }
                @for (id, why) in &s.malformed {
                    p.warning { "Instance node " code { (id) } " is not curator-x-discovery JSON: " (why) }
                }
            }
        }
    };
    Page { title: format!("Services {base}"), watch: Some(base.to_string()), body, timeline: false }
}
