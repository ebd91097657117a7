//! dsh's log rules, implemented once (docs/session-store.md: the rule book).
//!
//! Every line this project writes must be read by dsh as it is followed
//! ([`DshVersion::Followed`], commit 6816e8a3d5) and as it is released
//! ([`DshVersion::Release`], 0.1.0-rc.8, whose rules 0.1.1-rc.1 and rc.2 keep unchanged).
//! [`RuleBook`] folds a log event by event and says, for each event, which rule of which
//! version it breaks ([`Violation`]):
//!
//! - the header line each version's backend accepts (`header.rs`: where the recorded
//!   branch lives);
//! - the event envelope and the legacy shapes each version still reads or refuses
//!   (`envelope.rs`, `vocabulary.rs`), and the newest release's known event types and
//!   `ignorable`;
//! - the message shapes a restored log must have (`messages.rs`);
//! - surface markers, `sourceEventSeqs` provenance and replacements (`surface.rs`);
//! - the turn and step structure of dsh's session invariant (`turns.rs`);
//! - the compaction brackets and checkpoints of both vocabularies (`compaction.rs`);
//! - the shapes of a tool round and how its calls and results pair up (`tools.rs`);
//! - title sources (`titles.rs`);
//! - seq contiguity;
//! - and this project's own rule: no line longer than its reader loads
//!   (`readable_line.rs`, `store.max_line_bytes`).
//!
//! The writer ([`crate::SessionWriter`]) checks every new batch against the book it holds
//! and refuses a batch that breaks a rule ([`crate::StoreError::RuleBroken`]); a log that
//! an earlier version wrote against these rules is folded leniently (its violations are
//! only counted), so it stays readable and writable. `dsh-refs check` reports the same
//! violations for a whole store.

mod compaction;
mod envelope;
mod findings;
mod header;
mod messages;
pub mod readable_line;
mod surface;
mod titles;
mod tools;
mod turns;
mod vocabulary;

pub use envelope::Envelope;
pub use findings::{Findings, RuleCount};
pub use header::check_header;
pub use tools::RequestedCall;
pub use vocabulary::RELEASE_KNOWN_EVENT_TYPES;

use super::event::Event;
use super::not_loaded::NotLoaded;

/// A dsh version whose readers this project writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DshVersion {
    /// The commit the session-reference contract and the conformance vectors follow.
    Followed,
    /// The newest release (0.1.0-rc.8; 0.1.1-rc.1 and rc.2 read logs by the same rules).
    Release,
}

impl DshVersion {
    /// Both versions, oldest first.
    pub const ALL: [DshVersion; 2] = [DshVersion::Followed, DshVersion::Release];

    /// How the version is named in messages and reports.
    pub fn name(self) -> &'static str {
        match self {
            DshVersion::Followed => "6816e8a3d5",
            DshVersion::Release => "0.1.0-rc.8",
        }
    }
}

impl std::fmt::Display for DshVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The versions a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Versions {
    followed: bool,
    release: bool,
}

impl Versions {
    /// Both versions.
    pub const BOTH: Versions = Versions {
        followed: true,
        release: true,
    };
    /// The followed commit only.
    pub const FOLLOWED: Versions = Versions {
        followed: true,
        release: false,
    };
    /// The newest release only.
    pub const RELEASE: Versions = Versions {
        followed: false,
        release: true,
    };

    /// Whether `version` is among them.
    pub fn contains(self, version: DshVersion) -> bool {
        match version {
            DshVersion::Followed => self.followed,
            DshVersion::Release => self.release,
        }
    }

    /// The versions of either.
    #[must_use]
    pub fn union(self, other: Versions) -> Versions {
        Versions {
            followed: self.followed || other.followed,
            release: self.release || other.release,
        }
    }

    /// The versions, oldest first.
    pub fn iter(self) -> impl Iterator<Item = DshVersion> {
        DshVersion::ALL
            .into_iter()
            .filter(move |v| self.contains(*v))
    }
}

impl std::fmt::Display for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.iter().map(DshVersion::name).collect();
        f.write_str(&names.join(" and "))
    }
}

