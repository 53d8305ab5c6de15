//! From the file's raw values to checked sections: each key's value against its rule, each
//! refusal an error that names the file, the key, the value, the rule and the line.

use std::net::{Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Spanned, Value};

use super::allowed::Allowed;
use super::error::{ConfigError, Conflict, Location, Place};
use super::instance::Instance;
use super::limits;
use super::raw::RawValue;
use crate::pipeline::WaitStrategy;

/// Checks values of one file, turning spans into lines for its errors.
pub struct Checker<'a> {
    path: &'a Path,
    /// The file's text, to turn spans into lines; `None` for values set after loading.
    text: Option<&'a str>,
}

impl<'a> Checker<'a> {
    /// Checks values read from `text`, the contents of `path`.
    pub fn new(path: &'a Path, text: &'a str) -> Self {
        Checker {
            path,
            text: Some(text),
        }
    }

    /// Checks values that were set in code after `path` was loaded (no lines to name).
    pub fn after_load(path: &'a Path) -> Self {
        Checker { path, text: None }
    }

    /// The place of `span` in the file.
    pub fn place(&self, span: Option<Range<usize>>) -> Place {
        Place {
            path: self.path_buf(),
            at: self
                .text
                .zip(span)
                .map(|(text, span)| Location::of_offset(text, span.start)),
        }
    }

    fn path_buf(&self) -> PathBuf {
        self.path.to_path_buf()
    }

    /// The error for `value` of `key`, which `allowed` does not admit.
    pub fn refuse(
        &self,
        key: &'static str,
        value: &Value,
        span: Option<Range<usize>>,
        allowed: Allowed,
    ) -> ConfigError {
        ConfigError::Value {
            place: self.place(span),
            key,
            value: value.clone(),
            allowed,
        }
    }

    /// The error for a key that has no default and is absent from the section at `section`.
    pub fn missing(
        &self,
        key: &'static str,
        section: Option<Range<usize>>,
        allowed: Allowed,
    ) -> ConfigError {
        ConfigError::Missing {
            place: self.place(section),
            key,
            allowed,
        }
    }

    /// The error for two keys that clash; `span` is where the second is written.
    pub fn conflict(&self, conflict: Conflict, span: Option<Range<usize>>) -> ConfigError {
        ConfigError::Conflict {
            place: self.place(span),
            conflict,
        }
    }

    /// A TOML integer that `rule` (an integer or power-of-two rule) admits; `default` when
    /// absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for any other value: a float, a string, a negative number, a
    /// number out of range.
    pub fn integer(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: u64,
    ) -> Result<u64, ConfigError> {
        match raw {
            None => Ok(default),
            Some(v) => self.required_integer(key, v, rule),
        }
    }

    /// [`Checker::integer`] as milliseconds.
    ///
    /// # Errors
    ///
    /// As [`Checker::integer`].
    pub fn millis(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let default_ms = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
        self.integer(key, raw, rule, default_ms)
            .map(Duration::from_millis)
    }

    /// [`Checker::integer`] for a rule whose maximum fits a `u32`.
    ///
    /// # Errors
    ///
    /// As [`Checker::integer`].
    pub fn integer_u32(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: u32,
    ) -> Result<u32, ConfigError> {
        self.integer(key, raw, rule, u64::from(default))
            .map(|v| u32::try_from(v).expect("invariant: the rule fits u32"))
    }

    /// As [`Checker::integer`], for a present value.
    ///
    /// # Errors
    ///
    /// As [`Checker::integer`].
    pub fn required_integer(
        &self,
        key: &'static str,
        value: &Spanned<Value>,
        rule: &Allowed,
    ) -> Result<u64, ConfigError> {
        match value.get_ref() {
            Value::Integer(n) if rule.admits_integer(*n) => {
                Ok(u64::try_from(*n).expect("invariant: admitted integers are not negative"))
            }
            other => Err(self.refuse(key, other, Some(value.span()), rule.clone())),
        }
    }

    /// A usize that `rule` admits; `default` when absent.
    ///
    /// # Errors
    ///
    /// As [`Checker::integer`]; also a value beyond this machine's `usize`.
    pub fn usize(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: usize,
    ) -> Result<usize, ConfigError> {
        let n = self.integer(key, raw, rule, default as u64)?;
        usize::try_from(n).map_err(|_| {
            let value = Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
            self.refuse(key, &value, raw.as_ref().map(Spanned::span), rule.clone())
        })
    }

