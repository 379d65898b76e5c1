//! What a benchmark run reports, as one line of text or one JSON object. The benchmark
//! scripts parse both: the keys and the wording are an interface.

use crate::config::Workload;
use rzk_wirekit::stats::{percentile, Samples};

/// The result of one `rzk bench` run.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// A load workload: operations and their latency.
    Load(LoadReport),
    /// An election workload: rounds (handoffs, leaderships, failovers) and their latency.
    Election(ElectionReport),
    /// config-propagation: one write's updates of many caches.
    Propagation(PropagationReport),
    /// sessions: many sessions held.
    Sessions(SessionsReport),
}

impl Report {
    /// The report as one line of text or, with `json`, one JSON object.
    pub fn render(&self, json: bool) -> String {
        match (self, json) {
            (Report::Load(r), true) => r.json(),
            (Report::Load(r), false) => r.text(),
            (Report::Election(r), true) => r.json(),
            (Report::Election(r), false) => r.text(),
            (Report::Propagation(r), true) => r.json(),
            (Report::Propagation(r), false) => r.text(),
            (Report::Sessions(r), true) => r.json(),
            (Report::Sessions(r), false) => r.text(),
        }
    }
}

/// Latency percentiles of samples in microseconds: p50, p99 and p99.9.
fn summary<T: Copy + Default + Ord>(samples: &mut [T]) -> (T, T, T) {
    samples.sort_unstable();
    (percentile(samples, 0.5), percentile(samples, 0.99), percentile(samples, 0.999))
}

/// The result of a load workload (create, set, get, mixed, churn, fanout, populate,
/// handoff-event, handoff-read).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// The workload.
    pub workload: Workload,
    /// Operations completed.
    pub ops: usize,
    /// Wall-clock time of the run, seconds.
    pub seconds: f64,
    /// Median latency, microseconds.
    pub p50_us: u32,
    /// 99th percentile latency, microseconds.
    pub p99_us: u32,
    /// 99.9th percentile latency, microseconds.
    pub p999_us: u32,
    /// Operations the server answered with an error.
    pub errors: u64,
    /// Fan-out only: from the write's reply to the round's last notification, p50 and p99 in
    /// microseconds (0 for a round whose watchers were all notified before the reply came).
    pub after_ack_us: Option<(u32, u32)>,
}

impl LoadReport {
    /// Pools every session's samples.
    pub fn new(workload: Workload, sessions: &[Samples], seconds: f64) -> LoadReport {
        let mut lat: Vec<u32> =
            sessions.iter().flat_map(|s| s.latencies_us.iter().copied()).collect();
        let (p50_us, p99_us, p999_us) = summary(&mut lat);
        let errors = sessions.iter().map(|s| s.errors).sum();
        let ops = lat.len();
        LoadReport { workload, ops, seconds, p50_us, p99_us, p999_us, errors, after_ack_us: None }
    }

    /// The report with the fan-out's notification tail after each write's reply.
    pub fn with_after_ack(mut self, after_ack: &Samples) -> LoadReport {
        let mut lat = after_ack.latencies_us.clone();
        let (p50, p99, _) = summary(&mut lat);
        self.after_ack_us = Some((p50, p99));
        self
    }

    fn json(&self) -> String {
        let LoadReport { ops, seconds, p50_us, p99_us, p999_us, errors, .. } = self;
        let after_ack = match self.after_ack_us {
            Some((p50, p99)) => format!(",\"after_ack_p50_us\":{p50},\"after_ack_p99_us\":{p99}"),
            None => String::new(),
        };
        format!(
            "{{\"workload\":\"{}\",\"ops\":{ops},\"seconds\":{seconds:.3},\"ops_per_s\":{:.1},\"p50_us\":{p50_us},\"p99_us\":{p99_us},\"p999_us\":{p999_us},\"errors\":{errors}{after_ack}}}",
            self.workload.name(),
            *ops as f64 / seconds
        )
    }

    fn text(&self) -> String {
        let LoadReport { ops, seconds, p50_us, p99_us, p999_us, errors, .. } = self;
        let after_ack = match self.after_ack_us {
            Some((p50, p99)) => format!("; after the reply p50 {p50} us, p99 {p99} us"),
            None => String::new(),
        };
        format!(
            "{}: {ops} ops in {seconds:.2}s = {:.0} ops/s; latency p50 {p50_us} us, p99 {p99_us} us, p999 {p999_us} us{after_ack}; {errors} errors",
            self.workload.name(),
            *ops as f64 / seconds
        )
    }
}

