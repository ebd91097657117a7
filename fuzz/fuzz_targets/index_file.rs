//! The persisted header/title index on arbitrary bytes: a store seeded from it answers
//! exactly as a store without it (listing order, headers, titles), never panics, and never
//! reads outside the fixture store.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use dsh_store::index_file::INDEX_FILE;
use dsh_store::reader::Limits;
use dsh_store::{SessionHeader, SessionQuery, SessionStore};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    root: PathBuf,
    index_dir: PathBuf,
    want: Vec<(SessionHeader, Option<String>)>,
}

fn write(root: &Path, project: &str, id: &str, created: i64, cwd: Option<&str>, title: &str) {
    let dir = root.join(project).join(id);
    fs::create_dir_all(&dir).unwrap();
    let header = serde_json::to_string(&SessionHeader::new(id, created, cwd.map(str::to_owned))).unwrap();
    let title = serde_json::json!({"type": "session/title", "seq": 0, "time": 1, "data": {"title": title, "messageSeqs": [], "source": {"kind": "manual"}}});
    fs::write(dir.join("session.jsonl"), format!("{header}\n{title}\n")).unwrap();
}

fn view(store: &SessionStore) -> Vec<(SessionHeader, Option<String>)> {
    let list = store.list_sessions().unwrap();
    list.iter()
        .map(|h| (h.clone(), store.read_title(&h.id).unwrap()))
        .collect()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("dsh-refs-fuzz-index-{}", std::process::id()));
        let root = base.join("store");
        let _ = fs::remove_dir_all(&base);
        write(&root, "--p--", "alpha", 1, Some("/p"), "Alpha");
        write(&root, "--p--", "beta", 2, Some("/p"), "Beta");
        write(&root, "_no-cwd", "gamma", 2, None, "Gamma");
        let index_dir = base.join("cache");
        fs::create_dir_all(&index_dir).unwrap();
        let plain = SessionStore::with_options(&root, None, false, Limits::default());
        let want = view(&plain);
        Fixture { root, index_dir, want }
    })
}

fuzz_target!(|data: &[u8]| {
    let fx = fixture();
    fs::write(fx.index_dir.join(INDEX_FILE), data).unwrap();
    let seeded = SessionStore::with_options(&fx.root, Some(fx.index_dir.clone()), false, Limits::default());
    assert_eq!(view(&seeded), fx.want, "the index changed an answer");
    let _ = dsh_store::index_file::parse(data);
});
