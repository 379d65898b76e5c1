//! `rzk server`.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use rzk_server::{DiskConfig, Durability, Server, ServerConfig};

use crate::runtime::Schedule;
use crate::zoocfg;

/// Flags of `rzk server`. Each one overrides the same setting from `--config`; names follow
/// `zoo.cfg` where ZooKeeper has the setting.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    #[command(flatten)]
    pub(crate) log: crate::logging::LogArgs,
    /// A ZooKeeper `zoo.cfg` to read settings from.
    #[arg(long, value_name = "ZOO_CFG")]
    config: Option<PathBuf>,
    /// Client port (`clientPort`) [default: 2181].
    #[arg(long)]
    port: Option<u16>,
    /// Address to listen on (`clientPortAddress`) [default: 0.0.0.0].
    #[arg(long)]
    bind: Option<IpAddr>,
    /// Tick length in ms (`tickTime`) [default: 2000]; session timeouts are clamped to [2, 20]
    /// ticks unless set below.
    #[arg(long)]
    tick_ms: Option<u32>,
    /// Smallest session timeout granted, ms (`minSessionTimeout`).
    #[arg(long)]
    min_session_timeout_ms: Option<i32>,
    /// Largest session timeout granted, ms (`maxSessionTimeout`).
    #[arg(long)]
    max_session_timeout_ms: Option<i32>,
    /// Directory for snapshots and, unless `--data-log-dir` is given, the transaction log
    /// (`dataDir`) [default: $RZK_DATA_DIR, else $XDG_DATA_HOME/rzk, else ~/.local/share/rzk].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Directory for the transaction log (`dataLogDir`).
    #[arg(long)]
    data_log_dir: Option<PathBuf>,
    /// Keep everything in memory: nothing survives a restart. For tests.
    #[arg(long, conflicts_with_all = ["data_dir", "data_log_dir"])]
    in_memory: bool,
    /// Transactions between snapshots (`snapCount`) [default: 100000].
    #[arg(long)]
    snap_count: Option<u64>,
    /// A snapshot also waits until the log written since the last one reaches this percentage
    /// of that snapshot's size, so a growing tree is not re-serialised every `snapCount`
    /// writes; 0 leaves `snapCount` alone to decide, as in ZooKeeper [default: 100].
    #[arg(long)]
    snapshot_log_pct_min: Option<u64>,
    /// Snapshots kept by autopurge (`autopurge.snapRetainCount`) [default: 3].
    #[arg(long)]
    snap_retain_count: Option<usize>,
    /// Hours between autopurge runs, 0 for never (`autopurge.purgeInterval`) [default: 0].
    #[arg(long)]
    purge_interval_hours: Option<u64>,
    /// Comma-separated four-letter words to allow, or `*` (`4lw.commands.whitelist`)
    /// [default: srvr,ruok].
    #[arg(long)]
    four_letter_words: Option<String>,
    /// Allow TTL nodes (`zookeeper.extendedTypesEnabled`).
    #[arg(long)]
    extended_types: bool,
    /// Super user digest, `super:base64(sha1("super:password"))`
    /// (`zookeeper.DigestAuthenticationProvider.superDigest`).
    #[arg(long)]
    super_digest: Option<String>,
    /// Serve only connections authenticated with one of these comma-separated schemes,
    /// `digest`, `ip`, `sasl` (needs --jaas) or `x509` (a verified TLS client certificate);
    /// any other request first gets error -124 and the connection closes
    /// (`enforce.auth.enabled=true` with `enforce.auth.schemes`; `sessionRequireClientSASLAuth`
    /// for sasl alone).
    #[arg(long, value_name = "SCHEMES")]
    enforce_auth_schemes: Option<String>,
    /// Authenticate SASL logins as this JAAS file's --jaas-section says, the file ZooKeeper
    /// reads through `java.security.auth.login.config`: DIGEST-MD5 against the
    /// `user_NAME="password"` options of its DigestLoginModule, or, with the `gssapi`
    /// feature, Kerberos as the principal of its Krb5LoginModule with the keys of its keyTab
    /// [default: the file SERVER_JVMFLAGS or JVMFLAGS names that way].
    #[arg(long, env = "RZK_JAAS", value_name = "FILE")]
    pub(crate) jaas: Option<PathBuf>,
    /// The JAAS section of the server's login (ZooKeeper's `zookeeper.sasl.serverconfig`).
    #[arg(long, default_value = "Server", value_name = "NAME")]
    pub(crate) jaas_section: String,
    /// Serve Prometheus metrics on this port at `/metrics` (`metricsProvider.httpPort` with
    /// ZooKeeper's `PrometheusMetricsProvider`) [default: off; 7000 with that provider].
    #[arg(long)]
    metrics_port: Option<u16>,
    /// Address for the metrics port (`metricsProvider.httpHost`) [default: 0.0.0.0].
    #[arg(long)]
    metrics_bind: Option<IpAddr>,
    /// Serve ZooKeeper's AdminServer commands on this port at `/commands` (`admin.serverPort`)
    /// [default: off; 8080 with `admin.enableServer=true`].
    #[arg(long)]
    admin_port: Option<u16>,
    /// Address for the AdminServer port (`admin.serverAddress`) [default: 0.0.0.0].
    #[arg(long)]
    admin_bind: Option<IpAddr>,
    /// Connections per client IP, 0 for unlimited (`maxClientCnxns`) [default: 60].
    #[arg(long)]
    max_client_cnxns: Option<usize>,
    /// Connections in total, 0 for as many as the process's file descriptors allow, less 256
    /// (`maxCnxns`) [default: 0].
    #[arg(long)]
    max_cnxns: Option<usize>,
    /// Connections the kernel queues before the server accepts them, capped by
    /// `net.core.somaxconn` (`clientPortListenBacklog`) [default: 4096].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    listen_backlog: Option<u32>,
    /// Largest accepted packet in bytes (`jute.maxbuffer`) [default: 1048575].
    #[arg(long = "jute-maxbuffer")]
    max_packet_bytes: Option<usize>,
    /// Interval between container/TTL reaping passes, ms (`znode.container.checkIntervalMs`)
    /// [default: 60000].
    #[arg(long)]
    container_check_interval_ms: Option<u64>,
    /// Threads that read, decode and answer client connections [default: one per CPU, or
    /// `TOKIO_WORKER_THREADS`]. The log thread, which syncs the transaction log, comes on top.
    /// Every request is applied under one core lock, so more threads only add parallel socket
    /// work (docs/BENCHMARKS.md compares thread counts).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) io_threads: Option<u16>,
    /// How the I/O threads take turns between ready connections under overload: `fair`
    /// answers each in its turn; `throughput` lets a thread keep serving the connections its
    /// own reads woke, more reads per second and a tail of seconds (docs/BENCHMARKS.md,
    /// Sessions).
    #[arg(long, value_enum, default_value_t = Schedule::Fair)]
    pub(crate) schedule: Schedule,
    #[command(flatten)]
    tls: SecurePortArgs,
    /// Serve the web console (as `rzk ui` does) on the AdminServer's port at `/console/`,
    /// reading through a session of its own on the plain client port with --auth's
    /// credentials.
    #[arg(long)]
    console: bool,
    #[command(flatten)]
    console_args: crate::ui::ConsoleArgs,
}

