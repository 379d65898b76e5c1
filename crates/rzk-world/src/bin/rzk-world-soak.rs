//! Soak runs of the world: many seeds on several threads, a release build's job.
//!
//!     cargo run --release -p rzk-world --bin rzk-world-soak -- --seeds 10000 [--first F]
//!         [--threads T] [--faulty-s S] [--calm-s S] [--bug lease]
//!
//! The seeds run as `rzk_world::sweep` runs them. The first failure stops the run: it is
//! printed, shrunk, and the process exits 1. Exit 2: bad arguments.

#![forbid(unsafe_code)]

use std::time::Duration;

use rzk_world::{shrink, sweep, Options};

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
            "--bug" => {
                let bug = rzk_world::bug_named(&value()?).map_err(|e| format!("--bug {e}"))?;
                args.options.bug = Some(bug);
            }
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
    match sweep(args.first, args.seeds, args.threads, &args.options) {
        Ok(t) => println!(
            "{} seeds from {} in {:.1?} on {} threads: {} holds, {} faults, no invariant broken",
            t.seeds, args.first, t.elapsed, args.threads, t.holds, t.faults
        ),
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
