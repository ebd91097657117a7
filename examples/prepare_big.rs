//! Memory and time probe for `prepare` on one very long source (docs/performance.md).
//!
//! `prepare_big gen DIR [MESSAGES]` writes the fixture store (default 100 000 messages);
//! `prepare_big run DIR` prepares a message referencing it once and prints the wall time and
//! the reference stats. Run the second under `/usr/bin/time -v` for the peak RSS.
//! `prepare_big many DIR [COUNT]` writes the small-sessions store of the listing benchmarks
//! (default 10 000 sessions) for timing `dsh-refs candidates` as a whole process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

#[path = "../benches/support/fixtures.rs"]
mod fixtures;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dsh_reference::{AgentRef, Reference, ReferenceConfig, SessionReferences};
use dsh_store::{ContentBlock, SessionStore};
use tokio_util::sync::CancellationToken;

/// Id of the long session in the fixture store.
const BIG_ID: &str = "big-session";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(dir)) = (args.get(1), args.get(2)) else {
        return Err("usage: prepare_big gen|run|many DIR [COUNT]".into());
    };
    let dir = PathBuf::from(dir);
    match mode.as_str() {
        "gen" => {
            let messages = args
                .get(3)
                .map(|m| m.parse())
                .transpose()?
                .unwrap_or(100_000);
            let started = Instant::now();
            let path = fixtures::write_long_session(&dir, BIG_ID, messages, 600);
            let len = std::fs::metadata(&path)?.len();
            println!(
                "wrote {} ({len} bytes) in {:?}",
                path.display(),
                started.elapsed()
            );
        }
        "many" => {
            let count = args
                .get(3)
                .map(|m| m.parse())
                .transpose()?
                .unwrap_or(10_000);
            let started = Instant::now();
            fixtures::write_many_sessions(&dir, count);
            println!("wrote {count} sessions in {:?}", started.elapsed());
        }
        "run" => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let store = Arc::new(SessionStore::new(dir));
            let refs = SessionReferences::new(store, ReferenceConfig::default());
            let agent = AgentRef {
                session_id: "probe".into(),
                cwd: None,
            };
            let mention = [Reference {
                session_id: BIG_ID.into(),
                label: None,
            }];
            let started = Instant::now();
            let prepared = runtime.block_on(refs.prepare(
                &agent,
                &[ContentBlock::text("see @big")],
                &mention,
                &CancellationToken::new(),
            ))?;
            let elapsed = started.elapsed();
            let source = prepared.context.as_ref().and_then(|c| c.source.clone());
            let refs_json = source.map(|s| s.0["references"].clone());
            println!("prepare: {elapsed:?}");
            println!("references: {}", refs_json.unwrap_or_default());
        }
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}