/// The secure (TLS) client port's flags; each overrides zoo.cfg's key.
#[derive(Debug, Args)]
struct SecurePortArgs {
    /// Serve TLS on this port (`secureClientPort`), beside the plain port; with zoo.cfg's
    /// `secureClientPort` and no `clientPort`, only the secure port is served.
    #[arg(long, requires = "tls_cert")]
    secure_port: Option<u16>,
    /// The server's certificate chain, PEM, leaf first (`ssl.keyStore.location`; that file may
    /// hold the private key too).
    #[arg(long, value_name = "PEM")]
    tls_cert: Option<PathBuf>,
    /// The server's private key, PEM, unencrypted [default: the --tls-cert file].
    #[arg(long, value_name = "PEM")]
    tls_key: Option<PathBuf>,
    /// CA certificates, PEM, that sign acceptable client certificates
    /// (`ssl.trustStore.location`).
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Client certificates: `none`, `want` or `need` (`ssl.clientAuth`) [default: need with
    /// --tls-ca, none without]. A verified certificate's subject authenticates the connection
    /// as `x509:<DN>`.
    #[arg(long, value_name = "MODE")]
    tls_client_auth: Option<rzk_server::ClientAuth>,
}

/// The default data directory when neither a flag nor `zoo.cfg` names one.
fn default_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RZK_DATA_DIR") {
        return d.into();
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(d).join("rzk");
    }
    match std::env::var_os("HOME") {
        Some(h) => PathBuf::from(h).join(".local/share/rzk"),
        None => PathBuf::from("rzk-data"),
    }
}

