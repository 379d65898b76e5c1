//! `rzk queue` and `rzk counter` against the in-process server and Apache ZooKeeper: offered
//! items are taken in order, once, by two `rzk queue take`s; `len` and its `--json`; a take
//! with nothing to take exits 3 after `--timeout-ms`; `rzk counter add` from 4 processes at
//! once sums exactly, and `get --json` reads it.

mod support;

use std::collections::BTreeSet;
use std::process::{Command, Output, Stdio};
use std::thread;

use support::{Kind, Server};

both_servers! {
    queue => offered_items_are_taken_once_in_order_and_an_empty_take_times_out;
    counter => concurrent_adds_sum_exactly;
}

fn rzk(cs: &str, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_rzk"))
        .args(["--connect", cs])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some(),
        "rzk {args:?} died: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout_ok(cs: &str, args: &[&str]) -> String {
    let out = rzk(cs, args);
    assert!(out.status.success(), "rzk {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
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