/// What breaking a rule costs in dsh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    /// dsh refuses to read (and so to resume or reference) the whole log.
    Refused,
    /// dsh's invariant companions (loaded in its tests and development runs) reject the log.
    Invariant,
    /// dsh cannot read the session's title while this title event is the newest one.
    TitleUnreadable,
    /// A contract dsh's own writer keeps and its consumers rely on (token pricing of a
    /// replacement); no reader checks it.
    Contract,
}

impl Effect {
    /// A short phrase for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Effect::Refused => "refuses to read the log",
            Effect::Invariant => "its invariants reject the log",
            Effect::TitleUnreadable => "cannot read the title",
            Effect::Contract => "breaks a contract its consumers rely on",
        }
    }
}

/// One rule of the book, with a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// The header line is one both versions accept as a session header.
    Header,
    /// Seqs count from 0 without gaps.
    SeqContiguous,
    /// The envelope holds only the keys each version allows, with valid values.
    Envelope,
    /// The newest release reads only the event types it knows, or ones marked `ignorable`.
    KnownEventType,
    /// A shape the newest release reads as an older format must be that format exactly;
    /// formats both versions dropped are refused.
    LegacyShape,
    /// Message events carry an identified message of the declared role and source.
    MessageShape,
    /// Only surface types carry `surfaceOp`/`sourceEventSeqs`, and they carry valid ones.
    SurfaceMarker,
    /// `sourceEventSeqs` are unique earlier seqs, non-empty except on `assistant/message`.
    Provenance,
    /// A replacement's `sourceEventSeqs` list every surface node it shadows.
    ShadowedNodes,
    /// A `tool/result` replacement rewrites exactly one current tool result's content.
    ToolResultRewrite,
    /// Turns and steps open and close in order, numbered as dsh numbers them.
    TurnStructure,
    /// Compaction events open, summarize and close one compaction at a time, owned by the
    /// turn they name.
    CompactionBracket,
    /// A compaction checkpoint names the open compaction it belongs to.
    CompactionCheckpoint,
    /// The metering event right before a replacement (`compaction/summary`,
    /// `compaction/prune`) names exactly the nodes it shadows, and a summary is followed
    /// by its replacement.
    ShadowPrice,
    /// A title's source is one the newest release declares.
    TitleSource,
    /// A user rename cites no message; every other title cites at least one.
    TitleCitations,
    /// Tool calls, their stream deltas and their results have dsh's shapes, and every call
    /// the model asked for in a step is answered in that step.
    ToolShape,
}

impl Rule {
    /// Every rule, in report order.
    pub const ALL: [Rule; 17] = [
        Rule::Header,
        Rule::SeqContiguous,
        Rule::Envelope,
        Rule::KnownEventType,
        Rule::LegacyShape,
        Rule::MessageShape,
        Rule::SurfaceMarker,
        Rule::Provenance,
        Rule::ShadowedNodes,
        Rule::ToolResultRewrite,
        Rule::TurnStructure,
        Rule::CompactionBracket,
        Rule::CompactionCheckpoint,
        Rule::ShadowPrice,
        Rule::TitleSource,
        Rule::TitleCitations,
        Rule::ToolShape,
    ];