fn build_config(args: ServerArgs) -> anyhow::Result<ServerConfig> {
    let file = match &args.config {
        Some(p) => zoocfg::load(p)?,
        None => zoocfg::ZooCfg::default(),
    };
    file.report();
    let file_metrics = file.metrics_addr();
    let admin = admin_config(&args, &file);
    let tls = secure_port(&args, &file)?;
    let plain_port = args.port.is_some() || file.client_port.is_some() || tls.is_none();
    let disk = if args.in_memory { None } else { Some(disk_config(&args, &file)?) };
    let port = args.port.or(file.client_port).unwrap_or(2181);
    let bind = args.bind.or(file.client_port_address).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let tick_ms = args.tick_ms.or(file.tick_ms).unwrap_or(2000);
    anyhow::ensure!(tick_ms > 0, "the tick must be positive");
    let mut config = ServerConfig::new((bind, port).into());
    config.core = rzk_core::Config::with_tick_ms(tick_ms);
    sasl_login(&args, &file, &mut config.core)?;
    config.core.sasl_super_user.clone_from(&file.sasl_super_user);
    let require_sasl = file.require_sasl == Some(true);
    if let Some(ms) = args.min_session_timeout_ms.or(file.min_session_timeout_ms) {
        config.core.session_timeout_ms_min = ms;
    }
    if let Some(ms) = args.max_session_timeout_ms.or(file.max_session_timeout_ms) {
        config.core.session_timeout_ms_max = ms;
    }
    anyhow::ensure!(
        config.core.session_timeout_ms_min <= config.core.session_timeout_ms_max,
        "minimum session timeout {} ms exceeds maximum {} ms",
        config.core.session_timeout_ms_min,
        config.core.session_timeout_ms_max
    );
    let words = args.four_letter_words.or(file.four_letter_words).unwrap_or("srvr,ruok".into());
    config.core.four_letter_words =
        words.split(',').map(|w| w.trim().to_string()).filter(|w| !w.is_empty()).collect();
    config.core.extended_types_enabled = args.extended_types || file.extended_types == Some(true);
    config.core.super_digest = args.super_digest.or(file.super_digest);
    config.core.enforced_auth_schemes = match &args.enforce_auth_schemes {
        Some(list) => zoocfg::enforced_auth_schemes(list).context("--enforce-auth-schemes")?,
        None => file.enforced_auth_schemes.clone().unwrap_or_default(),
    };
    require_sasl_users(&mut config.core, require_sasl)?;
    if !config.core.enforced_auth_schemes.is_empty() {
        tracing::info!(
            "enforcing authentication: a connection is served once it authenticates with {}",
            config.core.enforced_auth_schemes.join(" or ")
        );
    }
    if let Some(ms) = args.container_check_interval_ms.or(file.container_check_interval_ms) {
        config.core.container_check_interval_ms = ms;
    }
    if let Some(per_minute) = file.container_reaps_per_minute {
        // The core bounds reaps per check; ZooKeeper's limit is per minute.
        let per_check =
            u128::from(per_minute) * u128::from(config.core.container_check_interval_ms) / 60_000;
        config.core.container_reaps_per_check_max =
            usize::try_from(per_check.max(1)).unwrap_or(usize::MAX);
    }
    // Two std hashers keyed from the OS's randomness: 128 secret bits for session passwords.
    let random = || std::collections::hash_map::RandomState::new().hash_one(0u8);
    config.core.seed = (u128::from(random()) << 64) | u128::from(random());
    config.metrics = match (args.metrics_port, file_metrics) {
        (None, None) => None,
        (port, from_file) => {
            let from_file = from_file.unwrap_or(([0, 0, 0, 0], 0).into());
            let bind = args.metrics_bind.unwrap_or(from_file.ip());
            Some((bind, port.unwrap_or(from_file.port())).into())
        }
    };
    config.admin = admin;
    if args.console {
        let Some(admin) = &mut config.admin else {
            anyhow::bail!(
                "--console is served on the AdminServer's port: give --admin-port (or \
                 admin.enableServer=true in zoo.cfg)"
            );
        };
        anyhow::ensure!(plain_port, "--console reads through the plain client port (--port)");
        // Live pages hold their event streams open: the console's bounds, not the commands'.
        admin.limits = rzk_console::http_limits(&rzk_console::Limits::default());
    }
    config.initial_configuration = file.text.clone();
    config.max_client_connections_per_ip =
        args.max_client_cnxns.or(file.max_client_cnxns).unwrap_or(60);
    match args.max_cnxns.or(file.max_cnxns) {
        None | Some(0) => {}
        Some(n) => config.max_connections = n,
    }
    match (args.listen_backlog, file.listen_backlog) {
        (Some(n), _) => config.listen_backlog = n,
        (None, Some(n)) if n > 0 => config.listen_backlog = n.unsigned_abs(),
        // ZooKeeper's -1 (and anything not positive): the default.
        (None, _) => {}
    }
    config.max_packet_bytes = args
        .max_packet_bytes
        .or(file.max_packet_bytes)
        .unwrap_or(rzk_proto::DEFAULT_MAX_PACKET_BYTES);
    config.tls = tls;
    config.plain_port = plain_port;
    if let Some(disk) = disk {
        config.core.data_dir = Some(disk.snap_dir.display().to_string());
        config.durability = Durability::Disk(disk);
    }
    Ok(config)
}

