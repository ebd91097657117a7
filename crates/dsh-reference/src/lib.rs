//! The session-reference layer (docs/references.md): URIs and mentions, candidate listing, and the
//! bounded, read-only snapshot context prepared for a message that references other sessions.

pub mod budget_plan;
pub mod candidate_view;
pub mod candidates;
pub mod citation;
pub mod closest;
pub mod config;
pub mod context_tags;
pub mod error;
pub mod estimate;
pub mod excerpt_read;
pub mod excerpt_uri;
pub mod excerpt_window;
pub mod file_context;
pub mod file_mention;
pub mod frecency;
pub mod git_head;
pub mod js_chars;
pub mod json_text;
pub mod kept_lines;
pub mod label_match;
pub mod listing_order;
pub mod mention;
pub mod neutral_label;
pub mod parse;
mod planned_read;
pub mod projected_scan;
pub mod projection;
pub mod prompt;
pub mod query_words;
pub mod recall_result;
pub mod redact;
pub mod reference_entry;
pub mod relative_time;
pub mod retention;
pub mod service;
pub mod source_data;
pub mod source_read;
pub mod staleness;
pub mod untitled_label;
pub mod uri;

pub use candidates::{Candidate, ClosestMatch, Scope, Selection};
pub use config::ReferenceConfig;
pub use error::{ErrorCode, ReferenceError};
pub use estimate::{PreviewTurn, ReferenceEstimate, kib};
pub use excerpt_uri::{ExcerptRange, encode_excerpt_uri, format_excerpt_mention};
pub use git_head::{GitHead, git_head, record_branch};
pub use label_match::label_match_ranges;
pub use listing_order::{ListingOrder, SessionDetails};
pub use mention::{format_mention, mention_with_uri};
pub use neutral_label::{NEUTRAL_LABEL_MAX_CHARS, mention_label, neutral_label};
pub use parse::{
    ExcerptReference, ExplicitMention, Mentioned, ParsedText, Reference, explicit_mentions,
    parse_message, parse_text,
};
pub use projection::{ConversationItem, TurnRole, project_surface};
pub use query_words::{
    ListingQuery, MatchTier, QueryMatch, match_tier, names_cwd_tail, query_match_ranges,
    query_words,
};
pub use redact::display_title;
pub use reference_entry::{
    ExcerptSpan, ReferenceEntry, SnapshotSource, SnapshotTurn, decode_snapshot,
};
pub use relative_time::relative_time;
pub use retention::{RetainedSource, RetentionStats, SourceData, SourceHeader, retain_source};
pub use service::{
    AgentRef, CandidatePage, DetailedPage, ListingScope, Prepared, SessionReferences,
};
pub use untitled_label::untitled_label;
pub use uri::{decode_uri, encode_uri};
