//! Times a strategic merge patch over a ConfigMap with many keys, for `scripts/bench-smp`:
//! the merge alone, then a whole `build_yaml` of a kustomization that applies the patch; and
//! the merge of a container's `env`, a list merged by `name`, of an eighth as many entries.
//!
//! Usage: `cargo run --release -p plumb-kustomize --example bench_smp [KEYS]` (default 64,000).

use plumb_kustomize::patch::strategic;
use plumb_kustomize::schema::Schema;
use plumb_kustomize::{build_yaml, BuildOptions};
use std::time::Instant;

fn config_map(keys: usize, value: &str) -> String {
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n");
    for i in 0..keys {
        text.push_str(&format!("  key{i}: {value}{i}\n"));
    }
    text
}

fn deployment(entries: usize, value: &str) -> String {
    let mut text = String::from(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env:\n",
    );
    for i in 0..entries {
        text.push_str(&format!(
            "        - name: VAR{i}\n          value: {value}{i}\n"
        ));
    }
    text
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let keys: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 64_000,
    };
    let resource = config_map(keys, "old");
    // Every key of the resource patched.
    let patch = config_map(keys, "new");

    let dest = plumb_yaml::parse_documents("cm.yaml", &resource)?.remove(0);
    let patch_node = plumb_yaml::parse_documents("patch.yaml", &patch)?.remove(0);
    let start = Instant::now();
    let merged = strategic::merge(dest, patch_node, Schema::builtin())?.ok_or("merge deleted")?;
    let merge_seconds = start.elapsed().as_secs_f64();
    let data = merged
        .get("data")
        .and_then(|d| d.as_mapping())
        .map_or(0, Vec::len);
    assert_eq!(data, keys, "the merged ConfigMap should hold every key");

    let dir = std::env::temp_dir().join(format!("plumb-bench-smp-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("cm.yaml"), &resource)?;
    std::fs::write(dir.join("patch.yaml"), &patch)?;
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n",
    )?;
    let start = Instant::now();
    let built = build_yaml(&dir, &BuildOptions::default());
    let build_seconds = start.elapsed().as_secs_f64();
    std::fs::remove_dir_all(&dir)?;
    let out = built?;
    assert!(out.contains(&format!("key{}: new{}", keys - 1, keys - 1)));

    let entries = keys / 8;
    let dest = plumb_yaml::parse_documents("deploy.yaml", &deployment(entries, "old"))?.remove(0);
    let patch_node =
        plumb_yaml::parse_documents("patch.yaml", &deployment(entries, "new"))?.remove(0);
    let start = Instant::now();
    let merged = strategic::merge(dest, patch_node, Schema::builtin())?.ok_or("merge deleted")?;
    let list_seconds = start.elapsed().as_secs_f64();
    let env = ["spec", "template", "spec", "containers"];
    let merged_env = merged
        .get_path(&env)
        .and_then(|c| c.as_sequence())
        .and_then(|c| c[0].get("env"));
    assert_eq!(
        merged_env.and_then(|e| e.as_sequence()).map_or(0, Vec::len),
        entries
    );

    println!("keys:             {keys} in the resource and in the patch");
    println!("strategic merge:  {merge_seconds:.3} s");
    println!("kustomize build:  {build_seconds:.3} s (parse, merge, write)");
    println!("env list merge:   {list_seconds:.3} s ({entries} entries merged by name)");
    Ok(())
}
