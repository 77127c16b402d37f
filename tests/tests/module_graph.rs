//! No import cycle between modules of a crate, at any depth: among the top-level modules,
//! and among the submodules of each module (`bench_schemas::smith::{payload, wire}`). A module
//! that needs another's piece and is needed by it means the piece belongs in a module of
//! its own.
//!
//! The graph is read from the source: every `crate::`, `super::` and `self::` path in a
//! file (also each item of `use crate::{a, b::c}`) names the deepest module of the crate
//! it reaches, and is an edge between the two sibling modules under which the file's
//! module and the named one part (a path into the file's own module or one above it is no
//! edge). Comments do not count; paths through re-exports (`crate::Error`) are not seen,
//! and an inline module (`mod tests`) is read as part of its file.
//!
//! Nor between a module and one of its children: a parent whose own code (its re-exports
//! left out) calls into a child that in turn names an item the parent defines
//! (`super::Judge` in `judge/swe_bench.rs` while `judge/mod.rs` calls `swe_bench::judge`)
//! is a loop too. What both need belongs in a child of its own, and the parent only
//! declares, re-exports and calls its children.
//!
//! A crate split out of another (`agent-runner/delivery`, `agent-runner/sandbox`,
//! `agent-runner/task`, `agent-runner/judge`) also imports nothing of the crate above it:
//! neither its manifest nor its code names it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module, as its path from the crate root (`[]` is the root).
type Module = Vec<String>;

/// module → sibling module it names → the files that name it.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Every crate of the workspace, by its folder.
const CRATES: [&str; 14] = [
    "agent-runner",
    "agent-runner/delivery",
    "agent-runner/image",
    "agent-runner/judge",
    "agent-runner/otlp",
    "agent-runner/pricing",
    "agent-runner/sandbox",
    "agent-runner/task",
    "event-sink",
    "event-sink/analysis",
    "schemas",
    "schemas/nats",
    "schemas/clickhouse",
    "schemas/cli",
];

#[test]
fn agent_runner_modules_form_no_cycle() {
    assert_no_cycle("agent-runner");
}

#[test]
fn no_parent_and_child_module_import_one_another() {
    let mut report = String::new();
    for dir in CRATES {
        for paragraph in parent_child_loops(dir).into_values() {
            report.push_str(&paragraph);
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn event_sink_modules_form_no_cycle() {
    assert_no_cycle("event-sink");
}

#[test]
fn analysis_modules_form_no_cycle() {
    assert_no_cycle("event-sink/analysis");
}

#[test]
fn schemas_modules_form_no_cycle() {
    assert_no_cycle("schemas");
}

#[test]
fn shared_crates_modules_form_no_cycle() {
    for dir in ["schemas/nats", "schemas/clickhouse", "schemas/cli"] {
        assert_no_cycle(dir);
    }
}

#[test]
fn delivery_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/delivery");
}

/// A crate split out of agent-runner imports nothing above itself: the runner depends on
/// it, never the other way round.
#[test]
fn delivery_imports_nothing_of_the_runner() {
    assert_imports_nothing_of("agent-runner/delivery", "agent-runner");
}

#[test]
fn sandbox_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/sandbox");
}

/// The sandbox knows nothing of agents, judges or events: the runner confines its
/// processes with it, never the other way round.
#[test]
fn sandbox_imports_nothing_of_the_runner() {
    assert_imports_nothing_of("agent-runner/sandbox", "agent-runner");
}

#[test]
fn image_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/image");
}

/// The image store turns references into root file systems: it knows nothing of runs,
/// tasks or the sandbox that mounts what it unpacks.
#[test]
fn image_imports_nothing_of_the_runner_or_the_sandbox() {
    assert_imports_nothing_of("agent-runner/image", "agent-runner");
    assert_imports_nothing_of("agent-runner/image", "bench-sandbox");
}

#[test]
fn task_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/task");
}

/// Scenarios, tasks and pins are read by the runner and judged by the judge: the task
/// crate knows nothing of either, nor of the runs that execute it.
#[test]
fn task_imports_nothing_of_the_runner_or_the_judge() {
    assert_imports_nothing_of("agent-runner/task", "agent-runner");
    assert_imports_nothing_of("agent-runner/task", "bench-judge");
}

