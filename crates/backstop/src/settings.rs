//! Turns flags (and the environment) into settings commands can run with, collecting every
//! issue with the flag it came from.

use std::io::IsTerminal;
use std::path::Path;

use backstop_core::classify::RuleSet;
use backstop_core::recover::StrategyTable;
use backstop_core::report::{GrpcCode, Headers, Report, SideEffects, Signal};
use backstop_core::{Issue, input};
use backstop_server::files::read_text;
use jiff::Timestamp;

use crate::cli::{ClassifyArgs, HintArgs, OutputChoice, ReplayArgs, ReportArgs};

/// Log filter.
pub const ENV_LOG: &str = "BACKSTOP_LOG";
/// The bearer token `loop --decider URL` sends.
pub const ENV_DECIDER_KEY: &str = "BACKSTOP_DECIDER_KEY";
/// The environment variable that names the address `serve` listens on (`--listen`).
pub const ENV_LISTEN: &str = "BACKSTOP_LISTEN";
/// The environment variable that names the ledger's database file (`--db`).
pub const ENV_DB: &str = "BACKSTOP_DB";

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// For a person at a terminal.
    Human,
    /// One JSON document.
    Json,
}

impl OutputMode {
    /// JSON when asked for, human when asked for, else JSON unless stdout is a terminal.
    pub fn choose(json: bool, choice: OutputChoice) -> OutputMode {
        let human = match choice {
            OutputChoice::Human => true,
            OutputChoice::Json => false,
            OutputChoice::Auto => std::io::stdout().is_terminal(),
        };
        if human && !json {
            OutputMode::Human
        } else {
            OutputMode::Json
        }
    }
}

/// Where `classify` reads its report.
#[derive(Debug)]
pub enum ReportSource {
    /// Built from flags.
    Flags(Box<Report>),
    /// One JSON report on stdin.
    Stdin,
    /// One JSON report per line on stdin.
    Lines,
}

/// Everything `classify` needs.
#[derive(Debug)]
pub struct ClassifySettings {
    /// Built-in rules with the user's in front.
    pub rules: RuleSet,
    /// The time retry hints are read against.
    pub now: Timestamp,
    /// Where the report comes from.
    pub source: ReportSource,
    /// How to print.
    pub output: OutputMode,
}

/// Resolves `classify`'s flags.
///
/// # Errors
/// Every issue with the flags, the report they make and the rules files.
pub fn resolve_classify(args: &ClassifyArgs) -> Result<ClassifySettings, Vec<Issue>> {
    let mut issues = Vec::new();
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let rules = load_rules(&args.rules, &mut issues);
    let source = if args.jsonl {
        ReportSource::Lines
    } else {
        match report_from_flags(&args.report, &mut issues) {
            Some(report) => ReportSource::Flags(Box::new(report)),
            None => ReportSource::Stdin,
        }
    };
    match rules {
        Some(rules) if issues.is_empty() => Ok(ClassifySettings {
            rules,
            now,
            source,
            output: args.output.mode(),
        }),
        _ => Err(issues),
    }
}

/// Everything `hint` needs.
#[derive(Debug)]
pub struct HintSettings {
    /// The task whose counters a step uses, unless a line names another (given unless every
    /// line must name its own: `hint --jsonl` without `--task`).
    pub task: Option<String>,
    /// Built-in rules with the user's in front.
    pub rules: RuleSet,
    /// The strategy table.
    pub table: StrategyTable,
    /// The seed of the jitter.
    pub seed: u64,
    /// The time of the failure, unless a line gives its own.
    pub now: Timestamp,
    /// Where the report comes from.
    pub source: ReportSource,
    /// How to print.
    pub output: OutputMode,
    /// Where attempts are counted from run to run (`--db`, `--server`); `None`: on fresh
    /// counters, in this run only.
    pub counter: Option<Counter>,
}

