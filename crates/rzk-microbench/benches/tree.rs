//! The data tree through the deterministic core: a request body in, its reply (and any watch
//! events) out, writes marked durable as the shell's log thread would. No sockets, no disk.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rzk_core::state::SnapshotCursor;
use rzk_core::Core;
use rzk_microbench::{
    body, core_with_children, core_with_session, create, get_data, now, settle, CONN,
};
use rzk_proto::{PathWatch, Request};

fn run(core: &mut Core, req: &[u8]) -> usize {
    core.receive(CONN, req, now()).expect("accepted");
    settle(core)
}

fn bench_reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("core read");
    g.throughput(Throughput::Elements(1));
    let mut core = core_with_children(1000);
    let req = body(&get_data("/p/child-0000000500"), 9);
    assert_eq!(run(&mut core, &req), 1, "one reply");
    g.bench_function("getData, tree of 1000", |b| b.iter(|| run(&mut core, black_box(&req))));
    for n in [10, 1000] {
        let mut core = core_with_children(n);
        let req = body(&Request::GetChildren(PathWatch { path: "/p".into(), watch: false }), 9);
        assert_eq!(run(&mut core, &req), 1, "one reply");
        g.bench_function(format!("getChildren of {n}"), |b| {
            b.iter(|| run(&mut core, black_box(&req)))
        });
    }
    // A watch set and fired per round: getData with a watch, then setData by the same session.
    let mut core = core_with_children(10);
    let watch =
        body(&Request::GetData(PathWatch { path: "/p/child-0000000001".into(), watch: true }), 9);
    let set = body(
        &Request::SetData {
            path: "/p/child-0000000001".into(),
            data: Some(vec![1; 16]),
            version: -1,
        },
        10,
    );
    assert_eq!(run(&mut core, &watch) + run(&mut core, &set), 3, "reply, event, reply");
    g.bench_function("watch set + fired by a setData", |b| {
        b.iter(|| run(&mut core, black_box(&watch)) + run(&mut core, black_box(&set)))
    });
    g.finish();
}

fn bench_writes(c: &mut Criterion) {
    let mut g = c.benchmark_group("core write");
    g.throughput(Throughput::Elements(1));
    let mut core = core_with_children(1000);
    let set = body(
        &Request::SetData {
            path: "/p/child-0000000500".into(),
            data: Some(vec![b'y'; 100]),
            version: -1,
        },
        9,
    );
    assert_eq!(run(&mut core, &set), 1, "one reply");
    g.bench_function("setData 100 bytes, tree of 1000", |b| {
        b.iter(|| run(&mut core, black_box(&set)))
    });
    for n in [1000, 100_000] {
        let mut core = core_with_children(n);
        let create = body(&create("/p/e", 16, 1), 9); // ephemeral
        let delete = body(&Request::Delete { path: "/p/e".into(), version: -1 }, 10);
        assert_eq!(run(&mut core, &create) + run(&mut core, &delete), 2, "two replies");
        g.bench_function(format!("ephemeral create + delete, tree of {n}"), |b| {
            b.iter(|| run(&mut core, black_box(&create)) + run(&mut core, black_box(&delete)))
        });
    }
    g.finish();
}

/// The fuzzy snapshot's walk, in the chunks the server takes under its lock, over a flat
/// parent (the create workload's shape). The emit only touches what a snapshot writer reads.
fn bench_snapshot_walk(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot walk");
    let n = 100_000;
    let core = core_with_children(n);
    g.throughput(Throughput::Elements(n as u64 + 5));
    g.bench_function(format!("{n} children of one parent, 512 per chunk"), |b| {
        b.iter(|| {
            let mut cursor = SnapshotCursor::new();
            let (mut nodes, mut bytes) = (0usize, 0usize);
            while cursor.next_chunk(core.state(), 512, |p, node, acl| {
                nodes += 1;
                bytes += p.len() + node.data.as_ref().map_or(0, |d| d.len()) + acl.len();
            }) {}
            assert_eq!(nodes, n + 5, "/, /zookeeper (config, quota), /p and the children");
            black_box(bytes)
        })
    });
    g.finish();
}

fn bench_session(c: &mut Criterion) {
    let mut g = c.benchmark_group("core session");
    g.bench_function("new core + connect a session", |b| b.iter(core_with_session));
    g.finish();
}

criterion_group!(benches, bench_reads, bench_writes, bench_snapshot_walk, bench_session);
criterion_main!(benches);
