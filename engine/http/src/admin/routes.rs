//! Which request gets which answer: sans-I/O, so that every status is tested without a
//! socket.

use prometheus_client::registry::Registry;

use super::{health_json, render_metrics, AdminState, METRICS_CONTENT_TYPE};
use ticklane_pipeline::dependency::ManualCommand;

/// An answer to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";

impl Response {
    fn text(status: u16, body: impl Into<String>) -> Self {
        let mut body = body.into();
        body.push('\n');
        Response {
            status,
            content_type: TEXT,
            body,
        }
    }
}

/// The answer to `method path` with this `authorization` header (its raw value, if sent).
///
/// Admin calls (`POST /feeds/{name}/isolate` and `/close`): 503 when no token is configured
/// (admin calls are off), 401 without an `Authorization` header, 403 with one that is not
/// `Bearer` and the token, 404 for an unknown feed (asked only after the token is checked,
/// so that feed names are not told to strangers), else 200 with the command posted to every
/// dependency of the feed.
pub fn route(
    state: &AdminState,
    metrics: &Registry,
    method: &str,
    target: &str,
    authorization: Option<&[u8]>,
) -> Response {
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    match (method, path) {
        ("GET", "/health") => {
            let report = state.health.report();
            Response {
                status: report.http_status(),
                content_type: JSON,
                body: health_json(&report),
            }
        }
        ("GET", "/metrics") => Response {
            status: 200,
            content_type: METRICS_CONTENT_TYPE,
            body: render_metrics(metrics),
        },
        (_, "/health" | "/metrics") => Response::text(405, "method not allowed: use GET"),
        _ => match admin_call(path) {
            Some((feed, command)) if method == "POST" => admin(state, feed, command, authorization),
            Some(_) => Response::text(405, "method not allowed: use POST"),
            None => Response::text(
                404,
                "not found: /health, /metrics, /feeds/{name}/isolate, /feeds/{name}/close",
            ),
        },
    }
}

/// `/feeds/{name}/isolate` or `/feeds/{name}/close`, parsed.
fn admin_call(path: &str) -> Option<(&str, ManualCommand)> {
    let rest = path.strip_prefix("/feeds/")?;
    let (feed, verb) = rest.rsplit_once('/')?;
    let command = match verb {
        "isolate" => ManualCommand::Isolate,
        "close" => ManualCommand::Close,
        _ => return None,
    };
    (!feed.is_empty() && !feed.contains('/')).then_some((feed, command))
}