    /// A finite duration that `rule` (a seconds rule) admits, given as a TOML integer or float
    /// of seconds; `default` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for NaN, infinities, negatives, values out of range, or a value
    /// that is not a number.
    pub fn seconds(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
    ) -> Result<Option<Duration>, ConfigError> {
        let Some(v) = raw else {
            return Ok(None);
        };
        let seconds = match v.get_ref() {
            Value::Float(s) => Some(*s),
            // Whole seconds; every i64 converts (approximately) to f64.
            Value::Integer(n) => Some(*n as f64),
            _ => None,
        };
        match seconds {
            Some(s) if rule.admits_seconds(s) => Ok(Some(Duration::from_secs_f64(s))),
            _ => Err(self.refuse(key, v.get_ref(), Some(v.span()), rule.clone())),
        }
    }

    /// A string that `rule` (an ASCII rule) admits; `None` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for a value that is not a string, too long, too short, or not
    /// printable ASCII.
    pub fn ascii(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
    ) -> Result<Option<String>, ConfigError> {
        let Some(v) = raw else {
            return Ok(None);
        };
        match v.get_ref() {
            Value::String(s) if rule.admits_text(s) => Ok(Some(s.clone())),
            other => Err(self.refuse(key, other, Some(v.span()), rule.clone())),
        }
    }

    /// A secret string that `rule` (an ASCII rule) admits; `None` when absent. A refused
    /// secret's error says `"<redacted>"` where other errors print the value.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for a value that is not a string, too long, too short, or not
    /// printable ASCII.
    pub fn secret(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
    ) -> Result<Option<String>, ConfigError> {
        self.ascii(key, raw, rule).map_err(|e| match e {
            ConfigError::Value { .. } => {
                let span = raw.as_ref().map(Spanned::span);
                self.refuse(key, &Value::String("<redacted>".into()), span, rule.clone())
            }
            other => other,
        })
    }

    /// A name that `rule` (a name rule) admits; `default` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for a value that is not a string, empty, too long, or with a
    /// character the rule does not admit.
    pub fn name(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: &str,
    ) -> Result<String, ConfigError> {
        let Some(v) = raw else {
            return Ok(default.to_owned());
        };
        match v.get_ref() {
            Value::String(s) if rule.admits_name(s) => Ok(s.clone()),
            other => Err(self.refuse(key, other, Some(v.span()), rule.clone())),
        }
    }

