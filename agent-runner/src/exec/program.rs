//! The agent program of `agent-runner exec`: checked before anything is published (a
//! program that cannot start must not leave a `run_start` without a run), and the
//! `policy_id` it gives a run by default.
//!
//! The default `policy_id` is `exec:<name>`, where `<name>` is the file name of the
//! program, or, when the program is an interpreter or launcher (`python3`, `node`,
//! `bash`, `uv run`, ...), of the first later argument that names an existing file (the
//! script), or the module of `python -m <module>`. So `python3 agents/a.py` and
//! `python3 agents/b.py` get two leaderboard rows, `exec:a.py` and `exec:b.py`.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bench_sandbox::sandbox_path;

use super::ExecError;

/// Programs that run a script named in their arguments (a trailing version number, as in
/// `python3.12` or `node20`, is ignored).
const INTERPRETERS: &[&str] = &[
    "python", "pypy", "uv", "poetry", "pipenv", "node", "deno", "bun", "npx", "bash", "sh", "dash",
    "zsh", "ruby", "perl", "php", "lua", "rscript", "julia", "java", "env", "tsx", "ts-node",
];

/// Where `program` is: a path with a `/` as given, a bare name on the `PATH` the agent
/// gets ([`sandbox_path`]); it must be an executable file.
pub fn locate(program: &OsStr) -> Result<PathBuf, ExecError> {
    let path = Path::new(program);
    let not_found = |why: &str| ExecError::ProgramNotFound {
        program: program.to_string_lossy().into_owned(),
        why: why.to_owned(),
    };
    if program.is_empty() {
        return Err(not_found("the command is empty"));
    }
    if path.components().count() > 1 {
        return if is_executable(path) {
            Ok(path.to_owned())
        } else if path.is_file() {
            Err(not_found("it is not executable"))
        } else {
            Err(not_found("no such file"))
        };
    }
    std::env::split_paths(&sandbox_path())
        .map(|dir| dir.join(path))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            not_found(&format!(
                "not found on the agent's PATH ({})",
                sandbox_path()
            ))
        })
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The default `policy_id` of a run of `command` (see the module docs).
pub fn default_policy_id(command: &[OsString]) -> String {
    let Some((program, args)) = command.split_first() else {
        return "exec:".to_owned();
    };
    let name = file_name(program);
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let script = INTERPRETERS
        .contains(&base.to_ascii_lowercase().as_str())
        .then(|| script_of(args))
        .flatten();
    format!("exec:{}", script.unwrap_or(name))
}

/// The script among an interpreter's arguments: the module of `-m <module>`, else the
/// first argument naming an existing file.
fn script_of(args: &[OsString]) -> Option<String> {
    if let Some(i) = args.iter().position(|a| a == "-m") {
        return args.get(i + 1).map(|m| m.to_string_lossy().into_owned());
    }
    args.iter()
        .find(|a| Path::new(a).is_file())
        .map(|a| file_name(a))
}

fn file_name(word: &OsStr) -> String {
    Path::new(word)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn interpreters_are_named_after_their_script() {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("my_agent.py");
        std::fs::write(&script, "print()").expect("script");
        let script = script.to_str().expect("utf-8");
        for (words, expected) in [
            (vec!["python3", script], "exec:my_agent.py"),
            (
                vec!["/usr/bin/python3.12", "-u", script, "--x"],
                "exec:my_agent.py",
            ),
            (vec!["uv", "run", script], "exec:my_agent.py"),
            (vec!["python3", "-m", "agents.solver"], "exec:agents.solver"),
            (vec!["python3", "-c", "print()"], "exec:python3"),
            (vec!["./agent.sh", script], "exec:agent.sh"),
            (vec!["/opt/bin/my-agent"], "exec:my-agent"),
        ] {
            assert_eq!(default_policy_id(&command(&words)), expected, "{words:?}");
        }
    }

    #[test]
    fn a_missing_program_is_found_missing() {
        assert!(locate(OsStr::new("sh")).is_ok());
        for missing in ["no-such-agent-program", "./no/such/agent", ""] {
            let err = locate(OsStr::new(missing)).expect_err(missing);
            assert!(matches!(err, ExecError::ProgramNotFound { .. }), "{err}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("agent.py");
        std::fs::write(&plain, "").expect("file");
        let err = locate(plain.as_os_str()).expect_err("not executable");
        assert!(err.to_string().contains("not executable"), "{err}");
    }
}