fn admin(
    state: &AdminState,
    feed: &str,
    command: ManualCommand,
    authorization: Option<&[u8]>,
) -> Response {
    let Some(token) = &state.token else {
        return Response::text(
            503,
            "admin calls are off: no token configured (admin.token or TICKLANE_ADMIN_TOKEN)",
        );
    };
    let Some(header) = authorization else {
        return Response::text(401, "unauthorized: send Authorization: Bearer TOKEN");
    };
    let offered = header.strip_prefix(b"Bearer ").unwrap_or(b"");
    if !token.matches(offered.trim_ascii()) {
        return Response::text(403, "forbidden: wrong token");
    }
    let Some(handles) = state.feed(feed) else {
        return Response::text(404, "no such feed");
    };
    for dependency in &handles.dependencies {
        dependency.post(command);
    }
    let verb = match command {
        ManualCommand::Isolate => "isolate",
        ManualCommand::Close => "close",
    };
    Response {
        status: 200,
        content_type: JSON,
        body: serde_json::json!({
            "feed": handles.name,
            "command": verb,
            "dependencies": handles.dependencies.iter().map(|d| d.name()).collect::<Vec<_>>(),
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::admin::{metrics_registry, FeedHandles};
    use crate::admin_token::AdminToken;
    use ticklane_pipeline::dependency::{Dependency, DependencyKind};
    use ticklane_pipeline::health::{Condition, Health};
    use ticklane_pipeline::LineCounters;

    fn state(token: Option<&str>) -> Arc<AdminState> {
        Arc::new(AdminState {
            health: Arc::new(Health::new()),
            feeds: vec![FeedHandles {
                name: "nasdaq".into(),
                line: Arc::new(LineCounters::new()),
                dependencies: vec![
                    Arc::new(Dependency::new("nasdaq", DependencyKind::Line)),
                    Arc::new(Dependency::new(
                        "nasdaq.retransmission",
                        DependencyKind::RetransmissionServer,
                    )),
                ],
                overload: None,
                latency: None,
            }],
            token: token.and_then(AdminToken::new),
            servers: Arc::default(),
        })
    }

    fn call(s: &Arc<AdminState>, method: &str, path: &str, auth: Option<&str>) -> u16 {
        let registry = metrics_registry(Arc::clone(s));
        route(s, &registry, method, path, auth.map(str::as_bytes)).status
    }

    const TOKEN: &str = "0123456789abcdef";

    #[test]
    fn admin_calls_need_the_token() {
        let s = state(Some(TOKEN));
        let path = "/feeds/nasdaq/isolate";
        assert_eq!(call(&s, "POST", path, None), 401);
        assert_eq!(call(&s, "POST", path, Some("Bearer wrong")), 403);
        assert_eq!(call(&s, "POST", path, Some(TOKEN)), 403, "not Bearer");
        assert_eq!(call(&s, "POST", path, Some("Basic 0123456789abcdef")), 403);
        assert_eq!(call(&s, "POST", path, Some("Bearer 0123456789abcde")), 403);
        for d in &s.feeds[0].dependencies {
            assert_eq!(d.take_command(), None, "refused calls post nothing");
        }
        assert_eq!(
            call(&s, "POST", "/feeds/other/isolate", Some("Bearer wrong")),
            403
        );
        assert_eq!(
            call(
                &s,
                "POST",
                "/feeds/other/isolate",
                Some(&format!("Bearer {TOKEN}"))
            ),
            404
        );
    }

    #[test]
    fn an_authorized_call_reaches_every_dependency_of_the_feed() {
        let s = state(Some(TOKEN));
        let auth = format!("Bearer {TOKEN}");
        assert_eq!(call(&s, "POST", "/feeds/nasdaq/isolate", Some(&auth)), 200);
        for d in &s.feeds[0].dependencies {
            assert_eq!(
                d.take_command(),
                Some(ManualCommand::Isolate),
                "{}",
                d.name()
            );
        }
        assert_eq!(call(&s, "POST", "/feeds/nasdaq/close", Some(&auth)), 200);
        for d in &s.feeds[0].dependencies {
            assert_eq!(d.take_command(), Some(ManualCommand::Close), "{}", d.name());
        }
    }

    #[test]
    fn without_a_configured_token_admin_calls_are_off() {
        let s = state(None);
        assert_eq!(call(&s, "POST", "/feeds/nasdaq/isolate", None), 503);
        assert_eq!(
            call(&s, "POST", "/feeds/nasdaq/isolate", Some("Bearer x")),
            503
        );
    }

    #[test]
    fn health_answers_503_only_when_unhealthy_or_draining() {
        let s = state(None);
        assert_eq!(call(&s, "GET", "/health", None), 200);
        s.health.raise(Condition::LineStale, 1);
        assert_eq!(call(&s, "GET", "/health", None), 200, "Degraded serves");
        s.health.raise(Condition::LineEnded, 2);
        assert_eq!(call(&s, "GET", "/health", None), 503);
        let s = state(None);
        s.health.begin_draining(3);
        assert_eq!(call(&s, "GET", "/health?verbose", None), 503);
    }

    #[test]
    fn unknown_paths_and_methods_are_told_apart() {
        let s = state(Some(TOKEN));
        assert_eq!(call(&s, "GET", "/metrics", None), 200);
        assert_eq!(call(&s, "POST", "/metrics", None), 405);
        assert_eq!(call(&s, "GET", "/feeds/nasdaq/isolate", None), 405);
        assert_eq!(call(&s, "POST", "/feeds/nasdaq/reboot", None), 404);
        assert_eq!(call(&s, "POST", "/feeds//isolate", None), 404);
        assert_eq!(call(&s, "GET", "/", None), 404);
    }
}
