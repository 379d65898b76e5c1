//! What rzk does with each key of ZooKeeper 3.8's administrator's guide that it does not apply,
//! and the closest known key for a misspelt one. docs/compat.md has the same table for readers.

/// A documented ZooKeeper key that rzk reads but does not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// Meaningless on a single server without replication (logged at info).
    NotApplicable(&'static str),
    /// It could mean something on one server, but rzk does not do it; ignoring it is safe
    /// (logged as a warning so the operator knows).
    NotSupported(&'static str),
}

/// Keys rzk applies (`ZooCfg` fields). Listed here for the misspelling hint only.
pub(crate) const HONOURED: &[&str] = &[
    "tickTime",
    "dataDir",
    "dataLogDir",
    "clientPort",
    "clientPortAddress",
    "maxClientCnxns",
    "maxCnxns",
    "clientPortListenBacklog",
    "minSessionTimeout",
    "maxSessionTimeout",
    "autopurge.snapRetainCount",
    "autopurge.purgeInterval",
    "4lw.commands.whitelist",
    "jute.maxbuffer",
    "extendedTypesEnabled",
    "snapCount",
    "preAllocSize",
    "DigestAuthenticationProvider.superDigest",
    "znode.container.checkIntervalMs",
    "znode.container.maxPerMinute",
    "datadir.autocreate",
    "dynamicConfigFile",
    "enforce.auth.enabled",
    "enforce.auth.schemes",
    "sessionRequireClientSASLAuth",
    "superUser",
    "kerberos.removeHostFromPrincipal",
    "kerberos.removeRealmFromPrincipal",
    "metricsProvider.className",
    "metricsProvider.httpPort",
    "metricsProvider.httpHost",
    // The secure client port (zoocfg/tls.rs).
    "secureClientPort",
    "secureClientPortAddress",
    "authProvider.x509",
];

const QUORUM: &str = "not used by a single-node server";
const TLS: &str = "a TLS setting of ZooKeeper's Java server; rzk has no counterpart";
const SASL: &str = "a SASL setting of ZooKeeper's Java server; rzk has no counterpart";
const THROTTLE: &str = "rzk has no request or connection throttler; its flow control bounds \
                        what each connection may queue";
const JVM: &str = "an internal of ZooKeeper's Java server; rzk has no counterpart";

/// Documented keys rzk ignores, each with why. Families (`server.N`, `ssl.*`, ...) are in
/// `family`.
const IGNORED: &[(&str, Ignored)] = &[
    // The values of these that `refusal` lets through.
    (
        "client.portUnification",
        Ignored::NotApplicable("off; rzk serves TLS on secureClientPort only (true is refused)"),
    ),
    ("DigestAuthenticationProvider.digestAlg", Ignored::NotApplicable("SHA-1 is rzk's digest")),
    ("initLimit", Ignored::NotApplicable(QUORUM)),
    ("syncLimit", Ignored::NotApplicable(QUORUM)),
    ("connectToLearnerMasterLimit", Ignored::NotApplicable(QUORUM)),
    ("electionAlg", Ignored::NotApplicable(QUORUM)),
    ("electionPortBindRetry", Ignored::NotApplicable(QUORUM)),
    ("quorumListenOnAllIPs", Ignored::NotApplicable(QUORUM)),
    ("peerType", Ignored::NotApplicable(QUORUM)),
    ("standaloneEnabled", Ignored::NotApplicable("rzk always runs standalone")),
    ("leaderServes", Ignored::NotApplicable(QUORUM)),
    ("cnxTimeout", Ignored::NotApplicable(QUORUM)),
    ("quorumCnxnTimeoutMs", Ignored::NotApplicable(QUORUM)),
    ("leader.maxTimeToWaitForEpoch", Ignored::NotApplicable(QUORUM)),
    ("maxTimeToWaitForEpoch", Ignored::NotApplicable(QUORUM)),
    ("tcpKeepAlive", Ignored::NotApplicable(QUORUM)),
    ("observerMasterPort", Ignored::NotApplicable(QUORUM)),
    ("syncEnabled", Ignored::NotApplicable(QUORUM)),
    ("observer.syncEnabled", Ignored::NotApplicable(QUORUM)),
    ("observer.reconnectDelayMs", Ignored::NotApplicable(QUORUM)),
    ("observer.election.DelayMs", Ignored::NotApplicable(QUORUM)),
    ("fastleader.minNotificationInterval", Ignored::NotApplicable(QUORUM)),
    ("fastleader.maxNotificationInterval", Ignored::NotApplicable(QUORUM)),
    ("multiAddress.enabled", Ignored::NotApplicable(QUORUM)),
    ("multiAddress.reachabilityCheckTimeoutMs", Ignored::NotApplicable(QUORUM)),
    ("multiAddress.reachabilityCheckEnabled", Ignored::NotApplicable(QUORUM)),
    ("sslQuorum", Ignored::NotApplicable(QUORUM)),
    ("portUnification", Ignored::NotApplicable(QUORUM)),
    ("sslQuorumReloadCertFiles", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.enableSasl", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.learnerRequireSasl", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.serverRequireSasl", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.learner.saslLoginContext", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.server.saslLoginContext", Ignored::NotApplicable(QUORUM)),
    ("quorum.auth.kerberos.servicePrincipal", Ignored::NotApplicable(QUORUM)),
    ("quorum.cnxn.threads.size", Ignored::NotApplicable(QUORUM)),
    ("leader.maxConcurrentSnapSyncs", Ignored::NotApplicable(QUORUM)),
    ("leader.maxConcurrentDiffSyncs", Ignored::NotApplicable(QUORUM)),
    ("maxConcurrentSnapSyncs", Ignored::NotApplicable(QUORUM)),
    ("maxConcurrentDiffSyncs", Ignored::NotApplicable(QUORUM)),
    ("commitLogCount", Ignored::NotApplicable(QUORUM)),
    ("learner.closeSocketAsync", Ignored::NotApplicable(QUORUM)),
    ("leader.closeSocketAsync", Ignored::NotApplicable(QUORUM)),
    ("learner.asyncSending", Ignored::NotApplicable(QUORUM)),
    ("messageTracker.BufferSize", Ignored::NotApplicable(QUORUM)),
    ("messageTracker.Enabled", Ignored::NotApplicable(QUORUM)),
    ("readonlymode.enabled", Ignored::NotApplicable(QUORUM)),
    ("db.autocreate", Ignored::NotApplicable(QUORUM)),
    ("reconfigEnabled", Ignored::NotApplicable("rzk answers reconfig with ReconfigDisabled")),
    (
        "localSessionsEnabled",
        Ignored::NotApplicable("every rzk session is global and may own ephemeral nodes"),
    ),
    (
        "localSessionsUpgradingEnabled",
        Ignored::NotApplicable("every rzk session is global and may own ephemeral nodes"),
    ),
    ("client.certReload", Ignored::NotApplicable(TLS)),
    ("fips-mode", Ignored::NotApplicable(TLS)),
    ("netty.server.outstandingHandshake.limit", Ignored::NotApplicable(TLS)),
    ("netty.server.earlyDropSecureConnectionHandshakes", Ignored::NotApplicable(TLS)),
    ("X509AuthenticationProvider.superUser", Ignored::NotApplicable(TLS)),
    (
        "allowSaslFailedClients",
        Ignored::NotSupported(
            "rzk closes the connection of a failed SASL exchange, as ZooKeeper does by default",
        ),
    ),
    ("requireClientAuthScheme", Ignored::NotApplicable(SASL)),
    (
        "ensembleAuthName",
        Ignored::NotSupported("rzk has no \"ensemble\" auth scheme; clients using it fail auth"),
    ),
    ("serverCnxnFactory", Ignored::NotApplicable("rzk has its own network layer")),
    ("clientCnxnSocket", Ignored::NotApplicable("a client setting")),
    ("netty.advancedFlowControl.enabled", Ignored::NotApplicable("rzk has its own flow control")),
    ("advancedFlowControlEnabled", Ignored::NotApplicable("rzk has its own flow control")),
    ("nio.numSelectorThreads", Ignored::NotApplicable("rzk's threads are set by --io-threads")),
    ("nio.numWorkerThreads", Ignored::NotApplicable("rzk's threads are set by --io-threads")),
    ("nio.shutdownTimeout", Ignored::NotApplicable(JVM)),
    (
        "nio.sessionlessCnxnTimeout",
        Ignored::NotSupported("rzk closes a connection without a handshake after 10 s"),
    ),
    ("commitProcessor.numWorkerThreads", Ignored::NotApplicable(JVM)),
    ("commitProcessor.maxReadBatchSize", Ignored::NotApplicable(JVM)),
    ("commitProcessor.maxCommitBatchSize", Ignored::NotApplicable(JVM)),
    ("watchManagerName", Ignored::NotApplicable(JVM)),
    ("watcherCleanThreadsNum", Ignored::NotApplicable(JVM)),
    ("watcherCleanThreshold", Ignored::NotApplicable(JVM)),
    ("watcherCleanIntervalInSeconds", Ignored::NotApplicable(JVM)),
    ("maxInProcessingDeadWatchers", Ignored::NotApplicable(JVM)),
    ("bitHashCacheSize", Ignored::NotApplicable(JVM)),
    ("maxResponseCacheSize", Ignored::NotApplicable(JVM)),
    ("maxGetChildrenResponseCacheSize", Ignored::NotApplicable(JVM)),
    ("jute.maxbuffer.extrasize", Ignored::NotApplicable(JVM)),
    ("enableEagerACLCheck", Ignored::NotApplicable("rzk checks ACLs before anything is logged")),
    ("digest.enabled", Ignored::NotApplicable("rzk checks CRCs of its log and snapshots")),
    ("serializeLastProcessedZxid.enabled", Ignored::NotApplicable("rzk's own snapshot format")),
    ("snapshot.compression.method", Ignored::NotApplicable("rzk's own snapshot format")),
    (
        "snapshot.trust.empty",
        Ignored::NotApplicable("rzk reads only its own data directory format"),
    ),
    ("emulate353TTLNodes", Ignored::NotApplicable("rzk's own data format")),
    ("forceSync", Ignored::NotSupported("rzk always syncs the log before acknowledging a write")),
    ("fsync.warningthresholdms", Ignored::NotSupported("rzk does not log slow fsyncs")),
    (
        "flushDelay",
        Ignored::NotSupported("rzk's group commit shares one fsync among concurrent writes"),
    ),
    (
        "maxWriteQueuePollTime",
        Ignored::NotSupported("rzk's group commit shares one fsync among concurrent writes"),
    ),
    (
        "maxBatchSize",
        Ignored::NotSupported("rzk's group commit shares one fsync among concurrent writes"),
    ),
    (
        "snapSizeLimitInKb",
        Ignored::NotSupported("snapshots follow snapCount and --snapshot-log-pct-min"),
    ),
    (
        "txnLogSizeLimitInKb",
        Ignored::NotSupported("log segments roll at preAllocSize and at each snapshot"),
    ),
    ("globalOutstandingLimit", Ignored::NotSupported(THROTTLE)),
    ("clientTcpKeepAlive", Ignored::NotSupported("rzk does not set TCP keepalive")),
    ("connectionMaxTokens", Ignored::NotSupported(THROTTLE)),
    ("connectionTokenFillTime", Ignored::NotSupported(THROTTLE)),
    ("connectionTokenFillCount", Ignored::NotSupported(THROTTLE)),
    ("connectionFreezeTime", Ignored::NotSupported(THROTTLE)),
    ("connectionDropIncrease", Ignored::NotSupported(THROTTLE)),
    ("connectionDropDecrease", Ignored::NotSupported(THROTTLE)),
    ("connectionDecreaseRatio", Ignored::NotSupported(THROTTLE)),
    ("connection_throttle_weight_enabled", Ignored::NotSupported(THROTTLE)),
    ("connection_throttle_global_session_weight", Ignored::NotSupported(THROTTLE)),
    ("connection_throttle_local_session_weight", Ignored::NotSupported(THROTTLE)),
    ("connection_throttle_renew_session_weight", Ignored::NotSupported(THROTTLE)),
    ("requestThrottleLimit", Ignored::NotSupported(THROTTLE)),
    ("requestThrottleStallTime", Ignored::NotSupported(THROTTLE)),
    ("requestThrottleDropStale", Ignored::NotSupported(THROTTLE)),
    ("requestStaleLatencyCheck", Ignored::NotSupported(THROTTLE)),
    ("requestStaleConnectionCheck", Ignored::NotSupported(THROTTLE)),
    ("request_throttler.shutdownTimeout", Ignored::NotSupported(THROTTLE)),
    ("throttled_op_wait_time", Ignored::NotSupported(THROTTLE)),
    ("largeRequestMaxBytes", Ignored::NotSupported(THROTTLE)),
    ("largeRequestThreshold", Ignored::NotSupported(THROTTLE)),
    (
        "znode.container.maxNeverUsedIntervalMs",
        Ignored::NotSupported("rzk keeps a container that never had children"),
    ),
    ("skipACL", Ignored::NotSupported("rzk always checks ACLs")),
    ("audit.enable", Ignored::NotSupported("rzk has no audit log")),
    ("audit.impl.class", Ignored::NotSupported("rzk has no audit log")),
];

/// The TLS keys ZooKeeper reads under both `ssl.` and `ssl.quorum.`.
const SSL_KEYS: &[&str] = &[
    "keyStore.location",
    "keyStore.password",
    "keyStore.passwordPath",
    "keyStore.type",
    "trustStore.location",
    "trustStore.password",
    "trustStore.passwordPath",
    "trustStore.type",
    "protocol",
    "enabledProtocols",
    "ciphersuites",
    "context.supplier.class",
    "hostnameVerification",
    "clientHostnameVerification",
    "crl",
    "ocsp",
    "clientAuth",
    "handshakeDetectionTimeoutMillis",
    "authProvider",
    "sslProvider",
];

/// `prefix` followed by a positive number, as in `server.3` or `group.1`.
pub(crate) fn numbered<'a>(key: &'a str, prefix: &str) -> Option<&'a str> {
    let n = key.strip_prefix(prefix)?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(n)
}