/// The AdminServer: the flags over zoo.cfg; off unless one of them asks for it.
/// The SASL logins of the JAAS file, if one is given: its DIGEST-MD5 users, or its Kerberos
/// principal (with the `gssapi` feature).
fn sasl_login(
    args: &ServerArgs,
    file: &zoocfg::ZooCfg,
    core: &mut rzk_core::Config,
) -> anyhow::Result<()> {
    let Some(path) = crate::jaas::locate(args.jaas.as_deref(), crate::jaas::SERVER_FLAG_VARS)
    else {
        return Ok(());
    };
    let jaas = crate::jaas::read(&path).map_err(anyhow::Error::msg)?;
    let at = || format!("JAAS file {}", path.display());
    match jaas.server_login(&args.jaas_section).with_context(at)? {
        rzk_sasl::ServerLogin::Digest(users) => {
            anyhow::ensure!(
                !users.is_empty(),
                "{}: the {} section's DigestLoginModule lists no user_NAME=\"password\"",
                at(),
                args.jaas_section
            );
            tracing::info!(users = users.len(), file = %path.display(), "SASL DIGEST-MD5 logins on");
            core.sasl_users = rzk_core::config::SaslUsers(users);
        }
        rzk_sasl::ServerLogin::Kerberos { principal, .. } => {
            let principal = principal.ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: the {} section's Krb5LoginModule names no principal",
                    at(),
                    args.jaas_section
                )
            })?;
            core.sasl_mechanism = Some(gssapi_mechanism(&principal, file).with_context(at)?);
            tracing::info!(%principal, file = %path.display(), "SASL GSSAPI (Kerberos) logins on");
        }
    }
    Ok(())
}

