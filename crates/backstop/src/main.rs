//! The `backstop` binary: parse the command line, set up logging, run the command.

mod cli;
mod commands;
mod output;
mod settings;

use std::io::{self, BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, RulesCommand};
use crate::settings::ReportSource;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return refuse_command_line(&e),
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(io::stderr().is_terminal())
        .with_writer(io::stderr);
    match cli.log_format {
        cli::LogFormat::Text => logs.init(),
        cli::LogFormat::Json => logs.json().init(),
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(io::stderr(), "backstop: {e:#}");
            ExitCode::from(commands::EXIT_ISSUES)
        }
    }
}

/// Stdin for a command that takes its report there: on a terminal, it first says it is
/// reading, so a person is not left at a silent prompt.
fn stdin_for(source: &ReportSource, err: &mut impl Write) -> io::Result<io::StdinLock<'static>> {
    let stdin = io::stdin();
    if let Some(notice) = output::stdin_notice(source, stdin.is_terminal()) {
        writeln!(err, "{notice}")?;
    }
    Ok(stdin.lock())
}

/// A command line clap refused: its message for a person on stderr, as clap writes it, and
/// when stdout is not a terminal the refusal JSON there too, as every command refuses bad
/// input; exit 2. Help and version are printed as asked.
fn refuse_command_line(error: &clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let code = match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => error.exit(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => "bad_value",
        ErrorKind::UnknownArgument => "unknown_flag",
        ErrorKind::InvalidSubcommand => "unknown_command",
        ErrorKind::MissingRequiredArgument | ErrorKind::MissingSubcommand => "missing",
        ErrorKind::ArgumentConflict => "conflicting_flags",
        _ => "bad_command_line",
    };
    let _ = error.print();
    if !io::stdout().is_terminal() {
        let arg = match error.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(arg)) => Some(arg.as_str()),
            Some(ContextValue::Strings(args)) => args.first().map(String::as_str),
            _ => None,
        };
        let path = arg
            .and_then(|arg| arg.split_whitespace().next())
            .unwrap_or_default();
        // The message up to the usage line, on one line.
        let rendered = error.render().to_string();
        let message = rendered
            .lines()
            .take_while(|line| !line.starts_with("Usage:"))
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let message = message.trim_start_matches("error: ").to_owned();
        let issue = backstop_core::Issue::new(path, code, message);
        let refusal = output::refusal("malformed", "the command line was refused", &[issue]);
        let _ = output::json_line(&mut io::stdout(), &refusal);
    }
    ExitCode::from(commands::EXIT_BAD_INPUT)
}

/// What `decide`, `dispatch` and `key` read from stdin.
const REQUEST: &str = "the JSON request";

/// Stdin for a command that reads `what` there (`None`: it will not read it): on a terminal,
/// it first says so.
fn stdin_reading(what: Option<&str>, err: &mut impl Write) -> io::Result<io::StdinLock<'static>> {
    let stdin = io::stdin();
    if let Some(notice) = what.and_then(|what| output::stdin_wait_notice(what, stdin.is_terminal()))
    {
        writeln!(err, "{notice}")?;
    }
    Ok(stdin.lock())
}

