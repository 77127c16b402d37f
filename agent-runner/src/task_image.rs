//! The images of a command's tasks (`[image]` in `task.toml`): fetched, checked against
//! their pins and unpacked before the first run ([`TaskImages::prepare`]), then held from
//! eviction until the command ends, and handed to each run's sandbox as its root
//! ([`TaskImages::root`]) and to its `run_start` ([`TaskImages::record`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bench_image::{ImageError, ImageStore, PreparedImage};
use bench_schemas::EnvironmentImage;

use bench_sandbox::ImageRoot;
use bench_task::LoadedTask;

/// Where images are cached and how much they may take (`run`, `sweep`, `exec`, `tasks
/// validate`).
#[derive(Debug, Clone, clap::Args)]
pub struct ImageCacheArgs {
    /// The image cache: one unpacked root file system per image digest, shared by every
    /// run on this host [default: $XDG_CACHE_HOME/benchstream/images, else
    /// ~/.cache/benchstream/images]
    #[arg(long = "image-cache", env = "BENCH_IMAGE_CACHE", value_name = "DIR", value_parser = bench_cli::paths::absolute)]
    pub dir: Option<PathBuf>,
    /// The most the image cache may hold, GiB; the least recently used image nobody uses
    /// goes first.
    #[arg(
        long = "image-cache-gb",
        env = "BENCH_IMAGE_CACHE_GB",
        value_name = "GIB",
        default_value_t = DEFAULT_MAX_GB
    )]
    pub max_gb: u64,
}

/// `--image-cache-gb` unless given.
const DEFAULT_MAX_GB: u64 = 20;

/// The flags' defaults: the default directory, [`DEFAULT_MAX_GB`].
impl Default for ImageCacheArgs {
    fn default() -> Self {
        Self {
            dir: None,
            max_gb: DEFAULT_MAX_GB,
        }
    }
}

impl ImageCacheArgs {
    /// The cache directory, the flag's or the default one.
    fn dir(&self) -> Result<PathBuf, TaskImageError> {
        if let Some(dir) = &self.dir {
            return Ok(dir.clone());
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .ok_or(TaskImageError::NoCacheDir)?;
        Ok(base.join("benchstream").join("images"))
    }
}

/// An image task that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TaskImageError {
    /// The image could not be had, or is not the pinned one.
    #[error("task {task}: {error}")]
    Image {
        /// The task.
        task: String,
        /// Why.
        error: ImageError,
    },
    /// Only bwrap can give a process another root.
    #[error("task {0} runs in an image, which needs the agent sandbox (bwrap); it cannot run --unsandboxed")]
    NeedsSandbox(String),
    /// The task's `workdir` is no directory of its image.
    #[error("task {task}: image.workdir {workdir} is no directory in the image; the repository is mounted there")]
    NoWorkdir {
        /// The task.
        task: String,
        /// Its `workdir`.
        workdir: String,
    },
    /// Neither `--image-cache` nor `HOME` says where images go.
    #[error("no image cache directory: pass --image-cache (BENCH_IMAGE_CACHE)")]
    NoCacheDir,
}

impl TaskImageError {
    /// Whether the image is not the one pinned (the pins' exit code, not the
    /// environment's).
    pub fn is_pin_error(&self) -> bool {
        matches!(
            self,
            TaskImageError::Image {
                error: ImageError::DigestMismatch { .. },
                ..
            }
        )
    }
}

/// One task's image, held for the command.
#[derive(Debug)]
struct Held {
    image: PreparedImage,
    reference: String,
    workdir: Option<String>,
    activate: Option<String>,
}

/// The prepared images of a command's tasks, by task id.
#[derive(Debug, Default)]
pub struct TaskImages {
    by_task: BTreeMap<String, Arc<Held>>,
}

impl TaskImages {
    /// Fetches (unless cached), checks against its pin and unpacks the image of every
    /// task of `tasks` that has one, on a blocking thread. `sandboxed`: whether the
    /// command's runs are confined by bwrap, without which no image can be a root.
    ///
    /// # Errors
    ///
    /// The first image that cannot be had, is not the pinned one, or cannot run.
    pub async fn prepare(
        tasks: &[LoadedTask],
        cache: &ImageCacheArgs,
        sandboxed: bool,
    ) -> Result<TaskImages, TaskImageError> {
        let wanted: Vec<(
            String,
            bench_image::ImageRef,
            Option<bench_image::Digest>,
            _,
        )> = tasks
            .iter()
            .filter_map(|t| {
                let image = t.image()?;
                Some((
                    t.task.id.clone(),
                    image,
                    t.image_pin.clone(),
                    t.task.image.clone()?,
                ))
            })
            .collect();
        if wanted.is_empty() {
            return Ok(TaskImages::default());
        }
        if !sandboxed {
            return Err(TaskImageError::NeedsSandbox(wanted[0].0.clone()));
        }
        let dir = cache.dir()?;
        let bound = cache.max_gb.saturating_mul(1 << 30);
        tokio::task::spawn_blocking(move || {
            let store = ImageStore::open(&dir, bound).map_err(|error| TaskImageError::Image {
                task: wanted[0].0.clone(),
                error,
            })?;
            let mut by_task = BTreeMap::new();
            for (task, reference, pin, declared) in wanted {
                let image = store
                    .prepare(&reference, pin.as_ref())
                    .map_err(|error| TaskImageError::Image {
                        task: task.clone(),
                        error,
                    })?;
                let workdir = declared.workdir.as_deref().unwrap_or(&image.info().working_dir);
                if !image.root().join(workdir.trim_start_matches('/')).is_dir() {
                    return Err(TaskImageError::NoWorkdir {
                        task,
                        workdir: workdir.to_owned(),
                    });
                }
                tracing::info!(task, image = %reference, digest = %image.info().digest, "task image ready");
                let held = Held {
                    image,
                    reference: declared.reference.to_string(),
                    workdir: declared.workdir,
                    activate: declared.activate,
                };
                by_task.insert(task, Arc::new(held));
            }
            Ok(TaskImages { by_task })
        })
        .await
        .expect("the image preparation does not panic")
    }

    /// The root the sandbox of a run of `task` gets; `None` for a task without an image.
    pub fn root(&self, task: &str) -> Option<ImageRoot> {
        let held = self.by_task.get(task)?;
        let info = held.image.info();
        let mut env: Vec<(String, String)> = info
            .env
            .iter()
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if let Some(prefix) = &held.activate {
            for (key, value) in &mut env {
                if key == "PATH" {
                    *value = format!("{prefix}/bin:{value}");
                }
            }
            env.push(("CONDA_PREFIX".into(), prefix.clone()));
        }
        Some(ImageRoot {
            root: held.image.root().to_path_buf(),
            workdir: PathBuf::from(held.workdir.as_deref().unwrap_or(&info.working_dir)),
            env,
        })
    }

    /// `run_start.image` of a run of `task`.
    pub fn record(&self, task: &str) -> Option<EnvironmentImage> {
        let held = self.by_task.get(task)?;
        Some(EnvironmentImage {
            reference: held.reference.clone(),
            digest: held.image.info().digest.to_string(),
        })
    }
}
