//! Soak runs of the world: many seeds on several threads, a release build's job.
//!
//!     cargo run --release -p rzk-world --bin rzk-world-soak -- --seeds 10000 [--first F]
//!         [--threads T] [--faulty-s S] [--calm-s S] [--bug lease] [--mix mutex=4,queue=2]
//!         [--clock-permille 100] [--expect-found]
//!
//! The seeds run as `rzk_world::sweep` runs them. The first failure stops the run: it is
//! printed, shrunk, and the process exits 1. With `--expect-found` (and a `--bug`), the run
//! proves instead that the world finds the bug within the seeds: the failure is printed, not
//! shrunk, and the process exits 0; it exits 1 when every seed kept the invariants. Exit 2:
//! bad arguments.

#![forbid(unsafe_code)]

use std::time::Duration;

use rzk_world::{shrink, sweep, Options};

struct Args {
    seeds: u64,
    first: u64,
    threads: usize,
    options: Options,
    expect_found: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seeds: 1_000,
        first: 0,
        threads: 2,
        options: Options::default(),
        expect_found: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--expect-found" {
            args.expect_found = true;
            continue;
        }
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|_| format!("{flag} {v}: not a number"));
        match flag.as_str() {
            "--seeds" => args.seeds = number(value()?)?,
            "--first" => args.first = number(value()?)?,
            "--threads" => args.threads = number(value()?)?.max(1) as usize,
            "--faulty-s" => args.options.faulty = Duration::from_secs(number(value()?)?),
            "--calm-s" => args.options.calm = Duration::from_secs(number(value()?)?),
            "--mix" => {
                args.options.mix =
                    rzk_world::Mix::parse(&value()?).map_err(|e| format!("--mix {e}"))?
            }
            "--clock-permille" => {
                let v = value()?;
                let rate = v.parse().map_err(|_| format!("--clock-permille {v}: not a number"))?;
                args.options.clock_permille = Some(rate);
            }
            "--bug" => {
                let bug = rzk_world::bug_named(&value()?).map_err(|e| format!("--bug {e}"))?;
                args.options.bug = Some(bug);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.expect_found && args.options.bug.is_none() {
        return Err("--expect-found needs a --bug to find".into());
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
    match sweep(args.first, args.seeds, args.threads, &args.options) {
        Ok(t) => {
            println!(
                "{} seeds from {} in {:.1?} on {} threads: {} holds, {} faults, no invariant \
                 broken",
                t.seeds, args.first, t.elapsed, args.threads, t.holds, t.faults
            );
            if args.expect_found {
                println!("the bug went unnoticed");
                std::process::exit(1);
            }
        }
        Err(f) if args.expect_found => {
            // What broke and its replay command; the trace only on a real failure.
            for line in f.to_string().lines().take(2) {
                println!("{line}");
            }
        }
        Err(f) => {
            println!("{f}");
            match shrink(f.seed, &args.options) {
                Some(s) => println!("{s}"),
                None => println!("seed {} did not fail again when shrinking", f.seed),
            }
            std::process::exit(1);
        }
    }
}
