//! `--read-only` against a ZooKeeper 3.8 member partitioned from its quorum
//! (`readonlymode.enabled=true`), the only member the CLI can reach: `get` is served, a write
//! is refused with exit 2 and the reason, and without the flag the member turns the command
//! away.

// An Apache ZooKeeper ensemble only (rzk refuses them): the `zookeeper-tests` tier.
#![cfg(feature = "zookeeper-tests")]

mod support;

use std::time::{Duration, Instant};

use rzk_testkit::ensemble::{Ensemble, Options};
use support::{rzk, stderr, stdout};

#[test]
fn a_read_only_member_serves_reads_to_the_read_only_flag_only() {
    let _serial = support::serial();
    let mut e = Ensemble::start_with_options(3, &Options::read_only());
    let a = e.follower();
    let only_a = e.proxy(a).hosts();
    let o = rzk(&e.hosts(), &["create", "/cfg", "v1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rzk(&only_a, &["get", "/cfg"]).status.success() {
        assert!(Instant::now() < deadline, "the follower did not apply the create");
        std::thread::sleep(Duration::from_millis(50));
    }
    e.partition_to_read_only(a);

    let o = rzk(&only_a, &["--read-only", "get", "/cfg"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "v1");
    let o = rzk(&only_a, &["--read-only", "set", "/cfg", "v2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("read-only server"), "{}", stderr(&o));
    let o = rzk(&only_a, &["--connect-timeout-ms", "2000", "get", "/cfg"]);
    assert_eq!(o.status.code(), Some(2), "without --read-only: {}", stdout(&o));
}
