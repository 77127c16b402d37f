//! SWE-bench-format tasks as a user meets them: `agent-runner tasks import swe-bench` on a
//! git repository made here, whose history goes on past the base with the fix, a tag and
//! a remote; the fixture then holds the base and nothing later (`git log --all`, `git
//! fsck --lost-found`, `.git/packed-refs`, the fix's objects), the import reports one line
//! per instance and fails when one fails; and `run` judges by SWE-bench's rules: the gold
//! patch resolves the task, an empty submission does not, and editing the test file
//! `test_patch` touches gains nothing; `tasks validate` marks a task whose lists
//! contradict the gold patch broken, and `run` leaves it out; `run --regrade K` judges
//! the final diff again and records that the verdict held; an environment is set up once
//! per repository and version, and runs see it read-only.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use benchstream_tests::swe_bench::{git, Project, BUGGY, F2P, FIXED, P2P, TESTS_BASE};
use benchstream_tests::{images, runs};

const RUNNER: &str = env!("CARGO_BIN_EXE_agent-runner");

fn runner(cwd: &Path, args: &[&str]) -> Output {
    runner_as(None, cwd, args)
}

/// `nobody`: the unprivileged user some runs here are started as.
const NOBODY: u32 = 65534;

/// The runner started as root (`None`) or as the user `uid`, without capabilities.
fn runner_as(uid: Option<u32>, cwd: &Path, args: &[&str]) -> Output {
    let mut command = match uid {
        None => Command::new(RUNNER),
        Some(uid) => {
            let mut command = Command::new("setpriv");
            command.args([
                format!("--reuid={uid}"),
                format!("--regid={uid}"),
                "--clear-groups".to_owned(),
                "--".to_owned(),
                RUNNER.to_owned(),
            ]);
            command
        }
    };
    command
        .current_dir(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run agent-runner")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `tasks import swe-bench` of `project`'s instances `(id, base commit)` into the
/// scenario `swe-local` of `root/scenarios`: that directory and the command's output.
fn import_instances(
    root: &Path,
    project: &Project,
    instances: &[(&str, &str)],
) -> (PathBuf, Output) {
    let records: Vec<String> = instances
        .iter()
        .map(|(id, base)| project.instance(id, base))
        .collect();
    import_records(root, project, &records, &[])
}

/// `tasks import swe-bench` of the instance `records` of `project`, with `extra` flags,
/// into the scenario `swe-local` of `root/scenarios`: that directory and the output.
fn import_records(
    root: &Path,
    project: &Project,
    records: &[String],
    extra: &[&str],
) -> (PathBuf, Output) {
    let lines: String = records.iter().map(|r| format!("{r}\n")).collect();
    let file = root.join("instances.jsonl");
    fs::write(&file, lines).expect("write");
    let scenarios = root.join("scenarios");
    let mut args = vec![
        "tasks",
        "import",
        "swe-bench",
        "--instances",
        file.to_str().expect("utf-8"),
        "--repos",
        project.repos.to_str().expect("utf-8"),
        "--scenarios-dir",
        scenarios.to_str().expect("utf-8"),
        "--scenario",
        "swe-local",
    ];
    args.extend_from_slice(extra);
    let out = runner(root, &args);
    (scenarios, out)
}

/// Imports one good instance and one whose base commit the clone lacks.
fn import(root: &Path) -> (PathBuf, String, String) {
    let project = Project::create(root);
    fs::write(root.join("gold.patch"), &project.patch).expect("write");
    let missing = "0".repeat(40);
    let (scenarios, out) = import_instances(
        root,
        &project,
        &[("o__calc-1", &project.base), ("o__calc-2", &missing)],
    );
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "one instance failed: {report}");
    assert!(report.contains("imported o__calc-1: o/calc at"), "{report}");
    assert!(report.contains("failed o__calc-2: "), "{report}");
    assert!(
        report.contains("1 imported, 0 skipped, 1 failed"),
        "{report}"
    );
    (scenarios, project.base, project.fix)
}

#[test]
fn an_imported_fixture_holds_the_base_and_no_later_history() {
    let root = tempfile::tempdir().expect("tempdir");
    let (scenarios, base, fix) = import(root.path());
    let fixture = scenarios.join("tasks/o__calc-1/fixture");
    assert_eq!(
        fs::read_to_string(fixture.join("calc.py")).expect("read"),
        BUGGY
    );
    assert_eq!(
        fs::read_to_string(fixture.join("tests/test_calc.py")).expect("read"),
        TESTS_BASE
    );
    // One commit, reachable from everything; its message names the base.
    let all = git(&fixture, &["log", "--all", "--format=%H %s"]);
    assert_eq!(all.lines().count(), 1, "{all}");
    assert!(all.contains(&format!("o/calc at {base}")), "{all}");
    assert_eq!(
        git(&fixture, &["rev-list", "--all", "--reflog"])
            .lines()
            .count(),
        1
    );
    let fsck = git(&fixture, &["fsck", "--lost-found", "--no-progress"]);
    assert!(!fsck.contains("dangling"), "{fsck}");
    assert!(!fixture.join(".git/lost-found/commit").exists());
    // No packed refs, tags, remotes, stash or reflog; the fix's objects are nowhere.
    assert!(!fixture.join(".git/packed-refs").exists());
    assert!(!fixture.join(".git/logs").exists());
    assert_eq!(git(&fixture, &["tag"]), "");
    assert_eq!(git(&fixture, &["remote"]), "");
    assert_eq!(git(&fixture, &["stash", "list"]), "");
    assert_eq!(
        git(&fixture, &["for-each-ref", "--format=%(refname)"]),
        "refs/heads/main\n"
    );
    let probe = Command::new("git")
        .arg("-C")
        .arg(&fixture)
        .args(["cat-file", "-e", &fix])
        .output()
        .expect("git");
    assert!(!probe.status.success(), "the fix commit is in the fixture");
    let everything = fs::read_dir(fixture.join(".git/objects/pack"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(everything, 0, "packs in the fixture");
    // The answer key stays in task.toml, out of the fixture.
    let grep = Command::new("grep")
        .args(["-r", "-l", "a + b", "--exclude-dir=.git"])
        .arg(&fixture)
        .output()
        .expect("grep");
    assert_eq!(text(&grep.stdout), "");
    // The environment was made once, and the scenario is pinned.
    assert!(scenarios.join("envs/o__calc__1.0/bin/python").exists());
    let check = runner(
        root.path(),
        &[
            "scenarios",
            "check",
            "--dir",
            scenarios.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stdout));
}

/// Runs `scenario` of `scenarios` with the scripted policy; the run's summary and
/// directory.
fn run(
    root: &Path,
    scenarios: &Path,
    scenario: &str,
    extra: &[&str],
) -> (serde_json::Value, PathBuf) {
    run_as(None, root, scenarios, scenario, extra)
}

/// [`run`] with the runner started as [`runner_as`] starts it.
fn run_as(
    uid: Option<u32>,
    root: &Path,
    scenarios: &Path,
    scenario: &str,
    extra: &[&str],
) -> (serde_json::Value, PathBuf) {
    let out_dir = root.join(format!("runs-{scenario}"));
    let mut args = vec![
        "run",
        scenario,
        "--scenarios-dir",
        scenarios.to_str().expect("utf-8"),
        "--no-publish",
        "--no-progress",
        "--out",
        out_dir.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let out = runner_as(uid, root, &args);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let dir = runs::only_run_dir(&out_dir);
    (runs::summary(&dir), dir)
}

/// A copy of the imported scenario whose scripted policy does `actions` instead of the
/// gold patch, pinned.
fn variant(root: &Path, scenarios: &Path, name: &str, actions: &str) {
    let base = fs::read_to_string(scenarios.join("swe-local.toml")).expect("scenario");
    let text = base.replace("name = \"swe-local\"", &format!("name = \"{name}\""));
    fs::write(
        scenarios.join(format!("{name}.toml")),
        format!("{text}\n[scripted]\nactions = {actions}\n"),
    )
    .expect("write");
    let hash = runner(
        root,
        &[
            "scenarios",
            "hash",
            "--dir",
            scenarios.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(hash.status.code(), Some(0), "{}", text_of(&hash));
}

fn text_of(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_gold_patch_resolves_and_neither_nothing_nor_editing_the_tests_does() {
    let root = tempfile::tempdir().expect("tempdir");
    let (scenarios, _, _) = import(root.path());

    // Judged twice more: the verdict holds.
    let (gold, gold_dir) = run(root.path(), &scenarios, "swe-local", &["--regrade", "2"]);
    assert_eq!(
        gold["result"]["regrade"],
        serde_json::json!({"judgings": 3, "resolved": 3, "stable": true}),
        "{gold:#}"
    );
    assert_eq!(gold["result"]["stability_variance"], 0.0, "{gold:#}");
    assert_eq!(gold["result"]["success"], true, "{gold:#}");
    assert_eq!(gold["result"]["tests_passed"], 2, "{gold:#}");
    assert_eq!(gold["result"]["final_score"], 1.0, "{gold:#}");
    // The final diff is the gold patch, kept with its hash on run_stop; one outcome per
    // test precedes run_stop.
    let diff = fs::read(gold_dir.join("final.diff")).expect("final.diff");
    let project_patch = fs::read_to_string(root.path().join("gold.patch")).expect("patch");
    assert_eq!(text(&diff), project_patch);
    assert_eq!(
        gold["result"]["diff_sha256"],
        bench_schemas::sha256_hex(&diff).as_str(),
        "{gold:#}"
    );
    let outcomes: Vec<bench_schemas::TestOutcome> = runs::journal_events(&gold_dir)
        .into_iter()
        .filter_map(|e| match e.payload {
            bench_schemas::Payload::TestOutcome(t) => Some(t),
            _ => None,
        })
        .collect();
    let integrity = &gold["result"]["integrity"];
    assert_eq!(integrity["gold_similarity"], 1.0, "{gold:#}");
    assert_eq!(integrity["history_commands"], 0, "{gold:#}");
    assert_eq!(integrity["network_commands"], 0, "{gold:#}");
    assert_eq!(
        integrity["test_files_edited"],
        serde_json::json!([]),
        "{gold:#}"
    );
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes
        .iter()
        .all(|t| t.after && t.reason.is_none() && t.before.is_none()));
    assert_eq!(outcomes[0].test_id, F2P);
    assert_eq!(outcomes[0].test_set, bench_schemas::TestSet::FailToPass);

    variant(
        root.path(),
        &scenarios,
        "swe-nothing",
        "[{ tool = \"submit\" }]",
    );
    let (nothing, nothing_dir) = run(root.path(), &scenarios, "swe-nothing", &[]);
    assert_eq!(fs::read(nothing_dir.join("final.diff")).expect("diff"), b"");
    assert_eq!(nothing["result"]["success"], false, "{nothing:#}");
    assert_eq!(nothing["result"]["tests_passed"], 1, "{nothing:#}");
    assert_eq!(
        nothing["result"]["failing_tests"],
        serde_json::json!([F2P]),
        "{nothing:#}"
    );

    // Replaces the test file by one whose tests all pass on the buggy code.
    let cheat = "[{ tool = \"write_file\", path = \"tests/test_calc.py\", content = \"def test_add():\\n    pass\\n\\n\\ndef test_neg():\\n    pass\\n\" }, { tool = \"submit\" }]";
    variant(root.path(), &scenarios, "swe-cheat", cheat);
    let (cheated, _) = run(root.path(), &scenarios, "swe-cheat", &[]);
    assert_eq!(cheated["result"]["success"], false, "{cheated:#}");
    assert_eq!(cheated["result"]["tests_passed"], 1, "{cheated:#}");
    assert_eq!(
        cheated["protected_restored"],
        serde_json::json!(["tests/test_calc.py (modified)"]),
        "{cheated:#}"
    );
    let integrity = &cheated["result"]["integrity"];
    assert_eq!(
        integrity["test_files_edited"],
        serde_json::json!(["tests/test_calc.py (modified)"]),
        "{cheated:#}"
    );
    assert_eq!(integrity["gold_similarity"], 0.0, "{cheated:#}");

    // A module named like the judge's pytest plugin, first on the import path of
    // `python -m pytest`, that writes a forged report with the real token and exits.
    let forger = "import os\n\
                  p = os.environ['BENCH_JUDGE_REPORT']\n\
                  t = open(os.path.join(os.path.dirname(p), 'token')).read().strip()\n\
                  open(p, 'w').write('passed tests/test_calc.py::test_add\\n\
                  passed tests/test_calc.py::test_neg\\ncomplete ' + t + '\\n')\n\
                  os._exit(0)\n";
    let forge = format!(
        "[{{ tool = \"write_file\", path = \"benchstream_pytest_report.py\", content = {} }}, \
         {{ tool = \"submit\" }}]",
        serde_json::to_string(forger).expect("json")
    );
    variant(root.path(), &scenarios, "swe-forge", &forge);
    let (forged, _) = run(root.path(), &scenarios, "swe-forge", &[]);
    assert_eq!(forged["result"]["success"], false, "{forged:#}");
    assert_eq!(forged["result"]["tests_passed"], 1, "{forged:#}");
    assert_eq!(
        forged["result"]["integrity"]["test_files_edited"],
        serde_json::json!(["benchstream_pytest_report.py (created)"]),
        "{forged:#}"
    );

    // The same forger as a plugin of the agent's own, loaded by pytest's configuration:
    // `addopts` in a `setup.cfg` the agent wrote.
    let plugged = format!(
        "[{{ tool = \"write_file\", path = \"agent_plugin.py\", content = {} }}, \
         {{ tool = \"write_file\", path = \"setup.cfg\", \
            content = \"[tool:pytest]\\naddopts = -p agent_plugin\\n\" }}, \
         {{ tool = \"submit\" }}]",
        serde_json::to_string(forger).expect("json")
    );
    variant(root.path(), &scenarios, "swe-addopts", &plugged);
    let (plugged, _) = run(root.path(), &scenarios, "swe-addopts", &[]);
    assert_eq!(plugged["result"]["success"], false, "{plugged:#}");
    assert_eq!(plugged["result"]["tests_passed"], 1, "{plugged:#}");
    assert_eq!(
        plugged["result"]["integrity"]["test_files_edited"],
        serde_json::json!(["setup.cfg (created)"]),
        "{plugged:#}"
    );
}

#[test]
fn validation_marks_a_contradicting_task_broken_and_runs_leave_it_out() {
    let root = tempfile::tempdir().expect("tempdir");
    let project = Project::create(root.path());
    // o__calc-3 claims that test_neg, which passes at the base, is FAIL_TO_PASS.
    let mut wrong: serde_json::Value =
        serde_json::from_str(&project.instance("o__calc-3", &project.base)).expect("json");
    wrong["FAIL_TO_PASS"] = serde_json::json!([P2P]);
    wrong["PASS_TO_PASS"] = serde_json::json!([]);
    let instances = root.path().join("instances.json");
    fs::write(
        &instances,
        format!(
            "[{}, {wrong}]",
            project.instance("o__calc-1", &project.base)
        ),
    )
    .expect("write");
    let scenarios = root.path().join("scenarios");
    let dir = scenarios.to_str().expect("utf-8");
    let import = runner(
        root.path(),
        &[
            "tasks",
            "import",
            "swe-bench",
            "--instances",
            instances.to_str().expect("utf-8"),
            "--repos",
            project.repos.to_str().expect("utf-8"),
            "--scenarios-dir",
            dir,
            "--scenario",
            "swe-check",
        ],
    );
    assert_eq!(import.status.code(), Some(0), "{}", text_of(&import));

    let validate = runner(
        root.path(),
        &[
            "tasks",
            "validate",
            "swe-check",
            "--scenarios-dir",
            dir,
            "--repeat",
            "2",
        ],
    );
    let report = text(&validate.stdout);
    assert_eq!(validate.status.code(), Some(1), "{}", text_of(&validate));
    assert!(
        report.contains("valid o__calc-1: 2 tests, 2 repeats\n"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "broken o__calc-3: 1 tests, 2 repeats; FAIL_TO_PASS {P2P} passes without the fix"
        )),
        "{report}"
    );
    assert!(
        report.contains(
            "2 tasks, 1 broken, 0 not validated (environment errors), 0 with flaky tests"
        ),
        "{report}"
    );
    // No broker named: nothing published, and the report says what that means.
    assert!(
        report.contains("task_validation events: none published (no --nats-url)"),
        "{report}"
    );
    let recorded = fs::read_to_string(scenarios.join("tasks/o__calc-1/validation.toml"))
        .expect("validation.toml");
    assert!(recorded.contains("broken = false"), "{recorded}");
    assert!(
        recorded.contains(&format!(
            "test_id = \"{F2P}\"\ntest_set = \"fail_to_pass\"\npassed_before = 0\npassed_after = 2"
        )),
        "{recorded}"
    );

    // The run leaves the broken task out, says so, and knows each test's state before.
    let (gold, gold_dir) = run(root.path(), &scenarios, "swe-check", &[]);
    assert_eq!(gold["task_id"], "o__calc-1");
    let before: Vec<(String, Option<bool>)> = runs::journal_events(&gold_dir)
        .into_iter()
        .filter_map(|e| match e.payload {
            bench_schemas::Payload::TestOutcome(t) => Some((t.test_id, t.before)),
            _ => None,
        })
        .collect();
    assert_eq!(
        before,
        [(F2P.to_owned(), Some(false)), (P2P.to_owned(), Some(true))]
    );
}

#[test]
fn the_environment_is_set_up_once_per_repository_and_version_and_read_only_in_runs() {
    let root = tempfile::tempdir().expect("tempdir");
    let project = Project::create(root.path());
    let instances = root.path().join("instances.jsonl");
    // Two instances of one repository and version share one environment.
    fs::write(
        &instances,
        format!(
            "{}\n{}\n",
            project.instance("o__calc-1", &project.base),
            project.instance("o__calc-5", &project.base)
        ),
    )
    .expect("write");
    let scenarios = root.path().join("scenarios");
    let dir = scenarios.to_str().expect("utf-8");
    // The setup counts its runs and installs a module into the environment.
    let install = "echo ran >> \"$VIRTUAL_ENV/setup-runs\" && \
                   printf 'VALUE = 5\\n' > \"$(python -c 'import sysconfig; \
                   print(sysconfig.get_path(\"purelib\"))')/benchhelper.py\"";
    let import = runner(
        root.path(),
        &[
            "tasks",
            "import",
            "swe-bench",
            "--instances",
            instances.to_str().expect("utf-8"),
            "--repos",
            project.repos.to_str().expect("utf-8"),
            "--scenarios-dir",
            dir,
            "--scenario",
            "swe-env",
            "--install",
            install,
        ],
    );
    assert_eq!(import.status.code(), Some(0), "{}", text_of(&import));
    let env = scenarios.join("envs/o__calc__1.0");
    assert_eq!(
        fs::read_to_string(env.join("setup-runs")).expect("setup ran"),
        "ran\n"
    );
    // A run sees the environment's module, and cannot write into the environment: what
    // the command left in the workspace is in the final diff.
    let env_path = env.canonicalize().expect("env");
    let probe = format!(
        "python -c 'import benchhelper; print(benchhelper.VALUE)' > probe.txt; \
         touch {}/written 2>/dev/null || echo read-only >> probe.txt",
        env_path.display()
    );
    let actions = format!(
        "[{{ tool = \"bash\", command = {} }}, {{ tool = \"submit\" }}]",
        serde_json::to_string(&probe).expect("json")
    );
    let base = fs::read_to_string(scenarios.join("swe-env.toml")).expect("scenario");
    fs::write(
        scenarios.join("swe-env-probe.toml"),
        format!(
            "{}\n[scripted]\nactions = {actions}\n",
            base.replace("name = \"swe-env\"", "name = \"swe-env-probe\"")
                .replace("  \"o__calc-5\",\n", "")
        ),
    )
    .expect("write");
    let hash = runner(root.path(), &["scenarios", "hash", "--dir", dir]);
    assert_eq!(hash.status.code(), Some(0), "{}", text_of(&hash));
    let (_, run_dir) = run(root.path(), &scenarios, "swe-env-probe", &[]);
    let diff = fs::read_to_string(run_dir.join("final.diff")).expect("final.diff");
    assert!(diff.contains("+5\n+read-only\n"), "{diff}");
    assert!(!env.join("written").exists());
}

#[test]
fn a_repository_with_symlinks_inside_imports_and_runs_and_a_link_out_is_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    let project = Project::create(root.path());
    let clone = project.repos.join("o__calc");
    // A base with links that stay in the tree (a file's and a directory's), and one after
    // it with a link out of the repository.
    git(&clone, &["checkout", "-q", "-b", "linked", &project.base]);
    std::os::unix::fs::symlink("calc.py", clone.join("calc_link.py")).expect("symlink");
    std::os::unix::fs::symlink("tests", clone.join("checks")).expect("symlink");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "links"]);
    let linked = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
    std::os::unix::fs::symlink("../../outside", clone.join("tests/escape")).expect("symlink");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-qm", "a link out"]);
    let escaping = git(&clone, &["rev-parse", "HEAD"]).trim().to_owned();
    let (scenarios, import) = import_instances(
        root.path(),
        &project,
        &[("o__calc-1", &linked), ("o__calc-6", &escaping)],
    );
    let report = text(&import.stdout);
    assert_eq!(import.status.code(), Some(1), "{}", text_of(&import));
    assert!(report.contains("imported o__calc-1: "), "{report}");
    assert!(
        report.contains("failed o__calc-6: ")
            && report.contains("tests/escape is a symlink to ../../outside, outside the fixture"),
        "{report}"
    );

    // The links are links in the fixture, pinned, and in the run's scratch copy, where
    // the gold patch resolves the task.
    let fixture = scenarios.join("tasks/o__calc-1/fixture");
    assert_eq!(
        fs::read_link(fixture.join("calc_link.py")).expect("a link"),
        Path::new("calc.py")
    );
    assert_eq!(
        fs::read_link(fixture.join("checks")).expect("a link"),
        Path::new("tests")
    );
    let (gold, _) = run(root.path(), &scenarios, "swe-local", &[]);
    assert_eq!(gold["task_id"], "o__calc-1");
    assert_eq!(gold["result"]["success"], true, "{gold:#}");
    assert_eq!(gold["result"]["tests_passed"], 2, "{gold:#}");
}

/// A module named like pytest's own dependency `iniconfig` (which `import pytest` loads
/// before any plugin, from the working directory first under `python -m pytest`) that
/// forges the judge's report with the token it finds beside it.
const SHADOW_INICONFIG: &str = r#"import atexit, os
_p = os.environ.get("BENCH_JUDGE_REPORT", "")
try:
    _t = open(os.path.join(os.path.dirname(_p), "token")).read().strip()
except OSError:
    _t = ""
def _forge():
    open(_p, "w").write("passed tests/test_calc.py::test_add\npassed tests/test_calc.py::test_neg\ncomplete " + _t + "\n")
atexit.register(_forge)
import importlib.machinery, importlib.util, sys
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec("iniconfig", [p for p in sys.path if p and os.path.abspath(p) != _here])
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
globals().update({k: v for k, v in vars(_real).items() if not k.startswith("__")})
"#;

/// A root `conftest.py` that turns every test report into a pass.
const CONFTEST_ALL_PASS: &str = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = \"passed\"\n";

/// Bytecode of the fixed `calc.py` planted in `__pycache__` with the buggy source put back
/// at the size and mtime the bytecode records: no diff, but Python would run the fix.
const PLANT_PYC: &str = "cp calc.py /tmp/orig.py && sed -i 's/a - b/a + b/' calc.py && python3 -c 'import py_compile; py_compile.compile(\"calc.py\")' && m=$(stat -c %Y calc.py) && cp /tmp/orig.py calc.py && touch -d @$m calc.py && ls __pycache__";

/// The verdict comes from the submitted diff alone, applied to a pristine copy, whoever
/// starts the runner: a shadowed pytest dependency hidden by a self-ignoring `.gitignore`
/// is in the diff, cannot shadow the judge's pytest and is flagged; a root `conftest.py`
/// that passes every test is removed before judging and flagged; bytecode planted in
/// `__pycache__` is no part of a submission (a regression test: the judge's private
/// bytecode cache stopped it before too).
#[test]
fn the_verdict_comes_from_the_submitted_diff_alone_as_root_and_unprivileged() {
    let write = |path: &str, content: &str| {
        format!(
            "{{ tool = \"write_file\", path = \"{path}\", content = {} }}",
            serde_json::to_string(content).expect("json")
        )
    };
    for uid in [None, Some(NOBODY)] {
        let root = tempfile::tempdir().expect("tempdir");
        let (scenarios, _, _) = import(root.path());
        let shadow = format!(
            "[{}, {}, {{ tool = \"submit\" }}]",
            write("iniconfig.py", SHADOW_INICONFIG),
            write(".gitignore", "*\n")
        );
        variant(root.path(), &scenarios, "swe-shadow", &shadow);
        let conftest = format!(
            "[{}, {{ tool = \"submit\" }}]",
            write("conftest.py", CONFTEST_ALL_PASS)
        );
        variant(root.path(), &scenarios, "swe-conftest", &conftest);
        let pyc = format!(
            "[{{ tool = \"bash\", command = {} }}, {{ tool = \"submit\" }}]",
            serde_json::to_string(PLANT_PYC).expect("json")
        );
        variant(root.path(), &scenarios, "swe-pyc", &pyc);
        if let Some(uid) = uid {
            let chown = Command::new("chown")
                .args(["-R", &format!("{uid}:{uid}")])
                .arg(root.path())
                .status()
                .expect("chown");
            assert!(chown.success());
        }

        let (shadowed, dir) = run_as(uid, root.path(), &scenarios, "swe-shadow", &[]);
        let result = &shadowed["result"];
        assert_eq!(result["success"], false, "{uid:?}: {shadowed:#}");
        assert_eq!(result["tests_passed"], 1, "{uid:?}: {shadowed:#}");
        let diff = text(&fs::read(dir.join("final.diff")).expect("diff"));
        assert!(
            diff.contains("b/iniconfig.py") && diff.contains("b/.gitignore"),
            "{uid:?}: {diff}"
        );
        assert_eq!(result["files_modified"], 2, "{uid:?}: {shadowed:#}");
        assert_eq!(
            result["integrity"]["shadows_module"],
            serde_json::json!(["iniconfig (iniconfig.py)"]),
            "{uid:?}: {shadowed:#}"
        );
        assert_eq!(
            result["integrity"]["workspace_verdict_differs"], false,
            "{uid:?}: {shadowed:#}"
        );

        let (passed_all, _) = run_as(uid, root.path(), &scenarios, "swe-conftest", &[]);
        let result = &passed_all["result"];
        assert_eq!(result["success"], false, "{uid:?}: {passed_all:#}");
        assert_eq!(
            result["integrity"]["test_files_edited"],
            serde_json::json!(["conftest.py (created)"]),
            "{uid:?}: {passed_all:#}"
        );

        let (planted, dir) = run_as(uid, root.path(), &scenarios, "swe-pyc", &[]);
        let result = &planted["result"];
        assert_eq!(result["success"], false, "{uid:?}: {planted:#}");
        assert_eq!(result["tests_passed"], 1, "{uid:?}: {planted:#}");
        assert_eq!(result["files_modified"], 0, "{uid:?}: {planted:#}");
        assert_eq!(
            fs::read(dir.join("final.diff")).expect("diff"),
            b"",
            "{uid:?}"
        );
    }
}

/// The test file the fix of the image tasks writes: `symbol` left the standard library
/// after Python 3.9, so these tests can pass under the image's Python 3.9 only, never
/// under the host's.
const TESTS_NEEDING_PYTHON_39: &str = "import symbol  # in the standard library until Python 3.9\n\nfrom calc import add, neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// Imports one instance whose tests need Python 3.9, its environment the image `image`.
fn import_in_image(root: &Path, image: &str) -> PathBuf {
    let project = Project::create_with(root, TESTS_NEEDING_PYTHON_39);
    let instance = project.instance("o__calc-1", &project.base);
    import_instance_in_image(root, image, &project, &instance)
}

/// Imports the instance record `instance` of `project`, its environment the image `image`.
fn import_instance_in_image(
    root: &Path,
    image: &str,
    project: &Project,
    instance: &str,
) -> PathBuf {
    let (scenarios, out) = import_records(
        root,
        project,
        &[instance.to_owned()],
        &["--test-cmd", "python3 -m pytest -rA", "--image", image],
    );
    let report = text_of(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains(&format!("image {image}")), "{report}");
    assert!(
        !scenarios.join("envs").exists(),
        "no virtualenv is made for an image task"
    );
    scenarios
}

/// The digest `pins.toml` pins the image task's image to.
fn pinned_image(scenarios: &Path) -> String {
    let pins: toml::Value =
        toml::from_str(&fs::read_to_string(scenarios.join("pins.toml")).expect("pins"))
            .expect("pins.toml");
    pins["tasks"]["o__calc-1"]["image"]
        .as_str()
        .expect("the image is pinned")
        .to_owned()
}

#[test]
fn a_task_in_its_own_image_runs_and_is_judged_there_as_root_and_unprivileged() {
    let image = images::built(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        images::BULLSEYE_PYTHON,
    );
    for uid in [None, Some(NOBODY)] {
        let root = tempfile::tempdir().expect("tempdir");
        let scenarios = import_in_image(root.path(), &image);
        let digest = pinned_image(&scenarios);
        variant(
            root.path(),
            &scenarios,
            "swe-nothing",
            "[{ tool = \"submit\" }]",
        );
        let cache = root.path().join("image-cache");
        let cache_flag = ["--image-cache", cache.to_str().expect("utf-8")];
        if let Some(uid) = uid {
            let chown = Command::new("chown")
                .args(["-R", &format!("{uid}:{uid}")])
                .arg(root.path())
                .status()
                .expect("chown");
            assert!(chown.success());
        }

        // The gold patch, applied with the image's git, passes the image's Python 3.9.
        let (gold, dir) = run_as(uid, root.path(), &scenarios, "swe-local", &cache_flag);
        let result = &gold["result"];
        assert_eq!(result["success"], true, "{uid:?}: {gold:#}");
        assert_eq!(result["tests_passed"], 2, "{uid:?}: {gold:#}");
        let events = runs::journal_events(&dir);
        let start = serde_json::to_value(&events[0]).expect("json");
        assert_eq!(
            start["data"]["image"],
            serde_json::json!({"reference": image, "digest": digest}),
            "{uid:?}: {start:#}"
        );

        // Doing nothing resolves nothing: the same tests, the same image.
        let (nothing, _) = run_as(uid, root.path(), &scenarios, "swe-nothing", &cache_flag);
        assert_eq!(nothing["result"]["success"], false, "{uid:?}: {nothing:#}");
        assert_eq!(nothing["env_hash"], gold["env_hash"], "{uid:?}");

        // Validation judges the base and the gold patch in the image too.
        let mut validate = vec![
            "tasks",
            "validate",
            "swe-local",
            "--scenarios-dir",
            scenarios.to_str().expect("utf-8"),
        ];
        validate.extend_from_slice(&cache_flag);
        let out = runner_as(uid, root.path(), &validate);
        assert_eq!(out.status.code(), Some(0), "{uid:?}: {}", text_of(&out));
        let validation = fs::read_to_string(scenarios.join("tasks/o__calc-1/validation.toml"))
            .expect("validation.toml");
        assert!(
            validation.contains("broken = false"),
            "{uid:?}: {validation}"
        );

        // The cache holds the image once, whoever ran it.
        let unpacked = fs::read_dir(cache.join("images")).expect("cache").count();
        assert_eq!(unpacked, 1, "{uid:?}");
    }
}

#[test]
fn an_image_whose_digest_is_not_the_pinned_one_is_refused_before_any_run() {
    let image = images::built(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        images::BULLSEYE_PYTHON,
    );
    let root = tempfile::tempdir().expect("tempdir");
    let scenarios = import_in_image(root.path(), &image);
    let digest = pinned_image(&scenarios);
    let pins = scenarios.join("pins.toml");
    let other = format!("sha256:{}", "0".repeat(64));
    let text = fs::read_to_string(&pins).expect("pins");
    fs::write(&pins, text.replace(&digest, &other)).expect("write");
    let out_dir = root.path().join("runs");
    let cache = root.path().join("image-cache");
    let out = runner(
        root.path(),
        &[
            "run",
            "swe-local",
            "--scenarios-dir",
            scenarios.to_str().expect("utf-8"),
            "--no-publish",
            "--out",
            out_dir.to_str().expect("utf-8"),
            "--image-cache",
            cache.to_str().expect("utf-8"),
        ],
    );
    let said = text_of(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains(&format!("has digest {digest}, but {other} is pinned")),
        "{said}"
    );
    assert_eq!(runs::journal_lines(&out_dir), 0, "{said}");
}

/// A unittest runner script in the manner of Django's `tests/runtests.py`: labels are
/// test modules under its directory, the repository's root is put on the import path.
const RUNTESTS: &str = r#"#!/usr/bin/env python3
import argparse
import os
import sys
import unittest

parser = argparse.ArgumentParser()
parser.add_argument("labels", nargs="*")
parser.add_argument("--verbosity", type=int, default=1)
parser.add_argument("--settings")
parser.add_argument("--parallel", type=int, default=1)
options = parser.parse_args()
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
suite = unittest.defaultTestLoader.loadTestsFromNames(options.labels)
result = unittest.TextTestRunner(verbosity=options.verbosity).run(suite)
sys.exit(bool(result.failures or result.errors))
"#;

/// The test module before the fix: `symbol` is the standard library's only until Python
/// 3.9.
const CALC_TESTS_BASE: &str = "import symbol  # in the standard library until Python 3.9\nimport unittest\n\nfrom calc import neg\n\n\nclass CalcTests(unittest.TestCase):\n    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n";

/// The test module the fix writes: `test_add` added.
const CALC_TESTS_FIX: &str = "import symbol  # in the standard library until Python 3.9\nimport unittest\n\nfrom calc import add, neg\n\n\nclass CalcTests(unittest.TestCase):\n    def test_neg(self):\n        self.assertEqual(neg(2), -2)\n\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// A runner script that says every test passed without running one.
const FORGED_RUNTESTS: &str =
    "import sys\nprint('test_add (calc_tests.tests.CalcTests) ... ok')\nsys.exit(0)\n";

#[test]
fn a_django_style_runtests_task_is_judged_by_unittest_outcomes_inside_its_image() {
    let image = images::built(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        images::BULLSEYE_PYTHON,
    );
    let root = tempfile::tempdir().expect("tempdir");
    let project = Project::create_from(
        root.path(),
        &[
            ("calc.py", BUGGY),
            ("tests/runtests.py", RUNTESTS),
            ("tests/calc_tests/__init__.py", ""),
            ("tests/calc_tests/tests.py", CALC_TESTS_BASE),
        ],
        &[
            ("calc.py", FIXED),
            ("tests/calc_tests/tests.py", CALC_TESTS_FIX),
        ],
    );
    let instance = project.instance_with(
        "o__calc-1",
        &project.base,
        &["test_add (calc_tests.tests.CalcTests)"],
        &["test_neg (calc_tests.tests.CalcTests)"],
        Some("./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"),
    );
    let scenarios = import_instance_in_image(root.path(), &image, &project, &instance);
    variant(
        root.path(),
        &scenarios,
        "swe-nothing",
        "[{ tool = \"submit\" }]",
    );
    let forge = format!(
        "[{{ tool = \"write_file\", path = \"tests/runtests.py\", content = {} }}, {{ tool = \"submit\" }}]",
        serde_json::to_string(FORGED_RUNTESTS).expect("json")
    );
    variant(root.path(), &scenarios, "swe-forge", &forge);
    let cache = root.path().join("image-cache");
    let cache_flag = ["--image-cache", cache.to_str().expect("utf-8")];

    let (gold, dir) = run(root.path(), &scenarios, "swe-local", &cache_flag);
    assert_eq!(gold["result"]["success"], true, "{gold:#}");
    assert_eq!(gold["result"]["tests_passed"], 2, "{gold:#}");
    let mut ids: Vec<String> = runs::journal_events(&dir)
        .into_iter()
        .filter_map(|e| match e.payload {
            bench_schemas::Payload::TestOutcome(o) => Some(o.test_id),
            _ => None,
        })
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "test_add (calc_tests.tests.CalcTests)",
            "test_neg (calc_tests.tests.CalcTests)"
        ]
    );

    let (nothing, _) = run(root.path(), &scenarios, "swe-nothing", &cache_flag);
    assert_eq!(nothing["result"]["success"], false, "{nothing:#}");
    assert_eq!(nothing["result"]["tests_passed"], 1, "{nothing:#}");

    // A runner script rewritten to print success is the judge's: the pristine one runs.
    let (forged, _) = run(root.path(), &scenarios, "swe-forge", &cache_flag);
    assert_eq!(forged["result"]["success"], false, "{forged:#}");
    assert_eq!(forged["result"]["tests_passed"], 1, "{forged:#}");
}
