//! Who may log in to the subscriber server, and what each account may see: the accounts
//! file (`[serve] accounts`), loaded into an [`AccountTable`].
//!
//! # The accounts file
//!
//! TOML, one `[[account]]` table per account, made and extended by `ticklane account add`
//! (which hashes the password it reads from the terminal or stdin) and editable by hand:
//!
//! ```toml
//! [[account]]
//! name = "alice"                      # 1 to 16 printable ASCII, as the login carries it
//! password = "$argon2id$v=19$m=19456,t=2,p=1$..."   # Argon2id, PHC string format
//! symbols = ["AAPL", "MSFT", "QQ*"]   # exact names and patterns (* any run, ? one); "*" all
//! depth = "full"                      # "full": every level; "top": the best level a side
//! max_subscriptions = 100             # optional: at most this many symbols at once
//! max_sessions = 1                    # concurrent sessions (default 1)
//! ```
//!
//! Nothing is entitled by default: an account lists the symbols it may follow, `symbols`
//! is required, and an unknown key is an error (a misspelt `max_session` must not leave
//! an account unlimited). Names are unique. Every error names the file and the line.
//!
//! - **`depth = "top"`**: a book image carries the best level of each side only, and level
//!   updates are not sent; quotes (the top of book), trades and trading states are.
//! - **`max_subscriptions`**: a subscribe past it is refused (`E`, reason `M`), the session
//!   kept; the server's own `serve.max_symbols` still cuts a client that passes it.
//! - **`max_sessions`**: a login past it is refused with `J` reason `L` and a retry-after,
//!   since a session may end (a reconnect that races its own dead session gets in once the
//!   server has closed that one: at the latest the idle timeout).
pub mod password;
mod symbol_pattern;
pub mod verifier;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use symbol_pattern::SymbolPattern;

use super::protocol::{account_field, ACCOUNT_LEN};
use password::PasswordChecker;

/// How much of a book an account may see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Depth {
    /// Every level the server has (`snapshot.depth` in images).
    #[default]
    Full,
    /// The best level of each side.
    Top,
}

/// What one account may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entitlement {
    /// The symbols it may follow (any pattern matching is enough).
    pub symbols: Vec<SymbolPattern>,
    /// Top of book only, or every level.
    pub depth: Depth,
    /// At most this many subscriptions at once (`None`: the server's limit).
    pub max_subscriptions: Option<usize>,
    /// At most this many sessions logged in at once.
    pub max_sessions: usize,
}

impl Entitlement {
    /// Whether the account may follow `symbol` (8 bytes, space padded).
    pub fn allows(&self, symbol: &[u8; 8]) -> bool {
        self.symbols.iter().any(|p| p.matches(symbol))
    }
}

/// One account.
#[derive(Clone, PartialEq, Eq)]
pub struct Account {
    /// The name as the login carries it (space padded).
    pub name: [u8; ACCOUNT_LEN],
    /// Its password, an Argon2id PHC string.
    pub password: String,
    /// What it may see.
    pub entitlement: Entitlement,
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("name", &String::from_utf8_lossy(&self.name).trim_end())
            .field("password", &"<argon2id hash>")
            .field("entitlement", &self.entitlement)
            .finish()
    }
}

/// The accounts file, loaded and checked.
#[derive(Clone, Debug)]
pub struct AccountTable {
    accounts: Vec<Account>,
    by_name: HashMap<[u8; ACCOUNT_LEN], usize>,
    /// A hash of a random password at the accounts' cost, which logins naming no account
    /// are verified against (so that they take as long as a wrong password).
    decoy: String,
}

/// Why an accounts file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// The file could not be read.
    #[error("accounts file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what the format says.
    #[error("accounts file {path}{}: {message}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line, where known.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOnDisk {
    #[serde(default)]
    account: Vec<toml::Spanned<AccountOnDisk>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountOnDisk {
    name: String,
    password: String,
    symbols: Vec<String>,
    #[serde(default)]
    depth: Depth,
    max_subscriptions: Option<usize>,
    max_sessions: Option<usize>,
}

