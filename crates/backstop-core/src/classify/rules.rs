//! Rule files: parsing a TOML rule file into rules, every issue listed with its path.

use std::collections::HashMap;

use toml::Value;

use super::field::{Field, FieldSet};
use super::index::RuleIndex;
use super::matcher::{
    Checks, HeaderMatch, NumberMatch, TextMatch, compile_regex, parse_grpc, parse_signal,
    string_list, wrong_form,
};
use super::message_set::MessageSet;
use crate::class::Class;
use crate::input::{self, Format};
use crate::issue::{Issue, join_path};
use crate::report::SideEffectState;

/// The built-in rules, embedded from `rules/default.toml`.
pub const DEFAULT_RULES: &str = include_str!("../../../../rules/default.toml");

/// The keys a rule may have.
const RULE_KEYS: [&str; 6] = [
    "id",
    "class",
    "reason",
    "retryable",
    "fallback_allowed",
    "when",
];

/// One rule: when every condition holds, it names a class or adjusts what the class allows.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Unique within its file.
    pub id: String,
    /// The class it names; `None` for a hint rule.
    pub class: Option<Class>,
    /// Why, in words, shown in the result.
    pub reason: Option<String>,
    /// An override of the class's default.
    pub retryable: Option<bool>,
    /// An override of the class's default.
    pub fallback_allowed: Option<bool>,
    /// The conditions, all of which must hold.
    pub when: Conditions,
    /// Which file it came from (`default` or a path), for messages.
    pub origin: String,
}

/// A rule's conditions, one optional matcher per report field.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// `http_status`.
    pub http_status: Option<NumberMatch>,
    /// `exit_code`.
    pub exit_code: Option<NumberMatch>,
    /// `elapsed_ms`.
    pub elapsed_ms: Option<NumberMatch>,
    /// `grpc_code`, canonical names.
    pub grpc_code: Option<Vec<&'static str>>,
    /// `signal`, canonical names.
    pub signal: Option<Vec<String>>,
    /// `errno`.
    pub errno: Option<TextMatch>,
    /// `sqlstate`.
    pub sqlstate: Option<TextMatch>,
    /// `error_code`.
    pub error_code: Option<TextMatch>,
    /// `tool`.
    pub tool: Option<TextMatch>,
    /// `operation`.
    pub operation: Option<TextMatch>,
    /// `exception`: bare or qualified names (lower-cased), or a regex.
    pub exception: Option<TextMatch>,
    /// `message`: the regex sources, joined into one alternation when compiled.
    pub message: Option<Vec<String>>,
    /// `headers`: lower-cased name and matcher.
    pub headers: Vec<(String, HeaderMatch)>,
    /// `side_effects`.
    pub side_effects: Option<SideEffectState>,
    /// `schema_valid`.
    pub schema_valid: Option<bool>,
}

impl Conditions {
    /// The fields these conditions test.
    pub fn fields(&self) -> FieldSet {
        let mut set = FieldSet::EMPTY;
        let flags = [
            (Field::HttpStatus, self.http_status.is_some()),
            (Field::ExitCode, self.exit_code.is_some()),
            (Field::ElapsedMs, self.elapsed_ms.is_some()),
            (Field::GrpcCode, self.grpc_code.is_some()),
            (Field::Signal, self.signal.is_some()),
            (Field::Errno, self.errno.is_some()),
            (Field::Sqlstate, self.sqlstate.is_some()),
            (Field::ErrorCode, self.error_code.is_some()),
            (Field::Tool, self.tool.is_some()),
            (Field::Operation, self.operation.is_some()),
            (Field::Exception, self.exception.is_some()),
            (Field::Message, self.message.is_some()),
            (Field::Headers, !self.headers.is_empty()),
            (Field::SideEffects, self.side_effects.is_some()),
            (Field::SchemaValid, self.schema_valid.is_some()),
        ];
        for (field, on) in flags {
            if on {
                set.insert(field);
            }
        }
        set
    }
}

