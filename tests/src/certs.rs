//! Test certificates made in the test, never committed keys: a CA, server certificates it
//! issues (current or expired), and self-signed ones, as PEM files in a temporary folder.

use std::fs;
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A certificate and its key, written as PEM files.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

impl TestCa {
    /// A fresh CA named `name`.
    ///
    /// # Panics
    ///
    /// If rcgen fails (it does not, on valid parameters).
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::new()).expect("no names");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes the CA's own certificate to `dir/name` (what a client trusts).
    ///
    /// # Panics
    ///
    /// If the file cannot be written.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, &self.pem).expect("write the CA");
        path
    }

    /// A server certificate for `names` (DNS names or IP addresses), valid now, written to
    /// `dir/{stem}.pem` and `dir/{stem}-key.pem`.
    ///
    /// # Panics
    ///
    /// If rcgen fails or a file cannot be written.
    pub fn issue(&self, dir: &Path, stem: &str, names: &[&str]) -> CertFiles {
        self.issue_with(dir, stem, names, |_| {})
    }

    /// [`TestCa::issue`], expired a year ago.
    ///
    /// # Panics
    ///
    /// As [`TestCa::issue`].
    pub fn issue_expired(&self, dir: &Path, stem: &str, names: &[&str]) -> CertFiles {
        self.issue_with(dir, stem, names, |p| {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        })
    }

    fn issue_with(
        &self,
        dir: &Path,
        stem: &str,
        names: &[&str],
        adjust: impl FnOnce(&mut CertificateParams),
    ) -> CertFiles {
        let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
        let mut params = CertificateParams::new(names).expect("names");
        adjust(&mut params);
        let key = KeyPair::generate().expect("server key");
        let cert = params.signed_by(&key, &self.issuer).expect("issue");
        let files = CertFiles {
            cert: dir.join(format!("{stem}.pem")),
            key: dir.join(format!("{stem}-key.pem")),
        };
        fs::write(&files.cert, cert.pem()).expect("write the certificate");
        fs::write(&files.key, key.serialize_pem()).expect("write the key");
        files
    }
}
