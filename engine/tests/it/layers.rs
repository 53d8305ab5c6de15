//! The layers that Cargo cannot see, kept true by reading the sources: inside the
//! applications crate, the feed crate and the engine's multi-module crates, a module may
//! name only modules on a lower floor (`crate::…` paths, in `use` lines or anywhere in code,
//! tests included). Between crates Cargo keeps the order: a crate can only name what it
//! depends on. Floors follow the data, lowest first. A new top-level module of the
//! applications or feed crate must be given a floor here.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The applications crate (`engine/src`): the layers below it are crates of their own (Cargo
/// keeps their order), re-exported under their module names on floor 0; then its own
/// modules, lowest first.
const ENGINE_FLOORS: &[(&str, u8)] = &[
    ("ring", 0),
    ("seqlock", 0),
    ("book", 0),
    ("publish", 0),
    ("snapshot", 0),
    ("writer_thread", 0),
    ("output_filter", 0),
    ("csv", 0),
    ("dbn_out", 0),
    ("sample", 0),
    ("parquet_out", 0),
    ("row_chunks", 0),
    ("table_rows", 0),
    ("table_tap", 0),
    ("pipeline", 0),
    ("clock", 0),
    ("health", 0),
    ("dependency", 0),
    ("overload", 0),
    ("serve", 0),
    ("serve_guard", 0),
    ("http_head", 0),
    ("admin_token", 0),
    ("admin", 0),
    ("web", 0),
    ("digit_groups", 1),
    ("exit_status", 1),
    ("config", 2),
    ("replay", 3),
    ("live", 3),
    ("tail", 3),
    ("views", 4),
    ("watch", 5),
];

/// Inside the crates Cargo cannot order: what each one's modules may name. A module not
/// listed is on the crate's own top floor (`TOP`), above every listed one: those are the
/// parts of the crate's root module, and may name each other.
const TOP: u8 = u8::MAX;

/// `ticklane-pipeline`: the stages' shared pieces, then the overload policy, then the
/// pipeline's own modules.
const PIPELINE_FLOORS: &[(&str, u8)] = &[
    ("clock", 0),
    ("health", 0),
    ("dependency", 0),
    ("overload", 1),
];

/// `ticklane-outputs`: the row filter, the writer thread and the tables' rows, the rows in
/// chunks, the CSV and DBN writers, the sampler and the table tap that write through them,
/// Parquet on top.
const OUTPUTS_FLOORS: &[(&str, u8)] = &[
    ("output_filter", 0),
    ("writer_thread", 0),
    ("table_rows", 0),
    ("row_chunks", 1),
    ("csv", 1),
    ("dbn_out", 1),
    ("sample", 2),
    ("table_tap", 2),
    ("parquet_out", 3),
];

/// `ticklane-serve`: the admission policy below the server that applies it.
const SERVE_FLOORS: &[(&str, u8)] = &[("serve_guard", 0)];

/// `ticklane-http`: the request head reader, the token and the browser view's counters below
/// the two servers.
const HTTP_FLOORS: &[(&str, u8)] = &[
    ("http_head", 0),
    ("admin_token", 0),
    ("web_counters", 0),
    ("admin", 1),
    ("web", 1),
];

/// Every top-level module of `feed/src`, with its floor: bytes and protocol machines below,
/// the files that feed them above (the sockets and the simulator are crates of their own).
const FEED_FLOORS: &[(&str, u8)] = &[
    ("itch", 0),
    ("rng", 0),
    ("resilience", 1),
    ("glimpse", 1),
    ("moldudp64", 2),
    ("soupbintcp", 3),
    ("capture", 3),
];

fn floor(floors: &[(&str, u8)], module: &str) -> Option<u8> {
    floors.iter().find(|(m, _)| *m == module).map(|&(_, f)| f)
}

/// A crate's floors: the table, and the floor of a module the table does not list (`None`:
/// every module must be listed).
#[derive(Clone, Copy)]
struct Floors {
    table: &'static [(&'static str, u8)],
    unlisted: Option<u8>,
}

