//! Keystroke to redrawn frame with the `@` popup open over 10 000 sessions (docs/performance.md: ≤ 16 ms):
//! the key goes through `MentionInputState::handle_key`, the query it asks for runs against the warm
//! candidate service (`list_ordered`: last activity, counted, branches read, as the app asks), the answer is set and the pane is
//! drawn into a `TestBackend` terminal. With the preview shown, the selected session's size
//! estimate is answered too (from the service's cache once warm, as while browsing);
//! with the conversation section active as well (the full-text index answering each query,
//! timed with and without the search, which the app runs off the UI thread); `/resume` is
//! timed from opening to the frame with its first page; and typing / moving at the end of a
//! 100 KB draft with mention chips.
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

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_reference::{AgentRef, Candidate, ListingScope, ReferenceConfig, SessionReferences};
use dsh_refs::tui::composer::candidates::{RowSources, list_ordered};
use dsh_refs::tui::composer::file_section::{FileCandidates, FileRow};
use dsh_refs::tui::composer::listed_page::ListedPage;
use dsh_refs::tui::composer::session_items::{
    DisplayZone, all_dsh, composer_look, composer_state, popup_labels, results_page, session_item,
};
use dsh_refs::tui::picker::ResumePicker;
use dsh_refs::tui::preview::item_preview;
use dsh_refs::tui::search::conversation_hits::{HITS_LIMIT, popup_rows, section_title, to_rows};
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use dsh_store::SessionStore;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_mention::{KeyMap, MentionInputState, Outcome, Section};
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
    let branches = RowSources::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let labels = popup_labels();
    let utc = DisplayZone::Fixed(chrono::FixedOffset::east_opt(0).expect("utc"));
    let mut pane = composer_state(100);
    pane.handle_paste("please compare with ");
    let scope = ListingScope::Agent(agent);
    let answer = |pane: &mut MentionInputState, result: Outcome| {
        if let Outcome::Query { id, text, .. } = result {
            match runtime.block_on(list_ordered(&refs, &scope, &text, None, &branches, &cancel)) {
                Ok(page) => {
                    let page = results_page(&page, &text, &pane.draft(), &all_dsh);
                    let _ = pane.set_page(id, page);
                }
                Err(e) => {
                    let _ = pane.set_failed(id, e.to_string());
                }
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
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
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
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
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
        let _ = pane.set_results(
            id,
            many.iter()
                .map(|c| session_item(c, &dsh_foreign::Origin::Dsh, utc, true))
                .collect(),
        );
    }
    c.bench_function("arrow_key_to_frame_10k_rows", |b| {
        let mut down = true;
        b.iter(|| {
            let k = if down { KeyCode::Down } else { KeyCode::Up };
            down = !down;
            pane.handle_key(KeyEvent::new(k, KeyModifiers::NONE));
            terminal
                .draw(|frame| {
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
                })
                .expect("draw");
        });
    });
}

/// Keystrokes with the preview pane shown (estimates answered), and opening `/resume`.
fn preview_and_resume(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    fixtures::write_many_sessions(tmp.path(), 10_000);
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let refs = SessionReferences::new(
        Arc::new(SessionStore::with_persisted_index(tmp.path())),
        ReferenceConfig::default(),
    );
    let scope = ListingScope::Agent(AgentRef {
        session_id: "sess-00001".into(),
        cwd: Some("/home/dev/project-1".into()),
    });
    let cancel = CancellationToken::new();
    let branches = RowSources::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let labels = popup_labels();
    let utc = DisplayZone::Fixed(chrono::FixedOffset::east_opt(0).expect("utc"));
    let mut pane = composer_state(100);
    // The area it is drawn on decides where the preview goes.
    terminal
        .draw(|frame| {
            frame.render_stateful_widget(composer_look(&labels, true), frame.area(), &mut pane);
        })
        .expect("draw");
    let answer = |pane: &mut MentionInputState, result: Outcome| {
        let asked = match result {
            Outcome::Query { id, text, .. } => Some((id, text, None)),
            Outcome::More {
                id, text, limit, ..
            } => Some((id, text, Some(limit))),
            _ => None,
        };
        if let Some((id, text, limit)) = asked {
            match runtime.block_on(list_ordered(
                &refs, &scope, &text, limit, &branches, &cancel,
            )) {
                Ok(page) => {
                    let page = results_page(&page, &text, &pane.draft(), &all_dsh);
                    let _ = pane.set_page(id, page);
                }
                Err(e) => {
                    let _ = pane.set_failed(id, e.to_string());
                }
            }
        }
        if let Some(key) = pane.want_preview() {
            let label = pane
                .results()
                .and_then(|p| p.selected())
                .map(|i| dsh_reference::neutral_label(i.label()))
                .unwrap_or_default();
            let estimate = runtime
                .block_on(refs.estimate(&key, &label, &cancel))
                .map_err(|e| e.message);
            pane.set_preview(item_preview(&key, Some(estimate.as_ref())));
        }
    };
    let opened = pane.handle_key(key('@'));
    answer(&mut pane, opened);
    let mut typed = false;
    c.bench_function("keystroke_to_frame_10k_preview", |b| {
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
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
                })
                .expect("draw");
        });
    });
    let mut down = true;
    c.bench_function("arrow_key_to_frame_10k_preview", |b| {
        b.iter(|| {
            let k = if down { KeyCode::Down } else { KeyCode::Up };
            down = !down;
            let result = pane.handle_key(KeyEvent::new(k, KeyModifiers::NONE));
            answer(&mut pane, result);
            terminal
                .draw(|frame| {
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
                })
                .expect("draw");
        });
    });
    // No exact match: every keystroke also ranks the closest matches over all 10 000.
    pane.clear_draft_to_history();
    for c in "@tpc4".chars() {
        let result = pane.handle_key(key(c));
        answer(&mut pane, result);
    }
    let p = pane.results().expect("popup open");
    assert_eq!(p.total(), 0, "no exact match");
    assert!(!p.is_empty(), "closest matches offered");
    let mut typed = false;
    c.bench_function("keystroke_to_frame_10k_closest", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('2')
            };
            typed = !typed;
            let result = pane.handle_key(k);
            answer(&mut pane, result);
            terminal
                .draw(|frame| {
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
                })
                .expect("draw");
        });
    });
    // The conversation section too: the full-text index of the store, built once, answers
    // each query (in the app off the UI thread; here before the frame, the worst case: the
    // frame that shows the new answer).
    let index_dir = tempfile::tempdir().expect("index dir");
    let index = SessionIndex::open(
        tmp.path(),
        &IndexOptions {
            index_dir: Some(index_dir.path().to_owned()),
        },
    )
    .expect("open index");
    index
        .refresh(&Cancel::new(), &mut |_| {})
        .expect("build index");
    let search = |pane: &mut MentionInputState, query: Option<(u64, String)>| {
        let Some((id, text)) = query else {
            return;
        };
        let hits = index
            .search_cancellable(&text, HITS_LIMIT, &Cancel::new())
            .expect("search");
        let rows = popup_rows(&to_rows(hits, Some("sess-00001")), &pane.draft(), utc, true);
        let _ = pane.set_late_section(
            id,
            Section {
                title: section_title(true, None),
                rows,
            },
        );
    };
    let query_of = |result: &Outcome| match result {
        Outcome::Query { id, text, .. } => Some((*id, text.clone())),
        _ => None,
    };
    pane.clear_draft_to_history();
    // `refacto` / `refactor`: exact matches in 625 titles, and in most conversations.
    for c in "@refacto".chars() {
        let result = pane.handle_key(key(c));
        search(&mut pane, query_of(&result));
        answer(&mut pane, result);
    }
    assert!(
        pane.results()
            .is_some_and(|p| p.late_section().is_some_and(|h| !h.rows.is_empty())),
        "conversation hits on show"
    );
    let mut typed = false;
    c.bench_function("keystroke_to_frame_10k_preview_conversations", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('r')
            };
            typed = !typed;
            let result = pane.handle_key(k);
            search(&mut pane, query_of(&result));
            answer(&mut pane, result);
            terminal
                .draw(|frame| {
                    frame.render_stateful_widget(
                        composer_look(&labels, true),
                        frame.area(),
                        &mut pane,
                    );
                })
                .expect("draw");
        });
    });
    // The search alone (what runs off the UI thread per keystroke).
    c.bench_function("conversation_search_10k", |b| {
        let mut long = false;
        b.iter(|| {
            long = !long;
            let query = if long { "refactor" } else { "refacto" };
            index
                .search_cancellable(query, HITS_LIMIT, &Cancel::new())
                .expect("search")
        });
    });
    // Only the UI thread's part: the key, the answers already computed set, the frame.
    let answers: Vec<(Option<ListedPage>, Vec<_>)> = ["refactor", "refacto"]
        .iter()
        .map(|q| {
            let page = runtime
                .block_on(list_ordered(&refs, &scope, q, None, &branches, &cancel))
                .ok();
            let hits = index
                .search_cancellable(q, HITS_LIMIT, &Cancel::new())
                .expect("search");
            (page, to_rows(hits, Some("sess-00001")))
        })
        .collect();
    let mut typed = false;
    c.bench_function(
        "keystroke_to_frame_10k_preview_conversations_ui_thread",
        |b| {
            b.iter(|| {
                let k = if typed {
                    KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
                } else {
                    key('t')
                };
                typed = !typed;
                let result = pane.handle_key(k);
                if let Some((id, text)) = query_of(&result) {
                    let (page, hits) = &answers[usize::from(!typed)];
                    if let Some(page) = page {
                        let page = results_page(page, &text, &pane.draft(), &all_dsh);
                        let _ = pane.set_page(id, page);
                    }
                    let rows = popup_rows(hits, &pane.draft(), utc, true);
                    let _ = pane.set_late_section(
                        id,
                        Section {
                            title: section_title(true, None),
                            rows,
                        },
                    );
                }
                terminal
                    .draw(|frame| {
                        frame.render_stateful_widget(
                            composer_look(&labels, true),
                            frame.area(),
                            &mut pane,
                        );
                    })
                    .expect("draw");
            });
        },
    );
    let mut resume_terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    c.bench_function("resume_open_to_first_page_10k", |b| {
        b.iter(|| {
            let open = ("sess-00001".into(), Some("/home/dev/project-1".into()));
            let (mut picker, _) = ResumePicker::open(open, utc, KeyMap::default());
            let page = runtime.block_on(list_ordered(
                &refs,
                &ListingScope::Project(Some("/home/dev/project-1".into())),
                "",
                None,
                &branches,
                &cancel,
            ));
            let _ = picker.show(1, "", page, &all_dsh);
            resume_terminal
                .draw(|frame| {
                    frame.render_stateful_widget(
                        ResumePicker::view(),
                        frame.area(),
                        &mut picker.picker,
                    );
                })
                .expect("draw");
        });
    });
}

