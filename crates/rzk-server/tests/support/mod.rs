//! What the server suites share: a zookeeper-client session made patiently.

use std::time::Duration;

use rzk_server::TestServer;
use rzk_testkit::wait::first_connect;
use zookeeper_client as zk;

/// A zookeeper-client session of `timeout` on `s`, detached (never closed on drop) if asked.
/// zookeeper-client bounds a session's whole establishment by its session timeout, which a
/// machine running every suite at once can exceed: a first connect that times out is made again
/// (`first_connect`); any other error panics.
pub async fn connect(s: &TestServer, timeout: Duration, detached: bool) -> zk::Client {
    let hosts = s.connect_string();
    let hosts = &hosts;
    first_connect(
        || async move {
            let connector = zk::Client::connector().with_session_timeout(timeout);
            let connector = if detached { connector.with_detached() } else { connector };
            connector.connect(hosts).await
        },
        |e| matches!(e, zk::Error::Timeout),
    )
    .await
}