impl Floors {
    fn strict(table: &'static [(&'static str, u8)]) -> Self {
        Floors {
            table,
            unlisted: None,
        }
    }

    fn with_top(table: &'static [(&'static str, u8)]) -> Self {
        Floors {
            table,
            unlisted: Some(TOP),
        }
    }

    fn of(self, module: &str) -> Option<u8> {
        floor(self.table, module).or(self.unlisted)
    }
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `src` of the crate at `relative` from the engine's manifest.
fn crate_src(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(relative)
        .join("src")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read engine/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file under `root` belongs to (`None` for `lib.rs`).
fn module_of(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).expect("under src");
    let first = relative.components().next()?.as_os_str().to_string_lossy();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

/// Code without comments (line comments, doc comments and block comments), so that prose
/// naming a module above is not taken for an import.
fn code_of(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else if let Some(after) = rest.strip_prefix("'\"'") {
            out.push_str("' '");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("r#\"") {
            rest = after.find("\"#").map_or("", |i| &after[i + 2..]);
            out.push_str("\"\"");
        } else if let Some(after) = rest.strip_prefix('"') {
            // Skip string literals (they may hold `//` or `crate::` as text).
            let mut end = 0;
            let bytes = after.as_bytes();
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            rest = after.get(end + 1..).unwrap_or("");
        } else {
            let c = rest.chars().next().expect("non-empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn identifier_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules a piece of code names through `crate::`, including the grouped
/// form `crate::{a::X, b::{Y, Z}}`.
fn modules_named(code: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let preceded_by_ident = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
        if preceded_by_ident {
            continue; // `ticklane_crate::` or `$crate::` in a macro is not this crate
        }
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut expecting = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => expecting = true,
                    c if expecting && depth == 1 && !c.is_whitespace() => {
                        named.insert(identifier_at(&group[i..]).to_string());
                        expecting = false;
                    }
                    _ => {}
                }
            }
        } else {
            named.insert(identifier_at(rest).to_string());
        }
    }
    named
}

/// Every import of the crate under `root` against `floors`: the number of cross-module
/// names checked, and the violations. A name that starts in upper case is an item at the
/// crate's root (a crate whose root is a module of its own), not a module.
fn violations(root: &Path, floors: Floors) -> (usize, Vec<String>) {
    let mut files = Vec::new();
    sources(root, &mut files);
    files.sort();
    assert!(files.len() > 5, "found only {} sources", files.len());
    let mut violations = Vec::new();
    let mut checked = 0;
    for path in &files {
        let Some(module) = module_of(root, path) else {
            continue;
        };
        let own = floors.of(&module).unwrap_or_else(|| {
            panic!(
                "{}: module `{module}` has no floor; add it to the floors in engine/tests/it/layers.rs (and the engine's table in lib.rs)",
                path.display()
            )
        });
        let code = code_of(&fs::read_to_string(path).expect("read source"));
        for named in modules_named(&code) {
            if named == module || named.starts_with(|c: char| c.is_ascii_uppercase()) {
                continue;
            }
            checked += 1;
            match floors.of(&named) {
                // The top floor's modules are one module's parts (the crate root's own),
                // which may name each other.
                Some(theirs) if theirs < own || (own == TOP && theirs == TOP) => {}
                Some(theirs) => violations.push(format!(
                    "{}: `{module}` (floor {own}) names `crate::{named}` (floor {theirs})",
                    path.display()
                )),
                None => violations.push(format!(
                    "{}: names `crate::{named}`, which has no floor",
                    path.display()
                )),
            }
        }
    }
    (checked, violations)
}

#[test]
fn no_engine_module_names_one_on_its_floor_or_above() {
    let (checked, violations) = violations(&src_dir(), Floors::strict(ENGINE_FLOORS));
    assert!(
        checked > 50,
        "only {checked} cross-module names found: the scan is broken"
    );
    assert!(
        violations.is_empty(),
        "imports against the layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn no_feed_module_names_one_on_its_floor_or_above() {
    let (checked, violations) = violations(&crate_src("../feed"), Floors::strict(FEED_FLOORS));
    assert!(
        checked > 10,
        "only {checked} cross-module names found: the scan is broken"
    );
    assert!(
        violations.is_empty(),
        "imports against the feed's layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn inside_the_pipeline_outputs_serve_and_http_crates_no_module_names_one_on_its_floor_or_above() {
    for (name, floors) in [
        ("pipeline", PIPELINE_FLOORS),
        ("outputs", OUTPUTS_FLOORS),
        ("serve", SERVE_FLOORS),
        ("http", HTTP_FLOORS),
    ] {
        let (checked, violations) = violations(&crate_src(name), Floors::with_top(floors));
        assert!(
            checked > 0,
            "ticklane-{name}: only {checked} cross-module names found: the scan is broken"
        );
        assert!(
            violations.is_empty(),
            "imports against ticklane-{name}'s layers:\n{}",
            violations.join("\n")
        );
    }
}

#[test]
fn the_scanner_sees_every_form_of_import() {
    let code = code_of(
        "use crate::book::Books; // crate::live in a comment\n\
         /* crate::tail */ use crate::{csv::X, snapshot::{A, B}};\n\
         fn f() { crate::pipeline::run(); let s = \"crate::config\"; }\n\
         macro_rules! m { () => { $crate::replay::x() } }",
    );
    let named: Vec<_> = modules_named(&code).into_iter().collect();
    assert_eq!(named, ["book", "csv", "pipeline", "snapshot"]);
}

#[test]
fn every_top_level_module_has_a_floor() {
    let lib = fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    let code = code_of(&lib);
    let declared: Vec<&str> = code
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
                .map(|m| m.trim_end_matches(';'))
        })
        .collect();
    assert!(declared.len() >= 5, "lib.rs declares {declared:?}");
    for module in declared {
        assert!(
            floor(ENGINE_FLOORS, module).is_some(),
            "lib.rs declares `{module}` without a floor"
        );
    }
}
