//! Subscriber passwords as Argon2id hashes in the PHC string format
//! (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`), the form the accounts file keeps.
//!
//! [`hash_password`] uses the argon2 crate's defaults, which are OWASP's recommendation for
//! Argon2id (19 MiB, 2 passes, 1 lane): 14.7 ms a verification on one core of the 2-core
//! development VM in a [`PasswordChecker`]'s kept memory, 15.5 ms allocating it each time
//! (20 verifications of each in a row, release build, best of 3 rounds), so one verifier
//! thread checks about 65 logins a second. The parameters travel in the string, so a file
//! may hold hashes of other costs and each is verified at its own. Verification ([`PasswordChecker`]) recomputes the hash in memory it
//! keeps and compares it with the stored one in constant time (`subtle`).
#![forbid(unsafe_code)]

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{Output, PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use subtle::ConstantTimeEq;

/// Why a password could not be hashed or a stored hash is not one this server verifies.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// Not a PHC string, or not Argon2id.
    #[error(
        "not an Argon2id hash in the PHC format ($argon2id$v=19$m=...,t=...,p=...$salt$hash): {0}"
    )]
    Format(String),
    /// The parameters cannot be used.
    #[error("Argon2id parameters: {0}")]
    Params(String),
}

/// An Argon2id hash of `password` with the default parameters and a random salt.
///
/// # Errors
///
/// Never with the default parameters; the error is argon2's.
pub fn hash_password(password: &[u8]) -> Result<String, PasswordError> {
    hash_with(password, Params::default())
}

/// [`hash_password`] at a cost of `memory_kib` KiB and `passes` passes over it, one lane
/// (tests use cheap ones; a verification costs what the hash says).
///
/// # Errors
///
/// A cost argon2 refuses (memory under 8 KiB, no pass).
pub fn hash_password_with_cost(
    password: &[u8],
    memory_kib: u32,
    passes: u32,
) -> Result<String, PasswordError> {
    let params = Params::new(memory_kib, passes, 1, None)
        .map_err(|e| PasswordError::Params(e.to_string()))?;
    hash_with(password, params)
}

fn hash_with(password: &[u8], params: Params) -> Result<String, PasswordError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password(password, &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError::Params(e.to_string()))
}

/// Checks that `phc` is an Argon2id hash this server can verify.
///
/// # Errors
///
/// What is wrong with it.
pub fn check_hash(phc: &str) -> Result<(), PasswordError> {
    let hash = PasswordHash::new(phc).map_err(|e| PasswordError::Format(e.to_string()))?;
    if hash.algorithm != Algorithm::Argon2id.ident() {
        return Err(PasswordError::Format(format!(
            "the algorithm is {}, not argon2id",
            hash.algorithm
        )));
    }
    Params::try_from(&hash).map_err(|e| PasswordError::Params(e.to_string()))?;
    if hash.hash.is_none() {
        return Err(PasswordError::Format("no hash after the salt".into()));
    }
    Ok(())
}

/// A hash of a random password at the cost of `phc` (or the default), for the logins that
/// name no account: they are verified against it, so that a refusal takes as long whether
/// or not the account exists.
///
/// # Errors
///
/// As [`hash_password_with_cost`].
pub fn decoy_hash(phc: Option<&str>) -> Result<String, PasswordError> {
    let params = phc
        .and_then(|phc| PasswordHash::new(phc).ok())
        .and_then(|hash| Params::try_from(&hash).ok())
        .unwrap_or_default();
    let mut password = [0u8; 32];
    OsRng.fill_bytes(&mut password);
    hash_with(&password, params)
}

/// Whether `secret` is the password `phc` (checked by [`check_hash`]) was made from, in
/// memory of its own (a [`PasswordChecker`] used once).
pub fn verify(phc: &str, secret: &[u8]) -> bool {
    PasswordChecker::default().verify(phc, secret)
}

/// Verifies passwords in Argon2's working memory kept from one verification to the next:
/// the blocks of the largest cost seen so far (19 MiB at the default), allocated once, so
/// that a storm of logins neither allocates nor faults in 19 MiB per login (the argon2
/// crate's own `verify_password` does both, and the allocator keeps what it freed).
#[derive(Default)]
pub struct PasswordChecker {
    blocks: Vec<Block>,
}

