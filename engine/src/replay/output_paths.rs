//! Refusing a replay whose outputs would overwrite its input or each other, before anything
//! is opened: an output created over a mapped input truncates the pages being read (the
//! process dies of SIGBUS), and two outputs on one path leave only the last one written.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::dbn_out::link_end;

/// Two paths of one replay that name the same file.
#[derive(Debug, thiserror::Error)]
pub enum PathClash {
    /// An output is the input file.
    #[error("{flag} {} is the input file: it would be overwritten while it is read", path.display())]
    Input {
        /// The output's option.
        flag: &'static str,
        /// The path as given.
        path: PathBuf,
    },
    /// Two outputs are one file.
    #[error("{first} and {second} both name {}: each output needs its own file", path.display())]
    Outputs {
        /// The first output's option.
        first: &'static str,
        /// The second output's option.
        second: &'static str,
        /// The second path as given.
        path: PathBuf,
    },
}

/// What a path names, as far as sharing goes.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    /// An existing regular file (hard links and symbolic links resolve to it).
    File { dev: u64, ino: u64 },
    /// Not there yet: where it will be created.
    ToCreate(PathBuf),
    /// Something else that exists: `/dev/null`, a pipe, a terminal. Any number of outputs
    /// may write there (and a directory fails when opened, with its own message).
    Shared,
}

fn identity(path: &Path) -> Identity {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => Identity::File {
            dev: m.dev(),
            ino: m.ino(),
        },
        Ok(_) => Identity::Shared,
        // A dangling link creates the file it names.
        Err(_) => Identity::ToCreate(where_created(&link_end(path).unwrap_or(path.into()))),
    }
}

/// `path` with its folder resolved (`a/../b.csv` and `./b.csv` are one file); as given when
/// the folder does not exist either, which fails when opened.
fn where_created(path: &Path) -> PathBuf {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (fs::canonicalize(folder), path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => path.to_path_buf(),
    }
}

/// Checks that no output in `outputs` (option name, path) is the file `input` or another
/// output's file.
///
/// # Errors
///
/// The first clash found, in the order given.
pub fn check_output_paths(
    input: &Path,
    outputs: &[(&'static str, &Path)],
) -> Result<(), PathClash> {
    let input = identity(input);
    let mut seen: Vec<(&'static str, Identity)> = Vec::with_capacity(outputs.len());
    for &(flag, path) in outputs {
        let id = identity(path);
        if id == Identity::Shared {
            continue;
        }
        if id == input {
            return Err(PathClash::Input {
                flag,
                path: path.to_path_buf(),
            });
        }
        if let Some((first, _)) = seen.iter().find(|(_, other)| *other == id) {
            return Err(PathClash::Outputs {
                first,
                second: flag,
                path: path.to_path_buf(),
            });
        }
        seen.push((flag, id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    #[test]
    fn an_output_on_the_input_is_refused_by_any_name() {
        let dir = folder();
        let input = dir.path().join("day.itch50");
        fs::write(&input, b"x").expect("writes");
        let linked = dir.path().join("linked.csv");
        fs::hard_link(&input, &linked).expect("links");
        let dotted = dir.path().join(".").join("day.itch50");
        for path in [&input, &linked, &dotted] {
            let err = check_output_paths(&input, &[("--bbo-out", path)]).unwrap_err();
            assert!(
                matches!(
                    err,
                    PathClash::Input {
                        flag: "--bbo-out",
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn two_outputs_on_one_file_are_refused_whether_it_exists_or_not() {
        let dir = folder();
        let input = dir.path().join("day.itch50");
        fs::write(&input, b"x").expect("writes");
        let new = dir.path().join("out.csv");
        let same_new = dir.path().join("sub").join("..").join("out.csv");
        fs::create_dir(dir.path().join("sub")).expect("makes");
        let err = check_output_paths(&input, &[("--bbo-out", &new), ("--book-out", &same_new)])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "--bbo-out and --book-out both name {}: each output needs its own file",
                same_new.display()
            )
        );
        fs::write(&new, b"old").expect("writes");
        assert!(
            check_output_paths(&input, &[("--dbn-out", &new), ("--sample-out", &new)]).is_err()
        );
    }

    #[test]
    fn a_dangling_link_clashes_with_the_output_it_names() {
        let dir = folder();
        let input = dir.path().join("day.itch50");
        fs::write(&input, b"x").expect("writes");
        let out = dir.path().join("out.dbn");
        let link = dir.path().join("link.dbn");
        std::os::unix::fs::symlink("out.dbn", &link).expect("links");
        assert!(
            check_output_paths(&input, &[("--dbn-out", &out), ("--parquet-out", &link)]).is_err()
        );
    }

    #[test]
    fn distinct_files_and_shared_devices_pass() {
        let dir = folder();
        let input = dir.path().join("day.itch50");
        fs::write(&input, b"x").expect("writes");
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        let null = Path::new("/dev/null");
        let outputs = [
            ("--bbo-out", a.as_path()),
            ("--book-out", b.as_path()),
            ("--summary-json", null),
            ("--dbn-out", null),
        ];
        check_output_paths(&input, &outputs).expect("no clash");
    }
}
