//! Keystroke to redrawn frame with the `@` popup open over 10 000 sessions (docs/performance.md: ≤ 16 ms):
//! the key goes through `MentionInputState::handle_key`, the query it asks for runs against the warm
//! candidate service, the answer is set and the pane is drawn into a `TestBackend` terminal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

#[path = "support/fixtures.rs"]
mod fixtures;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_reference::{AgentRef, Candidate, ReferenceConfig, SessionReferences};
use dsh_refs::tui::session_items::{DisplayZone, composer_state, session_item};
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use dsh_store::SessionStore;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_mention::{MentionInput, MentionInputState, Outcome};
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
    let mut pane = composer_state(100);
    pane.handle_paste("please compare with ");
    let answer = |pane: &mut MentionInputState, result: Outcome| {
        if let Outcome::Query { id, text, .. } = result {
            match runtime.block_on(refs.list_candidates(&agent, &text, None, &cancel)) {
                Ok(rows) => {
                    pane.set_results(id, rows.iter().map(|c| session_item(c, utc)).collect());
                }
                Err(e) => pane.set_failed(id, e.to_string()),
            }
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
                    frame.render_stateful_widget(MentionInput, frame.area(), &mut pane);
                    if let Some(at) = pane.cursor_position() {
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
                    frame.render_stateful_widget(MentionInput, frame.area(), &mut pane);
                    if let Some(at) = pane.cursor_position() {
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
    if let Outcome::Query { id, .. } = pane.handle_key(key('x')) {
        pane.set_results(id, many.iter().map(|c| session_item(c, utc)).collect());
    }
    c.bench_function("arrow_key_to_frame_10k_rows", |b| {
        let mut down = true;
        b.iter(|| {
            let k = if down { KeyCode::Down } else { KeyCode::Up };
            down = !down;
            pane.handle_key(KeyEvent::new(k, KeyModifiers::NONE));
            terminal
                .draw(|frame| {
                    frame.render_stateful_widget(MentionInput, frame.area(), &mut pane);
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
