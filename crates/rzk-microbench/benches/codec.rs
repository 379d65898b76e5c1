//! The wire codec alone: frames in, typed values out, and back. No core, no I/O.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rzk_microbench::{create, get_data};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{
    split_frame, MultiOp, OpCode, ReplyHeader, Request, RequestHeader, Response, Stat,
    DEFAULT_MAX_PACKET_BYTES,
};

/// What the server does with each frame it reads: check the length, then parse.
fn decode_request(frame: &[u8]) -> Request {
    let len = split_frame(frame, DEFAULT_MAX_PACKET_BYTES).expect("frame").expect("whole");
    let mut r = Reader::new(&frame[4..4 + len]);
    let header = RequestHeader::read(&mut r).expect("header");
    Request::read(OpCode::from_i32(header.op).expect("op"), &mut r).expect("body")
}

fn encode_reply(resp: &Response) -> Vec<u8> {
    let mut w = Writer::frame();
    ReplyHeader { xid: 7, zxid: 0x1_0000_0042, err: 0 }.write(&mut w);
    resp.write(&mut w);
    w.finish_frame()
}

fn stat() -> Stat {
    Stat {
        czxid: 5,
        mzxid: 9,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_001,
        version: 3,
        data_length: 100,
        pzxid: 5,
        ..Stat::default()
    }
}

fn children(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("_c_0f3e2a1b-5c3d-4e1f-8a7b-6c5d4e3f2a1b-latch-{i:010}")).collect()
}

fn bench_decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode request");
    g.throughput(Throughput::Elements(1));
    let frame = get_data("/bench/key-0000000042").to_frame(7);
    g.bench_function("getData", |b| b.iter(|| decode_request(black_box(&frame))));
    let frame = create("/bench/key-0000000042", 100, 0).to_frame(7);
    g.bench_function("create, 100-byte data", |b| b.iter(|| decode_request(black_box(&frame))));
    let ops = (0..10)
        .map(|i| MultiOp::SetData {
            path: format!("/bench/key-{i:010}"),
            data: Some(vec![1; 100]),
            version: -1,
        })
        .collect();
    let frame = Request::Multi(ops).to_frame(7);
    g.bench_function("multi of 10 setData", |b| b.iter(|| decode_request(black_box(&frame))));
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode reply");
    g.throughput(Throughput::Elements(1));
    let resp = Response::GetData { data: Some(vec![b'x'; 100]), stat: stat() };
    g.bench_function("getData, 100-byte data", |b| b.iter(|| encode_reply(black_box(&resp))));
    let resp = Response::Stat(stat());
    g.bench_function("setData (Stat)", |b| b.iter(|| encode_reply(black_box(&resp))));
    for n in [10, 1000] {
        let resp = Response::Children(children(n));
        g.bench_function(format!("getChildren, {n} election nodes"), |b| {
            b.iter(|| encode_reply(black_box(&resp)))
        });
    }
    g.finish();
}

/// The client's side of the largest reply an election reads.
fn bench_decode_reply(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode reply");
    let frame = encode_reply(&Response::Children(children(1000)));
    g.throughput(Throughput::Bytes(frame.len() as u64));
    g.bench_function("getChildren, 1000 election nodes", |b| {
        b.iter_batched(
            || frame.clone(),
            |f| {
                let mut r = Reader::new(&f[4..]);
                let _ = ReplyHeader::read(&mut r).expect("header");
                Response::read(OpCode::GetChildren, &mut r).expect("body")
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_decode, bench_encode, bench_decode_reply);
criterion_main!(benches);
