//! The processes of the recipes whose work is data: a counter's increments and a queue's
//! offers and takes, each answer reported to the recorder, each unanswered one left unknown.

use std::time::Duration;

use rzk_client::CreateMode;
use rzk_recipes::{
    cache::{CacheOptions, TreeCache},
    counter::{DistributedAtomicLong, RetryPolicy},
    queue::SimpleDistributedQueue,
    session::Session,
    Error,
};

use super::{Me, Op};

/// The counter's node.
pub(super) const COUNTER: &str = "/world/counter";
/// The queue's node.
pub(super) const QUEUE: &str = "/world/queue";
/// The subtree the cache processes write and cache.
pub(super) const CONFIG: &str = "/world/config";
/// The keys they write under it.
const CONFIG_KEYS: u64 = 8;
/// The pause between two increments: a counter process is one of many clients, not a load
/// generator, and a world's cost is its operations.
const INCREMENT_GAP_MS: std::ops::RangeInclusive<u64> = 20..=150;
/// The pause between two rounds of a queue process.
const ROUND_GAP_MS: std::ops::RangeInclusive<u64> = 20..=150;
/// Items a queue process offers, then takes, in one round, at most.
const ITEMS_PER_ROUND_MAX: usize = 3;
/// How long a take waits for an item.
const TAKE_WAIT: Duration = Duration::from_millis(200);

/// Increment the counter, forever. Only a lost race on every retry is known to have applied
/// nothing; any other failure leaves the increment unknown.
pub(super) async fn count(mut me: Me, session: &Session) {
    let counter = DistributedAtomicLong::new(session, COUNTER, RetryPolicy::default())
        .expect("the counter path is valid");
    loop {
        let op = me.rec.sent(Op::Increment);
        match counter.increment().await {
            Ok(v) => me.rec.incremented(op, v.pre, v.post),
            Err(e) => {
                let unknown = !matches!(e, Error::RetriesExhausted { .. });
                me.note(format_args!("increment failed: {e}"));
                me.rec.failed(op, unknown);
            }
        }
        tokio::time::sleep(Duration::from_millis(me.rng.u64(INCREMENT_GAP_MS))).await;
    }
}

/// Offer a few items, then take a few, forever. Each item's data is its world-unique id.
pub(super) async fn offer_and_take(mut me: Me, session: &Session) {
    let queue = SimpleDistributedQueue::new(session, QUEUE).expect("the queue path is valid");
    me.rec.queue_handle();
    loop {
        for _ in 0..me.rng.usize(1..=ITEMS_PER_ROUND_MAX) {
            let id = me.rec.new_item();
            match queue.offer(&id.to_be_bytes()).await {
                Ok(name) => {
                    me.note(format_args!("offered {id:#x} as {name}"));
                    me.rec.offered(id);
                }
                Err(e) => me.note(format_args!("offer of {id:#x} failed: {e}")),
            }
        }
        for _ in 0..me.rng.usize(1..=ITEMS_PER_ROUND_MAX) {
            let op = me.rec.sent(Op::Take);
            match queue.take_timeout(TAKE_WAIT).await {
                Ok(item) => {
                    let id = item.map(|data| be_u64(&data));
                    if let Some(id) = id {
                        me.note(format_args!("took {id:#x}"));
                    }
                    me.rec.took(op, id.map(|id| (id, me.process)));
                }
                Err(e) => {
                    me.note(format_args!("take failed: {e}"));
                    me.rec.failed(op, true);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(me.rng.u64(ROUND_GAP_MS))).await;
    }
}

/// Keep a TreeCache of [`CONFIG`], and write its keys (create, set, delete, drawn) while the
/// faults last; in the calm, only the cache works, and the world compares it with the server.
pub(super) async fn write_and_cache(mut me: Me, session: &Session) {
    let cache =
        TreeCache::new(session, CONFIG, CacheOptions::tree()).expect("the cache path is valid");
    me.rec.cache(me.process, cache.clone());
    let anyone = CreateMode::Persistent.with_acls(rzk_client::Acls::anyone_all());
    loop {
        if let (false, Ok(client)) = (me.rec.is_calm(), session.client()) {
            let key = format!("{CONFIG}/k{}", me.rng.u64(0..CONFIG_KEYS));
            let value = me.rng.u64(..).to_be_bytes();
            let done = match me.rng.u32(0..3) {
                0 => client.create(&key, &value, &anyone).await.map(drop),
                1 => client.set_data(&key, &value, None).await.map(drop),
                _ => client.delete(&key, None).await,
            };
            if let Err(e) = done {
                me.note(format_args!("write of {key}: {e}"));
            }
        }
        tokio::time::sleep(Duration::from_millis(me.rng.u64(ROUND_GAP_MS))).await;
    }
}

/// Eight big-endian bytes as a number: a queue item's id, the counter's value. Other data
/// reads as 0, which no item has (the check reports it as never offered) and which an absent
/// or empty counter node holds.
pub(crate) fn be_u64(data: &[u8]) -> u64 {
    <[u8; 8]>::try_from(data).map_or(0, u64::from_be_bytes)
}