/// An ordered, compiled set of rules, ready to classify with.
#[derive(Debug, Clone)]
pub struct RuleSet {
    pub(super) rules: Vec<CompiledRule>,
    /// Every `message` pattern, gated by its literals and compiled on first use.
    pub(super) messages: MessageSet,
    /// The other rules, filed so that a report visits only those it may match.
    pub(super) index: RuleIndex,
}

/// A rule with what evaluation needs precomputed.
#[derive(Debug, Clone)]
pub(super) struct CompiledRule {
    pub rule: Rule,
    /// Every field the rule tests.
    pub fields: FieldSet,
    /// The fields the report must have for the rule to match.
    pub required: FieldSet,
    /// The fields of the rule's strongest level (as written; evaluation may rank a field
    /// the report has only as a weak extraction lower).
    pub level_fields: FieldSet,
}

impl RuleSet {
    /// The built-in rules alone.
    pub fn builtin() -> RuleSet {
        RuleSet::load(&[]).expect("the built-in rules are checked by tests")
    }

    /// User rule files (`(origin, text)`, in order) in front of the built-in rules.
    ///
    /// # Errors
    /// Every issue in every file; each issue's path starts with the file's origin.
    pub fn load(user_files: &[(&str, &str)]) -> Result<RuleSet, Vec<Issue>> {
        // The built-in rules are checked by tests; their regexes compile on first use.
        let builtin = builtin_rules().map_err(|found| {
            found
                .into_iter()
                .map(|issue| at_origin("default", issue))
                .collect::<Vec<_>>()
        })?;
        // A result names its rule by id, so ids must be unique across every file; a clash is
        // reported on the user's rule.
        let mut owners = builtin_owners(&builtin);
        let mut rules = Vec::new();
        let mut issues = Vec::new();
        for &(origin, text) in user_files {
            match parse_rules(text, origin) {
                Ok(parsed) => {
                    let clashes = claim_ids(&parsed, origin, &mut owners);
                    issues.extend(clashes.into_iter().map(|issue| at_origin(origin, issue)));
                    rules.extend(parsed);
                }
                Err(found) => {
                    issues.extend(found.into_iter().map(|issue| at_origin(origin, issue)));
                }
            }
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        let checked = !rules.is_empty();
        rules.extend(builtin);
        if checked {
            // User patterns are compiled now, so one that cannot be is an issue here.
            RuleSet::compile(rules)
        } else {
            Ok(RuleSet::assemble(rules))
        }
    }

    /// Compiles parsed rules, in the order given.
    ///
    /// # Errors
    /// A `message` pattern set too large to compile.
    pub fn compile(rules: Vec<Rule>) -> Result<RuleSet, Vec<Issue>> {
        let set = RuleSet::assemble(rules);
        set.messages.compile_all().map_err(|e: String| {
            vec![Issue::new(
                "",
                "bad_regex",
                format!("message patterns: {e}"),
            )]
        })?;
        Ok(set)
    }

    /// The rules in order, filed in the index, and their message patterns made into a set.
    fn assemble(rules: Vec<Rule>) -> RuleSet {
        let compiled: Vec<CompiledRule> = rules
            .into_iter()
            .map(|rule| {
                let fields = rule.when.fields();
                let level = fields.strongest_level().unwrap_or(Field::WEAKEST_LEVEL);
                let mut required = fields;
                // Header conditions read the report directly: a header rule may ask for a
                // header's absence.
                required.remove(Field::Headers);
                CompiledRule {
                    level_fields: fields.at_level(level),
                    fields,
                    required,
                    rule,
                }
            })
            .collect();
        let mut index = RuleIndex::default();
        for (i, compiled) in compiled.iter().enumerate() {
            if compiled.rule.when.message.is_none() {
                index.add(i, &compiled.rule.when, compiled.required);
            }
        }
        let messages = MessageSet::build(compiled.iter().enumerate().filter_map(|(i, c)| {
            let patterns = c.rule.when.message.as_deref()?;
            Some((i, c.rule.id.as_str(), patterns))
        }));
        RuleSet {
            rules: compiled,
            messages,
            index,
        }
    }

    /// The rules, in the order they are considered.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter().map(|c| &c.rule)
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// Prefixes an issue's path with the file it is in (`mine.toml:rules[2].id`).
/// Each rule id of the built-in rules, owned by "a built-in rule".
fn builtin_owners(builtin: &[Rule]) -> HashMap<String, String> {
    builtin
        .iter()
        .map(|rule| (rule.id.clone(), "a built-in rule".to_owned()))
        .collect()
}

/// The ids of `rules`, parsed from the user file `origin`, claimed in `owners` (id → whose):
/// a `duplicate_id` issue for each one another file or a built-in rule has already (a result
/// names its rule by id, so ids are unique across every file).
fn claim_ids(rules: &[Rule], origin: &str, owners: &mut HashMap<String, String>) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let owner = format!("a rule in {origin}");
        if let Some(first) = owners.insert(rule.id.clone(), owner) {
            issues.push(Issue::new(
                format!("rules[{i}].id"),
                "duplicate_id",
                format!("`{}` is already the id of {first}; choose another", rule.id),
            ));
        }
    }
    issues
}