#[cfg(feature = "gssapi")]
fn gssapi_mechanism(
    principal: &str,
    file: &zoocfg::ZooCfg,
) -> anyhow::Result<rzk_core::sasl_mechanism::MechanismRef> {
    let rules = rzk_server::PrincipalRules {
        remove_host: file.kerberos_remove_host,
        remove_realm: file.kerberos_remove_realm,
    };
    let m = rzk_server::GssapiMechanism::new(principal, rules).map_err(anyhow::Error::msg)?;
    Ok(rzk_core::sasl_mechanism::MechanismRef(std::sync::Arc::new(m)))
}

#[cfg(not(feature = "gssapi"))]
fn gssapi_mechanism(
    _principal: &str,
    _file: &zoocfg::ZooCfg,
) -> anyhow::Result<rzk_core::sasl_mechanism::MechanismRef> {
    anyhow::bail!(
        "its Server section logs in with Kerberos, and this rzk was built without GSSAPI: \
         build it with `--features gssapi` (needs libkrb5-dev and libclang), or give the \
         server a DigestLoginModule section"
    )
}

/// Adds sasl to the enforced schemes for `sessionRequireClientSASLAuth`, and refuses to
/// enforce it with no users to log in, which would turn every client away.
fn require_sasl_users(core: &mut rzk_core::Config, require_sasl: bool) -> anyhow::Result<()> {
    let enforced = |core: &rzk_core::Config| core.enforced_auth_schemes.iter().any(|s| s == "sasl");
    if require_sasl && !enforced(core) {
        core.enforced_auth_schemes.push("sasl".into());
    }
    anyhow::ensure!(
        !enforced(core) || !core.sasl_users.0.is_empty() || core.sasl_mechanism.is_some(),
        "refusing to enforce the sasl scheme with no SASL users, which would turn every client \
         away: give a JAAS file with --jaas (or -Djava.security.auth.login.config= in \
         SERVER_JVMFLAGS) whose Server section lists DIGEST-MD5 users or a Kerberos principal"
    );
    Ok(())
}

fn admin_config(args: &ServerArgs, file: &zoocfg::ZooCfg) -> Option<rzk_server::AdminConfig> {
    let from_file = file.admin();
    if from_file.is_none() && args.admin_port.is_none() {
        if file.mentions_admin() || args.config.is_none() {
            return None;
        }
        tracing::info!(
            "AdminServer off: ZooKeeper's is on at port {} by default, rzk's only with \
             admin.enableServer=true or --admin-port",
            zoocfg::ADMIN_DEFAULT_PORT
        );
        return None;
    }
    let mut admin =
        from_file.unwrap_or_else(|| rzk_server::AdminConfig::new(([0, 0, 0, 0], 0).into()));
    if let Some(port) = args.admin_port {
        admin.addr.set_port(port);
    }
    if let Some(ip) = args.admin_bind {
        admin.addr.set_ip(ip);
    }
    Some(admin)
}

