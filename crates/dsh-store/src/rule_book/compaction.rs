//! Compaction brackets and checkpoints, in both vocabularies (dsh's compaction invariants).
//!
//! 6816e8a3d5 (`compact/start {turn}`, `compact/summary {summary, shadowedRange,
//! shadowedSeqs, shadowedTokenCount, provider, model}`, `compact/end {turn, error?}`): one
//! compaction open at a time; a summary needs an open compaction, once, with a non-empty
//! `shadowedSeqs` whose first and last are the range and a non-negative safe-integer token
//! count; the end names the start's turn and, without `error`, follows a summary.
//!
//! 0.1.0-rc.8 (`compaction/start|summary|end`, each with a `compactionId`, the start and end
//! with an owner `turn: number | null`): the same, plus every event names the open
//! compaction's id; a numbered owner is the open turn, a `null` owner is only allowed
//! between turns, and no turn starts or ends while a compaction is open (dsh forgets a
//! compaction a crash left open once the log is resumed: `session/end-seed`). A replacement
//! `user/message` whose source is the compact marker names the open compaction's id. Its
//! types also state a contract for token pricing: the summary is followed by its
//! replacement, and the metering event right before a replacement names exactly the nodes
//! it shadows.

use serde_json::Value;

use super::envelope::MAX_SAFE_INTEGER;
use super::{Mode, Rule, Versions, Violation};
use crate::event::{Event, EventData, SurfaceOp, kind};

/// What the rules need to know of the event before the current one.
#[derive(Debug, Clone)]
pub(super) struct Previous {
    seq: u64,
    /// A metering event (`compaction/summary` or `compaction/prune`), if it was one.
    meter: Option<Meter>,
}

/// A metering event: the shadow price of the replacement that follows it.
#[derive(Debug, Clone)]
struct Meter {
    /// `compaction/summary` (else `compaction/prune`).
    summary: bool,
    compaction_id: Option<String>,
    shadowed_seqs: Option<Vec<u64>>,
}

impl Meter {
    fn kind(&self) -> &'static str {
        if self.summary {
            kind::COMPACTION_SUMMARY
        } else {
            kind::COMPACTION_PRUNE
        }
    }
}

impl Previous {
    pub(super) fn of(event: &Event) -> Self {
        let meter = match &event.data {
            EventData::Other { kind: k, data }
                if k == kind::COMPACTION_SUMMARY || k == kind::COMPACTION_PRUNE =>
            {
                Some(Meter {
                    summary: k == kind::COMPACTION_SUMMARY,
                    compaction_id: data
                        .get("compactionId")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    shadowed_seqs: seq_list(data.get("shadowedSeqs")),
                })
            }
            _ => None,
        };
        Previous {
            seq: event.seq,
            meter,
        }
    }

    fn summary(&self) -> Option<&Meter> {
        self.meter.as_ref().filter(|m| m.summary)
    }
}

fn seq_list(v: Option<&Value>) -> Option<Vec<u64>> {
    v?.as_array()?.iter().map(Value::as_u64).collect()
}

/// The owner a `compaction/*` event names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Turn(u64),
    Standalone,
    Invalid,
}

impl Owner {
    fn of(data: &Value) -> Self {
        match data.get("turn") {
            Some(Value::Null) => Owner::Standalone,
            Some(v) => v.as_u64().map_or(Owner::Invalid, Owner::Turn),
            None => Owner::Invalid,
        }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Turn(n) => write!(f, "turn {n}"),
            Owner::Standalone => f.write_str("a standalone compaction"),
            Owner::Invalid => f.write_str("no valid turn"),
        }
    }
}

#[derive(Debug, Clone)]
struct FollowedOpen {
    turn: Option<Value>,
    summarized: bool,
}

