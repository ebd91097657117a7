//! Slash commands (docs/tui-app.md: commands): parsing a submitted `/…` line into a command.

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
    /// Show the model provider and model.
    Model,
    /// Leave the app.
    Quit,
}

/// Every command with its usage and help text, in the order `/help` lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "show commands and key bindings"),
    ("/new", "start a new session in this directory"),
    ("/resume [ID]", "open another session (a picker without ID)"),
    ("/title TEXT", "set this session's title"),
    ("/compact", "summarize the conversation into a checkpoint"),
    ("/model", "show the model provider and model"),
    ("/quit", "leave dsh-refs"),
];

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

/// Parse a submitted line that starts with `/`.
pub fn parse_command(line: &str) -> Result<SlashCommand, CommandError> {
    let body = line.trim().strip_prefix('/').unwrap_or(line.trim());
    let (name, rest) = match body.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (body, ""),
    };
    let bare = |command: &'static str, cmd: SlashCommand| {
        if rest.is_empty() {
            Ok(cmd)
        } else {
            Err(CommandError::UnexpectedArgument { command })
        }
    };
    match name {
        "help" | "?" => bare("help", SlashCommand::Help),
        "new" => bare("new", SlashCommand::New),
        "resume" => Ok(SlashCommand::Resume(
            (!rest.is_empty()).then(|| rest.to_owned()),
        )),
        "title" if rest.is_empty() => Err(CommandError::MissingArgument {
            command: "title",
            what: "a title, e.g. /title Fix the login bug",
        }),
        "title" => Ok(SlashCommand::Title(rest.to_owned())),
        "compact" => bare("compact", SlashCommand::Compact),
        "model" => bare("model", SlashCommand::Model),
        "quit" | "exit" => bare("quit", SlashCommand::Quit),
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
            ("/model", Ok(SlashCommand::Model)),
            ("/quit", Ok(SlashCommand::Quit)),
            ("/exit", Ok(SlashCommand::Quit)),
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
    fn every_command_in_the_help_table_parses() {
        for (usage, _) in COMMANDS {
            let line = usage.replace("[ID]", "").replace("TEXT", "x");
            assert!(parse_command(&line).is_ok(), "{usage}");
        }
    }
}
