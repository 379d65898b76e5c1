//! One run of the world: a server, client processes running the recipes, and faults, all
//! drawn from one seed, on one thread and virtual time; then the invariants.

use std::sync::Arc;
use std::time::Duration;

use rzk_recipes::session::{Session, SessionConfig};
use rzk_sim::Rng;
use tokio::task::JoinHandle;

use crate::actors::{
    be_u64, life, service_path, Op, Recorder, Records, CONFIG, COUNTER, PAUSE_TIMEOUTS_MAX, QUEUE,
    SETUP_PATHS,
};
use crate::checks;
use crate::faults::{clock_permille, draw, Fault, Kept};
use crate::mix::{Mix, Recipe};
use crate::net::SimNet;
use crate::server::Server;

/// How much longer than its faults and calm a world may run before it counts as stuck.
const WORLD_SLACK: Duration = Duration::from_secs(120);
/// The session timeout a world's processes ask for: `SESSION_MS_MIN` plus up to
/// `SESSION_STEPS` steps of `SESSION_MS_STEP`; the server grants at most 20 ticks (2 s), so
/// the longer ones are renegotiated down, as on a server with a low maxSessionTimeout.
const SESSION_MS_MIN: u64 = 1_000;
const SESSION_MS_STEP: u64 = 500;
const SESSION_STEPS: u64 = 6;
const SESSION_MS_MAX: u64 = SESSION_MS_MIN + SESSION_MS_STEP * SESSION_STEPS;
/// The world time between two faults: at least this...
pub(crate) const FAULT_GAP_MS_MIN: u64 = 100;
/// ...and up to this much more, so that sessions live long enough between faults for
/// locks to change hands under them.
const FAULT_GAP_MS_SPREAD: u64 = 900;

/// How often the calm looks whether every recipe has changed hands since the faults stopped.
const CALM_POLL: Duration = Duration::from_millis(50);

/// What a run looks like.
#[derive(Debug, Clone)]
pub struct Options {
    /// The recipes and their processes (drawn from the seed by default).
    pub mix: Mix,
    /// World time with faults.
    pub faulty: Duration,
    /// World time without faults, after them, in which every recipe must change hands again;
    /// the world ends as soon as each has, so this is the longest a calm lasts.
    pub calm: Duration,
    /// Inject faults (off: a calm world, the baseline).
    pub faults: bool,
    /// A fixed bug brought back for this run, to show the checks find it.
    pub bug: Option<rzk_recipes::bugs::Bug>,
    /// Which of the drawn faults are applied (the shrinker's and a short replay's choice).
    pub kept: Kept,
    /// How fast the server's clock runs against the processes', in parts per thousand
    /// (+100: 10 % fast); `None`, the default, draws it from the seed within
    /// [`CLOCK_DRIFT_PERMILLE_MAX`](crate::CLOCK_DRIFT_PERMILLE_MAX) either way.
    pub clock_permille: Option<i64>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mix: Mix::Drawn,
            faulty: Duration::from_secs(30),
            calm: Duration::from_secs(10),
            faults: true,
            bug: None,
            kept: Kept::All,
            clock_permille: None,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// Holds of the mutex.
    pub holds: usize,
    /// Acknowledged guarded writes.
    pub writes: usize,
    /// Faults injected.
    pub faults: usize,
    /// Server crashes among them.
    pub crashes: u64,
    /// A digest of the whole trace: equal for two runs of one seed.
    pub digest: u64,
    /// The trace, one line per event.
    pub trace: Vec<String>,
}

/// A run that broke an invariant: the seed, what broke, and the trace that led there.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed that replays it.
    pub seed: u64,
    /// The run's options (its bug, its faults kept, its lengths).
    pub options: Box<Options>,
    /// What broke.
    pub what: String,
    /// The trace.
    pub trace: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "world seed {} failed: {}", self.seed, self.what)?;
        let env = self.options.replay_env();
        writeln!(
            f,
            "replay: {env}RZK_WORLD_SEED={} cargo test -p rzk-world --test world every_seed \
             -- --nocapture",
            self.seed
        )?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

