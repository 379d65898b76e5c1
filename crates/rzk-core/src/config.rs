//! Server-core settings. Every limit is named and carries its unit.

use std::collections::BTreeMap;

/// How the core behaves. The shell owns socket-level limits (connections per IP, packet size,
/// outstanding requests); the core owns protocol semantics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// ZooKeeper's `tickTime`: the unit for the session timeout bounds.
    pub tick_ms: u32,
    /// Smallest session timeout granted (`minSessionTimeout`, default 2 ticks).
    pub session_timeout_ms_min: i32,
    /// Largest session timeout granted (`maxSessionTimeout`, default 20 ticks).
    pub session_timeout_ms_max: i32,
    /// Whether TTL nodes may be created (`zookeeper.extendedTypesEnabled`).
    pub extended_types_enabled: bool,
    /// `user:base64(sha1(user:password))` of the super user, if any.
    pub super_digest: Option<String>,
    /// The DIGEST-MD5 users SASL authenticates (the JAAS `Server` section's
    /// `user_NAME="password"` options). Empty: no SASL server, and a sasl packet is answered
    /// as ZooKeeper answers it without one (no token, which a client takes as a refusal).
    pub sasl_users: SaslUsers,
    /// The SASL user that is also `super` (ZooKeeper's `zookeeper.superUser`).
    pub sasl_super_user: Option<String>,
    /// A SASL mechanism the shell provides (GSSAPI), which then serves every exchange
    /// instead of DIGEST-MD5: a ZooKeeper server too has one mechanism, the one its JAAS
    /// `Server` section logs in with.
    pub sasl_mechanism: Option<crate::sasl_mechanism::MechanismRef>,
    /// Authentication schemes of which a connection must hold an id before any request but
    /// `auth` and `sasl` is served (ZooKeeper's `enforce.auth.schemes` with
    /// `enforce.auth.enabled`). Empty serves every connection. Every connection holds its
    /// `ip` id from the start, as in ZooKeeper, so listing `ip` turns nobody away.
    pub enforced_auth_schemes: Vec<String>,
    /// How often empty containers and expired TTL nodes are reaped
    /// (`znode.container.checkIntervalMs`, default 60 s).
    pub container_check_interval_ms: u64,
    /// Most container/TTL deletions per check (`znode.container.maxPerMinute` scaled to the
    /// interval; bounds the work one tick can do).
    pub container_reaps_per_check_max: usize,
    /// Four-letter words that may run; `*` allows all (`4lw.commands.whitelist`).
    pub four_letter_words: Vec<String>,
    /// The server id in the top byte of session ids (1 for standalone ZooKeeper).
    pub server_id: u8,
    /// Seed for session passwords. The shell passes OS randomness; tests pass a constant.
    pub seed: u128,
    /// Largest frame accepted (`jute.maxbuffer`), reported by `conf`. Also the most bytes
    /// the creates of one `multi` may add to their ACLs by expanding `auth` entries (past it:
    /// `InvalidACL`), so that no transaction is much larger than its request.
    pub max_packet_bytes: usize,
    /// Most ids one connection may authenticate as (auth packets past it fail and close the
    /// connection). ZooKeeper has no bound; real clients add one to three.
    pub auth_ids_per_connection_max: usize,
    /// Most bytes of scheme and id one connection's ids may hold: a digest id embeds its user
    /// name, and each `auth` ACL entry copies every id.
    pub auth_bytes_per_connection_max: usize,
    /// Most entries in one node's ACL, counted after `auth` entries are expanded.
    pub acl_entries_max: usize,
    /// Most bytes one node's ACL may take on the wire, counted as it is expanded: every
    /// access check reads the whole list.
    pub acl_bytes_max: usize,
    /// Largest `multiRead` reply built. A bigger one closes the connection, which is what a
    /// client whose `jute.maxbuffer` is this size does when ZooKeeper sends it one; without
    /// it, one request naming a large node 60,000 times would make a reply of gigabytes.
    pub reply_bytes_max: usize,
    /// Most watches (one per path and kind: data or child) one connection may hold. Adding one
    /// more closes the connection.
    pub watches_per_connection_max: usize,
    /// Most bytes of watched paths one connection may hold.
    pub watch_path_bytes_per_connection_max: usize,
    /// Reported by `conf`: the client port, if the shell listens on one.
    pub client_port: u16,
    /// Reported by `conf`: where data lives, or `None` in memory.
    pub data_dir: Option<String>,
}

/// User names and their passwords, which no debug output shows.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SaslUsers(pub BTreeMap<String, String>);

impl std::fmt::Debug for SaslUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Config {
    /// Defaults for a tick length: timeouts within [2, 20] ticks, as ZooKeeper.
    pub fn with_tick_ms(tick_ms: u32) -> Config {
        let tick = tick_ms.max(1) as i32;
        Config {
            tick_ms,
            session_timeout_ms_min: tick.saturating_mul(2),
            session_timeout_ms_max: tick.saturating_mul(20),
            extended_types_enabled: false,
            super_digest: None,
            sasl_users: SaslUsers::default(),
            sasl_super_user: None,
            sasl_mechanism: None,
            enforced_auth_schemes: Vec::new(),
            container_check_interval_ms: 60_000,
            container_reaps_per_check_max: 10_000,
            four_letter_words: vec!["srvr".into()],
            server_id: 1,
            seed: 0x5eed,
            max_packet_bytes: rzk_proto::DEFAULT_MAX_PACKET_BYTES,
            auth_ids_per_connection_max: 32,
            auth_bytes_per_connection_max: 64 * 1024,
            acl_entries_max: 1024,
            acl_bytes_max: 64 * 1024,
            reply_bytes_max: rzk_proto::DEFAULT_MAX_PACKET_BYTES,
            watches_per_connection_max: 4 * 1024 * 1024,
            watch_path_bytes_per_connection_max: 256 * 1024 * 1024,
            client_port: 0,
            data_dir: None,
        }
    }

    /// Whether a four-letter word may run.
    pub fn four_letter_word_allowed(&self, word: &str) -> bool {
        self.four_letter_words.iter().any(|w| w == "*" || w == word)
    }
}

impl Default for Config {
    /// ZooKeeper's sample `zoo.cfg` tick of 2000 ms.
    fn default() -> Self {
        Config::with_tick_ms(2000)
    }
}