#[derive(Debug, Clone)]
struct ReleaseOpen {
    id: String,
    command: Option<String>,
    owner: Owner,
    summarized: bool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct CompactionRules {
    followed: Option<FollowedOpen>,
    release: Option<ReleaseOpen>,
    /// The release invariant's own turn cursor.
    open_turn: Option<u64>,
    /// While scanning: turn boundaries that crossed the open compaction; they count only
    /// if that compaction is closed later (else a crash left it, which dsh forgets).
    deferred: Vec<Violation>,
}

fn non_empty_id(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl CompactionRules {
    pub(super) fn open_release(&self) -> Option<(String, Option<u64>)> {
        self.release.as_ref().map(|o| {
            let turn = match o.owner {
                Owner::Turn(n) => Some(n),
                Owner::Standalone | Owner::Invalid => None,
            };
            (o.id.clone(), turn)
        })
    }

    pub(super) fn finish(&mut self) -> Vec<Violation> {
        self.deferred.clear();
        Vec::new()
    }

    pub(super) fn admit(
        &mut self,
        event: &Event,
        previous: Option<&Previous>,
        shadowed: Option<&[u64]>,
        mode: Mode,
        out: &mut Vec<Violation>,
    ) {
        if let Err(why) = self.followed(event) {
            out.push(Violation::new(
                Rule::CompactionBracket,
                Versions::FOLLOWED,
                event.seq,
                why,
            ));
        }
        self.release(event, mode, out);
        shadow_price(event, previous, shadowed, out);
    }

    /// 6816e8a3d5's `compact/*` invariant (its first failure, as dsh stops there).
    fn followed(&mut self, event: &Event) -> Result<(), String> {
        let EventData::Other { kind: k, data } = &event.data else {
            return Ok(());
        };
        match k.as_str() {
            kind::COMPACT_START => {
                let was_open = self.followed.replace(FollowedOpen {
                    turn: data.get("turn").cloned(),
                    summarized: false,
                });
                if was_open.is_some() {
                    return Err("compact/start while another compaction is still open".into());
                }
            }
            kind::COMPACT_SUMMARY => {
                let Some(open) = &mut self.followed else {
                    return Err("compact/summary has no matching compact/start".into());
                };
                if open.summarized {
                    return Err("compact/summary repeated within one compaction".into());
                }
                open.summarized = true;
                let Some(seqs) = data.get("shadowedSeqs").and_then(Value::as_array) else {
                    return Err("compact/summary has no shadowedSeqs array".into());
                };
                if seqs.is_empty() {
                    return Err("compact/summary shadowedSeqs must be non-empty".into());
                }
                let range = data.get("shadowedRange");
                if seqs.first() != range.and_then(|r| r.get("start"))
                    || seqs.last() != range.and_then(|r| r.get("end"))
                {
                    return Err(
                        "compact/summary shadowedRange must match the first and last shadowedSeqs"
                            .into(),
                    );
                }
                if !token_count_ok(data.get("shadowedTokenCount")) {
                    return Err(
                        "compact/summary shadowedTokenCount must be a non-negative safe integer"
                            .into(),
                    );
                }
            }
            kind::COMPACT_END => {
                let Some(open) = self.followed.take() else {
                    return Err("compact/end has no matching compact/start".into());
                };
                if data.get("turn") != open.turn.as_ref() {
                    return Err("compact/end does not name the turn of its compact/start".into());
                }
                if data.get("error").is_none() && !open.summarized {
                    return Err("a successful compact/end requires one compact/summary".into());
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// 0.1.0-rc.8's `compaction/*` invariant, in the order its replay runs it.
    fn release(&mut self, event: &Event, mode: Mode, out: &mut Vec<Violation>) {
        let seq = event.seq;
        let boundary = match &event.data {
            EventData::TurnStart { turn, .. } => Some((kind::TURN_START, Some(*turn))),
            EventData::TurnEnd { .. } => Some((kind::TURN_END, None)),
            _ => None,
        };
        if let (Some((what, _)), Some(open)) = (boundary, &self.release) {
            let v = Violation::new(
                Rule::CompactionBracket,
                Versions::RELEASE,
                seq,
                format!("{what} cannot cross the open compaction of {}", open.owner),
            );
            match mode {
                Mode::Append => out.push(v),
                Mode::Scan => self.deferred.push(v),
            }
        }
        if let Err(why) = self.release_event(event, mode, out) {
            let rule = if matches!(event.data, EventData::UserMessage(_)) {
                Rule::CompactionCheckpoint
            } else {
                Rule::CompactionBracket
            };
            out.push(Violation::new(rule, Versions::RELEASE, seq, why));
        }
        match boundary {
            Some((_, Some(turn))) => self.open_turn = Some(turn),
            Some((_, None)) => self.open_turn = None,
            None => {}
        }
    }

    fn owner_ok(&self, owner: &Owner, what: &str) -> Result<(), String> {
        match (owner, self.open_turn) {
            (Owner::Standalone, Some(t)) => {
                Err(format!("{what} is standalone but turn {t} is open"))
            }
            (Owner::Turn(n), None) => Err(format!(
                "{what} for turn {n} appended outside any open turn"
            )),
            (Owner::Turn(n), Some(t)) if *n != t => {
                Err(format!("{what} names turn {n} but the open turn is {t}"))
            }
            (Owner::Invalid, _) => Err(format!("{what} must name a turn number or null")),
            (Owner::Standalone | Owner::Turn(_), _) => Ok(()),
        }
    }

    fn release_event(
        &mut self,
        event: &Event,
        mode: Mode,
        out: &mut Vec<Violation>,
    ) -> Result<(), String> {
        let data = match &event.data {
            EventData::Other { kind: k, .. } if k == kind::SESSION_END_SEED => {
                self.release = None;
                self.deferred.clear();
                return Ok(());
            }
            EventData::UserMessage(m) => {
                let replacement = matches!(event.surface_op, Some(SurfaceOp::Replace { .. }));
                let source = m.source.as_ref();
                if !replacement || !source.is_some_and(crate::Source::is_compact_checkpoint) {
                    return Ok(());
                }
                let source = source.map(|s| &s.0);
                let Some(id) = non_empty_id(source.and_then(|s| s.get("compactionId"))) else {
                    return Err("a compaction checkpoint must name its compactionId".into());
                };
                let command = source.and_then(|s| s.get("sourceCommandId"));
                if command.is_some() && non_empty_id(command).is_none() {
                    return Err(
                        "a compaction checkpoint's sourceCommandId must be a non-empty string"
                            .into(),
                    );
                }
                let Some(open) = &self.release else {
                    return Err("a compaction checkpoint has no matching compaction/start".into());
                };
                if id != open.id {
                    return Err(format!(
                        "compaction checkpoint id {id} does not match compaction/start id {}",
                        open.id
                    ));
                }
                if command.and_then(Value::as_str) != open.command.as_deref() {
                    return Err(
                        "compaction checkpoint sourceCommandId does not match its compaction/start"
                            .into(),
                    );
                }
                return Ok(());
            }
            EventData::Other { kind: k, data }
                if k == kind::COMPACTION_START
                    || k == kind::COMPACTION_SUMMARY
                    || k == kind::COMPACTION_END =>
            {
                data
            }
            _ => return Ok(()),
        };
        let what = event.kind();
        let Some(id) = non_empty_id(data.get("compactionId")) else {
            return Err(format!("{what} compactionId must be a non-empty string"));
        };
        let command = data.get("sourceCommandId");
        if command.is_some() && non_empty_id(command).is_none() {
            return Err(format!("{what} sourceCommandId must be a non-empty string"));
        }
        let command = command.and_then(Value::as_str).map(str::to_owned);
        match what {
            kind::COMPACTION_START => {
                let owner = Owner::of(data);
                let was_open = self.release.replace(ReleaseOpen {
                    id: id.to_owned(),
                    command,
                    owner: owner.clone(),
                    summarized: false,
                });
                if let Some(open) = was_open {
                    return Err(format!(
                        "compaction/start while {} is still compacting",
                        open.owner
                    ));
                }
                self.owner_ok(&owner, what)
            }
            kind::COMPACTION_SUMMARY => {
                let Some(open) = &self.release else {
                    return Err("compaction/summary has no matching compaction/start".into());
                };
                if id != open.id {
                    return Err(format!(
                        "compaction/summary id {id} does not match compaction/start id {}",
                        open.id
                    ));
                }
                if command != open.command {
                    return Err(
                        "compaction/summary sourceCommandId does not match its compaction/start"
                            .into(),
                    );
                }
                let owner = open.owner.clone();
                let already = open.summarized;
                if let Some(open) = &mut self.release {
                    open.summarized = true;
                }
                self.owner_ok(&owner, what)?;
                if already {
                    return Err("compaction/summary repeated within one compaction".into());
                }
                let Some(seqs) = data.get("shadowedSeqs").and_then(Value::as_array) else {
                    return Err("compaction/summary has no shadowedSeqs array".into());
                };
                if seqs.is_empty() {
                    return Err("compaction/summary shadowedSeqs must be non-empty".into());
                }
                let range = data.get("shadowedRange");
                if seqs.first() != range.and_then(|r| r.get("start"))
                    || seqs.last() != range.and_then(|r| r.get("end"))
                {
                    return Err(
                        "compaction/summary shadowedRange must match the first and last shadowedSeqs"
                            .into(),
                    );
                }
                if !token_count_ok(data.get("shadowedTokenCount")) {
                    return Err(
                        "compaction/summary shadowedTokenCount must be a non-negative safe integer"
                            .into(),
                    );
                }
                Ok(())
            }
            _ => {
                let Some(open) = self.release.take() else {
                    return Err("compaction/end has no matching compaction/start".into());
                };
                // The compaction is closed: boundaries that crossed it were real.
                if mode == Mode::Scan {
                    out.append(&mut self.deferred);
                }
                if id != open.id {
                    return Err(format!(
                        "compaction/end id {id} does not match compaction/start id {}",
                        open.id
                    ));
                }
                if command != open.command {
                    return Err(
                        "compaction/end sourceCommandId does not match its compaction/start".into(),
                    );
                }
                let owner = Owner::of(data);
                if owner != open.owner {
                    return Err(format!(
                        "compaction/end owner {owner} does not match compaction/start owner {}",
                        open.owner
                    ));
                }
                self.owner_ok(&open.owner, what)?;
                if data.get("error").is_none() && !open.summarized {
                    return Err(
                        "a successful compaction/end requires one compaction/summary".into(),
                    );
                }
                Ok(())
            }
        }
    }
}

fn token_count_ok(v: Option<&Value>) -> bool {
    v.and_then(Value::as_u64)
        .is_some_and(|n| i64::try_from(n).is_ok_and(|n| n <= MAX_SAFE_INTEGER))
}

/// The pricing contract of 0.1.0-rc.8's compaction types: a summary is followed by its
/// replacement; the metering event right before a replacement names exactly the nodes it
/// shadows; a checkpoint with a compaction id follows that compaction's summary.
fn shadow_price(
    event: &Event,
    previous: Option<&Previous>,
    shadowed: Option<&[u64]>,
    out: &mut Vec<Violation>,
) {
    let seq = event.seq;
    let is_replacement = matches!(event.surface_op, Some(SurfaceOp::Replace { .. }));
    let mut fail = |why: String| {
        out.push(Violation::new(
            Rule::ShadowPrice,
            Versions::RELEASE,
            seq,
            why,
        ));
    };
    if let Some(p) = previous
        && p.summary().is_some()
        && !(is_replacement && event.kind() == kind::USER_MESSAGE)
    {
        fail(format!(
            "compaction/summary at seq {} is not followed by its replacement user/message",
            p.seq
        ));
    }
    if is_replacement
        && let (Some(p), Some(shadowed)) = (previous, shadowed)
        && let Some(meter) = &p.meter
        && let Some(named) = &meter.shadowed_seqs
        && named.as_slice() != shadowed
    {
        fail(format!(
            "{} at seq {} names shadowedSeqs that differ from the nodes this replacement shadows",
            meter.kind(),
            p.seq
        ));
    }
    if let EventData::UserMessage(m) = &event.data
        && is_replacement
        && let Some(source) = m.source.as_ref().filter(|s| s.is_compact_checkpoint())
        && let Some(id) = source.0.get("compactionId").and_then(Value::as_str)
        && previous
            .and_then(Previous::summary)
            .is_none_or(|m| m.compaction_id.as_deref() != Some(id))
    {
        fail(format!(
            "compaction checkpoint {id} does not directly follow its compaction/summary"
        ));
    }
}