/// The result of an election workload (handoff, selector, failover).
#[derive(Debug, Clone, PartialEq)]
pub struct ElectionReport {
    /// The workload.
    pub workload: Workload,
    /// Participants in the election.
    pub participants: usize,
    /// How followers watched (`predecessor` or `herd`).
    pub strategy: &'static str,
    /// Rounds completed: handoffs, leaderships or failovers.
    pub rounds: usize,
    /// Wall-clock time of the measured rounds, seconds.
    pub seconds: f64,
    /// One latency per round, microseconds (none for selector).
    pub samples_us: Vec<u64>,
    /// Watch notifications all participants received per leadership change (handoff).
    pub notifications_per_change: f64,
    /// Election calls that failed (a participant that could not join, wait or resign).
    pub errors: u64,
}

impl ElectionReport {
    /// A report of one latency sample per round and no watch notifications counted.
    pub(crate) fn timed(
        workload: Workload,
        participants: usize,
        strategy: &'static str,
        seconds: f64,
        samples_us: Vec<u64>,
        errors: u64,
    ) -> ElectionReport {
        ElectionReport {
            workload,
            participants,
            strategy,
            rounds: samples_us.len(),
            seconds,
            samples_us,
            notifications_per_change: 0.0,
            errors,
        }
    }

    fn percentiles(&self) -> (u64, u64, u64) {
        summary(&mut self.samples_us.clone())
    }

    fn json(&self) -> String {
        let ElectionReport { participants, strategy, rounds, seconds, errors, .. } = self;
        let (p50, p99, p999) = self.percentiles();
        format!(
            "{{\"workload\":\"{}\",\"participants\":{participants},\"strategy\":\"{strategy}\",\"rounds\":{rounds},\"seconds\":{seconds:.3},\"per_s\":{:.1},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999},\"notifications_per_change\":{:.2},\"errors\":{errors}}}",
            self.workload.name(),
            *rounds as f64 / seconds,
            self.notifications_per_change
        )
    }

    fn text(&self) -> String {
        let ElectionReport { participants, strategy, rounds, seconds, errors, .. } = self;
        let (p50, p99, p999) = self.percentiles();
        format!(
            "{} ({participants} participants, {strategy}): {rounds} rounds in {seconds:.2}s = {:.1}/s; p50 {p50} us, p99 {p99} us, p999 {p999} us; {:.2} notifications per change; {errors} errors",
            self.workload.name(),
            *rounds as f64 / seconds,
            self.notifications_per_change
        )
    }
}

/// What config-propagation measured.
#[derive(Debug, Clone, PartialEq)]
pub struct PropagationReport {
    /// Caches of the node.
    pub caches: usize,
    /// Sessions carrying them.
    pub sessions: usize,
    /// Writes measured.
    pub writes: usize,
    /// Time measured, seconds.
    pub seconds: f64,
    /// Per write and cache: from the write's send to the cache's update, microseconds.
    pub update_us: Vec<u64>,
    /// Per write: from its send to the last cache's update, microseconds.
    pub last_us: Vec<u64>,
}