/// Families of keys: numbered ones, and prefixes whose every member is handled alike.
fn family(key: &str) -> Option<Ignored> {
    if numbered(key, "group.").is_some() || numbered(key, "weight.").is_some() {
        return Some(Ignored::NotApplicable(QUORUM));
    }
    if let Some(rest) = key.strip_prefix("ssl.quorum.") {
        return SSL_KEYS.contains(&rest).then_some(Ignored::NotApplicable(QUORUM));
    }
    if let Some(rest) = key.strip_prefix("ssl.") {
        return SSL_KEYS.contains(&rest).then_some(Ignored::NotApplicable(TLS));
    }
    if key.starts_with("authProvider.") {
        return Some(Ignored::NotSupported(
            "rzk loads no authentication providers; digest, ip, sasl (DIGEST-MD5) and x509 are \
             built in",
        ));
    }
    if key.starts_with("admin.") {
        return Some(Ignored::NotApplicable(
            "a setting of ZooKeeper's Jetty AdminServer; rzk's serves plain HTTP on \
             admin.serverAddress:admin.serverPort",
        ));
    }
    if key.starts_with("metricsProvider.") {
        return Some(Ignored::NotApplicable(
            "a setting of ZooKeeper's Java exporter; rzk serves plain HTTP on httpHost:httpPort",
        ));
    }
    if key.starts_with("pathStats.") {
        return Some(Ignored::NotApplicable(JVM));
    }
    None
}

