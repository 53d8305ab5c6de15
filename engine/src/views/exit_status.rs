//! Which error ends a command with which [`ExitStatus`]: a mistake in what was asked is a
//! usage error, anything else a failure. The type itself is [`crate::exit_status`].

use std::process::ExitCode;

pub use crate::exit_status::ExitStatus;

use crate::config::ConfigError;
use crate::dbn_out::SessionDateError;
use crate::live::RecordRefused;
use crate::parquet_out::ParquetOutError;
use crate::replay::ReplayError;
use crate::sample::SampleError;

impl ExitStatus {
    /// The status for an error that ended a command: [`ExitStatus::Usage`] when any error
    /// in its chain is a mistake in what was asked (a [`ConfigError`], a session date that
    /// is missing or malformed, outputs or options that do not go together),
    /// [`ExitStatus::Failure`] otherwise.
    pub fn of_error(error: &(dyn std::error::Error + 'static)) -> ExitStatus {
        let mut next = Some(error);
        while let Some(e) = next {
            let asked_wrong = e.is::<ConfigError>()
                || e.is::<crate::serve::tls::TlsConfigError>()
                || e.is::<crate::serve::accounts::AccountsError>()
                || matches!(
                    e.downcast_ref(),
                    Some(
                        crate::live::ConfiguredLineError::Tls { .. }
                            | crate::live::ConfiguredLineError::NotBuilt(_)
                            | crate::live::ConfiguredLineError::Accounts(_)
                            | crate::live::ConfiguredLineError::Audit { .. }
                    )
                )
                || e.is::<RecordRefused>()
                || e.is::<SessionDateError>()
                || matches!(
                    e.downcast_ref(),
                    Some(
                        ReplayError::Unsupported(_)
                            | ReplayError::PathClash(_)
                            | ReplayError::Unwritable(_)
                            | ReplayError::Sample(
                                SampleError::DbnDepth { .. } | SampleError::NoDate { .. }
                            )
                    )
                )
                || matches!(
                    e.downcast_ref(),
                    Some(ParquetOutError::NotFromDbnInput { .. } | ParquetOutError::NoDate { .. })
                );
            if asked_wrong {
                return ExitStatus::Usage;
            }
            next = e.source();
        }
        ExitStatus::Failure
    }

    /// For a command whose output is stdout or may be a pipe (`book`, `top`, `tail`, `replay`
    /// with an output on `/dev/stdout` or a FIFO; a feed line's own disconnects are handled
    /// inside it, never returned): a broken pipe is `… | head` having read enough, which ends
    /// as a SIGPIPE death reports it (141), not as a failure.
    pub fn closed_stdout(error: anyhow::Error) -> anyhow::Result<ExitStatus> {
        let broken_pipe = error.chain().any(|cause| {
            cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            Ok(ExitStatus::ClosedStdout)
        } else {
            Err(error)
        }
    }
}

/// The error and its causes, each cause said once: many of our errors already end with
/// their source's text (`{path}: {source}`), which `{:#}` would print again.
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
    }
    text
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use crate::config::RunConfig;

    /// An error that wraps another, as a caller adding context would.
    #[derive(Debug, thiserror::Error)]
    #[error("starting the line")]
    struct Context(#[source] ConfigError);

    #[test]
    fn codes_are_the_documented_numbers() {
        let codes = [
            ExitStatus::Success,
            ExitStatus::Failure,
            ExitStatus::Usage,
            ExitStatus::DeclaredLost,
            ExitStatus::DrainTimedOut,
            ExitStatus::Interrupted,
            ExitStatus::ClosedStdout,
        ]
        .map(ExitStatus::code);
        assert_eq!(codes, [0, 1, 2, 3, 4, 130, 141]);
    }

    #[test]
    fn any_declared_loss_is_its_own_status() {
        assert_eq!(ExitStatus::of_loss(0), ExitStatus::Success);
        assert_eq!(ExitStatus::of_loss(1), ExitStatus::DeclaredLost);
        assert_eq!(ExitStatus::of_loss(1_270_000), ExitStatus::DeclaredLost);
    }

    #[test]
    fn a_config_error_anywhere_in_the_chain_is_usage() {
        let bad = RunConfig::parse("[engine]\nring_slots = 3\n", Path::new("x.toml"))
            .expect_err("3 slots is refused");
        assert_eq!(ExitStatus::of_error(&bad), ExitStatus::Usage);
        let wrapped = Context(bad);
        assert_eq!(ExitStatus::of_error(&wrapped), ExitStatus::Usage);
        let io = std::io::Error::other("socket");
        assert_eq!(ExitStatus::of_error(&io), ExitStatus::Failure);
    }

    #[test]
    fn options_that_cannot_be_served_are_usage_not_failure() {
        let no_date = crate::dbn_out::SessionDate::from_file_name(Path::new("day.itch50"))
            .expect_err("no date in the name");
        assert_eq!(ExitStatus::of_error(&no_date), ExitStatus::Usage);
        let together = ReplayError::Unsupported("--parquet-out with --symbols");
        assert_eq!(ExitStatus::of_error(&together), ExitStatus::Usage);
        let parquet = ReplayError::Parquet(ParquetOutError::NoDate {
            path: "x.parquet".into(),
        });
        assert_eq!(ExitStatus::of_error(&parquet), ExitStatus::Usage);
        let depth = ReplayError::Sample(SampleError::DbnDepth { depth: 11 });
        assert_eq!(ExitStatus::of_error(&depth), ExitStatus::Usage);
        let sample_written = ReplayError::Sample(SampleError::Io {
            path: "x.csv".into(),
            source: std::io::Error::other("disk full"),
        });
        assert_eq!(ExitStatus::of_error(&sample_written), ExitStatus::Failure);
        let written = ReplayError::Output {
            path: "x.csv".into(),
            source: std::io::Error::other("disk full"),
        };
        assert_eq!(ExitStatus::of_error(&written), ExitStatus::Failure);
    }
}