/// Runs the world of `seed`.
///
/// # Errors
/// The first broken invariant, with the trace; a task that panicked; a world that did not
/// finish in its time.
pub fn run(seed: u64, options: &Options) -> Result<Outcome, Failure> {
    let failure =
        |what: String, trace| Failure { seed, options: Box::new(options.clone()), what, trace };
    if matches!(&options.mix, Mix::Fixed(counts) if counts.iter().all(|&(_, n)| n == 0)) {
        return Err(failure("a world needs a process".into(), Vec::new()));
    }
    // A holder paused through the whole calm would hold it up, and the progress check would
    // blame the recipe.
    let pause_max = Duration::from_millis(PAUSE_TIMEOUTS_MAX * SESSION_MS_MAX);
    if options.calm <= pause_max {
        let what =
            format!("a calm of {:?} is not longer than a pause ({pause_max:?})", options.calm);
        return Err(failure(what, Vec::new()));
    }
    let _switches = Switches::set(seed, options.bug);
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    #[cfg(tokio_unstable)]
    {
        // tokio's own choices (select! branch order, watch wake order) from the seed too, and
        // a panic in any task ends the world instead of being swallowed by its JoinHandle.
        builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
        builder.unhandled_panic(tokio::runtime::UnhandledPanic::ShutdownRuntime);
    }
    let rt = builder.build().expect("a current-thread runtime");
    let origin = rt.block_on(async { tokio::time::Instant::now() });
    let rec = Recorder::new(origin.into_std());
    let limit = options.faulty + options.calm + WORLD_SLACK;
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt.block_on(async {
            tokio::time::timeout(limit, world(seed, options, origin, rec.clone())).await
        })
    }));
    match ran {
        Ok(Ok(outcome)) => outcome.map_err(|what| failure(what, rec.take().trace)),
        Ok(Err(_)) => {
            Err(failure(format!("the world did not finish in {limit:?}"), rec.take().trace))
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_default();
            Err(failure(format!("a task panicked: {what}"), rec.take().trace))
        }
    }
}

/// The thread's seeded sources and bug switch for one run, reset when it ends however it
/// ends, so that the next run on the thread (or a test after it) starts clean.
struct Switches;

impl Switches {
    fn set(seed: u64, bug: Option<rzk_recipes::bugs::Bug>) -> Switches {
        fastrand::seed(seed);
        rzk_recipes::seed_node_ids(Some(seed));
        rzk_recipes::bugs::reintroduce(bug);
        Switches
    }
}

impl Drop for Switches {
    fn drop(&mut self) {
        rzk_recipes::seed_node_ids(None);
        rzk_recipes::bugs::reintroduce(None);
    }
}

struct Process {
    recipe: Recipe,
    net: Arc<SimNet>,
    life: JoinHandle<()>,
    lives: u64,
}

