//! dsh-refs: a terminal chat client for agent sessions with cross-session references.
//!
//! The session store and the reference service live in their own crates (`dsh_store`,
//! `dsh_reference`); this crate holds the app: [`llm`], [`agent`], [`tui`], [`cli`], each
//! depending only on those listed before it.

pub mod agent;
pub mod cli;
pub mod llm;
pub mod regular_file;
pub mod tui;
