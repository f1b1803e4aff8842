//! The crate graph of docs/architecture.md, checked on `cargo metadata`: `runtime` never
//! depends on the emulator (its tests may), `traces` on no device crate, `usb` on nothing of
//! ours. Edges are followed transitively through the workspace's own crates.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// (crate, crates it must not reach, whether dev-dependencies count too).
const RULES: &[(&str, &[&str], bool)] = &[
    ("runtime", &["emu", "profiler-ui"], false),
    ("traces", &["runtime", "emu", "usb", "profiler-ui"], true),
    ("usb", &["runtime", "traces", "emu", "profiler-ui"], true),
];

/// Workspace crate -> workspace crates it names, per kind (`None` normal, "build", "dev").
type Graph = BTreeMap<String, Vec<(String, Option<String>)>>;

fn graph(meta: &Value) -> Graph {
    let members: BTreeSet<&str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut g = Graph::new();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_string();
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| members.contains(d["name"].as_str().unwrap_or("")))
            .map(|d| {
                (
                    d["name"].as_str().unwrap_or("").to_string(),
                    d["kind"].as_str().map(str::to_string),
                )
            })
            .collect();
        g.insert(name, deps);
    }
    g
}

/// Every forbidden crate reachable from a rule's crate, with the path that reaches it.
fn violations(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for &(from, banned, with_dev) in RULES {
        assert!(g.contains_key(from), "{from} is not in the workspace");
        // Dev-dependencies count only on the first edge: a dev-dependency's own dev edges are
        // never built for `from`.
        let mut todo = vec![(from.to_string(), vec![from.to_string()], true)];
        let mut seen = BTreeSet::new();
        while let Some((at, path, first)) = todo.pop() {
            if !seen.insert(at.clone()) {
                continue;
            }
            for (to, kind) in g.get(&at).into_iter().flatten() {
                if kind.as_deref() == Some("dev") && !(first && with_dev) {
                    continue;
                }
                let mut p = path.clone();
                p.push(to.clone());
                if banned.contains(&to.as_str()) {
                    out.push(p.join(" -> "));
                }
                todo.push((to.clone(), p, false));
            }
        }
    }
    out
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .args(["--manifest-path", root])
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

#[test]
fn the_workspace_keeps_its_crate_graph() {
    let g = graph(&metadata());
    // The emulator is a workspace crate, and it does sit on the runtime (so the rules are about
    // real crates, not misspelt names).
    assert!(g["emu"].iter().any(|(n, k)| n == "runtime" && k.is_none()));
    let v = violations(&g);
    assert!(v.is_empty(), "forbidden dependencies:\n{}", v.join("\n"));
}

/// The checker finds an edge when there is one: a copy of the real metadata with
/// `runtime -> emu` added (as a normal and as a build dependency), `traces -> usb` (dev) and a
/// transitive `usb -> runtime` through a new crate.
#[test]
fn an_added_edge_is_reported() {
    let mut meta = metadata();
    let pkgs = meta["packages"].as_array_mut().unwrap();
    let dep = |name: &str, kind: Value| serde_json::json!({"name": name, "kind": kind});
    for p in pkgs.iter_mut() {
        let name = p["name"].as_str().unwrap().to_string();
        let deps = p["dependencies"].as_array_mut().unwrap();
        match name.as_str() {
            "runtime" => deps.push(dep("emu", Value::Null)),
            "traces" => deps.push(dep("usb", "dev".into())),
            "usb" => deps.push(dep("middle", Value::Null)),
            _ => {}
        }
    }
    pkgs.push(serde_json::json!({"name": "middle", "dependencies": [dep("runtime", Value::Null)]}));
    let v = violations(&graph(&meta));
    for want in [
        "runtime -> emu",
        "traces -> usb",
        "usb -> middle -> runtime",
    ] {
        assert!(v.iter().any(|x| x == want), "{want} not reported: {v:?}");
    }

    // runtime's dev-dependency on emu is allowed; as a build dependency it is not.
    let mut meta = metadata();
    for p in meta["packages"].as_array_mut().unwrap() {
        if p["name"] == "runtime" {
            let deps = p["dependencies"].as_array_mut().unwrap();
            deps.push(dep("emu", "build".into()));
        }
    }
    assert_eq!(violations(&graph(&meta)), ["runtime -> emu"]);
}