/// Where `hint` counts its attempts from run to run.
#[derive(Debug, Clone)]
pub enum Counter {
    /// A ledger, counted in this process as the service counts, with these rules and
    /// strategies files.
    Ledger {
        /// The ledger.
        db: backstop_store::Location,
        /// Rules files before the built-in ones.
        rules: Vec<std::path::PathBuf>,
        /// A strategies file over the built-in table.
        strategies: Option<std::path::PathBuf>,
    },
    /// A running service, with the key its callers send.
    Server {
        /// Its base URL.
        url: String,
        /// The API key, when one was given.
        key: Option<String>,
    },
}

/// Resolves `hint`'s flags.
///
/// # Errors
/// Every issue with the flags, the report, the rules and the strategies file.
pub fn resolve_hint(args: &HintArgs) -> Result<HintSettings, Vec<Issue>> {
    let mut issues = Vec::new();
    if let Some(task) = &args.task {
        check_task(task, "--task", &mut issues);
    }
    let now = resolve_now(args.now.as_deref(), &mut issues);
    let rules = load_rules(&args.policy.rules, &mut issues);
    let table = load_strategies(args.policy.strategies.as_deref(), &mut issues);
    let source = if args.jsonl {
        ReportSource::Lines
    } else {
        match report_from_flags(&args.report, &mut issues) {
            Some(report) => ReportSource::Flags(Box::new(report)),
            None => ReportSource::Stdin,
        }
    };
    let counter = hint_counter(args, &mut issues);
    match (rules, table) {
        (Some(rules), Some(table)) if issues.is_empty() => Ok(HintSettings {
            task: args.task.clone(),
            rules,
            table,
            seed: args.policy.seed,
            now,
            source,
            output: if args.jsonl {
                OutputMode::Json
            } else {
                args.output.mode()
            },
            counter,
        }),
        _ => Err(issues),
    }
}

/// Where `hint` counts: `--db`, `--server` (with its key), or nowhere.
fn hint_counter(args: &HintArgs, issues: &mut Vec<Issue>) -> Option<Counter> {
    if let Some(db) = &args.db {
        return Some(Counter::Ledger {
            db: db.clone(),
            rules: args.policy.rules.clone(),
            strategies: args.policy.strategies.clone(),
        });
    }
    let url = args.server.as_ref()?;
    if let Err(issue) = check_url(url, "--server") {
        issues.push(issue);
    }
    let key = args
        .key_file
        .as_deref()
        .and_then(|path| read_key(path).map_err(|issue| issues.push(issue)).ok());
    Some(Counter::Server {
        url: url.clone(),
        key,
    })
}

/// The API key in `path`: its one line, trimmed.
pub fn read_key(path: &Path) -> Result<String, Issue> {
    let origin = format!("--key-file {}", path.display());
    let text = read_text(path, &origin, "the key file")?;
    let key = text.trim();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(Issue::new(
            &origin,
            "bad_key",
            "the key file must hold one API key on one line",
        ));
    }
    Ok(key.to_owned())
}

/// A base URL of a running service (`flag` names where it was given).
pub fn check_url(url: &str, flag: &str) -> Result<(), Issue> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    if scheme_ok && url.len() > "https://".len() {
        Ok(())
    } else {
        Err(Issue::new(
            flag,
            "bad_url",
            format!("`{url}` is not a URL like http://127.0.0.1:7600"),
        ))
    }
}

/// Everything `replay` needs.
#[derive(Debug)]
pub struct ReplaySettings {
    /// Built-in rules with the user's in front.
    pub rules: RuleSet,
    /// The strategy table.
    pub table: StrategyTable,
    /// The seed of the jitter.
    pub seed: u64,
    /// The trace's text.
    pub trace: String,
    /// How to print.
    pub output: OutputMode,
}

/// Resolves `replay`'s flags and reads the trace.
///
/// # Errors
/// Every issue with the flags, the rules, the strategies file, and a trace that cannot be read.
pub fn resolve_replay(args: &ReplayArgs) -> Result<ReplaySettings, Vec<Issue>> {
    let mut issues = Vec::new();
    let rules = load_rules(&args.policy.rules, &mut issues);
    let table = load_strategies(args.policy.strategies.as_deref(), &mut issues);
    let origin = format!("trace {}", args.trace.display());
    let trace = read_text(&args.trace, &origin, "the trace").unwrap_or_else(|issue| {
        issues.push(issue);
        String::new()
    });
    match (rules, table) {
        (Some(rules), Some(table)) if issues.is_empty() => Ok(ReplaySettings {
            rules,
            table,
            seed: args.policy.seed,
            trace,
            output: args.output.mode(),
        }),
        _ => Err(issues),
    }
}

