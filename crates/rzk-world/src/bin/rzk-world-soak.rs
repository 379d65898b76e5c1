//! Soak runs of the world: many seeds on several threads, a release build's job.
//!
//!     cargo run --release -p rzk-world --bin rzk-world-soak -- --seeds 10000 [--first F]
//!         [--threads T] [--faulty-s S] [--calm-s S] [--bug lease]
//!
//! Each thread runs worlds of its own (a world's seeded sources are the thread's), taking the
//! next seed from a shared counter. The first failure stops the run: it is printed, shrunk,
//! and the process exits 1. Exit 2: bad arguments.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rzk_world::{run, shrink, Failure, Options};

/// Seeds between two progress lines.
const PROGRESS_EVERY: u64 = 1_000;

struct Args {
    seeds: u64,
    first: u64,
    threads: usize,
    options: Options,
}

fn parse() -> Result<Args, String> {
    let mut args = Args { seeds: 1_000, first: 0, threads: 2, options: Options::default() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{flag} {v}: not a number"));
        match flag.as_str() {
            "--seeds" => args.seeds = number(value()?)?,
            "--first" => args.first = number(value()?)?,
            "--threads" => args.threads = number(value()?)?.max(1) as usize,
            "--faulty-s" => args.options.faulty = Duration::from_secs(number(value()?)?),
            "--calm-s" => args.options.calm = Duration::from_secs(number(value()?)?),
            "--bug" => match value()?.as_str() {
                "lease" => {
                    args.options.bug = Some(rzk_recipes::bugs::Bug::LeaseTrustsRequestedTimeout)
                }
                other => return Err(format!("--bug {other}: the known bugs are: lease")),
            },
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rzk-world-soak: {e}");
            std::process::exit(2);
        }
    };
    let next = AtomicU64::new(args.first);
    let end = args.first + args.seeds;
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<Failure>> = Mutex::new(None);
    let (holds, faults) = (AtomicU64::new(0), AtomicU64::new(0));
    let t = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..args.threads {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        return;
                    }
                    match run(seed, &args.options) {
                        Ok(o) => {
                            holds.fetch_add(o.holds as u64, Ordering::Relaxed);
                            faults.fetch_add(o.faults as u64, Ordering::Relaxed);
                        }
                        Err(f) => {
                            stop.store(true, Ordering::Relaxed);
                            failed.lock().expect("no panic holding it").get_or_insert(f);
                        }
                    }
                    if (seed + 1 - args.first) % PROGRESS_EVERY == 0 {
                        eprintln!("{} seeds, {:.0?}", seed + 1 - args.first, t.elapsed());
                    }
                }
            });
        }
    });
    if let Some(f) = failed.into_inner().expect("no panic holding it") {
        println!("{f}");
        match shrink(f.seed, &args.options) {
            Some(s) => println!("{s}"),
            None => println!("seed {} did not fail again when shrinking", f.seed),
        }
        std::process::exit(1);
    }
    println!(
        "{} seeds from {} in {:.1?} on {} threads: {} holds, {} faults, no invariant broken",
        args.seeds,
        args.first,
        t.elapsed(),
        args.threads,
        holds.into_inner(),
        faults.into_inner()
    );
}