#[test]
fn judge_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/judge");
}

/// The judge takes a task, a submission and a sandbox: it knows nothing of agents,
/// policies or the runner that asks for a verdict.
#[test]
fn judge_imports_nothing_of_the_runner() {
    assert_imports_nothing_of("agent-runner/judge", "agent-runner");
}

#[test]
fn pricing_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/pricing");
}

/// Token counts and prices are read by the runner, the external-agent bridge and the OTLP
/// receiver: the pricing crate knows none of them, nor the provider client whose model
/// listing it is handed.
#[test]
fn pricing_imports_nothing_of_the_runner() {
    assert_imports_nothing_of("agent-runner/pricing", "agent-runner");
}

#[test]
fn otlp_modules_form_no_cycle() {
    assert_no_cycle("agent-runner/otlp");
}

/// The OTLP receiver maps traces to events and hands them to a publisher: it knows
/// nothing of the runner whose command starts it, nor of the agents, sandbox or judge of
/// the runs it executes.
#[test]
fn otlp_imports_nothing_of_the_runner() {
    assert_imports_nothing_of("agent-runner/otlp", "agent-runner");
    assert_imports_nothing_of("agent-runner/otlp", "bench-sandbox");
    assert_imports_nothing_of("agent-runner/otlp", "bench-judge");
}

/// Fails naming the manifest of the workspace crate in `dir` if it depends on the package
/// `above`, and each of its source files whose code names that crate.
fn assert_imports_nothing_of(dir: &str, above: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut found = Vec::new();
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    if depends_on(&manifest, above) {
        found.push("Cargo.toml".to_owned());
    }
    let name = above.replace('-', "_");
    for entry in walkdir::WalkDir::new(root.join("src")).sort_by_file_name() {
        let entry = entry.expect("read src");
        let rel = entry.path().strip_prefix(&root).expect("under the crate");
        let rel = rel.to_str().expect("utf-8 path").to_owned();
        if entry.file_type().is_file() && rel.ends_with(".rs") {
            let text = fs::read_to_string(entry.path()).expect("read source");
            if names_crate(&text, &name) {
                found.push(rel);
            }
        }
    }
    assert!(found.is_empty(), "{dir} imports {above}: {found:?}");
}

/// Whether a `Cargo.toml` lists the package `package` as a dependency of any kind.
fn depends_on(manifest: &str, package: &str) -> bool {
    manifest.lines().any(|line| {
        let line = line.trim();
        let key = line.split(['=', '.']).next().unwrap_or_default().trim();
        key == package || line.ends_with(&format!(".{package}]"))
    })
}

/// Whether the code of `text` (comments left out) names the crate `name` (`agent_runner`).
fn names_crate(text: &str, name: &str) -> bool {
    let code = code_of(text);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Fails naming every cycle among sibling modules of the workspace crate in `dir` and the
/// files behind each edge of it.
fn assert_no_cycle(dir: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    let mut report = String::new();
    for (parent, graph) in module_graphs(&src) {
        for cycle in cycles(&graph) {
            let under = match parent.is_empty() {
                true => "crate".to_owned(),
                false => parent.join("::"),
            };
            report.push_str(&format!(
                "modules {cycle:?} of {under} import one another:\n"
            ));
            for from in &cycle {
                for (to, files) in &graph[from] {
                    if cycle.contains(to) {
                        report.push_str(&format!("  {from} -> {to} ({files:?})\n"));
                    }
                }
            }
        }
    }
    assert!(report.is_empty(), "{dir}/src:\n{report}");
}

/// The module a source file under `src` holds: `a/b.rs` and `a/b/mod.rs` are `a::b`,
/// `lib.rs` and `main.rs` the root.
fn module_of(rel: &str) -> Module {
    let mut parts: Module = rel.split('/').map(str::to_owned).collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.strip_suffix(".rs").unwrap_or(&file);
    let at_root = parts.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !at_root {
        parts.push(stem.to_owned());
    }
    parts
}

/// Each source file under `src`: its module, its path under `src` and its text.
fn source_files(src: &Path) -> Vec<(Module, String, String)> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(src).sort_by_file_name() {
        let entry = entry.expect("read src");
        let rel = entry.path().strip_prefix(src).expect("under src");
        let rel = rel.to_str().expect("utf-8 path").to_owned();
        if entry.file_type().is_file() && rel.ends_with(".rs") {
            let text = fs::read_to_string(entry.path()).expect("read source");
            files.push((module_of(&rel), rel, text));
        }
    }
    files
}