/// A task id must be 1 to [`backstop_core::issue::MAX_NAME_CHARS`] characters.
pub fn check_task(task: &str, path: &str, issues: &mut Vec<Issue>) {
    backstop_core::issue::check_name(task, path, "bad_task", "a task id", issues);
}

/// `--now`, or the clock.
pub fn resolve_now(text: Option<&str>, issues: &mut Vec<Issue>) -> Timestamp {
    match text {
        None => Timestamp::now(),
        Some(text) => text.parse().unwrap_or_else(|e| {
            issues.push(Issue::new(
                "--now",
                "bad_time",
                format!("`{text}` is not an RFC 3339 time like 2026-01-01T00:00:00Z: {e}"),
            ));
            Timestamp::UNIX_EPOCH
        }),
    }
}

/// Reads a `--strategies` file over the built-in table.
fn load_strategies(path: Option<&Path>, issues: &mut Vec<Issue>) -> Option<StrategyTable> {
    let Some(path) = path else {
        return Some(StrategyTable::builtin());
    };
    let origin = format!("--strategies {}", path.display());
    let text = match read_text(path, &origin, "the strategies file") {
        Ok(text) => text,
        Err(issue) => {
            issues.push(issue);
            return None;
        }
    };
    match StrategyTable::load(Some((&path.display().to_string(), &text))) {
        Ok(table) => Some(table),
        Err(found) => {
            issues.extend(found);
            None
        }
    }
}

/// Reads and compiles `--rules` files in front of the built-in rules.
fn load_rules(paths: &[impl AsRef<Path>], issues: &mut Vec<Issue>) -> Option<RuleSet> {
    let mut files = Vec::new();
    for path in paths {
        let path = path.as_ref();
        let origin = format!("--rules {}", path.display());
        match read_text(path, &origin, "the rules file") {
            Ok(text) => files.push((path.display().to_string(), text)),
            Err(issue) => issues.push(issue),
        }
    }
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(o, t)| (o.as_str(), t.as_str()))
        .collect();
    match RuleSet::load(&borrowed) {
        Ok(rules) => Some(rules),
        Err(found) => {
            issues.extend(found);
            None
        }
    }
}

