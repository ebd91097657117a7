//! A file-name picker on the widget's own picker: the files under a directory are the
//! source (matched by substring, what matched marked), the filter is the widget's editor,
//! the preview shows the selected file's first lines, Enter prints the picked path, Esc quits.
//!
//! `cargo run -p ratatui-mention --example file_picker [DIR]`

use std::io;
use std::path::{Path, PathBuf};

use crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::DefaultTerminal;
use ratatui::text::Line;
use ratatui_mention::{
    DetailPart, ItemPreview, Keep, KeyMap, Mention, MentionItem, Picker, PickerOutcome, PickerView,
    ResultsPage,
};
use term_text::visible_controls;

/// Most files listed (a large tree is cut, not walked forever).
const MAX_FILES: usize = 20_000;

fn main() -> io::Result<()> {
    let root = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let files = walk(&root);
    let mut terminal = ratatui::init();
    let picked = run(&mut terminal, &files);
    ratatui::restore();
    if let Some(path) = picked? {
        println!("{path}");
    }
    Ok(())
}

fn run(terminal: &mut DefaultTerminal, files: &[String]) -> io::Result<Option<String>> {
    let root = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let mut picker = Picker::new(KeyMap::default());
    let mut outcomes = vec![picker.open()];
    loop {
        for outcome in std::mem::take(&mut outcomes) {
            match outcome {
                PickerOutcome::Picked(path) => return Ok(Some(path)),
                PickerOutcome::Closed => return Ok(None),
                // The source answers at once: a first page, and more rows when asked.
                PickerOutcome::Query { id, text, .. } => {
                    outcomes.extend(picker.set_page(id, page(files, &text, 50)));
                }
                PickerOutcome::More {
                    id, text, limit, ..
                } => {
                    outcomes.extend(picker.set_page(id, page(files, &text, limit)));
                }
                _ => {}
            }
        }
        // The preview on show asks for the selected file once: its first lines.
        if let Some(path) = picker.want_preview() {
            picker.set_preview(preview(&root, path));
        }
        terminal.draw(|frame| {
            let view = PickerView::new(" Open a file ").placeholder("type part of a path");
            frame.render_stateful_widget(view, frame.area(), &mut picker);
            if let Some(at) = picker.cursor_position() {
                frame.set_cursor_position(at);
            }
        })?;
        let event = event::read()?;
        let ctrl_c = matches!(&event, Event::Key(k) if k.code == KeyCode::Char('c')
            && k.modifiers.contains(KeyModifiers::CONTROL));
        if ctrl_c {
            return Ok(None);
        }
        outcomes.push(picker.handle_event(&event));
    }
}

/// The first `limit` files containing `query`, with what matched marked, and how many match.
fn page(files: &[String], query: &str, limit: usize) -> ResultsPage {
    let query = query.to_lowercase();
    let matching: Vec<&String> = files
        .iter()
        .filter(|f| f.to_lowercase().contains(&query))
        .collect();
    let rows = matching
        .iter()
        .take(limit)
        .map(|path| {
            let name = Path::new(path)
                .file_name()
                .map_or(path.as_str(), |n| n.to_str().unwrap_or(path));
            let at = name
                .to_lowercase()
                .find(&query)
                .filter(|_| !query.is_empty() && name.is_ascii());
            MentionItem::new(*path, name, &Mention::new(name, format!("file:{path}")))
                .with_match_ranges(at.map(|a| a..a + query.len()).into_iter().collect())
                .with_detail(vec![DetailPart::new(path.as_str(), Keep::End)])
        })
        .collect();
    ResultsPage {
        rows,
        total: matching.len(),
        ..ResultsPage::default()
    }
}

/// The first lines of a file (of its first 4 KiB), its control characters made visible.
fn preview(root: &Path, path: String) -> ItemPreview {
    let head = std::fs::read(root.join(&path)).unwrap_or_default();
    let text = String::from_utf8_lossy(&head[..head.len().min(4096)]).into_owned();
    let body = visible_controls(&text)
        .lines()
        .take(12)
        .map(|l| Line::raw(l.to_owned()))
        .collect();
    let lines = vec![Line::raw(format!("{} bytes", head.len()))];
    ItemPreview {
        key: path,
        lines,
        body,
    }
}

/// Relative paths of the files under `root` (hidden entries skipped), sorted.
fn walk(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') || files.len() >= MAX_FILES {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => {
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    files.push(rel.to_string_lossy().into_owned());
                }
                _ => {}
            }
        }
    }
    files.sort();
    files
}
