//! The layers of the engine and of the feed crate, kept true by reading their sources: a
//! module may name only modules on a lower floor (`crate::…` paths, in `use` lines or anywhere
//! in code, tests included). Floors follow the data, lowest first; the engine's table is the
//! one in `engine/src/lib.rs`. A new top-level module must be given a floor here.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Every top-level module of `engine/src`, with its floor.
const ENGINE_FLOORS: &[(&str, u8)] = &[
    ("sync", 0),
    ("clock", 0),
    ("digit_groups", 0),
    ("health", 0),
    ("dependency", 0),
    ("admin_token", 0),
    ("http_head", 0),
    ("output_filter", 0),
    ("ring", 1),
    ("seqlock", 1),
    ("book", 2),
    ("writer_thread", 2),
    ("csv", 3),
    ("dbn_out", 3),
    ("snapshot", 4),
    ("publish", 4),
    ("sample", 4),
    ("parquet_out", 5),
    ("overload", 5),
    ("serve_guard", 5),
    ("pipeline", 6),
    ("config", 7),
    ("replay", 8),
    ("live", 8),
    ("admin", 8),
    ("web", 8),
    ("tail", 8),
    ("serve", 8),
    ("views", 9),
];

/// Every top-level module of `feed/src`, with its floor: bytes and protocol machines below,
/// the files and sockets that feed them above, the simulator (which uses all of them) on top.
const FEED_FLOORS: &[(&str, u8)] = &[
    ("itch", 0),
    ("rng", 0),
    ("net", 0),
    ("resilience", 1),
    ("moldudp64", 2),
    ("soupbintcp", 3),
    ("capture", 3),
    ("sim", 4),
];

fn floor(floors: &[(&str, u8)], module: &str) -> Option<u8> {
    floors.iter().find(|(m, _)| *m == module).map(|&(_, f)| f)
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn feed_src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../feed/src")
}

/// Every `.rs` file under `dir`, except the binary's (it may use anything: it is on top).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read engine/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
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
/// names checked, and the violations.
fn violations(root: &Path, floors: &[(&str, u8)]) -> (usize, Vec<String>) {
    let mut files = Vec::new();
    sources(root, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} sources", files.len());
    let mut violations = Vec::new();
    let mut checked = 0;
    for path in &files {
        let Some(module) = module_of(root, path) else {
            continue;
        };
        let own = floor(floors, &module).unwrap_or_else(|| {
            panic!(
                "{}: module `{module}` has no floor; add it to the floors in engine/tests/layers.rs (and the engine's table in lib.rs)",
                path.display()
            )
        });
        let code = code_of(&fs::read_to_string(path).expect("read source"));
        for named in modules_named(&code) {
            if named == module {
                continue;
            }
            checked += 1;
            match floor(floors, &named) {
                Some(theirs) if theirs < own => {}
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
    let (checked, violations) = violations(&src_dir(), ENGINE_FLOORS);
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
    let (checked, violations) = violations(&feed_src_dir(), FEED_FLOORS);
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
    assert!(declared.len() >= 10, "lib.rs declares {declared:?}");
    for module in declared {
        assert!(
            floor(ENGINE_FLOORS, module).is_some(),
            "lib.rs declares `{module}` without a floor"
        );
    }
}