async fn world(
    seed: u64,
    options: &Options,
    origin: tokio::time::Instant,
    rec: Arc<Recorder>,
) -> Result<Outcome, String> {
    let mut rng = Rng::new(seed);
    let clock = options.clock_permille.unwrap_or_else(|| clock_permille(seed));
    let server = Server::new(rng.next_u64(), origin, clock);
    tokio::spawn(server.clone().run_timer());
    tokio::spawn(server.clone().run_disk());
    let timeout =
        Duration::from_millis(SESSION_MS_MIN + SESSION_MS_STEP * rng.below(SESSION_STEPS + 1));
    rec.note(format!(
        "session timeout {} ms, server clock {clock:+} per mille",
        timeout.as_millis()
    ));
    let recipes = options.mix.counts(&mut rng);
    rec.note(format!("mix {}", Mix::Fixed(recipes.clone())));
    setup(&server).await?;
    let each: Vec<Recipe> = recipes.iter().flat_map(|&(r, n)| std::iter::repeat_n(r, n)).collect();
    let mut procs: Vec<Process> = (0..each.len())
        .map(|p| {
            let recipe = each[p];
            let net = SimNet::new(server.clone(), p);
            let life = spawn_life(recipe, p, &net, &rec, rng.next_u64(), timeout);
            Process { recipe, net, life, lives: 1 }
        })
        .collect();
    let (mut faults, mut drawn) = (0, 0);
    let faulty_until = tokio::time::Instant::now() + options.faulty;
    while tokio::time::Instant::now() < faulty_until {
        let gap = FAULT_GAP_MS_MIN + rng.below(FAULT_GAP_MS_SPREAD);
        tokio::time::sleep(Duration::from_millis(gap)).await;
        if options.faults {
            let fault = draw(&mut rng, procs.len(), timeout.as_millis() as u64);
            if options.kept.keeps(drawn) {
                rec.note(format!("fault {drawn}: {fault}"));
                inject(fault, &server, &rec, &mut procs, timeout, seed);
                faults += 1;
            } else {
                rec.note(format!("fault {drawn} left out: {fault}"));
            }
            drawn += 1;
        }
    }
    rec.note("calm".into());
    server.calm();
    rec.calm();
    let before: Vec<usize> = recipes.iter().map(|(r, _)| rec.progress(*r)).collect();
    let calm_until = tokio::time::Instant::now() + options.calm;
    let running = |recipe: Recipe| recipes.iter().any(|&(r, n)| r == recipe && n > 0);
    let (caching, registering) = (running(Recipe::Cache), running(Recipe::Discovery));
    let stale = || {
        let mut stale = Vec::new();
        if caching {
            stale.extend(rec.stale_caches(&server.subtree(CONFIG)));
        }
        if registering {
            stale.extend(rec.stale_registries(&server.children(&service_path())));
        }
        stale
    };
    let changed_hands = || {
        recipes
            .iter()
            .zip(&before)
            .all(|((r, n), b)| *n == 0 || r.converges() || rec.progress(*r) > *b)
            && stale().is_empty()
    };
    // The calm proves progress: it ends once every recipe has changed hands, or at its
    // length, when the check below names the recipe that did not.
    while tokio::time::Instant::now() < calm_until && !changed_hands() {
        tokio::time::sleep(CALM_POLL).await;
    }
    rec.note("calm ends".into());
    // Every process stops here, as a crash stops it: a term still running ends at its loss
    // or its lease's deadline if one came first (a holder paused past its lease), else now.
    for (i, p) in procs.iter().enumerate() {
        p.life.abort();
        p.net.kill();
        rec.crashed(i);
    }
    let stale = stale();
    let stalled = recipes.iter().zip(before).find(|((recipe, n), before)| {
        *n > 0 && !recipe.converges() && rec.progress(*recipe) == *before
    });
    // What the server and the network saw break comes first: a storm also stalls the recipes.
    if let Some(e) = server.failure() {
        return Err(e);
    }
    if let Some(((recipe, _), _)) = stalled {
        return Err(format!("no {recipe:?} progress in {} ms of calm", options.calm.as_millis()));
    }
    if !stale.is_empty() {
        let calm = options.calm.as_millis();
        return Err(format!("not converged to the server in {calm} ms of calm: {stale:?}"));
    }
    let records = rec.take();
    let check = check(&records, &server);
    if let Err(what) = check {
        // Put the trace back for the failure's report.
        rec.restore(records);
        return Err(what);
    }
    Ok(Outcome {
        seed,
        holds: records.terms.len(),
        writes: records.writes.len(),
        faults,
        crashes: server.crashes(),
        digest: digest(&records.trace),
        trace: records.trace,
    })
}