/// Typing and moving at the end of a long draft (about 100 KB with 500 mention chips, emoji
/// and CJK): the composer lays out and draws only what changed, so a key stays cheap.
fn keystroke_in_a_long_draft(c: &mut Criterion) {
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let labels = popup_labels();
    let mut pane: MentionInputState = composer_state(100);
    let mut text = String::new();
    for i in 0..500 {
        let _ = write!(
            text,
            "line {i} about @[Session {i} 会话](dsh-session:InNlc3MtMDAwMDEi) and 👍🏽 details "
        );
        text.push_str(&"word ".repeat(24));
        text.push('\n');
    }
    pane.handle_paste(&text);
    let draw = |terminal: &mut Terminal<TestBackend>, pane: &mut MentionInputState| {
        terminal
            .draw(|frame| {
                frame.render_stateful_widget(composer_look(&labels, true), frame.area(), pane);
            })
            .expect("draw");
    };
    c.bench_function("type_in_100kb_draft_to_frame", |b| {
        let mut typed = false;
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('x')
            };
            typed = !typed;
            pane.handle_key(k);
            draw(&mut terminal, &mut pane);
        });
    });
    c.bench_function("arrow_in_100kb_draft_to_frame", |b| {
        let mut left = true;
        b.iter(|| {
            let k = if left { KeyCode::Left } else { KeyCode::Right };
            left = !left;
            pane.handle_key(KeyEvent::new(k, KeyModifiers::NONE));
            draw(&mut terminal, &mut pane);
        });
    });
}
/// Issue 25: keystroke → frame with the `@` popup's file section over a 50 000-file
/// repository (≤ 16 ms): typing `src/pars` and deleting its last char, each key ranked
/// (`FileCandidates::rows`, off the UI thread in the app, timed here with the rest), the
/// page with its `files` section set and drawn; and the UI thread's part alone.
fn keystroke_with_files(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let (tops, mids) = (["crates", "src", "docs", "tests", "tools"], 10usize);
    let mut written = 0usize;
    'outer: for top in tops {
        for m in 0..mids {
            for pkg in 0..100 {
                let dir = root.join(format!("{top}/mod{m}/pkg{pkg}/src"));
                std::fs::create_dir_all(&dir).expect("dir");
                for leaf in [
                    "parse", "render", "state", "event", "lib", "main", "index", "util", "error",
                    "config",
                ] {
                    std::fs::write(dir.join(format!("{leaf}_{written}.rs")), "").expect("file");
                    written += 1;
                    if written >= 50_000 {
                        break 'outer;
                    }
                }
            }
        }
    }
    let files = FileCandidates::default();
    assert!(
        !files.rows(root, "src/pars", &|| false).is_empty(),
        "walked"
    );
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let labels = popup_labels();
    let mut pane = composer_state(100);
    for ch in "@src/pars".chars() {
        let _ = pane.handle_key(key(ch));
    }
    let query_id =
        |pane: &MentionInputState| pane.results().map(ratatui_mention::ResultsList::query_id);
    let mut answer = |pane: &mut MentionInputState, rows: Vec<FileRow>| {
        let Some(id) = query_id(pane) else { return };
        let text = pane
            .results()
            .map(|r| r.query().to_owned())
            .unwrap_or_default();
        let listed = ListedPage {
            files: rows,
            ..ListedPage::default()
        };
        let page = results_page(&listed, &text, &pane.draft(), &all_dsh);
        let _ = pane.set_page(id, page);
        terminal
            .draw(|frame| {
                frame.render_stateful_widget(composer_look(&labels, true), frame.area(), pane);
            })
            .expect("draw");
    };
    let mut typed = true;
    c.bench_function("keystroke_to_frame_files_50k", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('s')
            };
            typed = !typed;
            let _ = pane.handle_key(k);
            let text = pane
                .results()
                .map(|r| r.query().to_owned())
                .unwrap_or_default();
            let rows = files.rows(root, &text, &|| false);
            answer(&mut pane, rows);
        });
    });
    let ranked: Vec<Vec<FileRow>> = ["src/pars", "src/par"]
        .iter()
        .map(|q| files.rows(root, q, &|| false))
        .collect();
    c.bench_function("keystroke_to_frame_files_50k_ui_thread", |b| {
        b.iter(|| {
            let k = if typed {
                KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
            } else {
                key('s')
            };
            typed = !typed;
            let _ = pane.handle_key(k);
            answer(&mut pane, ranked[usize::from(!typed)].clone());
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(5)).warm_up_time(Duration::from_secs(1));
    targets = keystroke_to_frame, preview_and_resume, keystroke_in_a_long_draft, keystroke_with_files
}
criterion_main!(benches);