/// What loading `rules` (parsed from the user file `origin`) in front of the built-in rules
/// refuses that the file alone does not show: ids the built-in rules have already.
///
/// # Errors
/// Never for the shipped rules; should they not parse, their issues.
pub(crate) fn builtin_id_clashes(rules: &[Rule], origin: &str) -> Result<Vec<Issue>, Vec<Issue>> {
    let mut owners = builtin_owners(&builtin_rules()?);
    Ok(claim_ids(rules, origin, &mut owners))
}

fn at_origin(origin: &str, mut issue: Issue) -> Issue {
    issue.path = if issue.path.is_empty() {
        origin.to_owned()
    } else {
        format!("{origin}:{}", issue.path)
    };
    issue
}

/// Parses one rule file.
///
/// # Errors
/// Every issue found, each with its path (`rules[3].when.message`): TOML syntax, unknown keys,
/// unknown classes or fields, wrong types, bad regexes, duplicate ids, forbidden overrides.
pub fn parse_rules(text: &str, origin: &str) -> Result<Vec<Rule>, Vec<Issue>> {
    parse_rules_with(text, origin, Checks::Full)
}

/// The built-in rules as JSON, made from `rules/default.toml` at build time: JSON parses
/// several times faster than TOML, and a one-shot classification starts with it.
const DEFAULT_RULES_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/default_rules.json"));

/// The built-in rules, their regexes left to compile on first use (tests compile them all).
fn builtin_rules() -> Result<Vec<Rule>, Vec<Issue>> {
    let table: toml::Table = serde_json::from_str(DEFAULT_RULES_JSON)
        .map_err(|e| vec![Issue::new("", "bad_rules", e.to_string())])?;
    parse_rules_table(&table, "default", Checks::Trusted)
}

/// [`parse_rules`], with regexes compiled now ([`Checks::Full`]) or on first use.
///
/// # Errors
/// As [`parse_rules`]; with [`Checks::Trusted`], regexes are not checked.
pub fn parse_rules_with(text: &str, origin: &str, checks: Checks) -> Result<Vec<Rule>, Vec<Issue>> {
    let table = crate::input::toml_table(text).map_err(|issue| vec![issue])?;
    parse_rules_table(&table, origin, checks)
}

