//! `/ui` over a real socket without a browser: sign-in for operators only, sessions and CSRF
//! tokens refused when missing or wrong, the security headers on every answer.

use backstop_server::ui::session::{COOKIE, LOGIN_COOKIE};

use crate::support::{AGENT_A, OPERATOR, Server, start, vendor};

/// A client that follows no redirect and reports every status.
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .into()
}

#[derive(Debug)]
struct Page {
    status: u16,
    location: Option<String>,
    cookies: Vec<String>,
    csp: Option<String>,
    text: String,
}

fn page(mut response: ureq::http::Response<ureq::Body>) -> Page {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let location = header("location");
    let csp = header("content-security-policy");
    let cookies = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    Page {
        status: response.status().as_u16(),
        location,
        cookies,
        csp,
        text: response.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn get(server: &Server, path: &str, cookie: Option<&str>) -> Page {
    let mut request = agent().get(&server.url(path));
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    page(request.call().unwrap())
}

fn post_form(server: &Server, path: &str, cookie: Option<&str>, form: &[(&str, &str)]) -> Page {
    let mut request = agent().post(&server.url(path));
    if let Some(cookie) = cookie {
        request = request.header("Cookie", cookie);
    }
    page(request.send_form(form.iter().copied()).unwrap())
}

/// The value of `name` in a `Set-Cookie` list.
fn set_cookie(page: &Page, name: &str) -> Option<String> {
    page.cookies.iter().find_map(|c| {
        let (pair, _) = c.split_once(';')?;
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| value.to_owned())
    })
}

/// The value of the hidden `csrf` field.
fn csrf_field(html: &str) -> String {
    let at = html.find(r#"name="csrf" value=""#).expect("a csrf field") + 19;
    html[at..].split('"').next().unwrap().to_owned()
}

/// Signs in with `key`; the session cookie header, or the sign-in answer.
fn sign_in(server: &Server, key: &str) -> Result<String, Page> {
    let form = get(server, "/ui/login", None);
    let nonce = set_cookie(&form, LOGIN_COOKIE).unwrap();
    assert_eq!(
        csrf_field(&form.text),
        nonce,
        "double-submit: cookie and field agree"
    );
    let answer = post_form(
        server,
        "/ui/login",
        Some(&format!("{LOGIN_COOKIE}={nonce}")),
        &[("key", key), ("csrf", &nonce)],
    );
    match set_cookie(&answer, COOKIE) {
        Some(token) if answer.status == 303 => Ok(format!("{COOKIE}={token}")),
        _ => Err(answer),
    }
}

#[test]
fn nothing_is_shown_without_a_session_and_agents_cannot_sign_in() {
    let server = start();
    for path in ["/ui", "/ui/fleet", "/ui/items/1"] {
        let answer = get(&server, path, None);
        assert_eq!(answer.status, 303, "{path}");
        assert_eq!(answer.location.as_deref(), Some("/ui/login"));
        assert!(!answer.text.contains("Queue"), "{path}");
    }
    let refused = sign_in(&server, AGENT_A).unwrap_err();
    assert_eq!(refused.status, 401);
    assert!(
        refused.text.contains("agent&#39;s key") || refused.text.contains("agent's key"),
        "{}",
        refused.text
    );
    let unknown = sign_in(&server, "not-a-key").unwrap_err();
    assert_eq!(unknown.status, 401);
    // A forged cookie is no session.
    let forged = get(
        &server,
        "/ui",
        Some(&format!("{COOKIE}=0123456789abcdef.9999999999.00")),
    );
    assert_eq!(forged.status, 303);
}

#[test]
fn a_sign_in_needs_the_forms_own_token() {
    let server = start();
    let answer = post_form(
        &server,
        "/ui/login",
        Some(&format!("{LOGIN_COOKIE}=aaaa")),
        &[("key", OPERATOR), ("csrf", "bbbb")],
    );
    assert_eq!(answer.status, 403);
    assert!(set_cookie(&answer, COOKIE).is_none());
}

#[test]
fn the_session_cookie_is_httponly_and_strict_and_pages_allow_no_script() {
    let server = start();
    let form = get(&server, "/ui/login", None);
    let nonce = set_cookie(&form, LOGIN_COOKIE).unwrap();
    let answer = post_form(
        &server,
        "/ui/login",
        Some(&format!("{LOGIN_COOKIE}={nonce}")),
        &[("key", OPERATOR), ("csrf", &nonce)],
    );
    let session = answer
        .cookies
        .iter()
        .find(|c| c.starts_with(COOKIE))
        .unwrap();
    assert!(session.contains("HttpOnly"), "{session}");
    assert!(session.contains("SameSite=Strict"), "{session}");
    let cookie = format!("{COOKIE}={}", set_cookie(&answer, COOKIE).unwrap());
    for path in ["/ui", "/ui/fleet", "/ui/login", "/ui/style.css"] {
        let shown = get(&server, path, Some(&cookie));
        let csp = shown.csp.unwrap_or_default();
        assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(!csp.contains("script-src"), "{path}: {csp}");
        assert!(!shown.text.contains("<script"), "{path}");
    }
}

/// The fleet page draws the escalations per hour as bars: SVG made by the server, a bar for
/// each of the last 24 hours (quiet ones empty), each titled with its count; no script.
#[test]
fn the_fleet_page_charts_escalations_per_hour() {
    let server = start();
    let cookie = sign_in(&server, OPERATOR).unwrap();
    let quiet = get(&server, "/ui/fleet", Some(&cookie));
    assert!(
        !quiet.text.contains("escalation-bars"),
        "no chart with nothing to chart"
    );
    let held = server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor(
            "ui-bars",
            "bars.example",
            "The processor handles personal data of customers.",
        ),
    );
    assert_eq!(held.json()["status"], "held", "{}", held.text);
    let fleet = get(&server, "/ui/fleet", Some(&cookie));
    assert_eq!(fleet.status, 200);
    let chart = fleet
        .text
        .split("<svg")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .expect("an inline SVG");
    assert!(chart.contains(r#"id="escalation-bars""#), "{chart}");
    assert_eq!(chart.matches("<rect").count(), 24, "{chart}");
    assert_eq!(chart.matches(":00 UTC: 1</title>").count(), 1, "{chart}");
    assert_eq!(chart.matches(":00 UTC: 0</title>").count(), 23, "{chart}");
    assert!(!fleet.text.contains("<script"));
}

/// The fleet page lists the failed approaches every caller's tasks spent.
#[test]
fn the_fleet_page_lists_failed_approaches() {
    let server = start();
    let cookie = sign_in(&server, OPERATOR).unwrap();
    let quiet = get(&server, "/ui/fleet", Some(&cookie));
    assert!(
        quiet.text.contains("No task has spent every attempt"),
        "{}",
        quiet.text
    );
    let failure = serde_json::json!({"task": "ui-spent", "report": {
        "http_status": 503, "tool": "geo<coder>", "operation": "GET /v1/geocode"}});
    for _ in 0..10 {
        let step = server.post("/v1/recover", Some(AGENT_A), &failure).json();
        if step["action"] == "escalate" {
            break;
        }
    }
    let fleet = get(&server, "/ui/fleet", Some(&cookie));
    let table = fleet
        .text
        .split(r#"<table id="approaches">"#)
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .expect("the approaches table");
    assert!(table.contains("<td>agent-a</td>"), "{table}");
    // The tool's name is text on the page, never markup.
    assert!(table.contains("<td>geo&lt;coder&gt;</td>"), "{table}");
    assert!(table.contains("<td>GET /v1/geocode</td>"), "{table}");
    assert!(table.contains("<td>transient</td>"), "{table}");
}

/// A browser pointed at the service's root is sent to the page, with the page's headers.
#[test]
fn the_root_redirects_to_the_page() {
    let server = start();
    let root = get(&server, "/", None);
    assert_eq!(root.status, 303, "{}", root.text);
    assert_eq!(root.location.as_deref(), Some("/ui"));
    assert!(
        root.csp.unwrap_or_default().contains("default-src 'none'"),
        "the page's security headers"
    );
}

#[test]
fn a_resolution_needs_a_session_and_its_csrf_token_and_an_allowed_decision() {
    let server = start();
    let held = server.post(
        "/v1/jobs/vendor-risk/decisions",
        Some(AGENT_A),
        &vendor(
            "ui-1",
            "ui.example",
            "The processor handles personal data of customers.",
        ),
    );
    assert_eq!(held.json()["status"], "held", "{}", held.text);
    let id = server
        .state
        .store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap()[0]
        .id;
    let cookie = sign_in(&server, OPERATOR).unwrap();
    let item = get(&server, &format!("/ui/items/{id}"), Some(&cookie));
    assert_eq!(item.status, 200);
    assert!(
        item.text.contains("Privacy team"),
        "the escalation names who it goes to"
    );
    let csrf = csrf_field(&item.text);
    let path = format!("/ui/items/{id}/resolve");
    let form = |csrf: &str, decision: &str| {
        vec![("csrf", csrf.to_owned()), ("decision", decision.to_owned())]
    };
    let send = |cookie: Option<&str>, fields: Vec<(&str, String)>| {
        let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_form(&server, &path, cookie, &borrowed)
    };
    assert_eq!(send(None, form(&csrf, "approve")).status, 403, "no session");
    assert_eq!(
        send(Some(&cookie), form("wrong", "approve")).status,
        403,
        "a wrong CSRF token"
    );
    let made_up = send(Some(&cookie), form(&csrf, "totally_made_up"));
    assert_eq!(made_up.status, 409);
    assert!(
        made_up.text.contains("approve, reject, handoff"),
        "{}",
        made_up.text
    );
    let handoff = send(Some(&cookie), form(&csrf, "handoff"));
    assert_eq!(handoff.status, 400, "a hand-off needs a note");
    let open = server.state.store.review(id).unwrap().unwrap();
    assert!(open.resolution.is_none(), "nothing was resolved yet");
    let done = send(Some(&cookie), form(&csrf, "approve"));
    assert_eq!(done.status, 303);
    assert_eq!(done.location, Some(format!("/ui?resolved={id}")));
    let resolved = server.state.store.review(id).unwrap().unwrap();
    let by = resolved.resolution.unwrap();
    assert_eq!((by.decision.as_str(), by.by.as_str()), ("approve", "dana"));
}

#[test]
fn an_open_service_signs_in_its_local_operator_with_the_forms_token() {
    let server = crate::support::start_with(|config| config.keys.clear());
    let form = get(&server, "/ui/login", None);
    assert!(!form.text.contains(r#"name="key""#), "no key to ask for");
    let cookie = sign_in(&server, "").unwrap();
    let queue = get(&server, "/ui", Some(&cookie));
    assert_eq!(queue.status, 200);
    assert!(queue.text.contains("Queue: 0 open"), "{}", queue.text);
    assert!(
        queue.text.contains("local"),
        "signed in as the local operator"
    );
}

/// An HMAC-SHA256 in hex, as sessions are signed: `parts` each followed by `|`.
fn mac(secret: &str, parts: &[&str]) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    for part in parts {
        mac.update(part.as_bytes());
        mac.update(b"|");
    }
    backstop_core::case::identity::hex(&mac.finalize().into_bytes())
}

#[test]
fn who_holds_the_config_cannot_sign_a_session() {
    let server = start();
    // The operator's key hash is what `[[keys]]` holds: everything the config gives away.
    let hash = backstop_server::config::hash_key(OPERATOR);
    let expires = jiff::Timestamp::now().as_second() + 3600;
    let payload = format!("{}.{expires}", &hash[..16]);
    // Signed as sessions were before (keyed by the hash), and as they are now but keyed by it.
    let before = {
        use hmac::{Hmac, KeyInit, Mac};
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(hash.as_bytes()).unwrap();
        mac.update(b"session|");
        mac.update(payload.as_bytes());
        backstop_core::case::identity::hex(&mac.finalize().into_bytes())
    };
    for forged in [before, mac(&hash, &["session", &hash, &payload])] {
        let cookie = format!("{COOKIE}={payload}.{forged}");
        let answer = get(&server, "/ui", Some(&cookie));
        assert_eq!(answer.status, 303, "a forged session was accepted");
        let resolve = post_form(
            &server,
            "/ui/items/1/resolve",
            Some(&cookie),
            &[
                ("decision", "approve"),
                ("csrf", &mac(&hash, &["csrf", &hash, &payload])),
            ],
        );
        assert_ne!(resolve.status, 200, "{}", resolve.text);
        assert_ne!(resolve.status, 303, "{}", resolve.text);
    }
    // Even signed with the real secret, an expiry further out than a session lasts is refused.
    let secret = server.state.session_secret();
    let far = jiff::Timestamp::now().as_second() + 30 * 24 * 3600;
    let payload = format!("{}.{far}", &hash[..16]);
    let cookie = format!(
        "{COOKIE}={payload}.{}",
        mac(&secret, &["session", &hash, &payload])
    );
    assert_eq!(get(&server, "/ui", Some(&cookie)).status, 303);
    // And what the real secret signs within a session's life is a session.
    let payload = format!("{}.{expires}", &hash[..16]);
    let cookie = format!(
        "{COOKIE}={payload}.{}",
        mac(&secret, &["session", &hash, &payload])
    );
    assert_eq!(get(&server, "/ui", Some(&cookie)).status, 200);
}

#[test]
fn a_rotated_secret_ends_every_session_on_every_server() {
    let server = start();
    let beside = crate::support::start_beside(&server);
    let session = sign_in(&server, OPERATOR).unwrap();
    assert_eq!(get(&server, "/ui", Some(&session)).status, 200);
    assert_eq!(
        get(&beside, "/ui", Some(&session)).status,
        200,
        "the fleet shares the secret"
    );
    server
        .state
        .store
        .rotate_secret(
            backstop_server::ui::session::SECRET_NAME,
            "a-new-secret-nobody-has-seen",
            jiff::Timestamp::now(),
        )
        .unwrap();
    for s in [&server, &beside] {
        s.state.refresh_session_secret().unwrap();
        assert_eq!(get(s, "/ui", Some(&session)).status, 303);
    }
    let again = sign_in(&beside, OPERATOR).unwrap();
    assert_eq!(get(&server, "/ui", Some(&again)).status, 200);
}

/// The suppressions page lists the contacts on the list, and its form lifts one: a session
/// and its CSRF token and a reason are needed, and who, when and why are shown after.
#[test]
fn an_operator_lifts_a_suppression_from_the_page() {
    let server = start();
    server
        .state
        .store
        .suppress(
            "agent-a",
            "po-acknowledgement",
            "+15550198",
            None,
            "do_not_call",
            jiff::Timestamp::now(),
        )
        .unwrap();
    assert_eq!(
        get(&server, "/ui/suppressions", None).status,
        303,
        "no session"
    );
    let cookie = sign_in(&server, OPERATOR).unwrap();
    let listed = get(&server, "/ui/suppressions", Some(&cookie));
    assert_eq!(listed.status, 200);
    assert!(listed.text.contains("+15550198"), "{}", listed.text);
    let csrf = csrf_field(&listed.text);
    let form = |csrf: &str, reason: &str| {
        vec![
            ("csrf", csrf.to_owned()),
            ("caller", "agent-a".to_owned()),
            ("job", "po-acknowledgement".to_owned()),
            ("contact", "+15550198".to_owned()),
            ("reason", reason.to_owned()),
        ]
    };
    let send = |cookie: Option<&str>, form: Vec<(&str, String)>| {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        post_form(&server, "/ui/suppressions/lift", cookie, &pairs)
    };
    assert_eq!(
        send(None, form(&csrf, "called again")).status,
        403,
        "no session"
    );
    assert_eq!(
        send(Some(&cookie), form("aaaa", "called again")).status,
        403,
        "bad csrf"
    );
    assert_eq!(
        send(Some(&cookie), form(&csrf, "  ")).status,
        400,
        "no reason"
    );
    let done = send(
        Some(&cookie),
        form(&csrf, "the supplier asked to be called again"),
    );
    assert_eq!(done.status, 303, "{}", done.text);
    let after = get(&server, "/ui/suppressions", Some(&cookie));
    assert!(
        after
            .text
            .contains("No contact is on the suppression list."),
        "{}",
        after.text
    );
    assert!(after.text.contains("the supplier asked to be called again"));
    assert!(after.text.contains("dana"));
}

/// A task's escalation shows the sentence a person reads once, as the item's reason, and the
/// step's machine reason apart, under the escalation.
#[test]
fn a_task_escalation_reads_as_a_sentence_with_the_steps_reason_apart() {
    let server = start();
    let body = serde_json::json!({
        "task": "ui-quota",
        "report": {"error_code": "insufficient_quota", "http_status": 429},
        "context": {"tool": "search"},
    });
    let step = server.post("/v1/recover", Some(AGENT_A), &body);
    let step = step.json();
    assert_eq!(step["action"], "escalate", "{step}");
    let sentence = step["explanation"].as_str().unwrap().to_owned();
    assert!(sentence.contains("quota or credit"), "{sentence}");
    let item = server
        .state
        .store
        .reviews(&backstop_store::ReviewFilter::default())
        .unwrap()
        .into_iter()
        .find(|item| item.case_id == "ui-quota")
        .expect("the escalation opened an item");
    assert_eq!(item.reason, sentence, "the item's reason is the sentence");
    let cookie = sign_in(&server, OPERATOR).unwrap();
    let page = get(&server, &format!("/ui/items/{}", item.id), Some(&cookie));
    assert_eq!(page.status, 200);
    assert_eq!(
        page.text.matches(sentence.as_str()).count(),
        1,
        "{}",
        page.text
    );
    assert!(
        page.text.contains("quota_exhausted: strategy 1 of 1"),
        "the step's reason is kept apart: {}",
        page.text
    );
}
