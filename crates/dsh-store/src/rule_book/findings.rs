//! A bounded summary of the violations of one log: how many events broke each rule, for
//! which versions, and the first few in full.

use std::collections::BTreeMap;

use super::{DshVersion, Effect, Rule, Versions, Violation};

/// Violations kept in full per rule.
const KEPT_PER_RULE: usize = 3;

/// How one rule was broken in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCount {
    /// Events that broke it.
    pub events: u64,
    /// The versions whose rule it is (union over those events).
    pub versions: Versions,
    /// The first few, in full.
    pub first: Vec<Violation>,
}

/// What a log breaks, with memory bounded by the number of rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    per_rule: BTreeMap<Rule, RuleCount>,
}

impl Findings {
    /// No violation at all.
    pub fn is_empty(&self) -> bool {
        self.per_rule.is_empty()
    }

    /// Count one violation.
    pub fn add(&mut self, v: Violation) {
        let entry = self.per_rule.entry(v.rule).or_insert_with(|| RuleCount {
            events: 0,
            versions: v.versions,
            first: Vec::new(),
        });
        entry.events += 1;
        entry.versions = entry.versions.union(v.versions);
        if entry.first.len() < KEPT_PER_RULE {
            entry.first.push(v);
        }
    }

    /// Count every violation of `vs`.
    pub fn extend(&mut self, vs: impl IntoIterator<Item = Violation>) {
        for v in vs {
            self.add(v);
        }
    }

    /// The rules broken, in report order, with their counts.
    pub fn rules(&self) -> impl Iterator<Item = (Rule, &RuleCount)> {
        self.per_rule.iter().map(|(r, c)| (*r, c))
    }

    /// Events that broke any rule (an event breaking two rules counts twice).
    pub fn total(&self) -> u64 {
        self.per_rule.values().map(|c| c.events).sum()
    }

    /// Whether `version` refuses to read the whole log (not only its invariants or title).
    pub fn refused_by(&self, version: DshVersion) -> bool {
        self.per_rule
            .iter()
            .any(|(r, c)| c.versions.contains(version) && r.effect(version) == Effect::Refused)
    }

    /// A short account for a notice: whose rules the log breaks, which of those versions
    /// cannot read it (or, when all read it, that their checks reject parts of it), and the
    /// first rule broken. It says nothing of who wrote the log or when: a log dsh 0.1.0-rc.8
    /// wrote can break 6816e8a3d5's rules as much as an older log breaks rc.8's.
    pub fn one_line(&self) -> String {
        let names = |pick: &dyn Fn(DshVersion) -> bool| {
            DshVersion::ALL
                .into_iter()
                .filter(|v| pick(*v))
                .map(DshVersion::name)
                .collect::<Vec<_>>()
                .join(" and ")
        };
        let whose = names(&|v| self.per_rule.values().any(|c| c.versions.contains(v)));
        let refused = names(&|v| self.refused_by(v));
        let what = if refused.is_empty() {
            format!("this log breaks rules of dsh {whose}: their checks reject parts of it")
        } else {
            format!("this log breaks rules of dsh {whose}: dsh {refused} cannot read it")
        };
        let first = self
            .per_rule
            .values()
            .filter_map(|c| c.first.first())
            .min_by_key(|v| v.seq)
            .map(|v| format!(" (first: {} at seq {})", v.rule.code(), v.seq))
            .unwrap_or_default();
        format!("{what}{first}")
    }
}