impl PasswordChecker {
    /// Whether `secret` is the password `phc` was made from: the hash recomputed with the
    /// algorithm, version, parameters and salt the string carries, and compared with the
    /// stored output in constant time. A string that is not an Argon2id hash verifies
    /// nothing.
    pub fn verify(&mut self, phc: &str, secret: &[u8]) -> bool {
        let Ok(hash) = PasswordHash::new(phc) else {
            return false;
        };
        if hash.algorithm != Algorithm::Argon2id.ident() {
            return false;
        }
        let Ok(params) = Params::try_from(&hash) else {
            return false;
        };
        let Ok(version) = hash
            .version
            .map_or(Ok(Version::default()), Version::try_from)
        else {
            return false;
        };
        let (Some(salt), Some(expected)) = (hash.salt, hash.hash) else {
            return false;
        };
        let mut salt_bytes = [0u8; 64];
        let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
            return false;
        };
        let need = params.block_count();
        if self.blocks.len() < need {
            self.blocks.resize(need, Block::default());
        }
        let mut out = [0u8; Output::MAX_LENGTH];
        let out = &mut out[..expected.len()];
        let argon2 = Argon2::new(Algorithm::Argon2id, version, params);
        argon2
            .hash_password_into_with_memory(secret, salt, &mut *out, &mut self.blocks[..need])
            .is_ok()
            && bool::from(expected.as_bytes().ct_eq(out))
    }
}

impl std::fmt::Debug for PasswordChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PasswordChecker({} blocks)", self.blocks.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cheap() -> Params {
        Params::new(8, 1, 1, None).unwrap()
    }

    fn hash_password_with(password: &[u8], params: Params) -> Result<String, PasswordError> {
        hash_with(password, params)
    }

    #[test]
    fn one_checker_verifies_hashes_of_any_cost_in_the_memory_it_keeps() {
        let small = hash_password_with(b"a", cheap()).unwrap();
        let large = hash_password_with(b"b", Params::new(64, 1, 1, None).unwrap()).unwrap();
        let mut checker = PasswordChecker::default();
        assert!(checker.verify(&large, b"b"));
        assert!(
            checker.verify(&small, b"a"),
            "a smaller cost in larger memory"
        );
        assert!(!checker.verify(&small, b"b"));
        assert!(!checker.verify(&large, b"a"));
        assert!(!checker.verify("$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$aGFzaA", b"a"));
        assert!(!checker.verify("not a hash", b"a"));
        assert_eq!(checker.blocks.len(), 64, "grown once, to the largest cost");
    }

    #[test]
    fn a_hash_verifies_its_password_and_no_other() {
        let phc = hash_password_with(b"correct horse", cheap()).unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{phc}");
        check_hash(&phc).unwrap();
        assert!(verify(&phc, b"correct horse"));
        assert!(!verify(&phc, b"correct horsf"));
        assert!(!verify(&phc, b""));
    }

    #[test]
    fn the_default_cost_is_owasps() {
        let phc = hash_password(b"x").unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
    }

    #[test]
    fn other_algorithms_and_garbage_are_refused() {
        assert!(check_hash("secret").is_err());
        let argon2i = Argon2::new(Algorithm::Argon2i, Version::V0x13, cheap())
            .hash_password(b"x", &SaltString::generate(&mut OsRng))
            .unwrap()
            .to_string();
        let error = check_hash(&argon2i).unwrap_err().to_string();
        assert!(error.contains("not argon2id"), "{error}");
    }

    #[test]
    fn the_decoy_costs_what_the_accounts_cost() {
        let phc = hash_password_with(b"x", cheap()).unwrap();
        let decoy = decoy_hash(Some(&phc)).unwrap();
        assert!(decoy.starts_with("$argon2id$v=19$m=8,t=1,p=1$"), "{decoy}");
        assert!(!verify(&decoy, b"x"));
    }
}
