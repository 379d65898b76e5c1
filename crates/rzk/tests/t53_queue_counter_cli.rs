//! `rzk queue` and `rzk counter` against the in-process server and Apache ZooKeeper: offered
//! items are taken in order, once, by two `rzk queue take`s; `len` and its `--json`; a take
//! with nothing to take exits 3 after `--timeout-ms`; `rzk counter add` from 4 processes at
//! once sums exactly, and `get --json` reads it. `rzk barrier`: a wait on a set barrier
//! times out with 3 and a waiting one returns once `remove` ran; two `enter --members 2`
//! processes run their commands together; an `enter` alone times out with 3 without running
//! its command and leaves no member node. `rzk queue --curator-envelope`: Curator's
//! DistributedQueue layout, a node per item or one for `offer --multi`, taken with and
//! without `--lock-path` (no lock left behind), apart from the SimpleDistributedQueue layout.

mod support;

use std::collections::BTreeSet;
use std::thread;

use support::{rzk, stdout_ok, Kind, Server};

both_servers! {
    queue => offered_items_are_taken_once_in_order_and_an_empty_take_times_out;
    counter => concurrent_adds_sum_exactly;
    barrier => a_barrier_holds_waiters_and_a_double_barrier_runs_members_together;
    curator_queue => curator_envelope_nodes_are_taken_whole_with_and_without_a_lock_path;
}

fn offered_items_are_taken_once_in_order_and_an_empty_take_times_out(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let items: Vec<String> = (0..10).map(|i| format!("job {i}")).collect();
    let mut offer = vec!["queue", "offer", "/q/jobs"];
    offer.extend(items.iter().map(String::as_str));
    stdout_ok(&cs, &offer);
    assert_eq!(stdout_ok(&cs, &["queue", "len", "/q/jobs"]), "10\n");
    assert_eq!(
        stdout_ok(&cs, &["queue", "len", "--json", "/q/jobs"]),
        "{\"path\":\"/q/jobs\",\"len\":10}\n"
    );
    let takers: Vec<_> = (0..2)
        .map(|_| {
            let cs = cs.clone();
            thread::spawn(move || stdout_ok(&cs, &["queue", "take", "--count", "5", "/q/jobs"]))
        })
        .collect();
    let mut taken = Vec::new();
    for t in takers {
        let got: Vec<String> = t.join().unwrap().lines().map(str::to_string).collect();
        let mut sorted = got.clone();
        sorted.sort_by_key(|s| s[4..].parse::<u32>().unwrap());
        assert_eq!(got, sorted, "each taker sees the items in order");
        taken.extend(got);
    }
    let taken: BTreeSet<String> = taken.into_iter().collect();
    assert_eq!(taken, items.into_iter().collect::<BTreeSet<_>>(), "every item once");

    let out = rzk(&cs, &["queue", "take", "--timeout-ms", "300", "--json", "/q/jobs"]);
    assert_eq!(out.status.code(), Some(3), "an empty take times out with 3");
    stdout_ok(&cs, &["queue", "offer", "/q/jobs", "last \"one\""]);
    assert_eq!(
        stdout_ok(&cs, &["queue", "take", "--json", "/q/jobs"]),
        "{\"item\":\"last \\\"one\\\"\"}\n"
    );
}

fn concurrent_adds_sum_exactly(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    assert_eq!(stdout_ok(&cs, &["counter", "get", "/c/hits"]), "0\n");
    let adders: Vec<_> = (0..4)
        .map(|_| {
            let cs = cs.clone();
            thread::spawn(move || {
                for _ in 0..5 {
                    stdout_ok(&cs, &["counter", "add", "--attempts", "1000", "/c/hits", "3"]);
                }
            })
        })
        .collect();
    for a in adders {
        a.join().unwrap();
    }
    assert_eq!(
        stdout_ok(&cs, &["counter", "get", "--json", "/c/hits"]),
        "{\"path\":\"/c/hits\",\"value\":60}\n"
    );
    assert_eq!(
        stdout_ok(&cs, &["counter", "add", "--json", "/c/hits", "-61"]),
        "{\"path\":\"/c/hits\",\"pre\":60,\"post\":-1}\n"
    );
}

