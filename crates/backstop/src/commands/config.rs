//! `backstop config check|hash-key|new-key|rotate-session-secret`.

use std::fmt::Write as _;
use std::io::{self, Read, Write};

use backstop_core::Issue;
use backstop_server::Config;
use backstop_server::catalog::Catalog;
use backstop_server::config::hash_key;
use serde_json::json;

use backstop_server::files::read_text;

use super::{EXIT_BAD_INPUT, EXIT_ISSUES, EXIT_OK};
use crate::cli::{ConfigCheckArgs, HashKeyArgs};
use crate::output;

/// Checks a config and every file it names.
pub fn check(args: &ConfigCheckArgs, out: &mut impl Write) -> io::Result<u8> {
    let origin = args.file.display().to_string();
    let (issues, unreadable) = match read_text(&args.file, &origin, "the file") {
        Err(issue) => (vec![issue], true),
        Ok(text) => {
            let base = args
                .file
                .parent()
                .unwrap_or_else(|| std::path::Path::new("."));
            let (config, mut issues) = Config::parse_all(&text, base);
            // The packs and rules it names are checked even when the config has issues.
            issues.extend(Catalog::load(&config).err().unwrap_or_default());
            if config.keys.is_empty() && !config.listen.ip().is_loopback() {
                issues.push(Issue::new(
                    "listen",
                    "open_and_exposed",
                    "no [[keys]]: an open service listens on loopback only",
                ));
            }
            (issues, false)
        }
    };
    if args.output.mode() == crate::settings::OutputMode::Json {
        output::json_line(
            out,
            &json!({"file": origin, "ok": issues.is_empty(), "issues": issues}),
        )?;
    } else if issues.is_empty() {
        writeln!(out, "{origin}: ok")?;
    } else {
        let noun = if issues.len() == 1 { "issue" } else { "issues" };
        output::issues_human(out, &format!("{origin}: {} {noun}", issues.len()), &issues)?;
    }
    Ok(if unreadable {
        EXIT_BAD_INPUT
    } else if issues.is_empty() {
        EXIT_OK
    } else {
        EXIT_ISSUES
    })
}

/// Prints the SHA-256 of a key.
pub fn hash(
    args: &HashKeyArgs,
    input: &mut impl Read,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    let key = if let Some(key) = &args.key {
        key.clone()
    } else {
        let mut text = String::new();
        input.read_to_string(&mut text)?;
        text.trim_end_matches(['\n', '\r']).to_owned()
    };
    let length = key.chars().count();
    if length < MIN_KEY_CHARS {
        writeln!(
            err,
            "backstop: an API key must be at least {MIN_KEY_CHARS} characters, not {length} \
             (a short key can be guessed); `backstop config new-key` makes one"
        )?;
        return Ok(EXIT_BAD_INPUT);
    }
    writeln!(out, "{}", hash_key(&key))?;
    Ok(EXIT_OK)
}

/// The shortest API key `hash-key` takes.
pub const MIN_KEY_CHARS: usize = 32;

/// Prints a new random API key (256 bits from the system's random source, in hex) and, on the
/// next line, its hash for the config.
pub fn new_key(out: &mut impl Write, err: &mut impl Write) -> io::Result<u8> {
    let mut bytes = [0u8; 32];
    if let Err(e) = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
        writeln!(err, "backstop: cannot read the system's random source: {e}")?;
        return Ok(super::EXIT_ISSUES);
    }
    let key = bytes.iter().fold(String::with_capacity(64), |mut key, b| {
        let _ = write!(key, "{b:02x}");
        key
    });
    writeln!(out, "key  {key}")?;
    writeln!(out, "hash {}", hash_key(&key))?;
    Ok(EXIT_OK)
}

/// Replaces the operator page's session secret in the ledger.
pub fn rotate_session_secret(
    args: &crate::cli::LedgerArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> io::Result<u8> {
    use backstop_server::ui::session::{SECRET_NAME, fresh_secret};
    let command = "config rotate-session-secret";
    let store = match super::cases::open_existing(
        &args.db,
        command,
        crate::settings::OutputMode::Human,
        out,
        err,
    )? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    match store.rotate_secret(SECRET_NAME, &fresh_secret(), jiff::Timestamp::now()) {
        Ok(()) => {
            writeln!(
                out,
                "the operator page's session secret was replaced: every session ends (each \
                 server takes the new secret up within 30 s)"
            )?;
            Ok(EXIT_OK)
        }
        Err(e) => super::cases::store_failed(&e, err),
    }
}