    /// The stable code (`check --json`, error messages).
    pub fn code(self) -> &'static str {
        match self {
            Rule::Header => "HEADER",
            Rule::SeqContiguous => "SEQ_CONTIGUOUS",
            Rule::Envelope => "ENVELOPE",
            Rule::KnownEventType => "KNOWN_EVENT_TYPE",
            Rule::LegacyShape => "LEGACY_SHAPE",
            Rule::MessageShape => "MESSAGE_SHAPE",
            Rule::SurfaceMarker => "SURFACE_MARKER",
            Rule::Provenance => "PROVENANCE",
            Rule::ShadowedNodes => "SHADOWED_NODES",
            Rule::ToolResultRewrite => "TOOL_RESULT_REWRITE",
            Rule::TurnStructure => "TURN_STRUCTURE",
            Rule::CompactionBracket => "COMPACTION_BRACKET",
            Rule::CompactionCheckpoint => "COMPACTION_CHECKPOINT",
            Rule::ShadowPrice => "SHADOW_PRICE",
            Rule::TitleSource => "TITLE_SOURCE",
            Rule::TitleCitations => "TITLE_CITATIONS",
            Rule::ToolShape => "TOOL_SHAPE",
        }
    }

    /// What the rule asks, in a sentence.
    pub fn summary(self) -> &'static str {
        match self {
            Rule::Header => "the header line is one dsh accepts as a session header",
            Rule::SeqContiguous => "seqs count from 0 without gaps",
            Rule::Envelope => "the event envelope holds only the keys and values dsh allows",
            Rule::KnownEventType => {
                "every event type is one the newest release knows, or is marked ignorable"
            }
            Rule::LegacyShape => "older record shapes are exactly the ones dsh still converts",
            Rule::MessageShape => {
                "message events carry an identified message of the declared role and source"
            }
            Rule::SurfaceMarker => "only surface events carry a valid surfaceOp",
            Rule::Provenance => {
                "sourceEventSeqs are unique earlier seqs, non-empty except on assistant/message"
            }
            Rule::ShadowedNodes => {
                "a replacement's sourceEventSeqs list every surface node it shadows"
            }
            Rule::ToolResultRewrite => {
                "a tool/result replacement rewrites one current tool result's content only"
            }
            Rule::TurnStructure => "turns and steps open and close in order and in number",
            Rule::CompactionBracket => {
                "compactions start, summarize and end one at a time, owned by their turn"
            }
            Rule::CompactionCheckpoint => {
                "a compaction checkpoint names the open compaction it belongs to"
            }
            Rule::ShadowPrice => {
                "a compaction summary is followed by its replacement, which shadows exactly \
                 the nodes it names"
            }
            Rule::TitleSource => "a title's source is fallback, provider or user",
            Rule::TitleCitations => {
                "a user rename cites no message seqs, every other title at least one"
            }
            Rule::ToolShape => {
                "tool calls, their deltas and results have dsh's shapes, and every call a \
                 step asks for is answered in that step"
            }
        }
    }

    /// What breaking the rule costs in `version`.
    pub fn effect(self, version: DshVersion) -> Effect {
        match (self, version) {
            (
                Rule::TurnStructure
                | Rule::CompactionBracket
                | Rule::CompactionCheckpoint
                | Rule::TitleCitations,
                _,
            ) => Effect::Invariant,
            (Rule::ShadowPrice | Rule::ToolShape, _) => Effect::Contract,
            (Rule::TitleSource, _) => Effect::TitleUnreadable,
            _ => Effect::Refused,
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// One event breaking one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    /// The versions whose rule it is.
    pub versions: Versions,
    /// The offending event.
    pub seq: u64,
    /// What exactly is wrong (names seqs, types, keys).
    pub detail: String,
}

impl Violation {
    pub(crate) fn new(rule: Rule, versions: Versions, seq: u64, detail: impl Into<String>) -> Self {
        Violation {
            rule,
            versions,
            seq,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (dsh {}): event seq {}: {}",
            self.rule.code(),
            self.versions,
            self.seq,
            self.detail
        )
    }
}

/// How strictly an event is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reading a log someone wrote: a turn boundary that crosses an open compaction is only
    /// a violation if that compaction is later closed (dsh forgets a compaction left open
    /// by a crash once the log is resumed).
    Scan,
    /// Appending a new event: every rule is decided on the spot.
    Append,
}

/// Everything the rules need to remember of a log folded so far. Memory: the surface's
/// seqs (8 bytes each), one hash per `tool/result` on the surface, and a few small states.
#[derive(Debug, Clone, Default)]
pub struct RuleBook {
    next_seq: u64,
    surface: surface::SurfaceRules,
    turns: turns::TurnRules,
    tools: tools::ToolRules,
    compaction: compaction::CompactionRules,
    /// The event before the one being folded (compaction adjacency).
    previous: Option<compaction::Previous>,
}

/// What [`RuleBook::begin`] saved so a batch can be undone.
#[derive(Debug)]
pub struct Savepoint {
    next_seq: u64,
    turns: turns::TurnRules,
    tools: tools::ToolRules,
    compaction: compaction::CompactionRules,
    previous: Option<compaction::Previous>,
    surface: surface::Journal,
}

impl RuleBook {
    /// The book of an empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// The seq the next event must have.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The folded surface: seqs in model order.
    pub fn surface(&self) -> &[u64] {
        self.surface.nodes()
    }