/// The secure client port: the flags over zoo.cfg. Its address is `secureClientPortAddress`,
/// else the plain port's.
fn secure_port(
    args: &ServerArgs,
    file: &zoocfg::ZooCfg,
) -> anyhow::Result<Option<rzk_server::TlsConfig>> {
    let a = &args.tls;
    let from_file = file.secure.as_ref();
    let Some(port) = a.secure_port.or(from_file.map(|s| s.port)) else {
        anyhow::ensure!(
            a.tls_cert.is_none() && a.tls_key.is_none() && a.tls_ca.is_none(),
            "--tls-cert, --tls-key and --tls-ca need --secure-port (or secureClientPort)"
        );
        return Ok(None);
    };
    let cert = match (&a.tls_cert, from_file) {
        (Some(c), _) => c.clone(),
        (None, Some(s)) => s.key_store.clone(),
        (None, None) => anyhow::bail!("--secure-port needs --tls-cert"),
    };
    let key = a.tls_key.clone().unwrap_or(cert.clone());
    let ca = a.tls_ca.clone().or(from_file.and_then(|s| s.trust_store.clone()));
    let address = from_file
        .and_then(|s| s.address)
        .or(args.bind)
        .or(file.client_port_address)
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let mut tls = rzk_server::TlsConfig::new((address, port).into(), cert, key, ca);
    if let Some(mode) = a.tls_client_auth.or(from_file.and_then(|s| s.client_auth)) {
        tls.client_auth = mode;
    }
    if let Some(s) = from_file {
        tls.handshake_timeout_ms = s.handshake_timeout_ms;
    }
    Ok(Some(tls))
}

/// Where and how the log and snapshots are kept: the flags over zoo.cfg over the defaults.
fn disk_config(args: &ServerArgs, file: &zoocfg::ZooCfg) -> anyhow::Result<DiskConfig> {
    let data_dir = args
        .data_dir
        .clone()
        .or(file.data_dir.as_ref().map(PathBuf::from))
        .unwrap_or_else(default_data_dir);
    let log_dir = args
        .data_log_dir
        .clone()
        .or(file.data_log_dir.as_ref().map(PathBuf::from))
        .unwrap_or(data_dir.clone());
    if file.datadir_autocreate == Some(false) {
        for dir in [&data_dir, &log_dir] {
            anyhow::ensure!(
                dir.is_dir(),
                "{} does not exist, and zookeeper.datadir.autocreate=false forbids creating it",
                dir.display()
            );
        }
    }
    let mut disk = DiskConfig::new(&data_dir);
    disk.log_dir = log_dir;
    if let Some(n) = args.snap_count.or(file.snap_count) {
        anyhow::ensure!(n > 0, "snapCount must be positive");
        disk.snap_count = n;
    }
    if let Some(p) = args.snapshot_log_pct_min {
        disk.snapshot_log_pct_min = p;
    }
    if let Some(n) = args.snap_retain_count.or(file.snap_retain_count) {
        disk.snap_retain_count = n;
    }
    if let Some(h) = args.purge_interval_hours.or(file.purge_interval_hours) {
        disk.purge_interval_hours = h;
    }
    if let Some(kb) = file.prealloc_kb {
        disk.segment_bytes = kb * 1024;
    }
    Ok(disk)
}

pub(crate) async fn run(args: ServerArgs, connect: &crate::connect::Connect) -> anyhow::Result<()> {
    let console = args.console.then(|| args.console_args.clone());
    let config = build_config(args)?;
    if let Durability::Disk(d) = &config.durability {
        tracing::info!(data_dir = %d.snap_dir.display(), log_dir = %d.log_dir.display(), "durable storage");
    } else {
        tracing::info!("in memory: nothing survives a restart");
    }
    let server = Server::start(config).await.context("starting the server")?;
    if let Some(a) = &console {
        crate::ui::mount_on_server(&server, connect, a)
            .await
            .map_err(|e| anyhow::anyhow!(e.message))?;
    }
    tracing::info!("serving on {}", server.connect_string());
    // `start` returns once the log is recovered and the port bound: ready, for systemd.
    crate::systemd::ready(&format!("serving on {}", server.connect_string()));
    tokio::select! {
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            crate::systemd::stopping();
            server.shutdown().await;
            Ok(())
        }
        why = server.failed() => Err(anyhow::anyhow!("server failed: {why}")),
        never = crate::systemd::watchdog(server.liveness()) => match never {},
    }
}

use std::hash::BuildHasher as _;

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