/// Every module the files are in, and every module above one.
fn modules_of(files: &[(Module, String, String)]) -> BTreeSet<Module> {
    let mut modules = BTreeSet::new();
    for (module, _, _) in files {
        for depth in 0..=module.len() {
            modules.insert(module[..depth].to_vec());
        }
    }
    modules
}

/// For each module with submodules, the graph among them.
fn module_graphs(src: &Path) -> BTreeMap<Module, Graph> {
    let files = source_files(src);
    let modules = modules_of(&files);
    let mut graphs: BTreeMap<Module, Graph> = BTreeMap::new();
    for module in &modules {
        if let Some((name, parent)) = module.split_last() {
            let graph = graphs.entry(parent.to_vec()).or_default();
            graph.entry(name.clone()).or_default();
        }
    }
    for (from, rel, text) in &files {
        for path in module_paths(text) {
            let Some(to) = resolve(&path, from, &modules) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // into the file's own module, or one above it
            }
            let graph = graphs.entry(from[..common].to_vec()).or_default();
            let named = graph.entry(from[common].clone()).or_default();
            named
                .entry(to[common].clone())
                .or_default()
                .insert(rel.clone());
        }
    }
    graphs
}

/// The deepest module of `modules` that `path` (as written in a file of module `here`)
/// reaches; `None` for a path that does not start at `crate`, `self` or `super`.
fn resolve(path: &[String], here: &Module, modules: &BTreeSet<Module>) -> Option<Module> {
    resolve_item(path, here, modules).map(|(module, _)| module)
}

/// [`resolve`], and the segments of `path` after that module (the item it names).
fn resolve_item<'p>(
    path: &'p [String],
    here: &Module,
    modules: &BTreeSet<Module>,
) -> Option<(Module, &'p [String])> {
    let (first, rest) = path.split_first()?;
    let (mut module, mut rest) = match first.as_str() {
        "crate" => (Module::new(), rest),
        "self" => (here.clone(), rest),
        "super" => {
            let mut module = here.clone();
            module.pop()?;
            let mut rest = rest;
            while rest.first().is_some_and(|s| s == "super") {
                module.pop()?;
                rest = &rest[1..];
            }
            (module, rest)
        }
        _ => return None,
    };
    while let Some((segment, tail)) = rest.split_first() {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if !modules.contains(&deeper) {
            break;
        }
        module = deeper;
        rest = tail;
    }
    Some((module, rest))
}

/// The parent↔child loops of the workspace crate in `dir`: (parent, child) → a paragraph
/// naming the files behind both directions.
///
/// Upward: a file below a module names an item that module's own file defines (a path
/// into a re-export of it is not seen). Downward: that module's own file, its `pub use`
/// re-exports left out, names the child (`child::f`, `self::child::f`, `crate::a::child`).
fn parent_child_loops(dir: &str) -> BTreeMap<(String, String), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src");
    loops_under(&src, dir)
}

