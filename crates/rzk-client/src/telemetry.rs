//! Every metric the client emits, through the `metrics` facade (as the recipes do): an
//! application's recorder picks them up, and with none installed each call is a check of an
//! unset global. Names carry the `rzk_client_` prefix and their unit; docs/client.md lists
//! them.

use std::time::Duration;

use metrics::{counter, histogram};

/// Connection attempts, labelled by `outcome`: `connected`, `expired` (the server no longer
/// knows the session), `refused` (closed during the handshake: behind the client's zxid,
/// read-only or not serving), `failed` (TCP or transport error), `timed_out`.
pub const CONNECT_ATTEMPTS: &str = "rzk_client_connect_attempts_total";
/// Sessions resumed on a new connection after one was lost.
pub const RECONNECTS: &str = "rzk_client_reconnects_total";
/// Connections lost while the session lived.
pub const DISCONNECTS: &str = "rzk_client_disconnects_total";
/// How long each disconnection lasted, from the loss to the resumed session.
pub const DISCONNECTED_DURATION: &str = "rzk_client_disconnected_seconds";
/// Time from a request's send to its reply.
pub const REQUEST_DURATION: &str = "rzk_client_request_duration_seconds";

/// One connection attempt ended with `outcome`.
pub(crate) fn attempt(outcome: &'static str) {
    counter!(CONNECT_ATTEMPTS, "outcome" => outcome).increment(1);
}

/// A connection was lost.
pub(crate) fn disconnected() {
    counter!(DISCONNECTS).increment(1);
}

/// The session was resumed after `away` without a connection.
pub(crate) fn reconnected(away: Duration) {
    counter!(RECONNECTS).increment(1);
    histogram!(DISCONNECTED_DURATION).record(away.as_secs_f64());
}

/// A request was answered `took` after it was sent.
pub(crate) fn request(took: Duration) {
    histogram!(REQUEST_DURATION).record(took.as_secs_f64());
}
