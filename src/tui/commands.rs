//! Slash commands (docs/tui-app.md: commands): the one command table (read by `/help` and
//! the command-or-text rule) and parsing a command line into a command.

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// Show commands and key bindings.
    Help,
    /// Start a new session in the same working directory.
    New,
    /// Open another session: by id, or pick from a list.
    Resume(Option<String>),
    /// Set the session title.
    Title(String),
    /// Summarize the conversation so far into a checkpoint.
    Compact,
    /// Show the model and the known ones, or switch to the named one for the next turn.
    Model(Option<String>),
    /// Leave the app.
    Quit,
}

/// One row of the command table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    /// The name without the slash, lower case.
    pub name: &'static str,
    /// Other names that run the same command.
    pub aliases: &'static [&'static str],
    /// The argument as `/help` shows it (`[ID]`, `TEXT`), or empty.
    pub args: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl CommandSpec {
    /// `/name ARGS` as `/help` shows it.
    pub fn usage(&self) -> String {
        if self.args.is_empty() {
            format!("/{}", self.name)
        } else {
            format!("/{} {}", self.name, self.args)
        }
    }

    /// Whether the command needs an argument after its name (completion then adds a space
    /// and does not run it); an optional `[ARG]` does not.
    pub fn takes_argument(&self) -> bool {
        // `[ID]`-style arguments are optional: the command runs without one.
        !self.args.is_empty() && !self.args.starts_with('[')
    }
}

/// Every command, in the order `/help` and the `/` popup list them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        aliases: &["?"],
        args: "",
        help: "show commands and key bindings",
    },
    CommandSpec {
        name: "new",
        aliases: &["clear"],
        args: "",
        help: "start a new session in this directory (/clear does the same)",
    },
    CommandSpec {
        name: "resume",
        aliases: &[],
        args: "[ID]",
        help: "open another session (a picker without ID)",
    },
    CommandSpec {
        name: "title",
        aliases: &["rename"],
        args: "TEXT",
        help: "set this session's title (/rename does the same)",
    },
    CommandSpec {
        name: "compact",
        aliases: &[],
        args: "",
        help: "summarize the conversation into a checkpoint",
    },
    CommandSpec {
        name: "model",
        aliases: &[],
        args: "[NAME]",
        help: "switch the model for the next turn (lists them without NAME)",
    },
    CommandSpec {
        name: "quit",
        aliases: &["exit"],
        args: "",
        help: "leave dsh-refs",
    },
];

/// The table row named `name` (or one of its aliases), compared case-insensitively.
pub fn find_command(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|spec| {
        spec.name.eq_ignore_ascii_case(name)
            || spec.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// Why a `/…` line is not a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("unknown command /{0} (try /help)")]
    Unknown(String),
    #[error("/{command} needs {what}")]
    MissingArgument {
        command: &'static str,
        what: &'static str,
    },
    #[error("/{command} takes no arguments")]
    UnexpectedArgument { command: &'static str },
}

/// Parse a command line (a draft the submit flow classified as a command); names are
/// case-insensitive.
pub fn parse_command(line: &str) -> Result<SlashCommand, CommandError> {
    let body = line.trim().strip_prefix('/').unwrap_or(line.trim());
    let (name, rest) = match body.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (body, ""),
    };
    let Some(spec) = find_command(name) else {
        return Err(CommandError::Unknown(name.to_owned()));
    };
    let bare = |cmd: SlashCommand| {
        if rest.is_empty() {
            Ok(cmd)
        } else {
            Err(CommandError::UnexpectedArgument { command: spec.name })
        }
    };
    match spec.name {
        "help" => bare(SlashCommand::Help),
        "new" => bare(SlashCommand::New),
        "resume" => Ok(SlashCommand::Resume(
            (!rest.is_empty()).then(|| rest.to_owned()),
        )),
        "title" if rest.is_empty() => Err(CommandError::MissingArgument {
            command: "title",
            what: "a title, e.g. /title Fix the login bug",
        }),
        "title" => Ok(SlashCommand::Title(rest.to_owned())),
        "compact" => bare(SlashCommand::Compact),
        "model" => Ok(SlashCommand::Model(
            (!rest.is_empty()).then(|| rest.to_owned()),
        )),
        "quit" => bare(SlashCommand::Quit),
        other => Err(CommandError::Unknown(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_commands() {
        let cases: Vec<(&str, Result<SlashCommand, CommandError>)> = vec![
            ("/help", Ok(SlashCommand::Help)),
            ("/HeLp", Ok(SlashCommand::Help)),
            ("  /new  ", Ok(SlashCommand::New)),
            ("/resume", Ok(SlashCommand::Resume(None))),
            ("/resume s-1 ", Ok(SlashCommand::Resume(Some("s-1".into())))),
            (
                "/title  Fix  login ",
                Ok(SlashCommand::Title("Fix  login".into())),
            ),
            (
                "/title",
                Err(CommandError::MissingArgument {
                    command: "title",
                    what: "a title, e.g. /title Fix the login bug",
                }),
            ),
            ("/compact", Ok(SlashCommand::Compact)),
            ("/model", Ok(SlashCommand::Model(None))),
            (
                "/model deepseek-reasoner",
                Ok(SlashCommand::Model(Some("deepseek-reasoner".into()))),
            ),
            ("/quit", Ok(SlashCommand::Quit)),
            ("/EXIT", Ok(SlashCommand::Quit)),
            // Issue 32 item 10: the names other tools use.
            ("/clear", Ok(SlashCommand::New)),
            (
                "/rename Fix  login",
                Ok(SlashCommand::Title("Fix  login".into())),
            ),
            (
                "/quit now",
                Err(CommandError::UnexpectedArgument { command: "quit" }),
            ),
            ("/bogus x", Err(CommandError::Unknown("bogus".into()))),
            ("/", Err(CommandError::Unknown(String::new()))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_command(input), want, "{input:?}");
        }
    }

    #[test]
    fn every_command_in_the_table_parses() {
        for spec in COMMANDS {
            let line = spec.usage().replace("[ID]", "").replace("TEXT", "x");
            assert!(parse_command(&line).is_ok(), "{line}");
            for alias in spec.aliases {
                assert_eq!(find_command(alias), Some(spec));
            }
        }
    }
}