    /// Fold `event` (whose line's envelope is `envelope`) into the book and return the
    /// rules it breaks. The event is folded even when it breaks rules (a log already
    /// written stays readable); use [`begin`](Self::begin) / [`rollback`](Self::rollback)
    /// to refuse it instead.
    pub fn admit(&mut self, event: &Event, envelope: &Envelope, mode: Mode) -> Vec<Violation> {
        let mut out = Vec::new();
        if event.seq != self.next_seq {
            out.push(Violation::new(
                Rule::SeqContiguous,
                Versions::BOTH,
                event.seq,
                format!(
                    "seq {} is not contiguous; expected {}",
                    event.seq, self.next_seq
                ),
            ));
        }
        if mode == Mode::Scan && NotLoaded::of(event).is_some() {
            // A line too long to load (crate::not_loaded): only what its placeholder kept
            // (seq, surfaceOp, sourceEventSeqs) can be judged; dsh reads the line itself.
            let mut ignored = Vec::new();
            self.surface.admit(event, &mut ignored);
            out.extend(
                ignored
                    .into_iter()
                    .filter(|v| matches!(v.rule, Rule::ShadowedNodes | Rule::Provenance)),
            );
            self.previous = Some(compaction::Previous::of(event));
            self.next_seq = event.seq.saturating_add(1);
            return out;
        }
        envelope::check(event, envelope, &mut out);
        vocabulary::check(event, envelope, &mut out);
        messages::check(event, &mut out);
        let shadowed = self.surface.admit(event, &mut out);
        self.turns.admit(event, &mut out);
        self.tools.admit(event, &mut out);
        self.compaction.admit(
            event,
            self.previous.as_ref(),
            shadowed.as_deref(),
            mode,
            &mut out,
        );
        titles::check(event, &mut out);
        self.previous = Some(compaction::Previous::of(event));
        self.next_seq = event.seq.saturating_add(1);
        out
    }

    /// Why the last admitted event could not be folded at all (a replacement naming a seq
    /// that is not on the surface, or its ends in the wrong order): this project's readers
    /// call such a log corrupt. Cleared by the call.
    pub fn take_fold_error(&mut self) -> Option<crate::FoldError> {
        self.surface.take_fold_error()
    }

    /// Violations that only the end of the log decides (none today: a compaction still
    /// open at the end is one a crash left, which dsh forgets on resume). Call once after
    /// the last event of a scanned log.
    pub fn finish(&mut self) -> Vec<Violation> {
        self.compaction.finish()
    }

    /// Start a batch that may be undone: remembers the small state and journals the big one.
    pub fn begin(&mut self) -> Savepoint {
        Savepoint {
            next_seq: self.next_seq,
            turns: self.turns.clone(),
            tools: self.tools.clone(),
            compaction: self.compaction.clone(),
            previous: self.previous.clone(),
            surface: self.surface.begin(),
        }
    }

    /// Keep what was admitted since `savepoint`.
    pub fn commit(&mut self, savepoint: Savepoint) {
        self.surface.commit(savepoint.surface);
    }

    /// Undo everything admitted since `savepoint`.
    pub fn rollback(&mut self, savepoint: Savepoint) {
        self.next_seq = savepoint.next_seq;
        self.turns = savepoint.turns;
        self.tools = savepoint.tools;
        self.compaction = savepoint.compaction;
        self.previous = savepoint.previous;
        self.surface.rollback(savepoint.surface);
    }

    /// The turn open at the end of the log, if any (a crash left it open).
    pub fn open_turn(&self) -> Option<u64> {
        self.turns.open_turn()
    }

    /// The step open in that turn, if any.
    pub fn open_step(&self) -> Option<u64> {
        self.turns.open_step()
    }

    /// The tool calls the open step asked for that have no result yet (a crash left them),
    /// in the order they were asked for.
    pub fn pending_tool_calls(&self) -> &[RequestedCall] {
        self.tools.pending()
    }

    /// The compaction open at the end of the log (newest vocabulary), if any: its id and
    /// owner turn (`None` for a standalone one).
    pub fn open_compaction(&self) -> Option<(String, Option<u64>)> {
        self.compaction.open_release()
    }

    /// The number dsh expects for the next turn.
    pub fn next_turn(&self) -> u64 {
        self.turns.next_turn()
    }
}

#[cfg(test)]
mod tests;