fn a_barrier_holds_waiters_and_a_double_barrier_runs_members_together(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    stdout_ok(&cs, &["barrier", "set", "/b/gate"]);
    stdout_ok(&cs, &["barrier", "set", "/b/gate"]);
    let out = rzk(&cs, &["barrier", "wait", "--timeout-ms", "300", "/b/gate"]);
    assert_eq!(out.status.code(), Some(3), "a wait on a set barrier times out with 3");
    let waiter = {
        let cs = cs.clone();
        thread::spawn(move || rzk(&cs, &["barrier", "wait", "/b/gate"]))
    };
    stdout_ok(&cs, &["barrier", "remove", "/b/gate"]);
    assert!(waiter.join().unwrap().status.success(), "the waiter was released");
    stdout_ok(&cs, &["barrier", "wait", "--timeout-ms", "300", "/b/gate"]);

    let members: Vec<_> = (0..2)
        .map(|i| {
            let cs = cs.clone();
            thread::spawn(move || {
                let echo = format!("echo member {i}; exit {i}");
                let args = ["barrier", "enter", "/b/double", "--members", "2", "--"];
                rzk(&cs, &[&args[..], &["sh", "-c", &echo]].concat())
            })
        })
        .collect();
    for (i, m) in members.into_iter().enumerate() {
        let out = m.join().unwrap();
        assert_eq!(out.status.code(), Some(i as i32), "the command's status");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("member {i}\n"));
    }

    let lonely = ["barrier", "enter", "/b/lonely", "--members", "2", "--timeout-ms", "300"];
    let out = rzk(&cs, &[&lonely[..], &["--", "echo", "ran"]].concat());
    assert_eq!(out.status.code(), Some(3), "an enter alone times out with 3");
    assert!(out.stdout.is_empty(), "the command did not run");
    // No member node is left: the barrier node is empty, or already reaped as a container.
    for path in ["/b/double", "/b/lonely"] {
        let out = rzk(&cs, &["ls", path]);
        let (left, err) =
            (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let gone = !out.status.success() && err.contains("does not exist");
        assert!(
            gone || (out.status.success() && left.trim() == "[]"),
            "left in {path}: {left}{err}"
        );
    }
}

fn curator_envelope_nodes_are_taken_whole_with_and_without_a_lock_path(kind: Kind) {
    let server = Server::start(kind);
    let cs = server.hosts();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let raw = rt.block_on(rzk_client::Client::connect(&cs)).unwrap();
    let ls = |path: &str| rt.block_on(raw.list_children(path)).unwrap();
    let q = ["queue", "--curator-envelope"];
    let run = |args: &[&str]| stdout_ok(&cs, &[&q[..], args].concat());
    run(&["offer", "/q/curator", "a", "b"]);
    run(&["offer", "--multi", "/q/curator", "c", "d \"e\""]);
    assert_eq!(run(&["len", "/q/curator"]), "3\n", "a node per item, one for --multi");
    let names = ls("/q/curator");
    assert!(names.len() == 3 && names.iter().all(|n| n.starts_with("queue-")), "{names:?}");
    assert_eq!(stdout_ok(&cs, &["queue", "len", "/q/curator"]), "0\n", "not qn- nodes");

    assert_eq!(run(&["take", "--count", "2", "/q/curator"]), "a\nb\n");
    assert_eq!(
        run(&["take", "--json", "--lock-path", "/q/curator-locks", "/q/curator"]),
        "{\"item\":\"c\"}\n{\"item\":\"d \\\"e\\\"\"}\n",
        "a node's items together, under the lock path"
    );
    let locked = ["take", "--lock-path", "/q/curator-locks", "--timeout-ms", "300", "/q/curator"];
    let out = rzk(&cs, &[&q[..], &locked[..]].concat());
    assert_eq!(out.status.code(), Some(3), "an empty take times out with 3");
    assert_eq!(ls("/q/curator-locks"), Vec::<String>::new(), "no lock left");
    assert_eq!(ls("/q/curator"), Vec::<String>::new(), "every node taken");

    let out = rzk(&cs, &["queue", "take", "--lock-path", "/q/curator-locks", "/q/curator"]);
    assert_eq!(out.status.code(), Some(2), "--lock-path needs --curator-envelope");
}