/// Rules from a parsed rule file.
fn parse_rules_table(
    table: &toml::Table,
    origin: &str,
    checks: Checks,
) -> Result<Vec<Rule>, Vec<Issue>> {
    let mut issues = Vec::new();
    input::unknown_keys(table.keys(), "", &["rules"], Format::Toml, &mut issues);
    let entries = match table.get("rules") {
        None => &Vec::new(),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            issues.push(wrong_form("rules", "an array of tables ([[rules]])"));
            return Err(issues);
        }
    };
    let mut rules = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("rules[{i}]");
        let Value::Table(entry) = entry else {
            issues.push(wrong_form(&path, "a table"));
            continue;
        };
        // Duplicates are found even among rules with other issues.
        if let Some(Value::String(id)) = entry.get("id")
            && let Some(first) = seen.insert(id.clone(), i)
        {
            issues.push(Issue::new(
                join_path(&path, "id"),
                "duplicate_id",
                format!("`{id}` is already the id of rules[{first}]"),
            ));
        }
        if let Some(rule) = parse_rule(entry, &path, origin, checks, &mut issues) {
            rules.push(rule);
        }
    }
    if issues.is_empty() {
        Ok(rules)
    } else {
        Err(issues)
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one read per key of a rule, in the order the rule format lists them"
)]
fn parse_rule(
    entry: &toml::Table,
    path: &str,
    origin: &str,
    checks: Checks,
    issues: &mut Vec<Issue>,
) -> Option<Rule> {
    let before = issues.len();
    input::unknown_keys(entry.keys(), path, &RULE_KEYS, Format::Toml, issues);
    let id = match entry.get("id") {
        Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
        Some(_) => {
            issues.push(wrong_form(&join_path(path, "id"), "a non-empty string"));
            String::new()
        }
        None => {
            issues.push(Issue::new(
                join_path(path, "id"),
                "missing",
                "every rule needs an `id`",
            ));
            String::new()
        }
    };
    let class = match entry.get("class") {
        None => None,
        Some(Value::String(name)) => match name.parse::<Class>() {
            Ok(Class::Unclassified) if !matches!(entry.get("reason"), Some(Value::String(r)) if !r.trim().is_empty()) =>
            {
                issues.push(Issue::new(
                    join_path(path, "reason"),
                    "needs_reason",
                    "a rule that names `unclassified` must say why in `reason`",
                ));
                None
            }
            Ok(class) => Some(class),
            Err(e) => {
                issues.push(Issue::new(
                    join_path(path, "class"),
                    "unknown_class",
                    e.to_string(),
                ));
                None
            }
        },
        Some(_) => {
            issues.push(wrong_form(&join_path(path, "class"), "a class name"));
            None
        }
    };
    let flag = |key: &str, issues: &mut Vec<Issue>| match entry.get(key) {
        None => None,
        Some(Value::Boolean(b)) => Some(*b),
        Some(_) => {
            issues.push(wrong_form(&join_path(path, key), "true or false"));
            None
        }
    };
    let retryable = flag("retryable", issues);
    let fallback_allowed = flag("fallback_allowed", issues);
    let reason = match entry.get("reason") {
        None => None,
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => {
            issues.push(wrong_form(&join_path(path, "reason"), "a string"));
            None
        }
    };
    if class.is_none()
        && retryable.is_none()
        && fallback_allowed.is_none()
        && !entry.contains_key("class")
    {
        issues.push(Issue::new(
            path,
            "does_nothing",
            "a rule needs a `class`, or `retryable` / `fallback_allowed` for a hint rule",
        ));
    }
    if let Some(class) = class {
        if retryable == Some(true) && class.never_retryable() {
            issues.push(Issue::new(
                join_path(path, "retryable"),
                "forbidden_override",
                format!("`{class}` is never retryable"),
            ));
        }
        if fallback_allowed == Some(true) && class.never_fallback() {
            issues.push(Issue::new(
                join_path(path, "fallback_allowed"),
                "forbidden_override",
                format!("`{class}` never allows a fallback tool"),
            ));
        }
    }
    let when_path = join_path(path, "when");
    let when = match entry.get("when") {
        Some(Value::Table(when)) if !when.is_empty() => {
            parse_when(when, &when_path, checks, issues)
        }
        Some(Value::Table(_)) => {
            issues.push(Issue::new(
                &when_path,
                "empty_when",
                "`when` needs at least one field",
            ));
            Conditions::default()
        }
        Some(_) => {
            issues.push(wrong_form(&when_path, "a table of report fields"));
            Conditions::default()
        }
        None => {
            issues.push(Issue::new(
                &when_path,
                "missing",
                "every rule needs a `when`",
            ));
            Conditions::default()
        }
    };
    (issues.len() == before).then(|| Rule {
        id,
        class,
        reason,
        retryable,
        fallback_allowed,
        when,
        origin: origin.to_owned(),
    })
}