/// The invariants over a finished run's records and the server's state, recipe by recipe.
fn check(records: &Records, server: &Server) -> Result<(), String> {
    for recipe in Recipe::ALL {
        let terms: Vec<checks::Term> =
            records.terms.iter().filter(|t| t.recipe == recipe).cloned().collect();
        let writes: Vec<(i64, i64)> = records
            .writes
            .iter()
            .filter(|w| w.recipe == recipe)
            .map(|w| (w.mzxid, w.token))
            .collect();
        let exclusive = match recipe {
            Recipe::RwLock => checks::read_write_exclusive(&terms),
            _ => checks::terms_exclusive(&terms, recipe.holders()),
        };
        exclusive
            .and_then(|()| checks::fenced_writes(&writes))
            .and_then(|()| {
                checks::writes_inside_terms(&writes, &terms, |z| {
                    server.landing(z).and_then(|l| l.conn_opened_ms)
                })
            })
            .map_err(|e| format!("{recipe:?}: {e}"))?;
    }
    let mut counter = records.counter.clone();
    counter.unknown += records.in_flight(Op::Increment);
    let value = server.data_of(COUNTER).map_or(0, |d| be_u64(&d) as i64);
    checks::counter_adds_up(&counter, value).map_err(|e| format!("Counter: {e}"))?;
    let mut queue = records.queue.clone();
    queue.unknown_takes += records.in_flight(Op::Take);
    let queued: Vec<u64> = server.children_data(QUEUE).iter().map(|d| be_u64(d)).collect();
    checks::queue_takes_once(&queue, &queued).map_err(|e| format!("Queue: {e}"))
}

fn spawn_life(
    recipe: Recipe,
    p: usize,
    net: &Arc<SimNet>,
    rec: &Arc<Recorder>,
    seed: u64,
    timeout: Duration,
) -> JoinHandle<()> {
    tokio::spawn(life(recipe, p, net.clone(), rec.clone(), seed, timeout))
}

/// Creates the node the holders write, through a session of its own.
async fn setup(server: &Arc<Server>) -> Result<(), String> {
    let net = SimNet::new(server.clone(), usize::MAX);
    let config = SessionConfig::new("world:2181").with_transport(net.clone());
    let session = Session::connect(config).await.map_err(|e| format!("setup: {e}"))?;
    let client = session.client().map_err(|e| format!("setup: {e}"))?;
    let open = rzk_client::CreateMode::Persistent.with_acls(rzk_client::Acls::anyone_all());
    for path in SETUP_PATHS {
        client.create(path, b"", &open).await.map_err(|e| format!("setup: create {path}: {e}"))?;
    }
    // The session closes on the server once no clone of its client is left.
    drop(client);
    session.close().await;
    net.kill();
    Ok(())
}

/// Applies one drawn fault.
fn inject(
    fault: Fault,
    server: &Arc<Server>,
    rec: &Arc<Recorder>,
    procs: &mut [Process],
    timeout: Duration,
    seed: u64,
) {
    let now = rec.now_ms();
    match fault {
        Fault::Cut { p } => rec.disturbed(Some(p), now),
        Fault::BlackHole { p, ms } => rec.disturbed(Some(p), now + ms),
        // A delay lasts as long as the connection, or until the calm.
        Fault::Delay { p, .. } => rec.disturbed(Some(p), u64::MAX),
        Fault::ServerCrash { ms } | Fault::ServerStall { ms, .. } => rec.disturbed(None, now + ms),
        Fault::ProcessCrash { .. } => {}
    }
    match fault {
        Fault::Cut { p } => server.set_links(Some(p), |l| l.cut = true),
        Fault::BlackHole { p, ms } => {
            server.isolate(p);
            let s = server.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                s.rejoin(p);
            });
        }
        Fault::Delay { p, ms } => server.set_links(Some(p), |l| l.delay_ms = ms),
        Fault::ServerCrash { ms } => {
            let s = server.clone();
            tokio::spawn(async move { s.crash(Duration::from_millis(ms)).await });
        }
        Fault::ServerStall { ms, ticks_first } => {
            if server.stall() {
                let s = server.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    s.resume(ticks_first);
                });
            }
        }
        Fault::ProcessCrash { p } => {
            let proc = &mut procs[p];
            proc.life.abort();
            proc.net.kill();
            rec.crashed(p);
            proc.lives += 1;
            proc.net = SimNet::new(server.clone(), p);
            let life_seed = seed ^ (proc.lives << 32) ^ p as u64;
            proc.life = spawn_life(proc.recipe, p, &proc.net, rec, life_seed, timeout);
        }
    }
}

/// FNV-1a over the trace's lines.
fn digest(trace: &[String]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in trace.iter().flat_map(|l| l.bytes().chain(std::iter::once(b'\n'))) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}
