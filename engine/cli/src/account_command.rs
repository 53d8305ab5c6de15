//! `ticklane account add`: adds an account to the subscriber server's accounts file, its
//! password hashed with Argon2id. The password is read from the terminal without echo
//! (asked twice), or from standard input when that is not a terminal (its first line);
//! never from the command line, where other users' `ps` would see it.
//!
//! The file keeps what it had (comments included): the account is appended as a
//! `[[account]]` table and the whole file checked before anything is written. It is
//! written to a temporary file beside it and renamed over it, readable by its owner only;
//! when the path is a symbolic link, the file it points to is the one replaced, so the
//! link stays a link. A running server picks the account up on `SIGHUP` or at its reload
//! interval.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use ticklane_engine::serve::accounts::password::hash_password;
use ticklane_engine::serve::accounts::{AccountTable, SymbolPattern};
use ticklane_engine::serve::protocol::{account_field, MAX_SECRET};
use ticklane_engine::views::ExitStatus;

/// `ticklane account`.
#[derive(Args, Debug)]
pub struct AccountArgs {
    #[command(subcommand)]
    pub command: AccountCommand,
}

/// What to do with the accounts file.
#[derive(Subcommand, Debug)]
pub enum AccountCommand {
    /// Add an account, asking for its password (from the terminal, or stdin's first line).
    Add(AddArgs),
}

/// How much of a book the account sees.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DepthArg {
    /// Every level.
    Full,
    /// The best level of each side.
    Top,
}

/// `ticklane account add`.
#[derive(Args, Debug)]
pub struct AddArgs {
    /// The account's name (1 to 16 printable ASCII characters).
    #[arg(value_parser = super::arg_values::account)]
    pub name: String,
    /// The accounts file (`[serve] accounts`); created if it does not exist.
    #[arg(long, value_name = "PATH")]
    pub file: PathBuf,
    /// The symbols it may follow, comma separated: names and patterns (`*` any run, `?`
    /// one character; `*` for all).
    #[arg(long, value_delimiter = ',', required = true)]
    pub symbols: Vec<String>,
    /// Every level, or the top of book only.
    #[arg(long, value_enum, default_value = "full")]
    pub depth: DepthArg,
    /// At most this many subscriptions at once (default: the server's limit).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_subscriptions: Option<u32>,
    /// Sessions logged in at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
}

/// Runs `ticklane account`.
pub fn account(args: &AccountArgs) -> Result<ExitStatus> {
    match &args.command {
        AccountCommand::Add(add) => self::add(add),
    }
}

fn add(args: &AddArgs) -> Result<ExitStatus> {
    for symbol in &args.symbols {
        if let Err(why) = SymbolPattern::new(symbol) {
            eprintln!("ticklane account add: --symbols {symbol:?}: {why}");
            return Ok(ExitStatus::Usage);
        }
    }
    let target = target_of(&args.file)?;
    let existing = match std::fs::read_to_string(&target) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", target.display())),
    };
    let table = AccountTable::parse(&existing, &args.file)?;
    let name = account_field(&args.name).map_err(anyhow::Error::msg)?;
    if table.get(&name).is_some() {
        eprintln!(
            "ticklane account add: {} already has an account {:?}; edit or remove it first",
            args.file.display(),
            args.name
        );
        return Ok(ExitStatus::Usage);
    }
    let password = read_password(&args.name)?;
    let hash = hash_password(password.as_bytes())?;
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&account_table(args, &hash));
    // The whole file as the server will read it, before anything is written.
    let with = AccountTable::parse(&text, &args.file)?;
    write_replacing(&target, &text)?;
    eprintln!(
        "ticklane account add: {:?} added to {} ({} accounts); a running server takes it on \
         SIGHUP or at its reload interval",
        args.name,
        args.file.display(),
        with.accounts().len()
    );
    Ok(ExitStatus::Success)
}

/// The `[[account]]` table for `args`, its password `hash`.
fn account_table(args: &AddArgs, hash: &str) -> String {
    let quoted = |s: &str| format!("{:?}", s);
    let symbols: Vec<_> = args.symbols.iter().map(|s| quoted(s)).collect();
    let mut table = format!(
        "[[account]]\nname = {}\npassword = {}\nsymbols = [{}]\ndepth = \"{}\"\nmax_sessions = {}\n",
        quoted(&args.name),
        quoted(hash),
        symbols.join(", "),
        match args.depth {
            DepthArg::Full => "full",
            DepthArg::Top => "top",
        },
        args.max_sessions
    );
    if let Some(n) = args.max_subscriptions {
        table.push_str(&format!("max_subscriptions = {n}\n"));
    }
    table
}

/// The password: asked twice on a terminal, else stdin's first line (its line end taken
/// off).
fn read_password(name: &str) -> Result<String> {
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("password for {name}: "))?;
        let again = rpassword::prompt_password("again: ")?;
        if first != again {
            bail!("the two passwords differ");
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\n', '\r']).to_owned()
    };
    if password.is_empty() {
        bail!("an empty password");
    }
    if password.len() > MAX_SECRET {
        bail!("a password is at most {MAX_SECRET} bytes (the login's field)");
    }
    Ok(password)
}

/// The file a write to `path` must replace: the end of its symbolic links (followed even
/// when the last one points to no file yet), so that a link stays a link.
fn target_of(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&at)
                    .with_context(|| format!("reading the link {}", at.display()))?;
                at = match at.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(at),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(e).with_context(|| format!("reading {}", at.display())),
        }
    }
    bail!("{}: too many levels of symbolic links", path.display())
}

/// Writes `text` to a temporary file beside `target` (owner read and write only), syncs
/// it, and renames it over `target`.
fn write_replacing(target: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = target
        .file_name()
        .context("the accounts file has no file name")?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, target)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(e).with_context(|| format!("writing {}", target.display()));
    }
    Ok(())
}
