//! Random values at every configuration key, one at a time and several together: loading
//! never panics, and either every value of the loaded configuration lies in its documented
//! range or the error names a key whose value is out of range.
//!
//! The oracle is this file's own copy of the ranges documented in
//! `engine/ticklane.example.toml` (and `std`'s address parsers), not the code under test.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use ticklane_engine::config::{ConfigError, FeedConfig, Instance, RunConfig};

/// A TOML value to write at a key.
#[derive(Clone, Debug)]
enum V {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Array(Vec<i64>),
}

impl V {
    /// The value as a TOML literal.
    fn literal(&self) -> String {
        match self {
            V::Int(n) => n.to_string(),
            V::Float(f) if f.is_nan() => "nan".into(),
            V::Float(f) if f.is_infinite() => if *f > 0.0 { "inf" } else { "-inf" }.into(),
            // `{:?}` always writes a fraction or an exponent, as TOML floats need.
            V::Float(f) => format!("{f:?}"),
            V::Str(s) => toml::Value::String(s.clone()).to_string(),
            V::Bool(b) => b.to_string(),
            V::Array(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// What a key accepts, as documented in `engine/ticklane.example.toml`.
#[derive(Clone, Copy, Debug)]
enum Rule {
    Int {
        min: i128,
        max: i128,
    },
    PowerOfTwo {
        min: i128,
        max: i128,
    },
    Seconds {
        min: f64,
        max: f64,
    },
    Core,
    OneOf(&'static [&'static str]),
    Ascii {
        min: usize,
        max: usize,
    },
    Addr {
        connectable: bool,
    },
    Ipv4 {
        multicast: bool,
    },
    Path,
    Kind,
    /// `engine.instance`: an index 0 ..= 65,535, or a name of 1 ..= 64 printable ASCII bytes.
    Instance,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Both,
    Mold,
    Soup,
}

/// Every key: section, name, which feed kind has it, and its rule.
const KEYS: &[(&str, &str, Scope, Rule)] = &[
    (
        "engine",
        "wait",
        Scope::Both,
        Rule::OneOf(&["busy-spin", "spin-yield", "park"]),
    ),
    ("engine", "reader_core", Scope::Both, Rule::Core),
    ("engine", "book_core", Scope::Both, Rule::Core),
    (
        "engine",
        "ring_slots",
        Scope::Both,
        Rule::PowerOfTwo {
            min: 1024,
            max: 4_194_304,
        },
    ),
    (
        "engine",
        "max_orders",
        Scope::Both,
        Rule::Int {
            min: 1,
            max: 4_294_967_294,
        },
    ),
    (
        "engine",
        "max_books",
        Scope::Both,
        Rule::Int {
            min: 1,
            max: 65_536,
        },
    ),
    (
        "engine",
        "levels_per_side",
        Scope::Both,
        Rule::Int {
            min: 1,
            max: 1_048_576,
        },
    ),
    ("engine", "instance", Scope::Both, Rule::Instance),
    (
        "engine",
        "stagger_step_ms",
        Scope::Both,
        Rule::Int {
            min: 0,
            max: 60_000,
        },
    ),
    (
        "engine",
        "stagger_cap_ms",
        Scope::Both,
        Rule::Int {
            min: 0,
            max: 600_000,
        },
    ),
    (
        "engine",
        "shutdown_timeout_s",
        Scope::Both,
        Rule::Seconds {
            min: 0.1,
            max: 600.0,
        },
    ),
    ("snapshot", "path", Scope::Both, Rule::Path),
    (
        "snapshot",
        "depth",
        Scope::Both,
        Rule::Int { min: 1, max: 1024 },
    ),
    (
        "snapshot",
        "capacity",
        Scope::Both,
        Rule::Int {
            min: 1,
            max: 65_536,
        },
    ),
    ("feed", "kind", Scope::Both, Rule::Kind),
    (
        "feed",
        "max_duration_s",
        Scope::Both,
        Rule::Seconds {
            min: 0.001,
            max: 604_800.0,
        },
    ),
    (
        "feed",
        "bind",
        Scope::Mold,
        Rule::Addr { connectable: false },
    ),
    (
        "feed",
        "multicast_group",
        Scope::Mold,
        Rule::Ipv4 { multicast: true },
    ),
    (
        "feed",
        "interface",
        Scope::Mold,
        Rule::Ipv4 { multicast: false },
    ),
    (
        "feed",
        "request_server",
        Scope::Mold,
        Rule::Addr { connectable: true },
    ),
    (
        "feed",
        "silence_timeout_s",
        Scope::Mold,
        Rule::Seconds {
            min: 1.0,
            max: 3600.0,
        },
    ),
    (
        "feed",
        "retransmit_timeout_ms",
        Scope::Mold,
        Rule::Int {
            min: 1,
            max: 60_000,
        },
    ),
    (
        "feed",
        "b_bind",
        Scope::Mold,
        Rule::Addr { connectable: false },
    ),
    (
        "feed",
        "b_multicast_group",
        Scope::Mold,
        Rule::Ipv4 { multicast: true },
    ),
    (
        "feed",
        "b_interface",
        Scope::Mold,
        Rule::Ipv4 { multicast: false },
    ),
    (
        "feed",
        "arbitration_wait_us",
        Scope::Mold,
        Rule::Int {
            min: 0,
            max: 100_000,
        },
    ),
    (
        "feed",
        "reorder_store_packets",
        Scope::Mold,
        Rule::Int {
            min: 64,
            max: 1_048_576,
        },
    ),
    (
        "feed",
        "server",
        Scope::Soup,
        Rule::Addr { connectable: true },
    ),
    (
        "feed",
        "username",
        Scope::Soup,
        Rule::Ascii { min: 1, max: 6 },
    ),
    (
        "feed",
        "password",
        Scope::Soup,
        Rule::Ascii { min: 0, max: 10 },
    ),
    (
        "feed",
        "session",
        Scope::Soup,
        Rule::Ascii { min: 0, max: 10 },
    ),
    (
        "feed",
        "next_sequence",
        Scope::Soup,
        Rule::Int {
            min: 0,
            max: i64::MAX as i128,
        },
    ),
    (
        "feed",
        "server_timeout_s",
        Scope::Soup,
        Rule::Seconds {
            min: 1.0,
            max: 3600.0,
        },
    ),
    (
        "feed",
        "max_reconnects",
        Scope::Soup,
        Rule::Int {
            min: 0,
            max: u32::MAX as i128,
        },
    ),
];

/// Keys a feed of each kind must have, with the value the base file gives them.
const MOLD_BASE: &[(&str, &str)] = &[("kind", "\"moldudp64\""), ("bind", "\"127.0.0.1:26477\"")];
const SOUP_BASE: &[(&str, &str)] = &[
    ("kind", "\"soupbintcp\""),
    ("server", "\"127.0.0.1:26400\""),
    ("username", "\"user\""),
    ("password", "\"secret\""),
];

/// Level table limit: `max_books * 2 * levels_per_side * 16` bytes.
const MAX_LEVEL_BYTES: i128 = 16 << 30;
/// Defaults of the keys that take part in cross-key rules.
const DEFAULT_MAX_BOOKS: i128 = 16_384;
const DEFAULT_LEVELS: i128 = 1024;

fn cores() -> Vec<usize> {
    core_affinity::get_core_ids()
        .map(|ids| ids.into_iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

fn is_printable_ascii(s: &str) -> bool {
    s.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// Whether `rule` admits `v` on its own.
fn admits(rule: Rule, v: &V, kind: Scope) -> bool {
    match (rule, v) {
        (Rule::Int { min, max }, V::Int(n)) => (min..=max).contains(&i128::from(*n)),
        (Rule::PowerOfTwo { min, max }, V::Int(n)) => {
            (min..=max).contains(&i128::from(*n)) && (*n as u64).is_power_of_two()
        }
        (Rule::Seconds { min, max }, V::Float(s)) => s.is_finite() && min <= *s && *s <= max,
        (Rule::Seconds { min, max }, V::Int(n)) => min <= *n as f64 && *n as f64 <= max,
        (Rule::Core, V::Int(n)) => usize::try_from(*n).is_ok_and(|id| cores().contains(&id)),
        (Rule::OneOf(names), V::Str(s)) => names.contains(&s.as_str()),
        (Rule::Ascii { min, max }, V::Str(s)) => {
            (min..=max).contains(&s.len()) && is_printable_ascii(s)
        }
        (Rule::Addr { connectable }, V::Str(s)) => s
            .parse::<SocketAddr>()
            .is_ok_and(|a| !connectable || (a.port() != 0 && !a.ip().is_unspecified())),
        (Rule::Ipv4 { multicast }, V::Str(s)) => s
            .parse::<Ipv4Addr>()
            .is_ok_and(|a| !multicast || a.is_multicast()),
        (Rule::Path, V::Str(s)) => !s.is_empty(),
        (Rule::Instance, V::Int(n)) => (0..=65_535).contains(n),
        (Rule::Instance, V::Str(s)) => (1..=64).contains(&s.len()) && is_printable_ascii(s),
        (Rule::Kind, V::Str(s)) => match kind {
            Scope::Soup => s == "soupbintcp",
            _ => s == "moldudp64",
        },
        _ => false,
    }
}

/// A file: the base of `kind` with `set` written over it.
#[derive(Clone, Debug)]
struct Doc {
    kind: Scope,
    set: Vec<(usize, V)>,
}

impl Doc {
    fn value(&self, section: &str, name: &str) -> Option<&V> {
        self.set
            .iter()
            .find(|(k, _)| KEYS[*k].0 == section && KEYS[*k].1 == name)
            .map(|(_, v)| v)
    }

    fn text(&self) -> String {
        let base = if self.kind == Scope::Soup {
            SOUP_BASE
        } else {
            MOLD_BASE
        };
        let mut out = String::new();
        for section in ["engine", "snapshot", "feed"] {
            out.push_str(&format!("[{section}]\n"));
            if section == "feed" {
                for (name, literal) in base {
                    if self.value("feed", name).is_none() {
                        out.push_str(&format!("{name} = {literal}\n"));
                    }
                }
            }
            for (k, v) in &self.set {
                if KEYS[*k].0 == section {
                    out.push_str(&format!("{} = {}\n", KEYS[*k].1, v.literal()));
                }
            }
        }
        out
    }

    /// Every key the loader may rightly name: each value its rule refuses, each key of a
    /// cross-key rule that is broken, and the keys a changed `kind` leaves foreign or missing.
    fn faults(&self) -> Vec<String> {
        let mut faults = Vec::new();
        for (k, v) in &self.set {
            let (section, name, _, rule) = KEYS[*k];
            if !admits(rule, v, self.kind) {
                faults.push(format!("{section}.{name}"));
            }
        }
        let int = |name: &str, default: i128| match self.value("engine", name) {
            Some(V::Int(n)) => Some(i128::from(*n)),
            None => Some(default),
            _ => None,
        };
        if let (Some(books), Some(levels)) = (
            int("max_books", DEFAULT_MAX_BOOKS),
            int("levels_per_side", DEFAULT_LEVELS),
        ) {
            let in_range = (1..=65_536).contains(&books) && (1..=1_048_576).contains(&levels);
            if in_range && books * 2 * levels * 16 > MAX_LEVEL_BYTES {
                faults.extend(["engine.max_books".into(), "engine.levels_per_side".into()]);
            }
        }
        let busy = matches!(self.value("engine", "wait"), Some(V::Str(s)) if s == "busy-spin" || s == "spin");
        if let (Some(r @ V::Int(a)), Some(b @ V::Int(c))) = (
            self.value("engine", "reader_core"),
            self.value("engine", "book_core"),
        ) {
            if busy
                && a == c
                && admits(Rule::Core, r, self.kind)
                && admits(Rule::Core, b, self.kind)
            {
                faults.extend(["engine.reader_core".into(), "engine.book_core".into()]);
            }
        }
        // Line B's group or interface without its bind address: the bind is missing.
        if self.value("feed", "b_bind").is_none()
            && (self.value("feed", "b_multicast_group").is_some()
                || self.value("feed", "b_interface").is_some())
        {
            faults.push("feed.b_bind".into());
        }
        // A kind switched to the other one: the base's keys of the old kind are foreign and
        // the new kind's required keys are missing.
        if let Some(V::Str(s)) = self.value("feed", "kind") {
            let switched = match self.kind {
                Scope::Soup => s == "moldudp64",
                _ => s == "soupbintcp",
            };
            if switched {
                for name in [
                    "bind",
                    "server",
                    "username",
                    "password",
                    "multicast_group",
                    "interface",
                    "request_server",
                    "silence_timeout_s",
                    "retransmit_timeout_ms",
                    "b_bind",
                    "b_multicast_group",
                    "b_interface",
                    "arbitration_wait_us",
                    "session",
                    "next_sequence",
                    "server_timeout_s",
                    "max_reconnects",
                ] {
                    faults.push(format!("feed.{name}"));
                }
            }
        }
        faults
    }
}

/// Every value of a loaded configuration lies in its documented range.
fn assert_in_range(config: &RunConfig) {
    let e = &config.engine;
    assert!(e.ring_slots.is_power_of_two() && (1024..=4_194_304).contains(&e.ring_slots));
    assert!((1..=4_294_967_294).contains(&e.max_orders));
    assert!((1..=65_536).contains(&e.max_books));
    assert!((1..=1_048_576).contains(&e.levels_per_side));
    assert!(e.max_books as u128 * 2 * e.levels_per_side as u128 * 16 <= MAX_LEVEL_BYTES as u128);
    assert!(e.stagger_step <= Duration::from_secs(60));
    assert!(e.stagger_cap <= Duration::from_secs(600));
    assert!((0.1..=600.0).contains(&e.shutdown_timeout.as_secs_f64()));
    match &e.instance {
        Instance::Index(i) => assert!(*i <= 65_535),
        Instance::Name(n) => assert!((1..=64).contains(&n.len()) && is_printable_ascii(n)),
    }
    for core in [e.reader_core, e.book_core].into_iter().flatten() {
        assert!(cores().contains(&core), "core {core}");
    }
    let s = &config.snapshot;
    assert!((1..=1024).contains(&s.depth) && (1..=65_536).contains(&s.capacity));
    assert!(s.path.as_ref().iter().all(|p| !p.as_os_str().is_empty()));
    let secs = |d: Duration, min: f64, max: f64| {
        assert!(
            (min..=max).contains(&d.as_secs_f64()),
            "{d:?} not in {min} ..= {max}"
        );
    };
    let max_duration = match &config.feed {
        FeedConfig::Mold(m) => {
            secs(m.silence_timeout, 1.0, 3600.0);
            let ms = m.recovery.retransmit_timeout.as_millis();
            assert!((1..=60_000).contains(&ms), "{ms} ms");
            assert!(m.udp.multicast_group.iter().all(|g| g.is_multicast()));
            assert!(m
                .line_b
                .iter()
                .all(|b| b.multicast_group.iter().all(|g| g.is_multicast())));
            assert!(m.recovery.arbitration_wait.as_micros() <= 100_000);
            assert!(m
                .request_server
                .iter()
                .all(|a| a.port() != 0 && !a.ip().is_unspecified()));
            m.max_duration
        }
        FeedConfig::Soup(f) => {
            secs(f.client.server_timeout, 1.0, 3600.0);
            assert!(f.server.port() != 0 && !f.server.ip().is_unspecified());
            f.max_duration
        }
    };
    if let Some(d) = max_duration {
        // Duration keeps nanoseconds: the smallest accepted value may round just below.
        secs(d, 0.001 - 1e-9, 604_800.0);
    }
    assert!(config.pipeline().is_ok() && config.feed_config().is_ok());
}

/// Loads `doc` and checks the outcome against the oracle.
fn check(doc: &Doc) -> Result<(), TestCaseError> {
    let text = doc.text();
    let faults = doc.faults();
    match RunConfig::parse(&text, Path::new("random.toml")) {
        Ok(config) => {
            prop_assert!(faults.is_empty(), "accepted despite {faults:?}:\n{text}");
            assert_in_range(&config);
        }
        Err(e) => {
            let message = e.to_string();
            prop_assert!(
                !faults.is_empty(),
                "refused a valid file:\n{text}\n{message}"
            );
            prop_assert!(message.starts_with("random.toml"), "{message}");
            let key = e.key().unwrap_or("<none>");
            prop_assert!(
                faults.iter().any(|f| f == key) && message.contains(key),
                "{message}\nnames {key}, faults {faults:?}\n{text}"
            );
            if !matches!(
                e,
                ConfigError::Conflict { .. } | ConfigError::Missing { .. }
            ) {
                prop_assert!(e.location().is_some(), "{message}");
            }
        }
    }
    Ok(())
}

fn any_value() -> BoxedStrategy<V> {
    let words = prop::sample::select(vec![
        "busy-spin",
        "spin-yield",
        "park",
        "spin",
        "yield",
        "sleep",
        "nap",
        "moldudp64",
        "soupbintcp",
        "",
        " ",
        "user",
        "toolong",
        "secret",
        "secret1234",
        "secret12345",
        "s\u{e9}ssion",
        "\t",
        "/dev/shm/x.snap",
        "5",
        "-1",
        "nan",
        "1e3",
    ]);
    let ips = prop::sample::select(vec![
        "127.0.0.1",
        "0.0.0.0",
        "239.1.1.1",
        "224.0.0.0",
        "240.0.0.1",
        "10.0.0.1",
        "::1",
        "[::1]",
        "[::]",
        "256.1.1.1",
        "localhost",
    ]);
    prop_oneof![
        any::<i64>().prop_map(V::Int),
        (-5i64..5).prop_map(V::Int),
        (-5i64..70_000).prop_map(V::Int),
        (0u32..63, -1i64..=1).prop_map(|(e, d)| V::Int((1i64 << e) + d)),
        Just(V::Int(i64::MAX)),
        Just(V::Int(i64::MIN)),
        any::<f64>().prop_map(V::Float),
        prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            1e300,
            -1e300,
            0.0005,
            0.001,
            0.999,
            1.0,
            5.0,
            3600.0,
            3600.5,
            604_800.0,
            604_800.1,
            -3.0,
            -1.0,
        ])
        .prop_map(V::Float),
        (-10.0f64..5000.0).prop_map(V::Float),
        "\\PC{0,12}".prop_map(V::Str),
        words.prop_map(|w| V::Str(w.to_string())),
        any::<i64>().prop_map(|n| V::Str(n.to_string())),
        (ips.clone(), any::<u16>()).prop_map(|(ip, port)| V::Str(format!("{ip}:{port}"))),
        ips.prop_map(|ip| V::Str(ip.to_string())),
        any::<bool>().prop_map(V::Bool),
        prop::collection::vec(any::<i64>(), 0..3).prop_map(V::Array),
    ]
    .boxed()
}

/// Values at and just past the edges of `rule`, where an off-by-one would hide.
fn edges(rule: Rule) -> BoxedStrategy<V> {
    let ints = |v: Vec<i128>| {
        let v: Vec<V> = v
            .into_iter()
            .filter_map(|n| i64::try_from(n).ok().map(V::Int))
            .collect();
        prop::sample::select(v).boxed()
    };
    let strs = |v: Vec<String>| {
        prop::sample::select(v.into_iter().map(V::Str).collect::<Vec<_>>()).boxed()
    };
    match rule {
        Rule::Int { min, max } => ints(vec![min - 1, min, min + 1, max - 1, max, max + 1]),
        Rule::PowerOfTwo { min, max } => ints(vec![
            min / 2,
            min - 1,
            min,
            min + 1,
            min * 2,
            max / 2,
            max - 1,
            max,
            max + 1,
            max * 2,
        ]),
        Rule::Seconds { min, max } => prop::sample::select(vec![
            V::Float(min),
            V::Float(min * 0.999),
            V::Float(max),
            V::Float(max * 1.0001),
            V::Int(min.ceil() as i64),
            V::Int(min.ceil() as i64 - 1),
            V::Int(max as i64),
            V::Int(max as i64 + 1),
        ])
        .boxed(),
        Rule::Core => {
            let n = cores().len() as i128;
            ints(vec![-1, 0, 1, n - 1, n, 99])
        }
        Rule::OneOf(names) => strs(
            names
                .iter()
                .flat_map(|n| [n.to_string(), n.to_uppercase()])
                .collect(),
        ),
        Rule::Ascii { min, max } => strs(vec![
            "a".repeat(min.saturating_sub(1)),
            "a".repeat(min),
            "a".repeat(max),
            "a".repeat(max + 1),
            "\u{e9}".repeat(max / 2 + 1),
            format!("{}\t", "a".repeat(min)),
        ]),
        Rule::Addr { .. } => strs(
            [
                "127.0.0.1:0",
                "0.0.0.0:1",
                "127.0.0.1:1",
                "[::1]:5",
                "[::]:5",
                "127.0.0.1",
            ]
            .map(String::from)
            .to_vec(),
        ),
        Rule::Ipv4 { .. } => strs(
            [
                "224.0.0.0",
                "239.255.255.255",
                "223.255.255.255",
                "240.0.0.0",
                "0.0.0.0",
            ]
            .map(String::from)
            .to_vec(),
        ),
        Rule::Path => strs(vec![String::new(), "x".into()]),
        Rule::Instance => prop::sample::select(vec![
            V::Int(-1),
            V::Int(0),
            V::Int(65_535),
            V::Int(65_536),
            V::Str(String::new()),
            V::Str("host-a".into()),
            V::Str("a".repeat(64)),
            V::Str("a".repeat(65)),
            V::Str("h\u{e9}".into()),
        ])
        .boxed(),
        Rule::Kind => strs(
            ["moldudp64", "soupbintcp", "MoldUDP64"]
                .map(String::from)
                .to_vec(),
        ),
    }
}

/// A value for key `k`: anything at all, or one at the edges of its rule.
fn value_for(k: usize) -> BoxedStrategy<V> {
    prop_oneof![any_value(), edges(KEYS[k].3)].boxed()
}

fn keys_of(kind: Scope) -> Vec<usize> {
    (0..KEYS.len())
        .filter(|&k| KEYS[k].2 == Scope::Both || KEYS[k].2 == kind)
        .collect()
}

fn one_key() -> impl Strategy<Value = Doc> {
    (0..KEYS.len())
        .prop_flat_map(|k| (Just(k), value_for(k)))
        .prop_map(|(k, v)| Doc {
            kind: if KEYS[k].2 == Scope::Soup {
                Scope::Soup
            } else {
                Scope::Mold
            },
            set: vec![(k, v)],
        })
}

fn several_keys() -> impl Strategy<Value = Doc> {
    prop_oneof![Just(Scope::Mold), Just(Scope::Soup)].prop_flat_map(|kind| {
        let keys = keys_of(kind);
        let n = keys.len();
        prop::sample::subsequence(keys, 2..=n)
            .prop_flat_map(|keys| {
                let values: Vec<_> = keys.iter().map(|&k| value_for(k)).collect();
                (Just(keys), values)
            })
            .prop_map(move |(keys, values)| Doc {
                kind,
                set: keys.into_iter().zip(values).collect(),
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        rng_seed: RngSeed::Fixed(8),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn one_random_value_is_accepted_in_range_or_refused_by_name(doc in one_key()) {
        check(&doc)?;
    }

    #[test]
    fn several_random_values_are_accepted_in_range_or_one_is_refused_by_name(doc in several_keys()) {
        check(&doc)?;
    }
}

#[test]
fn the_oracle_accepts_each_base_file() {
    for kind in [Scope::Mold, Scope::Soup] {
        let doc = Doc {
            kind,
            set: Vec::new(),
        };
        assert!(doc.faults().is_empty());
        let config = RunConfig::parse(&doc.text(), Path::new("base.toml")).expect("base file");
        assert_in_range(&config);
    }
}
