//! What the example and the tests of this crate that read whole trees share.

use std::path::{Path, PathBuf};

/// Every `.yaml` and `.yml` file under `dir`, in name order, hidden names skipped.
pub fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => yaml_files(&path, out),
            Ok(t) if t.is_file() => {
                if matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("yaml" | "yml")
                ) {
                    out.push(path);
                }
            }
            _ => {}
        }
    }
}
