//! Keystroke to redrawn frame with the `@` popup open over 10 000 sessions (docs/performance.md: ≤ 16 ms):
//! the key goes through `BottomPane::handle_key`, the query it asks for runs against the warm
//! candidate service, the answer is set and the pane is drawn into a `TestBackend` terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_reference::{AgentRef, Candidate, ReferenceConfig, SessionReferences};
use dsh_refs::tui::bottom_pane::{BottomPane, InputResult};
use dsh_refs::tui::mention_popup::DisplayZone;
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use dsh_store::SessionStore;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio_util::sync::CancellationToken;

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

fn keystroke_to_frame(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    fixtures::write_many_sessions(tmp.path(), 10_000);
    // Directory mtimes younger than 2 s are not trusted by the listing (same-tick changes
    // would not show); a warm store is one nobody changed in the last moments.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let refs = SessionReferences::new(
        Arc::new(SessionStore::with_persisted_index(tmp.path())),
        ReferenceConfig::default(),
    );
    let agent = AgentRef {
        session_id: "sess-00001".into(),
        cwd: Some("/home/dev/project-1".into()),
    };
    let cancel = CancellationToken::new();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let utc = DisplayZone::Fixed(chrono::FixedOffset::east_opt(0).expect("utc"));
    let mut pane = BottomPane::with_zone(100, utc);
    pane.handle_paste("please compare with ");
    let answer = |pane: &mut BottomPane, result: InputResult| {
        if let InputResult::QueryCandidates { query_id, query } = result {
            let rows = runtime
                .block_on(refs.list_candidates(&agent, &query, None, &cancel))
                .map_err(|e| e.to_string());
            pane.set_candidates(query_id, rows);
        }
    };
    let opened = pane.handle_key(key('@'));
    answer(&mut pane, opened);
    assert!(pane.popup_active());
    // Alternate typing and deleting one char so the popup stays open with a live query.
    let mut typed = false;
    c.bench_function("keystroke_to_frame_10k", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('t')
            };
            typed = !typed;
            let result = pane.handle_key(k);
            answer(&mut pane, result);
            terminal
                .draw(|frame| {
                    let area = frame.area();
                    if let Some(at) = pane.render(area, frame.buffer_mut()) {
                        frame.set_cursor_position(at);
                    }
                })
                .expect("draw");
        });
    });
    // The same while the full-text index of this store is built from nothing, over and over,
    // on background threads (as the app does at launch; docs/search.md).
    let stop = Arc::new(AtomicBool::new(false));
    let indexer = {
        let (stop, root) = (Arc::clone(&stop), tmp.path().to_owned());
        std::thread::spawn(move || {
            let mut builds = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let dir = tempfile::tempdir().expect("index dir");
                let options = IndexOptions {
                    index_dir: Some(dir.path().to_owned()),
                };
                let index = SessionIndex::open(&root, &options).expect("open index");
                let cancel = Cancel::new();
                let _ = index.refresh(&cancel, &mut |_| {
                    if stop.load(Ordering::Relaxed) {
                        cancel.cancel();
                    }
                });
                builds += 1;
            }
            builds
        })
    };
    c.bench_function("keystroke_to_frame_10k_while_indexing", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('t')
            };
            typed = !typed;
            let result = pane.handle_key(k);
            answer(&mut pane, result);
            terminal
                .draw(|frame| {
                    let area = frame.area();
                    if let Some(at) = pane.render(area, frame.buffer_mut()) {
                        frame.set_cursor_position(at);
                    }
                })
                .expect("draw");
        });
    });
    stop.store(true, Ordering::Relaxed);
    let builds = indexer.join().expect("indexer thread");
    eprintln!("index builds started during the measurement: {builds}");
    // The popup handling a full 10 000-row answer (a limit that large), arrow key + frame.
    let many: Vec<Candidate> = (0..10_000)
        .map(|i| Candidate {
            session_id: format!("sess-{i:05}"),
            label: format!("topic {i}"),
            cwd: Some(format!("/home/dev/project-{}", i % 20)),
            created_at: 1_700_000_000_000 + i,
        })
        .collect();
    if let InputResult::QueryCandidates { query_id, .. } = pane.handle_key(key('x')) {
        pane.set_candidates(query_id, Ok(many));
    }
    c.bench_function("arrow_key_to_frame_10k_rows", |b| {
        let mut down = true;
        b.iter(|| {
            let k = if down { KeyCode::Down } else { KeyCode::Up };
            down = !down;
            pane.handle_key(KeyEvent::new(k, KeyModifiers::NONE));
            terminal
                .draw(|frame| {
                    pane.render(frame.area(), frame.buffer_mut());
                })
                .expect("draw");
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = keystroke_to_frame
}
criterion_main!(benches);