    /// A string naming one of `rule`'s choices, parsed by `parse`; `default` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything `parse` refuses.
    pub fn choice<T>(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: T,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, ConfigError> {
        let Some(v) = raw else {
            return Ok(default);
        };
        match v.get_ref() {
            Value::String(s) => parse(s),
            _ => None,
        }
        .ok_or_else(|| self.refuse(key, v.get_ref(), Some(v.span()), rule.clone()))
    }

    /// `engine.instance`: an integer index, or a name hashed to one; index 0 when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for an integer out of range (with the index rule), a string
    /// that is empty, too long or not printable ASCII (with the name rule), or any other
    /// value (with the index rule).
    pub fn instance(&self, raw: &RawValue) -> Result<Instance, ConfigError> {
        const KEY: &str = "engine.instance";
        let Some(v) = raw else {
            return Ok(Instance::default());
        };
        match v.get_ref() {
            Value::String(_) => Ok(Instance::Name(
                self.ascii(KEY, raw, &limits::INSTANCE_NAME)?
                    .expect("invariant: the value is present"),
            )),
            _ => self
                .required_integer(KEY, v, &limits::INSTANCE_INDEX)
                .map(Instance::Index),
        }
    }

    /// The wait strategy; spin-yield when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for an unknown name.
    pub fn wait(&self, raw: &RawValue) -> Result<WaitStrategy, ConfigError> {
        self.choice(
            "engine.wait",
            raw,
            &limits::WAIT,
            WaitStrategy::default(),
            |s| {
                limits::WAIT_NAMES
                    .contains(&s)
                    .then(|| s.parse().ok())
                    .flatten()
            },
        )
    }

    /// A core id that exists for this process; `None` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything but the id of a core this process may run on.
    pub fn core(
        &self,
        key: &'static str,
        raw: &RawValue,
        cores: &[usize],
    ) -> Result<Option<usize>, ConfigError> {
        let Some(v) = raw else {
            return Ok(None);
        };
        match v.get_ref() {
            Value::Integer(n) => usize::try_from(*n).ok().filter(|id| cores.contains(id)),
            _ => None,
        }
        .map(Some)
        .ok_or_else(|| {
            self.refuse(
                key,
                v.get_ref(),
                Some(v.span()),
                Allowed::Core {
                    cores: cores.to_vec(),
                },
            )
        })
    }

    /// A socket address written as a string; `connectable` ones must name a port and not the
    /// unspecified address. `None` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything else.
    pub fn socket_addr(
        &self,
        key: &'static str,
        raw: &RawValue,
        connectable: bool,
    ) -> Result<Option<SocketAddr>, ConfigError> {
        self.parsed(
            key,
            raw,
            |a: &SocketAddr| !connectable || (a.port() != 0 && !a.ip().is_unspecified()),
            Allowed::SocketAddr { connectable },
        )
    }

    /// An IPv4 address written as a string; `multicast` ones must be a group. `None` when
    /// absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything else.
    pub fn ipv4(
        &self,
        key: &'static str,
        raw: &RawValue,
        multicast: bool,
    ) -> Result<Option<Ipv4Addr>, ConfigError> {
        self.parsed(
            key,
            raw,
            |a: &Ipv4Addr| !multicast || a.is_multicast(),
            Allowed::Ipv4 { multicast },
        )
    }

    /// A string that parses as a `T` that `admits` accepts; `None` when absent.
    fn parsed<T: std::str::FromStr>(
        &self,
        key: &'static str,
        raw: &RawValue,
        admits: impl Fn(&T) -> bool,
        allowed: Allowed,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = raw else {
            return Ok(None);
        };
        match v.get_ref() {
            Value::String(s) => s.parse::<T>().ok().filter(|t| admits(t)),
            _ => None,
        }
        .map(Some)
        .ok_or_else(|| self.refuse(key, v.get_ref(), Some(v.span()), allowed))
    }

    /// A TOML boolean; `default` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything else (`"true"` as a string included).
    pub fn boolean(
        &self,
        key: &'static str,
        raw: &RawValue,
        rule: &Allowed,
        default: bool,
    ) -> Result<bool, ConfigError> {
        let Some(v) = raw else {
            return Ok(default);
        };
        match v.get_ref() {
            Value::Boolean(b) => Ok(*b),
            other => Err(self.refuse(key, other, Some(v.span()), rule.clone())),
        }
    }

    /// A non-empty path written as a string; `None` when absent.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`] for anything else.
    pub fn path(&self, key: &'static str, raw: &RawValue) -> Result<Option<PathBuf>, ConfigError> {
        let Some(v) = raw else {
            return Ok(None);
        };
        match v.get_ref() {
            Value::String(s) if !s.is_empty() => Ok(Some(PathBuf::from(s))),
            other => Err(self.refuse(key, other, Some(v.span()), Allowed::Path)),
        }
    }

    /// Refuses a value set in code after loading that its rule does not admit.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`], without a line.
    pub fn recheck_integer(
        &self,
        key: &'static str,
        n: usize,
        rule: &Allowed,
    ) -> Result<(), ConfigError> {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        if rule.admits_integer(n) {
            Ok(())
        } else {
            Err(self.refuse(key, &Value::Integer(n), None, rule.clone()))
        }
    }

    /// As [`Checker::recheck_integer`], for a duration.
    ///
    /// # Errors
    ///
    /// [`ConfigError::Value`], without a line.
    pub fn recheck_seconds(
        &self,
        key: &'static str,
        d: Duration,
        rule: &Allowed,
    ) -> Result<(), ConfigError> {
        let s = d.as_secs_f64();
        if rule.admits_seconds(s) {
            Ok(())
        } else {
            Err(self.refuse(key, &Value::Float(s), None, rule.clone()))
        }
    }
}

/// The ids of the cores this process may run on (its affinity mask), or `0 .. n` for the `n`
/// threads the OS reports where the mask cannot be read; empty if neither is known.
pub fn available_cores() -> Vec<usize> {
    match core_affinity::get_core_ids() {
        Some(ids) if !ids.is_empty() => ids.into_iter().map(|c| c.id).collect(),
        _ => (0..std::thread::available_parallelism().map_or(0, usize::from)).collect(),
    }
}

/// Refuses a level table over its limit: address space for `max_books * 2 * levels_per_side`
/// levels (and up to as much again, see `limits::MAX_LEVEL_TABLE_BYTES`) is reserved at
/// start-up.
pub fn level_table(max_books: usize, levels_per_side: usize) -> Result<(), Conflict> {
    let bytes =
        (max_books as u128) * 2 * (levels_per_side as u128) * u128::from(limits::LEVEL_BYTES);
    if bytes <= u128::from(limits::MAX_LEVEL_TABLE_BYTES) {
        Ok(())
    } else {
        Err(Conflict::LevelTable {
            max_books: max_books as u64,
            levels_per_side: levels_per_side as u64,
            bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
            max_bytes: limits::MAX_LEVEL_TABLE_BYTES,
        })
    }
}

/// Refuses two busy-spinning threads pinned to one core.
pub fn core_pair(
    wait: WaitStrategy,
    reader: Option<usize>,
    book: Option<usize>,
) -> Result<(), Conflict> {
    match (reader, book) {
        (Some(r), Some(b)) if r == b && wait == WaitStrategy::BusySpin => {
            Err(Conflict::SameBusyCore { core: r })
        }
        _ => Ok(()),
    }
}