impl AccountTable {
    /// Reads and checks the accounts file at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read, or an account is not valid (named with its line).
    pub fn load(path: &Path) -> Result<AccountTable, AccountsError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccountsError::Read {
            path: path.to_owned(),
            source,
        })?;
        AccountTable::parse(&text, path)
    }

    /// Checks the text of an accounts file (`path` names it in errors).
    ///
    /// # Errors
    ///
    /// As [`AccountTable::load`].
    pub fn parse(text: &str, path: &Path) -> Result<AccountTable, AccountsError> {
        let invalid = |offset: Option<usize>, message: String| AccountsError::Invalid {
            path: path.to_owned(),
            line: offset.map(|at| line_of(text, at)),
            message,
        };
        let file: FileOnDisk = toml::from_str(text)
            .map_err(|e| invalid(e.span().map(|s| s.start), e.message().to_owned()))?;
        let mut accounts = Vec::with_capacity(file.account.len());
        let mut by_name = HashMap::with_capacity(file.account.len());
        for spanned in file.account {
            let at = Some(spanned.span().start);
            let a = spanned.into_inner();
            let name = account_field(&a.name)
                .map_err(|why| invalid(at, format!("account {:?}: {why}", a.name)))?;
            password::check_hash(&a.password)
                .map_err(|e| invalid(at, format!("account {:?}: password: {e}", a.name)))?;
            let symbols = a
                .symbols
                .iter()
                .map(|s| SymbolPattern::new(s).map_err(|why| format!("{s:?}: {why}")))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|why| invalid(at, format!("account {:?}: symbols: {why}", a.name)))?;
            let max_sessions = a.max_sessions.unwrap_or(1);
            if max_sessions == 0 || a.max_subscriptions == Some(0) {
                return Err(invalid(
                    at,
                    format!(
                        "account {:?}: max_sessions and max_subscriptions are at least 1 \
                         (remove the account to refuse it)",
                        a.name
                    ),
                ));
            }
            if by_name.insert(name, accounts.len()).is_some() {
                return Err(invalid(at, format!("account {:?} is named twice", a.name)));
            }
            accounts.push(Account {
                name,
                password: a.password,
                entitlement: Entitlement {
                    symbols,
                    depth: a.depth,
                    max_subscriptions: a.max_subscriptions,
                    max_sessions,
                },
            });
        }
        let decoy = password::decoy_hash(accounts.first().map(|a| a.password.as_str()))
            .map_err(|e| invalid(None, e.to_string()))?;
        Ok(AccountTable {
            accounts,
            by_name,
            decoy,
        })
    }

    /// The account named `name` (space padded), if there is one.
    pub fn get(&self, name: &[u8; ACCOUNT_LEN]) -> Option<&Account> {
        self.by_name.get(name).map(|&i| &self.accounts[i])
    }

    /// Every account, in file order.
    pub fn accounts(&self) -> &[Account] {
        &self.accounts
    }

    /// Whether `secret` is the password of the account `name`. An unknown account is
    /// checked against the decoy hash, so that both refusals cost one Argon2id verification.
    pub fn verify(&self, name: &[u8; ACCOUNT_LEN], secret: &[u8]) -> bool {
        self.verify_with(&mut PasswordChecker::default(), name, secret)
    }

    /// [`AccountTable::verify`] in `checker`'s memory (the verifier keeps one).
    pub fn verify_with(
        &self,
        checker: &mut PasswordChecker,
        name: &[u8; ACCOUNT_LEN],
        secret: &[u8],
    ) -> bool {
        match self.get(name) {
            Some(account) => checker.verify(&account.password, secret),
            None => {
                let _ = checker.verify(&self.decoy, secret);
                false
            }
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    fn hash(password: &str) -> String {
        password::hash_password_with_cost(password.as_bytes(), 8, 1).unwrap()
    }

    fn parse(text: &str) -> Result<AccountTable, AccountsError> {
        AccountTable::parse(text, Path::new("accounts.toml"))
    }

    fn padded(name: &str) -> [u8; 16] {
        account_field(name).unwrap()
    }

    #[test]
    fn an_account_with_its_entitlements() {
        let text = format!(
            "[[account]]\nname = \"alice\"\npassword = \"{}\"\nsymbols = [\"AAPL\", \"QQ*\"]\n\
             depth = \"top\"\nmax_subscriptions = 2\n\n[[account]]\nname = \"bob\"\n\
             password = \"{}\"\nsymbols = [\"*\"]\nmax_sessions = 3\n",
            hash("a"),
            hash("b")
        );
        let table = parse(&text).unwrap();
        let alice = table.get(&padded("alice")).unwrap();
        assert_eq!(alice.entitlement.depth, Depth::Top);
        assert_eq!(alice.entitlement.max_subscriptions, Some(2));
        assert_eq!(alice.entitlement.max_sessions, 1);
        assert!(alice.entitlement.allows(b"QQQ     "));
        assert!(!alice.entitlement.allows(b"MSFT    "));
        let bob = table.get(&padded("bob")).unwrap();
        assert_eq!(bob.entitlement.depth, Depth::Full);
        assert_eq!(bob.entitlement.max_sessions, 3);
        assert!(table.verify(&padded("alice"), b"a"));
        assert!(!table.verify(&padded("alice"), b"b"));
        assert!(!table.verify(&padded("carol"), b"a"));
        assert!(!format!("{alice:?}").contains("argon2id$"), "{alice:?}");
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let good = hash("a");
        let cases = [
            (
                format!("[[account]]\nname = \"a\"\npassword = \"{good}\"\n"),
                "missing field `symbols`",
            ),
            (
                format!(
                    "[[account]]\nname = \"a\"\npassword = \"{good}\"\nsymbols = []\nmax_session = 2\n"
                ),
                "unknown field `max_session`",
            ),
            (
                "[[account]]\nname = \"a\"\npassword = \"hunter2\"\nsymbols = []\n".to_owned(),
                "not an Argon2id hash",
            ),
            (
                format!("[[account]]\nname = \"a b \"\npassword = \"{good}\"\nsymbols = []\n"),
                "neither starts nor ends with a space",
            ),
            (
                format!(
                    "[[account]]\nname = \"a\"\npassword = \"{good}\"\nsymbols = [\"A B\"]\n"
                ),
                "without spaces",
            ),
            (
                format!(
                    "[[account]]\nname = \"a\"\npassword = \"{good}\"\nsymbols = []\n\n\
                     [[account]]\nname = \"a\"\npassword = \"{good}\"\nsymbols = []\n"
                ),
                "line 6: account \"a\" is named twice",
            ),
            (
                format!(
                    "[[account]]\nname = \"a\"\npassword = \"{good}\"\nsymbols = []\nmax_sessions = 0\n"
                ),
                "at least 1",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(&text).unwrap_err().to_string();
            assert!(
                error.starts_with("accounts file accounts.toml, line "),
                "{error}"
            );
            assert!(error.contains(expected), "{error} (wanted {expected})");
        }
    }

    #[test]
    fn an_empty_file_refuses_everyone() {
        let table = parse("").unwrap();
        assert!(table.accounts().is_empty());
        assert!(!table.verify(&padded("alice"), b""));
    }
}