/// [`parent_child_loops`] of the sources under `src`, paragraphs headed by `dir`.
fn loops_under(src: &Path, dir: &str) -> BTreeMap<(String, String), String> {
    let files: Vec<_> = source_files(src)
        .into_iter()
        .filter(|(_, rel, _)| rel != "main.rs") // a binary's root, not the library's
        .collect();
    let modules = modules_of(&files);
    // (parent, child) → the files of each direction.
    let mut up: BTreeMap<(Module, String), BTreeSet<String>> = BTreeMap::new();
    let mut down: BTreeMap<(Module, String), BTreeSet<String>> = BTreeMap::new();
    let own_file = |module: &Module| files.iter().find(|(m, _, _)| m == module);
    for (from, rel, text) in &files {
        for path in module_paths(text) {
            let Some((to, item)) = resolve_item(&path, from, &modules) else {
                continue;
            };
            let above = to.len() < from.len() && from.starts_with(&to);
            let defined = item.first().is_some_and(|name| {
                own_file(&to).is_some_and(|(_, _, parent)| defines(parent, name))
            });
            if above && defined {
                let child = from[to.len()].clone();
                up.entry((to, child)).or_default().insert(rel.clone());
            }
        }
        let code = without_reexports(text);
        let children = modules
            .iter()
            .filter(|m| m.len() == from.len() + 1 && m.starts_with(from));
        for child in children {
            let name = &child[from.len()];
            let named = relative_path_to(&code, name)
                || module_paths(&code).iter().any(|path| {
                    resolve(path, from, &modules).is_some_and(|to| to.starts_with(child))
                });
            if named {
                down.entry((from.clone(), name.clone()))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    let mut loops = BTreeMap::new();
    for ((parent, child), up_files) in up {
        if let Some(down_files) = down.get(&(parent.clone(), child.clone())) {
            let parent = match parent.is_empty() {
                true => "crate".to_owned(),
                false => parent.join("::"),
            };
            let paragraph = format!(
                "{dir}: {parent} and its child {child} import one another:\n  \
                 {parent} -> {child} ({down_files:?})\n  {child} -> {parent} ({up_files:?})\n"
            );
            loops.insert((parent, child), paragraph);
        }
    }
    loops
}

/// Whether the code of `text` has a path that starts at `name` (`name::x`, not `a::name::x`).
fn relative_path_to(code: &str, name: &str) -> bool {
    let start = format!("{name}::");
    code.match_indices(&start).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
    })
}

/// `text` without its comments and its `pub use` / `pub(...) use` items (re-exports).
fn without_reexports(text: &str) -> String {
    let code = code_of(text);
    let mut kept = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub") {
        let after = rest[at + 3..].trim_start();
        let after = match after.strip_prefix('(') {
            Some(inner) => inner.split_once(')').map_or(after, |(_, tail)| tail),
            None => after,
        };
        let is_use = after.trim_start().starts_with("use ");
        let boundary = rest[..at].chars().next_back();
        if is_use && !boundary.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            kept.push_str(&rest[..at]);
            rest = rest[at..].split_once(';').map_or("", |(_, tail)| tail);
        } else {
            kept.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
        }
    }
    kept.push_str(rest);
    kept
}

/// Whether the code of `text` defines an item `name` (a function, type, constant, static,
/// trait or macro of that name, at any depth).
fn defines(text: &str, name: &str) -> bool {
    let code = code_of(text);
    [
        "fn",
        "struct",
        "enum",
        "union",
        "type",
        "trait",
        "const",
        "static",
        "macro_rules!",
    ]
    .iter()
    .any(|keyword| {
        let item = format!("{keyword} {name}");
        code.match_indices(&item).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + item.len()..].chars().next();
            let is_ident = |c: char| c.is_alphanumeric() || c == '_';
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
        })
    })
}

/// Every `crate::`, `super::` and `self::` path in `text`, comments left out; a group
/// (`crate::a::{b, c::d}`) gives one path per item.
fn module_paths(text: &str) -> Vec<Vec<String>> {
    let code = code_of(text);
    let mut paths = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue; // `my_crate::`, or the second `super::` of `super::super::`
            }
            paths.extend(path_tree(&code[at..]));
        }
    }
    paths
}

/// `text` without its comments.
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths of the use tree `text` starts with.
fn path_tree(text: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            return group_items(group)
                .into_iter()
                .flat_map(path_tree)
                .map(|tail| [prefix.clone(), tail].concat())
                .collect();
        }
        let segment = ident(rest);
        if segment.is_empty() {
            return vec![prefix];
        }
        rest = &rest[segment.len()..];
        prefix.push(segment);
        match rest.strip_prefix("::") {
            Some(tail) => rest = tail,
            None => return vec![prefix],
        }
    }
}