#[allow(
    clippy::too_many_lines,
    reason = "the dispatch table: one arm per command"
)]
fn run(cli: Cli) -> anyhow::Result<u8> {
    if let Command::Mcp(args) = &cli.command {
        // MCP owns stdout: nothing else may hold it, or write to it.
        return Ok(commands::mcp::run(args, &mut io::stderr())?);
    }
    if let Command::Proxy(args) = &cli.command {
        // The proxy owns stdout too: it is the MCP connection.
        return Ok(commands::proxy::run(args, &mut io::stderr())?);
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut err = io::stderr();
    let code = match cli.command {
        Command::Mcp(_) | Command::Proxy(_) => unreachable!("served before stdout is taken"),
        Command::Serve(args) => {
            out.flush()?;
            commands::serve::run(&args, &mut out, &mut err)?
        }
        Command::Config(cli::ConfigCommand::Check(args)) => {
            commands::config::check(&args, &mut out)?
        }
        Command::Config(cli::ConfigCommand::RotateSessionSecret(args)) => {
            commands::config::rotate_session_secret(&args, &mut out, &mut err)?
        }
        Command::Config(cli::ConfigCommand::NewKey) => {
            commands::config::new_key(&mut out, &mut err)?
        }
        Command::Config(cli::ConfigCommand::HashKey(args)) => {
            let what = args.key.is_none().then_some("the API key (one line)");
            let mut input = stdin_reading(what, &mut err)?;
            commands::config::hash(&args, &mut input, &mut out, &mut err)?
        }
        Command::Classify(args) => match settings::resolve_classify(&args) {
            Ok(settings) => {
                let mut input = stdin_for(&settings.source, &mut err)?;
                commands::classify::run(settings, &mut input, &mut out, &mut err)?
            }
            Err(issues) => {
                let mode = args.output.mode();
                output::refuse_command(mode, &issues, &mut out, &mut err)?
            }
        },
        Command::Hint(args) => match settings::resolve_hint(&args) {
            Ok(settings) => {
                let mut input = stdin_for(&settings.source, &mut err)?;
                commands::hint::run(&settings, &mut input, &mut out, &mut err)?
            }
            Err(issues) => {
                let mode = args.output.mode();
                output::refuse_command(mode, &issues, &mut out, &mut err)?
            }
        },
        Command::Replay(args) => match settings::resolve_replay(&args) {
            Ok(settings) => commands::replay::run(settings, &mut out, &mut err)?,
            Err(issues) => {
                let mode = args.output.mode();
                output::refuse_command(mode, &issues, &mut out, &mut err)?
            }
        },
        Command::Strategies(cli::StrategiesCommand::Check(args)) => {
            commands::strategies::check(&args, &mut out)?
        }
        Command::Strategies(cli::StrategiesCommand::Show) => commands::strategies::show(&mut out)?,
        Command::Loop(args) => match &args.command {
            Some(cli::LoopCommand::Calibrate(calibrate)) => {
                commands::calibrate::run(calibrate, &mut out, &mut err)?
            }
            None => commands::run_loop::run(&args, &mut out, &mut err)?,
        },
        Command::Rules(RulesCommand::Check(args)) => commands::rules::check(&args, &mut out)?,
        Command::Rules(RulesCommand::Show) => commands::rules::show(&mut out)?,
        Command::Pack(cli::PackCommand::Check(args)) => commands::pack::check(&args, &mut out)?,
        Command::Pack(cli::PackCommand::Schema(args)) => {
            commands::pack::schema(&args, &mut out, &mut err)?
        }
        Command::Pack(cli::PackCommand::Brief(args)) => {
            commands::pack::brief(&args, &mut out, &mut err)?
        }
        Command::Dispatch(args) => match &args.command {
            Some(cli::DispatchCommand::Outcome(outcome)) => {
                commands::dispatch::outcome(outcome, &mut out, &mut err)?
            }
            Some(cli::DispatchCommand::Show(show)) => {
                commands::dispatch::show(show, &mut out, &mut err)?
            }
            None => {
                let mut input = stdin_reading(Some(REQUEST), &mut err)?;
                commands::dispatch::dispatch(&args, &mut input, &mut out, &mut err)?
            }
        },
        Command::Key(args) => {
            let mut input = stdin_reading(Some(REQUEST), &mut err)?;
            commands::dispatch::key(&args, &mut input, &mut out, &mut err)?
        }
        Command::Reconcile(args) => commands::reconcile::run(&args, &mut out, &mut err)?,
        Command::Demo(args) => commands::demo::run(&args, &mut out, &mut err)?,
        Command::Decide(args) => {
            let mut input = stdin_reading(Some(REQUEST), &mut err)?;
            commands::cases::decide(&args, &mut input, &mut out, &mut err)?
        }
        Command::Cases(cli::CasesCommand::Show(args)) => {
            commands::cases::show(&args, &mut out, &mut err)?
        }
        Command::Review(cli::ReviewCommand::List(args)) => {
            commands::review::list(&args, &mut out, &mut err)?
        }
        Command::Review(cli::ReviewCommand::Show(args)) => {
            commands::review::show(&args, &mut out, &mut err)?
        }
        Command::Review(cli::ReviewCommand::Resolve(args)) => {
            commands::review::resolve(&args, &mut out, &mut err)?
        }
        Command::Purge(args) => commands::purge::run(&args, &mut out, &mut err)?,
        Command::Suppress(cli::SuppressCommand::List(args)) => {
            commands::suppress::list(&args, &mut out, &mut err)?
        }
        Command::Suppress(cli::SuppressCommand::Lift(args)) => {
            commands::suppress::lift(&args, &mut out, &mut err)?
        }
        Command::Notify(cli::NotifyCommand::List(args)) => {
            commands::notify::list(&args, &mut out, &mut err)?
        }
        Command::Task(cli::TaskCommand::Show(args)) => {
            commands::task::show(&args, &mut out, &mut err)?
        }
        Command::Task(cli::TaskCommand::Reset(args)) => {
            commands::task::reset(&args, &mut out, &mut err)?
        }
        Command::Hook(args) => {
            let mut input = io::stdin().lock();
            commands::hook::run(&args, &mut input, &mut out, &mut err)?
        }
        Command::Approaches(args) => commands::approaches::run(&args, &mut out, &mut err)?,
        Command::Calibrate(cli::CalibrateCommand::Calls(args)) => {
            commands::calibrate_calls::run(&args, &mut out, &mut err)?
        }
        Command::Simulate(cli::SimulateCommand::Backoff(args)) => {
            commands::simulate::backoff(&args, &mut out, &mut err)?
        }
        Command::Completions(args) => commands::docs::completions(&args, &mut out)?,
        Command::Man(args) => commands::docs::man(&args, &mut out, &mut err)?,
    };
    out.flush()?;
    Ok(code)
}