fn parse_when(
    when: &toml::Table,
    path: &str,
    checks: Checks,
    issues: &mut Vec<Issue>,
) -> Conditions {
    let mut c = Conditions::default();
    for (key, value) in when {
        let at = join_path(path, key);
        let Some(field) = Field::from_name(key) else {
            issues.push(Issue::new(
                &at,
                "unknown_field",
                format!(
                    "unknown report field `{key}`; expected one of: {}",
                    Field::names()
                ),
            ));
            continue;
        };
        match field {
            Field::HttpStatus => c.http_status = NumberMatch::parse(value, &at, issues),
            Field::ExitCode => c.exit_code = NumberMatch::parse(value, &at, issues),
            Field::ElapsedMs => c.elapsed_ms = NumberMatch::parse(value, &at, issues),
            Field::GrpcCode => c.grpc_code = parse_grpc(value, &at, issues),
            Field::Signal => c.signal = parse_signal(value, &at, issues),
            Field::Errno => c.errno = TextMatch::parse_with(value, &at, issues, checks),
            Field::Sqlstate => c.sqlstate = TextMatch::parse_with(value, &at, issues, checks),
            Field::ErrorCode => c.error_code = TextMatch::parse_with(value, &at, issues, checks),
            Field::Tool => c.tool = TextMatch::parse_with(value, &at, issues, checks),
            Field::Operation => c.operation = TextMatch::parse_with(value, &at, issues, checks),
            Field::Exception => c.exception = TextMatch::parse_with(value, &at, issues, checks),
            Field::Message => c.message = parse_message(value, &at, checks, issues),
            Field::Headers => c.headers = parse_headers(value, &at, checks, issues),
            Field::SideEffects => c.side_effects = parse_side_effects(value, &at, issues),
            Field::SchemaValid => match value {
                Value::Boolean(b) => c.schema_valid = Some(*b),
                _ => issues.push(wrong_form(&at, "true or false")),
            },
        }
    }
    c
}

fn parse_message(
    value: &Value,
    path: &str,
    checks: Checks,
    issues: &mut Vec<Issue>,
) -> Option<Vec<String>> {
    let patterns = string_list(value, path, issues)?;
    if checks == Checks::Trusted {
        return Some(patterns);
    }
    let mut ok = true;
    for (i, pattern) in patterns.iter().enumerate() {
        let at = if matches!(value, Value::Array(_)) {
            format!("{path}[{i}]")
        } else {
            path.to_owned()
        };
        match compile_regex(pattern) {
            Err(e) => {
                issues.push(Issue::new(
                    at,
                    "bad_regex",
                    format!("not a valid regex: {e}"),
                ));
                ok = false;
            }
            Ok(regex) if regex.is_match("") => {
                issues.push(Issue::new(
                    at,
                    "matches_everything",
                    "this regex matches an empty message",
                ));
                ok = false;
            }
            Ok(_) => {}
        }
    }
    ok.then_some(patterns)
}

fn parse_headers(
    value: &Value,
    path: &str,
    checks: Checks,
    issues: &mut Vec<Issue>,
) -> Vec<(String, HeaderMatch)> {
    let Value::Table(table) = value else {
        issues.push(wrong_form(path, "a table of header names to matchers"));
        return Vec::new();
    };
    if table.is_empty() {
        issues.push(Issue::new(path, "empty_when", "name at least one header"));
    }
    table
        .iter()
        .filter_map(|(name, matcher)| {
            let at = join_path(path, name);
            HeaderMatch::parse_with(matcher, &at, issues, checks)
                .map(|m| (name.to_ascii_lowercase(), m))
        })
        .collect()
}