/// The items of a group whose `{` was just read, up to its `}`.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.retain(|item| !item.trim().is_empty());
    items
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

/// The reader itself: it sees plain and grouped `crate::`, `super::` and `self::` paths
/// but not comments or other crates, places each edge between the right siblings, and
/// finds a cycle that is there, and a parent↔child loop (but not a parent that only
/// re-exports its child, nor a child naming what its parent merely re-exports); it sees a crate named in code or a manifest only where it
/// is one (else the checks above could never fail).
#[test]
fn the_reader_sees_module_paths_and_cycles() {
    let text = "use crate::{a, b::c::{D, E}, \n  d};\nlet x = crate::e::f(); // crate::g\n\
                use my_crate::h;\nuse super::super::i::{self, J};\n";
    let found: BTreeSet<Vec<String>> = module_paths(text).into_iter().collect();
    let expected: BTreeSet<Vec<String>> = [
        vec!["crate", "a"],
        vec!["crate", "b", "c", "D"],
        vec!["crate", "b", "c", "E"],
        vec!["crate", "d"],
        vec!["crate", "e", "f"],
        vec!["super", "super", "i", "self"],
        vec!["super", "super", "i", "J"],
    ]
    .into_iter()
    .map(|path| path.into_iter().map(str::to_owned).collect())
    .collect();
    assert_eq!(found, expected);

    let module = |path: &str| -> Module { path.split("::").map(str::to_owned).collect() };
    let modules: BTreeSet<Module> = [vec![], module("s"), module("s::p"), module("s::w")].into();
    let path = |text: &str| path_tree(text).remove(0);
    let here = module("s::p");
    assert_eq!(
        resolve(&path("super::w::X"), &here, &modules),
        Some(module("s::w"))
    );
    assert_eq!(
        resolve(&path("crate::s::w::x"), &here, &modules),
        Some(module("s::w"))
    );
    assert_eq!(
        resolve(&path("super::X"), &here, &modules),
        Some(module("s"))
    );

    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir(dir.path().join("s")).expect("mkdir");
    for (file, text) in [
        ("lib.rs", "mod s;"),
        ("s/mod.rs", "mod p; mod w;"),
        ("s/p.rs", "use super::w::f;"),
        ("s/w.rs", "use crate::s::p::T;"),
    ] {
        fs::write(dir.path().join(file), text).expect("write");
    }
    let graphs = module_graphs(dir.path());
    let expected: BTreeSet<Vec<String>> = [vec!["p".into(), "w".into()]].into();
    assert_eq!(cycles(&graphs[&module("s")]), expected);
    assert!(cycles(&graphs[&Module::new()]).is_empty());

    for (parent, looped) in [
        ("mod p; mod w; pub struct T; fn f() { p::g() }", true),
        ("mod p; mod w; pub struct T; pub use p::g;", false),
        (
            "mod p; mod w; pub use self::p::g; fn f() { crate::s::p::g() }",
            false,
        ),
    ] {
        fs::write(dir.path().join("s/mod.rs"), parent).expect("write");
        fs::write(dir.path().join("s/p.rs"), "use super::T; pub fn g() {}").expect("write");
        let loops = loops_under(dir.path(), "c");
        let key = ("s".to_owned(), "p".to_owned());
        assert_eq!(loops.contains_key(&key), looped, "{parent}: {loops:?}");
    }

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

    for (code, names) in [
        ("use agent_runner::x;", true),
        ("fn f() { agent_runner::run() }", true),
        ("// agent_runner::x\nuse my_agent_runner::y;", false),
        ("use agent_runner_extra::y;", false),
    ] {
        assert_eq!(names_crate(code, "agent_runner"), names, "{code}");
    }
    for (manifest, depends) in [
        ("[dependencies]\nagent-runner.workspace = true", true),
        ("[dependencies]\nagent-runner = { path = \"..\" }", true),
        ("[dev-dependencies.agent-runner]\npath = \"..\"", true),
        ("[package]\nname = \"agent-runner\"", false),
    ] {
        assert_eq!(depends_on(manifest, "agent-runner"), depends, "{manifest}");
    }
}