impl PropagationReport {
    pub(crate) fn new(caches: usize, sessions: usize) -> Self {
        PropagationReport {
            caches,
            sessions,
            writes: 0,
            seconds: 0.0,
            update_us: Vec::new(),
            last_us: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, latencies: Vec<u64>) {
        self.writes += 1;
        self.last_us.push(latencies.iter().copied().max().unwrap_or(0));
        self.update_us.extend(latencies);
    }

    /// (p50, p99, p99.9) of every update, then (p50, p99) of the last ones, microseconds.
    fn percentiles(&self) -> ((u64, u64, u64), (u64, u64)) {
        let (p50, p99, p999) = summary(&mut self.update_us.clone());
        let (l50, l99, _) = summary(&mut self.last_us.clone());
        ((p50, p99, p999), (l50, l99))
    }

    fn json(&self) -> String {
        let PropagationReport { caches, sessions, writes, seconds, .. } = self;
        let ((p50, p99, p999), (l50, l99)) = self.percentiles();
        format!(
            "{{\"workload\":\"{}\",\"caches\":{caches},\"sessions\":{sessions},\"writes\":{writes},\"seconds\":{seconds:.3},\"updates\":{},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999},\"last_p50_us\":{l50},\"last_p99_us\":{l99}}}",
            Workload::ConfigPropagation.name(),
            self.update_us.len()
        )
    }

    fn text(&self) -> String {
        let PropagationReport { caches, sessions, writes, seconds, .. } = self;
        let ((p50, p99, p999), (l50, l99)) = self.percentiles();
        format!(
            "{} ({caches} caches on {sessions} sessions): {writes} writes in {seconds:.2}s; to each cache p50 {p50} us, p99 {p99} us, p999 {p999} us; to the last cache p50 {l50} us, p99 {l99} us",
            Workload::ConfigPropagation.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_report_keys_and_wording() {
        let s = Samples { latencies_us: vec![30, 10, 20], errors: 1 };
        let r = Report::Load(LoadReport::new(Workload::FanoutPersistent, &[s], 2.0));
        assert_eq!(
            r.render(true),
            "{\"workload\":\"fanout-persistent\",\"ops\":3,\"seconds\":2.000,\"ops_per_s\":1.5,\"p50_us\":20,\"p99_us\":30,\"p999_us\":30,\"errors\":1}"
        );
        assert_eq!(
            r.render(false),
            "fanout-persistent: 3 ops in 2.00s = 2 ops/s; latency p50 20 us, p99 30 us, p999 30 us; 1 errors"
        );
        let tail = Samples { latencies_us: vec![0, 7, 5], errors: 0 };
        let Report::Load(load) = r else { unreachable!() };
        let r = Report::Load(load.with_after_ack(&tail));
        assert!(r
            .render(true)
            .ends_with("\"errors\":1,\"after_ack_p50_us\":5,\"after_ack_p99_us\":7}"));
        assert!(r
            .render(false)
            .ends_with("p999 30 us; after the reply p50 5 us, p99 7 us; 1 errors"));
    }

    #[test]
    fn election_report_keys_and_wording() {
        let r = Report::Election(ElectionReport {
            workload: Workload::Handoff,
            participants: 3,
            strategy: "herd",
            rounds: 2,
            seconds: 0.5,
            samples_us: vec![900, 100],
            notifications_per_change: 2.0,
            errors: 0,
        });
        assert_eq!(
            r.render(true),
            "{\"workload\":\"handoff\",\"participants\":3,\"strategy\":\"herd\",\"rounds\":2,\"seconds\":0.500,\"per_s\":4.0,\"p50_us\":900,\"p99_us\":900,\"p999_us\":900,\"notifications_per_change\":2.00,\"errors\":0}"
        );
        assert_eq!(
            r.render(false),
            "handoff (3 participants, herd): 2 rounds in 0.50s = 4.0/s; p50 900 us, p99 900 us, p999 900 us; 2.00 notifications per change; 0 errors"
        );
    }

    #[test]
    fn propagation_report_keys_and_wording() {
        let mut p = PropagationReport::new(3, 1);
        p.add(vec![30, 10, 20]);
        p.add(vec![5, 50, 40]);
        p.seconds = 1.0;
        let r = Report::Propagation(p);
        assert_eq!(
            r.render(true),
            "{\"workload\":\"config-propagation\",\"caches\":3,\"sessions\":1,\"writes\":2,\"seconds\":1.000,\"updates\":6,\"p50_us\":30,\"p99_us\":50,\"p999_us\":50,\"last_p50_us\":50,\"last_p99_us\":50}"
        );
        assert_eq!(
            r.render(false),
            "config-propagation (3 caches on 1 sessions): 2 writes in 1.00s; to each cache p50 30 us, p99 50 us, p999 50 us; to the last cache p50 50 us, p99 50 us"
        );
    }
}

/// The result of the sessions workload.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionsReport {
    /// Sessions asked for.
    pub sessions: usize,
    /// Sessions set up: connected, their node created, their watch set.
    pub connected: usize,
    /// Sessions that could not be set up.
    pub connect_errors: usize,
    /// The first distinct reasons why not.
    pub errors_named: Vec<String>,
    /// From the start to the last session set up (or failed), seconds.
    pub connect_s: f64,
    /// How long the sessions were then held, seconds.
    pub held_s: f64,
    /// Gets answered, and their latency percentiles, microseconds.
    pub gets: usize,
    /// (p50, p99, p99.9) of the gets, microseconds.
    pub get_us: (u32, u32, u32),
    /// Gets the server answered with an error.
    pub get_errors: u64,
    /// Watch events the sessions received.
    pub events: u64,
    /// Sessions whose connection broke while held.
    pub lost: usize,
    /// Observers of the registry.
    pub observers: usize,
    /// Deletions they saw, all observers together.
    pub observed_deleted: u64,
    /// When the first deletion was seen, ms since the epoch.
    pub observed_first_unix_ms: Option<u128>,
    /// When the last observer saw its expected deletions, ms since the epoch.
    pub observed_all_unix_ms: Option<u128>,
}

impl SessionsReport {
    pub(crate) fn new(
        sessions: usize,
        connected: usize,
        connect_errors: usize,
        errors_named: std::collections::BTreeSet<String>,
        connect_s: f64,
    ) -> SessionsReport {
        SessionsReport {
            sessions,
            connected,
            connect_errors,
            errors_named: errors_named.into_iter().collect(),
            connect_s,
            held_s: 0.0,
            gets: 0,
            get_us: (0, 0, 0),
            get_errors: 0,
            events: 0,
            lost: 0,
            observers: 0,
            observed_deleted: 0,
            observed_first_unix_ms: None,
            observed_all_unix_ms: None,
        }
    }

    /// Takes the gets (when each was sent, ms since the epoch, and its latency, us), and
    /// writes them to `out` as `<sent ms> <us>` lines when asked, so that a driver can pool
    /// several processes' and keep a window of them.
    pub(crate) fn set_gets(
        &mut self,
        gets: Vec<(u64, u32)>,
        out: Option<&std::path::Path>,
    ) -> std::io::Result<()> {
        if let Some(path) = out {
            let text: String = gets.iter().map(|(at, us)| format!("{at} {us}\n")).collect();
            std::fs::write(path, text)?;
        }
        let mut us: Vec<u32> = gets.into_iter().map(|(_, us)| us).collect();
        self.gets = us.len();
        self.get_us = summary(&mut us);
        Ok(())
    }

    fn json(&self) -> String {
        let SessionsReport { sessions, connected, connect_errors, connect_s, held_s, .. } = self;
        let SessionsReport { gets, get_errors, events, lost, observers, observed_deleted, .. } =
            self;
        let (p50, p99, p999) = self.get_us;
        let named: Vec<String> =
            self.errors_named.iter().map(|e| format!("\"{}\"", json_escape(e))).collect();
        let ms = |at: Option<u128>| at.map_or("null".to_string(), |ms| ms.to_string());
        let (first_at, all_at) = (ms(self.observed_first_unix_ms), ms(self.observed_all_unix_ms));
        format!(
            "{{\"workload\":\"sessions\",\"sessions\":{sessions},\"connected\":{connected},\"connect_errors\":{connect_errors},\"errors_named\":[{}],\"connect_s\":{connect_s:.3},\"held_s\":{held_s:.3},\"gets\":{gets},\"gets_per_s\":{:.1},\"p50_us\":{p50},\"p99_us\":{p99},\"p999_us\":{p999},\"get_errors\":{get_errors},\"events\":{events},\"lost\":{lost},\"observers\":{observers},\"observed_deleted\":{observed_deleted},\"observed_first_unix_ms\":{first_at},\"observed_all_unix_ms\":{all_at}}}",
            named.join(","),
            *gets as f64 / held_s.max(1e-9),
        )
    }

    fn text(&self) -> String {
        let SessionsReport { sessions, connected, connect_errors, connect_s, held_s, .. } = self;
        let (p50, p99, _) = self.get_us;
        format!(
            "sessions: {connected} of {sessions} set up in {connect_s:.2}s ({connect_errors} failed{}); held {held_s:.1}s: {} gets, p50 {p50} us, p99 {p99} us, {} get errors, {} events, {} lost",
            if self.errors_named.is_empty() { String::new() } else { format!(": {}", self.errors_named.join("; ")) },
            self.gets, self.get_errors, self.events, self.lost
        )
    }
}

/// `s` inside a JSON string.
fn json_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect()
}