fn parse_side_effects(
    value: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Option<SideEffectState> {
    match value.as_str() {
        Some("none") => Some(SideEffectState::None),
        Some("partial") => Some(SideEffectState::Partial),
        Some("complete") => Some(SideEffectState::Complete),
        _ => {
            issues.push(wrong_form(path, "\"none\", \"partial\" or \"complete\""));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_rule_and_its_level() {
        let rules = parse_rules(
            r#"
            [[rules]]
            id = "x"
            class = "transient"
            when = { http_status = 503, message = "busy" }
            "#,
            "test",
        )
        .unwrap();
        let set = RuleSet::compile(rules).unwrap();
        assert_eq!(
            set.rules[0].fields.strongest_level(),
            Some(Field::HttpStatus.level())
        );
        assert_eq!(
            set.rules[0].level_fields,
            FieldSet::of(&[Field::HttpStatus])
        );
    }

    #[test]
    fn lists_every_issue_with_its_path() {
        let issues = parse_rules(
            r#"
            colour = "red"
            [[rules]]
            id = "a"
            class = "sometimes"
            when = { http_status = "503", mesage = "x" }
            [[rules]]
            id = "a"
            class = "policy_denied"
            retryable = true
            when = { message = "(oops" }
            [[rules]]
            when = {}
            "#,
            "test",
        )
        .unwrap_err();
        let found: Vec<_> = issues
            .iter()
            .map(|i| (i.path.as_str(), i.code.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("colour", "unknown_key"),
                ("rules[0].class", "unknown_class"),
                ("rules[0].when.http_status", "wrong_type"),
                ("rules[0].when.mesage", "unknown_field"),
                ("rules[1].id", "duplicate_id"),
                ("rules[1].retryable", "forbidden_override"),
                ("rules[1].when.message", "bad_regex"),
                ("rules[2].id", "missing"),
                ("rules[2]", "does_nothing"),
                ("rules[2].when", "empty_when"),
            ]
        );
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let issues = parse_rules(
            r#"
            [[rules]]
            id = "a"
            class = "transient"
            when = { http_status = 503 }
            [[rules]]
            id = "a"
            class = "transient"
            when = { http_status = 502 }
            "#,
            "test",
        )
        .unwrap_err();
        assert_eq!(issues[0].path, "rules[1].id");
        assert_eq!(issues[0].code, "duplicate_id");
    }

    #[test]
    fn a_toml_syntax_error_is_one_issue() {
        let issues = parse_rules("[[rules]\nid = ", "test").unwrap_err();
        assert_eq!(issues[0].code, "bad_toml");
    }

    #[test]
    fn a_regex_that_matches_everything_is_refused() {
        let issues = parse_rules(
            "[[rules]]\nid = \"a\"\nclass = \"transient\"\nwhen = { message = \".*\" }",
            "test",
        )
        .unwrap_err();
        assert_eq!(issues[0].code, "matches_everything");
    }

    #[test]
    fn ids_are_unique_across_files_and_the_clash_is_reported_on_the_users_rule() {
        let rule = |id: &str| {
            format!(
                "[[rules]]\nid = \"{id}\"\nclass = \"business\"\nwhen = {{ http_status = 409 }}\n"
            )
        };
        let issues =
            RuleSet::load(&[("a.toml", &rule("mine")), ("b.toml", &rule("mine"))]).unwrap_err();
        assert_eq!(issues[0].path, "b.toml:rules[0].id");
        assert!(issues[0].message.contains("a rule in a.toml"), "{issues:?}");
        let issues = RuleSet::load(&[("a.toml", &rule("http.409"))]).unwrap_err();
        assert_eq!(issues[0].path, "a.toml:rules[0].id");
        assert!(issues[0].message.contains("built-in"), "{issues:?}");
    }

    #[test]
    fn a_file_level_issue_is_named_by_the_file_alone() {
        let issues = RuleSet::load(&[("broken.toml", "[[rules]")]).unwrap_err();
        assert_eq!(issues[0].path, "broken.toml");
    }

    #[test]
    fn load_prefixes_issues_with_the_origin() {
        let issues = RuleSet::load(&[("mine.toml", "[[rules]]\nid = 3")]).unwrap_err();
        assert!(
            issues.iter().all(|i| i.path.starts_with("mine.toml:")),
            "{issues:?}"
        );
    }
}
