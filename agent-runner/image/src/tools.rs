//! skopeo and umoci, run as child processes: what the store asks of them and what they
//! answer. A failure names the command and quotes the end of what it printed.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::reference::{Digest, ImageRef};
use crate::ImageError;

/// The manifest digest `image` has now (`skopeo inspect`), as `scenarios hash` pins it.
///
/// # Errors
///
/// If skopeo is missing or cannot inspect the image.
pub fn digest_now(image: &ImageRef) -> Result<Digest, ImageError> {
    inspect(image.as_str()).map(|inspected| inspected.digest)
}

/// How long skopeo may take for one command (a registry that stops answering).
const SKOPEO_TIMEOUT: &str = "600s";

/// What `skopeo inspect` says of an image.
#[derive(Debug)]
pub(crate) struct Inspected {
    pub(crate) digest: Digest,
}

/// The part of an OCI image config the sandbox honours.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ConfigFile {
    #[serde(default)]
    pub(crate) config: RunConfig,
}

/// `config` of an OCI image config: the environment and the working directory.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunConfig {
    #[serde(rename = "Env", default)]
    pub(crate) env: Option<Vec<String>>,
    #[serde(rename = "WorkingDir", default)]
    pub(crate) working_dir: Option<String>,
}

/// `skopeo inspect`: the manifest digest of `image`.
pub(crate) fn inspect(image: &str) -> Result<Inspected, ImageError> {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(rename = "Digest")]
        digest: String,
    }
    let out = skopeo(&["inspect", "--no-tags", image])?;
    let answer: Answer = serde_json::from_slice(&out).map_err(|e| failed("skopeo inspect", e))?;
    Ok(Inspected {
        digest: answer.digest.parse()?,
    })
}

/// `skopeo inspect --config`: the image's run config.
pub(crate) fn config(image: &str) -> Result<RunConfig, ImageError> {
    let out = skopeo(&["inspect", "--config", image])?;
    serde_json::from_slice::<ConfigFile>(&out)
        .map(|file| file.config)
        .map_err(|e| failed("skopeo inspect --config", e))
}

/// `skopeo copy SRC oci:LAYOUT:TAG`.
pub(crate) fn copy(source: &str, layout: &Path, tag: &str) -> Result<(), ImageError> {
    let target = format!("oci:{}:{tag}", layout.display());
    skopeo(&["copy", "--quiet", source, &target]).map(drop)
}

/// `umoci unpack` of `LAYOUT:TAG` into the bundle `dir` (rootless unless root).
pub(crate) fn unpack(layout: &Path, tag: &str, dir: &Path) -> Result<(), ImageError> {
    let mut umoci = Command::new("umoci");
    umoci.arg("unpack");
    if !nix::unistd::geteuid().is_root() {
        umoci.arg("--rootless");
    }
    umoci
        .arg("--image")
        .arg(format!("{}:{tag}", layout.display()))
        .arg(dir);
    run("umoci unpack", &mut umoci).map(drop)
}

fn skopeo(args: &[&str]) -> Result<Vec<u8>, ImageError> {
    let mut skopeo = Command::new("skopeo");
    // Global options, before the subcommand. The store checks an image by its pinned
    // digest, whatever the host's /etc/containers/policy.json says (or lacks).
    skopeo
        .args(["--insecure-policy", "--command-timeout", SKOPEO_TIMEOUT])
        .args(args);
    run(&format!("skopeo {}", args[0]), &mut skopeo)
}

/// Runs `command`, its stdout on success; a missing program or a failure is an error
/// naming `what`.
fn run(what: &str, command: &mut Command) -> Result<Vec<u8>, ImageError> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                ImageError::ToolMissing(what.split(' ').next().unwrap_or(what).to_owned())
            }
            _ => failed(what, e),
        })?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(failed(
        what,
        format!("{}: {}", output.status, tail.join(" / ")),
    ))
}

fn failed(what: &str, error: impl std::fmt::Display) -> ImageError {
    ImageError::Tool {
        command: what.to_owned(),
        reason: error.to_string(),
    }
}