/// What rzk does with a documented key it does not apply; `None` for a key it does not know
/// (or applies). `key` has any `zookeeper.` prefix removed.
pub(crate) fn ignored(key: &str) -> Option<Ignored> {
    if HONOURED.contains(&key) {
        // Families hold honoured keys too (`metricsProvider.httpPort`).
        return None;
    }
    IGNORED.iter().find(|(k, _)| *k == key).map(|(_, why)| *why).or_else(|| family(key))
}

/// Why rzk refuses to start with `key` set to `value`, or `None` when it may.
pub(crate) fn refusal(key: &str, value: &str) -> Option<&'static str> {
    let on = value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("yes");
    match key {
        "client.portUnification" if on => Some(
            "rzk serves TLS on secureClientPort only: the client port cannot accept TLS \
             connections",
        ),
        "DigestAuthenticationProvider.digestAlg"
            if !matches!(value.to_ascii_uppercase().as_str(), "SHA1" | "SHA-1") =>
        {
            Some("rzk computes digest credentials with SHA-1 only")
        }
        _ => None,
    }
}

/// Levenshtein distance, ASCII case folded: `clientport` is one edit from `clientPort`.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.to_ascii_lowercase().into_bytes(), b.to_ascii_lowercase().into_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The known key closest to an unknown one, if it is close enough to be a likely typo: at most
/// one edit in four characters (and at least one edit allowed), not counting case.
pub(crate) fn closest(key: &str) -> Option<String> {
    let plain = HONOURED.iter().copied().chain(IGNORED.iter().map(|(k, _)| *k));
    let ssl = SSL_KEYS.iter().map(|k| format!("ssl.{k}"));
    let (best, d) = plain
        .map(String::from)
        .chain(ssl)
        .map(|k| {
            let d = distance(key, &k);
            (k, d)
        })
        .min_by_key(|(_, d)| *d)?;
    // Keys are case-sensitive: a difference in case alone is a typo too.
    (best != key && d <= (key.len() / 4).max(1)).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_keys_get_the_closest_known_one() {
        let hint = |k: &str| closest(k);
        assert_eq!(hint("tickTme").as_deref(), Some("tickTime"));
        assert_eq!(hint("clientport").as_deref(), Some("clientPort"));
        assert_eq!(hint("autopurge.snapRetaincount").as_deref(), Some("autopurge.snapRetainCount"));
        assert_eq!(hint("initLimt").as_deref(), Some("initLimit"));
        assert_eq!(hint("ssl.keystore.location").as_deref(), Some("ssl.keyStore.location"));
        assert_eq!(hint("completelyDifferent"), None);
    }

    #[test]
    fn families_and_values() {
        assert_eq!(ignored("group.1"), Some(Ignored::NotApplicable(QUORUM)));
        assert_eq!(ignored("ssl.keyStore.location"), Some(Ignored::NotApplicable(TLS)));
        assert_eq!(ignored("ssl.quorum.keyStore.location"), Some(Ignored::NotApplicable(QUORUM)));
        assert_eq!(ignored("ssl.keyStore.nonsense"), None);
        assert!(matches!(ignored("admin.idleTimeout"), Some(Ignored::NotApplicable(_))));
        assert!(refusal("sessionRequireClientSASLAuth", "true").is_none(), "served since SASL");
        assert!(refusal("secureClientPort", "2281").is_none(), "served since TLS");
        assert!(refusal("DigestAuthenticationProvider.digestAlg", "SHA-256").is_some());
        assert!(refusal("DigestAuthenticationProvider.digestAlg", "SHA1").is_none());
        // No key is in two lists.
        for k in HONOURED {
            assert_eq!(ignored(k), None, "{k}");
        }
    }
}
