//! The environment of SWE-bench-format tasks: one Python virtualenv per repository and
//! version, `<scenarios>/envs/<owner__name>__<version>/`, made by the import with network
//! (`python3 -m venv --system-site-packages`, then the setup: `pip install` of the
//! instance's `pip_packages`, then its `install` command, or the import's `--install`),
//! once: a directory holding [`READY`] is reused as it is. Runs and judges mount it
//! read-only in the sandbox, without network, its `bin/` first on `PATH`
//! ([`bench_sandbox::Confinement::with_environment`]).
//!
//! The setup runs on the host as the importing user, in a scratch export of the
//! repository at `environment_setup_commit` (else `base_commit`), so `pip install -r
//! requirements.txt` works; it should install the repository's dependencies, not the
//! repository itself: the tests import the agent's working copy, which `python -m pytest`
//! puts first on the import path. The venv is made with the Python the sandbox runs
//! (`/usr/bin/python3` by default), since a venv points at the interpreter it was made
//! with.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file that marks a finished environment; it holds the setup that made it.
pub const READY: &str = ".benchstream-ready";

/// How to set up one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// The interpreter the venv is made with.
    pub python: PathBuf,
    /// `pip install` these into it.
    pub pip_packages: Vec<String>,
    /// Then run this with `bash -c`.
    pub install: Option<String>,
}

impl Setup {
    /// What is written into [`READY`]: the setup, so an operator can tell what made it.
    fn describe(&self) -> String {
        format!(
            "python = {}\npip_packages = {:?}\ninstall = {:?}\n",
            self.python.display(),
            self.pip_packages,
            self.install
        )
    }
}

/// Makes the environment `env` with `setup`, in `workdir` (the repository at its setup
/// commit), unless it is already made; `Ok(true)` when it was made now. A failed setup
/// removes what it made and says why (the last lines of the command's output).
pub fn prepare(env: &Path, setup: &Setup, workdir: &Path) -> Result<bool, String> {
    if env.join(READY).is_file() {
        return Ok(false);
    }
    if env.exists() {
        // A setup that did not finish: start again.
        fs::remove_dir_all(env).map_err(|e| format!("{}: {e}", env.display()))?;
    }
    let made = make(env, setup, workdir);
    if made.is_err() {
        let _ = fs::remove_dir_all(env);
    }
    made.map(|()| true)
}

fn make(env: &Path, setup: &Setup, workdir: &Path) -> Result<(), String> {
    let needs_pip = !setup.pip_packages.is_empty() || setup.install.is_some();
    let mut venv = Command::new(&setup.python);
    venv.args(["-m", "venv", "--system-site-packages"]);
    if !needs_pip {
        venv.arg("--without-pip");
    }
    run(venv.arg(env), "python3 -m venv")?;
    let bin = env.join("bin");
    let path = match std::env::var_os("PATH") {
        Some(path) => format!("{}:{}", bin.display(), path.to_string_lossy()),
        None => bin.display().to_string(),
    };
    if !setup.pip_packages.is_empty() {
        let mut pip = Command::new(bin.join("python"));
        pip.args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
        ])
        .args(&setup.pip_packages)
        .current_dir(workdir);
        run(&mut pip, "pip install")?;
    }
    if let Some(install) = &setup.install {
        let mut bash = Command::new("bash");
        bash.args(["-c", install])
            .current_dir(workdir)
            .env("PATH", &path)
            .env("VIRTUAL_ENV", env);
        run(&mut bash, "install")?;
    }
    fs::write(env.join(READY), setup.describe()).map_err(|e| format!("{READY}: {e}"))
}

/// Runs `command`; an error with its last output lines when it fails.
fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Err(format!(
        "{what} failed ({}): {}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
    ))
}
