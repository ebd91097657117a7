//! dsh-refs: a terminal chat client for agent sessions with cross-session references.
//!
//! Layers (each depends only on those listed before it): [`session`], [`reference`],
//! [`llm`], [`agent`], [`tui`], [`cli`].

pub mod agent;
pub mod cli;
pub mod llm;
pub mod reference;
pub mod session;
pub mod tui;
