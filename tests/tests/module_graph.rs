//! No import cycle between the top-level modules of a crate: a module that needs another's
//! piece and is needed by it means the piece belongs in a module of its own.
//!
//! The graph is read from the source: every `crate::<module>` path in a file (also each
//! item of `use crate::{a, b::c}`) is an edge from the top-level module the file belongs
//! to. Comments do not count; paths through root re-exports (`crate::Error`) are not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// module → module it names → the files that name it.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn agent_runner_modules_form_no_cycle() {
    assert_no_cycle("agent-runner");
}

#[test]
fn event_sink_modules_form_no_cycle() {
    assert_no_cycle("event-sink");
}

#[test]
fn schemas_modules_form_no_cycle() {
    assert_no_cycle("schemas");
}

/// Fails naming every cycle among the top-level modules of the workspace crate in `dir`
/// and the files behind each edge of it.
fn assert_no_cycle(dir: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    let graph = module_graph(&src);
    let mut report = String::new();
    for cycle in cycles(&graph) {
        report.push_str(&format!("modules {cycle:?} import one another:\n"));
        for from in &cycle {
            for (to, files) in &graph[from] {
                if cycle.contains(to) {
                    report.push_str(&format!("  {from} -> {to} ({files:?})\n"));
                }
            }
        }
    }
    assert!(report.is_empty(), "{dir}/src:\n{report}");
}

fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    for entry in walkdir::WalkDir::new(src).sort_by_file_name() {
        let entry = entry.expect("read src");
        let rel = entry.path().strip_prefix(src).expect("under src");
        let rel = rel.to_str().expect("utf-8 path").to_owned();
        let top = rel.split('/').next().unwrap_or_default();
        let top = top.strip_suffix(".rs").unwrap_or(top);
        if entry.file_type().is_dir() || top == "lib" || top == "main" {
            continue;
        }
        if !rel.ends_with(".rs") {
            graph.entry(top.to_owned()).or_default();
            continue;
        }
        let text = fs::read_to_string(entry.path()).expect("read source");
        let named = graph.entry(top.to_owned()).or_default();
        for module in crate_paths(&text) {
            if module != top {
                named.entry(module).or_default().insert(rel.clone());
            }
        }
    }
    // Only edges to modules of the crate (not to root re-exports or `self`).
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for named in graph.values_mut() {
        named.retain(|to, _| modules.contains(to));
    }
    graph
}

/// The first segment of every `crate::` path in `text`, comments left out.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`
        }
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            // A group: the first segment of each item at its top level.
            Some(group) => {
                let mut depth = 0;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => item_start = true,
                        c if item_start && !c.is_whitespace() => {
                            names.insert(ident(&group[i..]));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
            None => {
                names.insert(ident(rest));
            }
        }
    }
    names
}

/// The identifier `text` starts with.
fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The strongly connected components of more than one module: a module is in the cycle of
/// each module it reaches that also reaches it.
fn cycles(graph: &Graph) -> BTreeSet<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(module) = todo.pop() {
            for to in graph[module].keys() {
                if seen.insert(to) {
                    todo.push(to);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<&String>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    graph
        .keys()
        .map(|m| {
            let mut cycle: Vec<String> = reached[m]
                .iter()
                .filter(|other| reached[*other].contains(m))
                .map(|other| (*other).clone())
                .collect();
            cycle.sort();
            cycle
        })
        .filter(|cycle| cycle.len() > 1)
        .collect()
}

/// The reader itself: it sees plain and grouped `crate::` paths but not comments or other
/// crates, and it finds a cycle that is there (else the checks above could never fail).
#[test]
fn the_reader_sees_crate_paths_and_cycles() {
    let text = "use crate::{a, b::c::{D, E}, \n  d};\nlet x = crate::e::f(); // crate::g\n\
                use my_crate::h;\n";
    let found: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(found, ["a", "b", "d", "e"]);

    let edges = [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")];
    let mut graph = Graph::new();
    for (from, to) in edges {
        graph.entry(to.to_owned()).or_default();
        graph
            .entry(from.to_owned())
            .or_default()
            .entry(to.to_owned())
            .or_default();
    }
    let expected: BTreeSet<Vec<String>> = [vec!["a".into(), "b".into(), "c".into()]].into();
    assert_eq!(cycles(&graph), expected);
}
