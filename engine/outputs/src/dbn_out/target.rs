//! Where an output written beside itself and renamed (DBN, Parquet) really goes.
//!
//! Those outputs are written as `PATH.partial` and renamed to `PATH` when finished. A rename
//! replaces the directory entry it lands on, whatever that is: onto a symbolic link it
//! would put a regular file where the link was and leave the file the link named untouched
//! (`--dbn-out /dev/stdout > f` would leave `f` empty and, run as root, replace the
//! system's `/dev/stdout`). So the path is resolved first, and every output ends where the
//! CSV outputs' plain `File::create` puts its bytes:
//! - a regular file, or nothing yet: written beside it and renamed onto it;
//! - a symbolic link (or a chain of them) to a regular file, or to nothing yet (dangling):
//!   the same, beside the file at the end of the chain, so the link stays and names the new
//!   file (`/dev/stdout` redirected to a file is such a chain, through `/proc/self/fd/1`);
//! - anything else (a FIFO, a character device such as `/dev/null` or a terminal,
//!   `/dev/stdout` on a pipe), and a link whose end cannot be named (a redirected file
//!   since deleted): opened through the path as given and written in place, never renamed
//!   onto.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Links followed before giving up, as Linux's own limit (`ELOOP` past 40).
const MAX_LINKS: usize = 40;

/// How an output at a path is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OutputTarget {
    /// A regular file, or one to create: written beside this path (links resolved) and
    /// renamed onto it.
    Beside(PathBuf),
    /// Something that is not a regular file: opened through this path (as given) and
    /// written in place.
    InPlace(PathBuf),
}

impl OutputTarget {
    /// How the output `path` is written.
    pub(crate) fn of(path: &Path) -> Self {
        match fs::metadata(path) {
            Ok(m) if m.is_file() => match link_end(path) {
                // The end of the chain must be the file the path opens (a `/proc` link to a
                // deleted file reads as a name that is not it).
                Some(end) if is_same_file(&end, &m) => OutputTarget::Beside(end),
                _ => OutputTarget::InPlace(path.to_path_buf()),
            },
            Ok(_) => OutputTarget::InPlace(path.to_path_buf()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match link_end(path) {
                Some(end) if is_absent(&end) => OutputTarget::Beside(end),
                _ => OutputTarget::InPlace(path.to_path_buf()),
            },
            // Opening it says why, naming the path.
            Err(_) => OutputTarget::InPlace(path.to_path_buf()),
        }
    }
}

/// The path at the end of `path`'s chain of symbolic links (`path` itself when it is none),
/// whether or not anything is there; `None` past `MAX_LINKS` links or when a link cannot
/// be read.
pub fn link_end(path: &Path) -> Option<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = fs::read_link(&at).ok()?;
                // Relative to the link's folder; an absolute target replaces it.
                at = match at.parent() {
                    Some(folder) => folder.join(target),
                    None => target,
                };
            }
            Ok(_) => return Some(at),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Some(at),
            Err(_) => return None,
        }
    }
    None
}

fn is_same_file(path: &Path, opened: &fs::Metadata) -> bool {
    fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && m.dev() == opened.dev() && m.ino() == opened.ino())
}

fn is_absent(path: &Path) -> bool {
    matches!(fs::symlink_metadata(path), Err(e) if e.kind() == io::ErrorKind::NotFound)
}

/// The file beside `out` named `out`'s name and `suffix`.
pub(crate) fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    out.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_regular_file_or_a_new_one_is_written_beside_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("new.dbn");
        assert_eq!(OutputTarget::of(&new), OutputTarget::Beside(new.clone()));
        fs::write(&new, b"old").expect("write");
        assert_eq!(OutputTarget::of(&new), OutputTarget::Beside(new.clone()));
    }

    #[test]
    fn links_resolve_to_the_file_at_the_end_of_the_chain() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).expect("mkdir");
        let file = sub.join("day.dbn");
        fs::write(&file, b"old").expect("write");
        // A relative link to an absolute one to the file.
        let absolute = dir.path().join("absolute");
        symlink(&file, &absolute).expect("link");
        let relative = sub.join("relative");
        symlink("../absolute", &relative).expect("link");
        let expected = OutputTarget::Beside(file.clone());
        assert_eq!(OutputTarget::of(&absolute), expected);
        assert_eq!(OutputTarget::of(&relative), expected);
        // Dangling: where the file will be created.
        let dangling = dir.path().join("dangling");
        symlink("sub/later.dbn", &dangling).expect("link");
        assert_eq!(
            OutputTarget::of(&dangling),
            OutputTarget::Beside(dir.path().join("sub/later.dbn"))
        );
        // A loop is not resolved; opening it fails with its own error.
        let a = dir.path().join("a");
        symlink("b", &a).expect("link");
        symlink("a", dir.path().join("b")).expect("link");
        assert_eq!(OutputTarget::of(&a), OutputTarget::InPlace(a.clone()));
    }

    #[test]
    fn devices_and_links_to_them_are_written_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let null = Path::new("/dev/null");
        assert_eq!(OutputTarget::of(null), OutputTarget::InPlace(null.into()));
        let link = dir.path().join("null");
        symlink(null, &link).expect("link");
        assert_eq!(OutputTarget::of(&link), OutputTarget::InPlace(link.clone()));
    }
}