/// The report the flags describe, or `None` when no report flag was given.
fn report_from_flags(args: &ReportArgs, issues: &mut Vec<Issue>) -> Option<Report> {
    let mut report = Report {
        tool: args.tool.clone(),
        operation: args.operation.clone(),
        errno: args.errno.clone(),
        sqlstate: args.sqlstate.clone(),
        exception: args.exception.clone(),
        error_code: args.error_code.clone(),
        message: args.message.clone(),
        idempotent: args.idempotent,
        idempotency_key: args.idempotency_key.clone(),
        ..Report::default()
    };
    let flag_issues_from = issues.len();
    report.http_status = number_flag(
        "--status",
        args.status.as_deref(),
        "an HTTP status, 100 to 599",
        issues,
    );
    report.exit_code = number_flag(
        "--exit-code",
        args.exit_code.as_deref(),
        "an exit status",
        issues,
    );
    report.elapsed_ms = number_flag(
        "--elapsed-ms",
        args.elapsed_ms.as_deref(),
        "milliseconds, 0 or more",
        issues,
    );
    if let Some(text) = &args.grpc_code {
        report.grpc_code = GrpcCode::parse(text);
        if report.grpc_code.is_none() {
            issues.push(Issue::new(
                "--grpc-code",
                "unknown_value",
                format!("`{text}` is not a gRPC status code; expected a name like UNAVAILABLE or 0 to 16"),
            ));
        }
    }
    if let Some(text) = &args.signal {
        report.signal = Signal::parse(text);
        if report.signal.is_none() {
            issues.push(Issue::new(
                "--signal",
                "unknown_value",
                format!(
                    "`{text}` is not a signal; expected a name like SIGKILL or a number 1 to 64"
                ),
            ));
        }
    }
    let mut headers = Headers::default();
    for header in &args.headers {
        match header.split_once(':') {
            Some((name, value)) if !name.trim().is_empty() => headers.insert(name, value),
            _ => issues.push(Issue::new(
                "--header",
                "bad_header",
                format!("`{header}` is not a header; expected 'Name: value'"),
            )),
        }
    }
    report.headers = headers;
    report.output = json_flag("--output", args.output.as_deref(), issues);
    report.schema = json_flag("--schema", args.schema.as_deref(), issues);
    if let Some(text) = &args.side_effects {
        let parsed = text.split_once('/').and_then(|(d, t)| {
            Some(SideEffects {
                done: d.trim().parse().ok()?,
                total: t.trim().parse().ok()?,
            })
        });
        if parsed.is_none() {
            issues.push(Issue::new(
                "--side-effects",
                "bad_format",
                format!("`{text}` is not DONE/TOTAL, e.g. 2/5"),
            ));
        }
        report.side_effects = parsed;
    }
    if !has_report_flags(args) {
        return None;
    }
    // A flag whose value could not be read is already an issue: the report it leaves empty
    // is not another one.
    let flags_unreadable = issues.len() > flag_issues_from;
    let mut report = report.normalized();
    let mut found = report.validate();
    found.extend(report.compile_schema());
    issues.extend(
        found
            .into_iter()
            .filter(|issue| !(flags_unreadable && issue.code == "empty_report"))
            .map(|mut issue| {
                issue.path = flag_for(&issue.path);
                issue
            }),
    );
    Some(report)
}

/// Whether any flag that describes a report was given.
fn has_report_flags(args: &ReportArgs) -> bool {
    let texts = [
        &args.status,
        &args.grpc_code,
        &args.exit_code,
        &args.signal,
        &args.errno,
        &args.sqlstate,
        &args.exception,
        &args.error_code,
        &args.message,
        &args.output,
        &args.schema,
        &args.side_effects,
        &args.elapsed_ms,
        &args.tool,
        &args.operation,
        &args.idempotency_key,
    ];
    !args.headers.is_empty() || args.idempotent.is_some() || texts.iter().any(|t| t.is_some())
}

/// The flag a report field comes from (`http_status` -> `--status`).
fn flag_for(path: &str) -> String {
    let field = path.split('.').next().unwrap_or(path);
    match field {
        "" => "report".to_owned(),
        "http_status" => "--status".to_owned(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

fn number_flag<T: TryFrom<i64>>(
    flag: &str,
    text: Option<&str>,
    expected: &str,
    issues: &mut Vec<Issue>,
) -> Option<T> {
    let text = text?;
    let Ok(number) = text.trim().parse::<i64>() else {
        issues.push(Issue::new(
            flag,
            "wrong_type",
            format!("`{text}` is not a whole number; expected {expected}"),
        ));
        return None;
    };
    let converted = T::try_from(number).ok();
    if converted.is_none() {
        issues.push(Issue::new(
            flag,
            "out_of_range",
            format!("{number} is out of range; expected {expected}"),
        ));
    }
    converted
}

/// Parses a JSON flag value, or reads it from a file given as `@FILE`.
fn json_flag(flag: &str, text: Option<&str>, issues: &mut Vec<Issue>) -> Option<serde_json::Value> {
    let text = text?;
    let body = match text.strip_prefix('@') {
        Some(path) => match read_text(Path::new(path), flag, &format!("`{path}`")) {
            Ok(body) => body,
            Err(issue) => {
                issues.push(issue);
                return None;
            }
        },
        None => text.to_owned(),
    };
    match input::json_value(&body) {
        Ok(value) => Some(value),
        Err(issue) => {
            issues.push(Issue::new(
                flag,
                &issue.code,
                format!("not JSON: {}", issue.message),
            ));
            None
        }
    }
}
