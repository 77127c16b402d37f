//! One external-agent run: set up the task's scratch copy, emit `run_start`, start the
//! agent program with the run's ids and config in its environment, turn every line it
//! writes on stdout into an event ([`super::protocol`]), then close the run.
//!
//! The bridge owns the run's envelope and its ends: `run_start` and `run_stop` are always
//! its own. It always judges the scratch copy with the task's judge (as `agent-runner run`
//! does), and the run's totals are the sums of the events it saw. An agent never judges
//! itself: a `run_stop` line from it is its report (its chosen exit status and reason) and
//! the rest of it is kept as `run_stop.claim`, with the fields that disagree.
//! A malformed line is logged and counted, never fatal.
//!
//! The agent runs in the sandbox ([`bench_sandbox::Confinement`]), in its scratch copy (also
//! `BENCH_WORKDIR`): it sees its task's brief (`BENCH_TASK_DIR`: the problem statement, not
//! the task directory, whose answer key and judge no agent sandbox mounts), the directories of the
//! files named on its command line and those of `read_only`, all read-only, and no other
//! part of the caller's directory; one of those the sandbox cannot show
//! ([`bench_sandbox::mountable_read_only`]) refuses the run before anything is
//! published. Its whole process tree is killed when the run's
//! `execution_timeout_ms` passes or on shutdown, whether or not it closed its stdout: an
//! agent is judged by its exit within the time limit, never by its stdout closing.
//!
//! The agent's stderr is passed on to the runner's log line by line, control characters
//! escaped, lines over [`STDERR_LINE_BYTES`] cut, and at most [`STDERR_LINES_SHOWN`] lines
//! per run (then a count of the rest); its malformed stdout lines are logged, escaped, the
//! first [`SKIPS_SHOWN`] of them (then a count). An agent whose sandbox could not be set
//! up, or could not be started at all, did not run: its run ends `exit_environment`,
//! unjudged.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus as ProcessStatus, Stdio};
use std::time::Instant;

use bench_delivery::{DeliveryReport, PublishSetup, PublisherHandle};
use bench_sandbox::{
    mountable_read_only, Admit, Bind, Confinement, Escaped, SandboxMode, SandboxedCommand, Scratch,
    TreeGuard, WarnLimiter,
};
use bench_schemas::{ExitKind, ExitStatus, Payload, RunClaim, RunSequencer, RunStop};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio_util::sync::CancellationToken;

use super::program;
use super::protocol::{parse_line, LineError, MAX_LINE_BYTES};
use super::ExecError;
use crate::error::Error;
use crate::limits::RunEnd;
use crate::recorder::RunRecorder;
use crate::run_lifecycle::{self, Opening, RunSummary};
use crate::runner::{finish_optional_publisher, start_optional_publisher};
use crate::task_image::{ImageCacheArgs, TaskImages};
use bench_judge::Verdict;
use bench_task::{LoadOptions, LoadedScenario, LoadedTask};

/// Lines of an agent's stderr shown per run; the rest are counted.
pub const STDERR_LINES_SHOWN: u64 = 200;

/// Bytes of one stderr line shown; the rest of the line is cut.
pub const STDERR_LINE_BYTES: usize = 4096;

/// Malformed agent lines logged per run; the rest are counted.
pub const SKIPS_SHOWN: u64 = 20;

/// Bytes of the agent's stderr kept to say why its sandbox could not be set up (bwrap's
/// message is its first line).
const SETUP_MESSAGE_BYTES: usize = 1024;

/// How long the rest of the agent's stderr is read once its process tree is killed.
const STDERR_DRAIN_AFTER_KILL: std::time::Duration = std::time::Duration::from_secs(1);

/// Everything `agent-runner exec` needs, validated.
#[derive(Debug, Clone)]
pub struct ExecConfig {
    /// The agent program and its arguments.
    pub command: Vec<OsString>,
    /// The scenario file giving the run config.
    pub scenario: PathBuf,
    /// The task (one of the scenario's).
    pub task: String,
    /// Run even if the scenario, task or fixture differs from `pins.toml`.
    pub allow_unpinned: bool,
    /// Replaces the scenario's seed.
    pub seed: Option<u64>,
    /// `policy_id` of the run. Default [`super::program::default_policy_id`].
    pub policy_id: Option<String>,
    /// `host` on every event.
    pub host: String,
    /// Per-run artifacts go to `<out_dir>/<run_id>/`; `None` = none written.
    pub out_dir: Option<PathBuf>,
    /// Where events go; `None` = local artifacts only.
    pub publish: Option<PublishSetup>,
    /// Whether the agent must run in the sandbox (`--unsandboxed`).
    pub sandbox: SandboxMode,
    /// Where task images are cached.
    pub images: ImageCacheArgs,
    /// Host directories the agent may read besides its task (its own code, when the
    /// command line does not name it as a file).
    pub read_only: Vec<PathBuf>,
    /// The run's experiment, tags and planned runs (`--experiment`, `--tag`).
    pub experiment: bench_schemas::ExperimentRef,
    /// Prices per model (`--prices`): the agent's calls of a model it names are priced
    /// from it (`pricing_source` `table`); others keep what the agent reported.
    pub prices: Option<bench_pricing::PriceTable>,
}

/// What happened.
#[derive(Debug, Clone)]
pub struct ExecReport {
    /// The run.
    pub summary: RunSummary,
    /// Non-blank lines the agent wrote on stdout.
    pub lines: u64,
    /// Lines skipped as malformed (each was logged with its line number and reason).
    pub skipped: u64,
    /// The agent's exit code; `None` when it was killed by a signal, or never started
    /// (its sandbox could not be set up).
    pub agent_exit: Option<i32>,
    /// What the publisher did; `None` without publishing.
    pub delivery: Option<DeliveryReport>,
}

/// How the agent's part of the run ended.
enum AgentEnd {
    /// Its stdout closed and it exited.
    Exited(ProcessStatus),
    /// `execution_timeout_ms` passed; it was killed.
    TimedOut,
    /// Shutdown; it was killed.
    Shutdown,
    /// Its sandbox could not be set up or it could not be started: it never ran
    /// (the confinement says why).
    NotStarted,
}

impl AgentEnd {
    /// The agent's exit code; `None` when it was killed or never started.
    fn exit_code(&self) -> Option<i32> {
        match self {
            AgentEnd::Exited(status) => status.code(),
            AgentEnd::TimedOut | AgentEnd::Shutdown | AgentEnd::NotStarted => None,
        }
    }
}

/// Runs the agent program of `config` as one run, until it exits, times out or
/// `shutdown` fires; then drains the publisher.
pub async fn run(config: ExecConfig, shutdown: CancellationToken) -> Result<ExecReport, Error> {
    let program = config
        .command
        .first()
        .ok_or_else(|| Error::Config("no agent command given (after --)".into()))?;
    // Before anything is published: a program that cannot start leaves no run behind.
    program::locate(program)?;
    let scenario = LoadedScenario::load(
        &config.scenario,
        &LoadOptions {
            tasks: Some(vec![config.task.clone()]),
            allow_unpinned: config.allow_unpinned,
        },
    )?;
    let Some(task) = scenario.tasks.first() else {
        return Err(Error::Config(format!("task {} not loaded", config.task)));
    };
    let run_config = &scenario.scenario.config;
    let seed = config.seed.unwrap_or(scenario.scenario.seed);
    let confinement = config
        .sandbox
        .confinement(&run_config.sandbox_limits, false)?
        .with_environment(task.environment_dir());
    let images = TaskImages::prepare(
        std::slice::from_ref(task),
        &config.images,
        confinement.is_sandboxed(),
    )
    .await?;
    let confinement = confinement.with_image(images.root(&task.task.id));
    let launch = Launch::prepare(&config, task, &confinement)?;
    let publisher = start_optional_publisher(config.publish.as_ref()).await?;
    let started = Instant::now();
    let mut run = opening(
        &config,
        &scenario,
        task,
        seed,
        publisher.as_ref().map(|p| p.handle()),
    )
    .open(
        run_lifecycle::sandbox_in_force(Some(&confinement), run_config),
        images.record(&task.task.id),
    )?;

    let env = agent_env(run.rec.sequencer(), seed, &scenario, task, &launch);
    let mut state = ReadState {
        prices: config.prices.clone(),
        ..ReadState::default()
    };
    let end = match launch.start(&confinement, &env) {
        Some((mut child, tree)) => {
            watch_agent(
                &mut child,
                &tree,
                &mut run.rec,
                &mut state,
                &confinement,
                run_config.execution_timeout_ms,
                &shutdown,
            )
            .await?
        }
        None => AgentEnd::NotStarted,
    };
    state.report_suppressed();
    let agent_exit = end.exit_code();
    let ended = Ended {
        end,
        agent_stop: state.agent_stop.take(),
        tools: state.tools,
        forged: state.forged,
        started,
    };
    let (result, verdict) = close_run(
        &mut run.rec,
        ended,
        task,
        &launch.scratch,
        &confinement,
        run_config.sandbox_limits.network_enabled,
        &shutdown,
    )
    .await?;
    let summary = run.close(result, verdict.as_ref())?;
    let delivery = finish_optional_publisher(publisher).await?;
    Ok(ExecReport {
        summary,
        lines: state.lines,
        skipped: state.skipped,
        agent_exit,
        delivery,
    })
}

/// Who runs `task` of `scenario` with `seed`, and where its events go.
fn opening<'a>(
    config: &'a ExecConfig,
    scenario: &'a LoadedScenario,
    task: &'a LoadedTask,
    seed: u64,
    publisher: Option<PublisherHandle>,
) -> Opening<'a> {
    Opening {
        scenario,
        task,
        policy_id: config
            .policy_id
            .clone()
            .unwrap_or_else(|| program::default_policy_id(&config.command)),
        seed,
        host: &config.host,
        // The agent runs its own tools: the runner caps none of their output.
        output_cap: None,
        sweep: None,
        experiment: config.experiment.clone(),
        publisher,
        out_dir: config.out_dir.as_deref(),
    }
}

/// The agent program as it is started: its command line with the files it names by
/// absolute path, what it may read, its scratch copy and its brief.
struct Launch {
    /// The program and its arguments.
    words: Vec<OsString>,
    /// Host directories mounted read-only.
    read_only: Vec<PathBuf>,
    /// The scratch copy of the task's fixture (`BENCH_WORKDIR`).
    scratch: Scratch,
    /// Holds the problem statement; deleted on drop, so kept for the run.
    _brief: tempfile::TempDir,
    /// The brief's directory (`BENCH_TASK_DIR`).
    task_dir: PathBuf,
}

impl Launch {
    /// Everything the agent needs before it starts, checked before anything is published:
    /// a path the agent would not find refuses the run.
    fn prepare(
        config: &ExecConfig,
        task: &LoadedTask,
        confinement: &Confinement,
    ) -> Result<Launch, Error> {
        // Files named on the command line (the agent's script) are passed by absolute
        // path, since the agent starts in its scratch copy, and their directories are
        // readable.
        let mut read_only = config
            .read_only
            .iter()
            .map(|dir| {
                dir.canonicalize()
                    .map_err(|e| Error::Config(format!("--sandbox-ro {}: {e}", dir.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut words = Vec::with_capacity(config.command.len());
        for (i, word) in config.command.iter().enumerate() {
            let path = Path::new(word);
            // The program itself is looked up on PATH unless it has a `/`.
            let names_file = (i > 0 || path.components().count() > 1) && path.is_file();
            match names_file.then(|| path.canonicalize().ok()).flatten() {
                Some(file) => {
                    read_only.extend(file.parent().map(Path::to_path_buf));
                    words.push(file.into_os_string());
                }
                None => words.push(word.clone()),
            }
        }
        if confinement.is_sandboxed() {
            read_only = mountable_read_only(&read_only).map_err(ExecError::from)?;
        }
        let scratch = task
            .workspace(confinement.workspace_bound())
            .map_err(ExecError::from)?;
        // What the agent may know of its task: the problem statement. The task directory
        // holds the answer key (`[[solution]]`) and the judge's files, so it is never
        // mounted.
        let brief = task_brief(&task.task.problem).map_err(ExecError::Brief)?;
        let task_dir = brief.path().canonicalize().map_err(ExecError::Brief)?;
        Ok(Launch {
            words,
            read_only,
            scratch,
            _brief: brief,
            task_dir,
        })
    }

    /// Starts the agent under `confinement` with `env`. A sandbox that cannot be prepared
    /// or a fork the runner cannot make is the host's failure, not the agent's: `None`,
    /// and the run ends `exit_environment` (the confinement records why).
    fn start(
        &self,
        confinement: &Confinement,
        env: &[(String, String)],
    ) -> Option<(tokio::process::Child, TreeGuard)> {
        let (program, args) = self.words.split_first()?;
        let (mut command, tree) = confinement
            .command(&SandboxedCommand {
                program,
                args,
                workdir: self.scratch.root(),
                read_only: &self.read_only,
                env,
                // A bind applied after the sandbox's private /tmp, where the brief lives.
                binds: &[Bind {
                    src: self.task_dir.clone(),
                    dest: self.task_dir.clone(),
                    read_only: true,
                }],
            })
            .ok()?;
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                confinement.record_setup_failure(format!(
                    "cannot start {}: {e}",
                    Escaped(&program.to_string_lossy())
                ));
            })
            .ok()?;
        Some((child, tree))
    }
}

/// The agent's environment variables: the run's ids and config, its problem, its scratch
/// copy and its brief.
fn agent_env(
    seq: &RunSequencer,
    seed: u64,
    scenario: &LoadedScenario,
    task: &LoadedTask,
    launch: &Launch,
) -> Vec<(String, String)> {
    [
        ("BENCH_RUN_ID", seq.run_id.to_string()),
        ("BENCH_TASK_ID", seq.task_id.clone()),
        ("BENCH_POLICY_ID", seq.policy_id.clone()),
        ("BENCH_SEED", seed.to_string()),
        ("BENCH_CFG_HASH", seq.cfg_hash.to_string()),
        ("BENCH_HOST", seq.host.clone()),
        (
            "BENCH_RUN_CONFIG",
            bench_schemas::canonical_json(
                &serde_json::to_value(&scenario.scenario.config).unwrap_or_default(),
            ),
        ),
        ("BENCH_PROBLEM", task.task.problem.clone()),
        ("BENCH_WORKDIR", launch.scratch.root().display().to_string()),
        ("BENCH_TASK_DIR", launch.task_dir.display().to_string()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .to_vec()
}

/// A directory holding only `problem.md` (the problem statement): the agent's
/// `BENCH_TASK_DIR`. Deleted on drop.
fn task_brief(problem: &str) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("bench-brief-").tempdir()?;
    std::fs::write(dir.path().join("problem.md"), problem)?;
    Ok(dir)
}

/// Reads the agent's stdout into events and passes its stderr on to the log until it
/// exits, `execution_timeout_ms` passes or `shutdown` fires; records a sandbox bwrap could
/// not set up on the run's confinement.
async fn watch_agent(
    child: &mut tokio::process::Child,
    tree: &TreeGuard,
    rec: &mut RunRecorder,
    state: &mut ReadState,
    confinement: &Confinement,
    execution_timeout_ms: u64,
    shutdown: &CancellationToken,
) -> Result<AgentEnd, Error> {
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::Config("agent stdout not captured".into()))?;
    let stderr = child
        .stderr
        .take()
        .map(|stderr| tokio::spawn(pass_on_stderr(stderr)));
    let deadline =
        tokio::time::Instant::now() + std::time::Duration::from_millis(execution_timeout_ms);
    let mut reader = LineReader::new(stdout);
    let mut stdout_open = true;
    let end = loop {
        tokio::select! {
            line = reader.next(), if stdout_open => match line {
                Ok(Some(line)) => state.take(rec, line)?,
                // Closing stdout ends nothing: the exit and the time limit decide.
                Ok(None) => stdout_open = false,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the agent's stdout; stopping it");
                    kill_tree(child, tree).await;
                    break AgentEnd::Exited(child.wait().await.map_err(ExecError::Wait)?);
                }
            },
            exited = child.wait(), if !stdout_open => {
                let status = exited.map_err(ExecError::Wait)?;
                if tree.setup_completed() {
                    break AgentEnd::Exited(status);
                }
                break AgentEnd::NotStarted;
            }
            _ = tokio::time::sleep_until(deadline) => {
                kill_tree(child, tree).await;
                break AgentEnd::TimedOut;
            }
            _ = shutdown.cancelled() => {
                kill_tree(child, tree).await;
                break AgentEnd::Shutdown;
            }
        }
    };
    // Whatever the agent left running in the background goes with it.
    kill_tree(child, tree).await;
    // The tree is gone, so stderr ends now; unless an unsandboxed agent left a process
    // of another group holding it, which must not hold the run.
    let stderr_head = match stderr {
        Some(mut task) => match tokio::time::timeout(STDERR_DRAIN_AFTER_KILL, &mut task).await {
            Ok(head) => head.unwrap_or_default(),
            Err(_) => {
                task.abort();
                String::new()
            }
        },
        None => String::new(),
    };
    if matches!(end, AgentEnd::NotStarted) {
        confinement.record_setup_failure(format!(
            "bwrap did not start the agent: {}",
            stderr_head.trim()
        ));
    }
    Ok(end)
}

/// Passes the agent's stderr on to the log, line by line (see the module docs); returns
/// its first [`SETUP_MESSAGE_BYTES`] bytes, where bwrap's message is when it could not
/// set the sandbox up. Ends when every holder of the pipe is gone.
async fn pass_on_stderr(stderr: tokio::process::ChildStderr) -> String {
    let mut head = Vec::new();
    let mut limiter = WarnLimiter::new(STDERR_LINES_SHOWN);
    let mut show = |line: &[u8], cut: u64| match limiter.admit() {
        Admit::Show if cut > 0 => tracing::info!(
            "agent stderr: {} [... {cut} bytes of this line cut]",
            Escaped(&String::from_utf8_lossy(line))
        ),
        Admit::Show => tracing::info!("agent stderr: {}", Escaped(&String::from_utf8_lossy(line))),
        Admit::Count { suppressed } => {
            tracing::warn!(suppressed, "agent stderr: further lines not shown")
        }
        Admit::Quiet => {}
    };
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut cut = 0u64;
    loop {
        let buf = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => buf,
        };
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let used = found.unwrap_or(buf.len());
        let room = SETUP_MESSAGE_BYTES.saturating_sub(head.len());
        head.extend_from_slice(&buf[..room.min(used)]);
        let keep = STDERR_LINE_BYTES
            .saturating_sub(line.len())
            .min(chunk.len());
        line.extend_from_slice(&chunk[..keep]);
        cut += (chunk.len() - keep) as u64;
        reader.consume(used);
        if found.is_some() {
            show(&line, cut);
            line.clear();
            cut = 0;
        }
    }
    if !line.is_empty() {
        show(&line, cut);
    }
    if limiter.suppressed() > 0 {
        tracing::warn!(
            suppressed = limiter.suppressed(),
            "agent stderr: lines not shown in all"
        );
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// How the agent said it chose to end, from its own `run_stop`: its status and reason,
/// except an infrastructure failure (`exit_environment`, `exit_api`), which would take the
/// run out of every success rate on the agent's word alone. The runner alone decides that
/// a sandbox failed, and it cannot check an external agent's provider, so such a claim
/// ends the run `exit_error` (the claim itself stays in `run_stop.claim`).
fn agent_declared_end(status: ExitStatus, reason: Option<&str>) -> RunEnd {
    match status {
        ExitStatus::Submitted => RunEnd::submitted(),
        ExitStatus::ExitEnvironment | ExitStatus::ExitApi => RunEnd::early(
            ExitStatus::ExitError,
            format!(
                "the agent declared {}, which only the runner can establish",
                status.as_str()
            ),
        ),
        status => RunEnd::early(status, reason.unwrap_or("the agent's own run_stop")),
    }
}

/// Kills the agent's process tree: `bwrap` (its pid namespace goes with it), the process
/// group it leads, and what is left in its cgroup; then reaps it.
async fn kill_tree(child: &mut tokio::process::Child, tree: &TreeGuard) {
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.kill().await;
    tree.kill();
}

/// The tool calls an agent reported, and how many of them failed.
#[derive(Debug, Clone, Copy, Default)]
struct ReportedTools {
    calls: u32,
    errors: u32,
}

impl ReportedTools {
    fn count(&mut self, exit_kind: ExitKind) {
        self.calls = self.calls.saturating_add(1);
        if exit_kind != ExitKind::Ok {
            self.errors = self.errors.saturating_add(1);
        }
    }

    /// `run_stop.tool_errors`: unknown when the agent reported no tool call, since it
    /// may have run commands it did not report (as for its model calls).
    fn errors(self) -> Option<u32> {
        (self.calls > 0).then_some(self.errors)
    }
}

/// What the reading loop keeps.
struct ReadState {
    lines: u64,
    skipped: u64,
    /// The tool calls the agent reported.
    tools: ReportedTools,
    /// The agent's own `run_stop`, once sent: a claim, never emitted as the run's end.
    agent_stop: Option<RunStop>,
    /// Lines refused because their type is another producer's (`integrity.forged_events`).
    forged: u32,
    /// The refused types already warned about (one warning each).
    forged_types: std::collections::BTreeSet<String>,
    /// Which skipped lines are logged.
    skips: WarnLimiter,
    /// Which lines with ignored envelope fields are logged.
    ignored: WarnLimiter,
    /// The price table the agent's model calls are priced from, when given.
    prices: Option<bench_pricing::PriceTable>,
}

impl Default for ReadState {
    fn default() -> Self {
        ReadState {
            lines: 0,
            skipped: 0,
            tools: ReportedTools::default(),
            agent_stop: None,
            forged: 0,
            forged_types: std::collections::BTreeSet::new(),
            skips: WarnLimiter::new(SKIPS_SHOWN),
            ignored: WarnLimiter::new(SKIPS_SHOWN),
            prices: None,
        }
    }
}

impl ReadState {
    /// Records one line, or logs why it is skipped (escaped: the reason can quote the
    /// line; and only the first [`SKIPS_SHOWN`], then counts).
    fn take(
        &mut self,
        rec: &mut RunRecorder,
        line: Result<Vec<u8>, LineError>,
    ) -> Result<(), Error> {
        if line
            .as_ref()
            .is_ok_and(|l| l.iter().all(u8::is_ascii_whitespace))
        {
            return Ok(());
        }
        self.lines += 1;
        let parsed = line.and_then(|bytes| {
            if self.agent_stop.is_some() {
                return Err(LineError::AfterRunStop);
            }
            parse_line(&bytes, rec.sequencer())
        });
        let event = match parsed {
            Ok(event) => event,
            Err(LineError::NotAnAgentEvent(kind)) => {
                self.forged = self.forged.saturating_add(1);
                if self.forged_types.insert(kind.clone()) {
                    tracing::warn!(line = self.lines, r#type = %Escaped(&kind), "the agent sent another producer's event type; refused, never published, counted in integrity.forged_events");
                }
                return Ok(());
            }
            Err(e) => {
                self.skipped += 1;
                match self.skips.admit() {
                    Admit::Show => {
                        let error = e.to_string();
                        tracing::warn!(line = self.lines, error = %Escaped(&error), "agent line skipped");
                    }
                    Admit::Count { suppressed } => {
                        tracing::warn!(
                            line = self.lines,
                            suppressed,
                            "agent lines skipped, not shown"
                        );
                    }
                    Admit::Quiet => {}
                }
                return Ok(());
            }
        };
        if !event.ignored.is_empty() {
            match self.ignored.admit() {
                Admit::Show => {
                    tracing::warn!(line = self.lines, fields = ?event.ignored, "envelope fields from the agent ignored");
                }
                Admit::Count { suppressed } => {
                    tracing::warn!(
                        line = self.lines,
                        suppressed,
                        "lines with envelope fields from the agent, not shown"
                    );
                }
                Admit::Quiet => {}
            }
        }
        match event.payload {
            // The agent's account, not the run's end: the runner judges and closes the run.
            Payload::RunStop(stop) => self.agent_stop = Some(stop),
            mut payload => {
                if let Payload::ToolCall(call) = &payload {
                    self.tools.count(call.exit_kind);
                }
                if let Payload::Deliberation(d) = &mut payload {
                    bench_pricing::price_from_table(self.prices.as_ref(), d);
                }
                rec.emit(event.step_id, payload)?;
            }
        }
        Ok(())
    }

    /// Logs how many warnings were not shown, once the agent is done.
    fn report_suppressed(&self) {
        if self.skips.suppressed() > 0 {
            tracing::warn!(
                skipped = self.skipped,
                not_shown = self.skips.suppressed(),
                "agent lines skipped in all"
            );
        }
        if self.ignored.suppressed() > 0 {
            tracing::warn!(
                not_shown = self.ignored.suppressed(),
                "lines with envelope fields from the agent ignored, not shown"
            );
        }
    }
}

/// How the agent's part of a run ended, and what the runner counted of it.
struct Ended {
    /// How the agent ended.
    end: AgentEnd,
    /// Its own `run_stop`, if it sent one.
    agent_stop: Option<RunStop>,
    /// The tool calls it reported.
    tools: ReportedTools,
    /// Its lines refused as other producers' events.
    forged: u32,
    /// When the run started.
    started: Instant,
}

/// Closes the run: the judge's final verdict on the scratch copy (protected files
/// restored first), a `failure` when the run is no result, what a SWE-bench verdict adds,
/// and the `run_stop` to emit, with the verdict (`None` on shutdown: nobody judged) for
/// `summary.json`. The `run_stop` holds the runner's own totals and how the agent ended:
/// the status and reason of its own `run_stop` when it sent one (its report of how it
/// chose to end), else its exit. What that `run_stop` declared beyond status and reason
/// is kept as `run_stop.claim`, with the fields that disagree. `network_enabled`: whether
/// the run's sandbox had a network.
async fn close_run(
    rec: &mut RunRecorder,
    ended: Ended,
    task: &LoadedTask,
    scratch: &Scratch,
    confinement: &Confinement,
    network_enabled: bool,
    shutdown: &CancellationToken,
) -> Result<(RunStop, Option<Verdict>), Error> {
    let run_end = run_end(&ended.end, confinement, ended.agent_stop.as_ref());
    let judged =
        run_lifecycle::judge_scratch(task, scratch.root(), confinement, run_end, shutdown).await;
    let (verdict, run_end, files_modified) = (&judged.verdict, &judged.end, judged.files_modified);
    let usage = rec.usage();
    let mut stop = RunStop {
        // The runner sees only the calls the agent reports: an agent that reports none
        // may still have used a model, so its call count, tokens and cost are unknown,
        // not 0.
        total_tokens: usage.total_tokens().filter(|_| usage.api_calls > 0),
        cost_usd: usage.cost_usd().filter(|_| usage.api_calls > 0),
        api_calls: Some(usage.api_calls).filter(|&calls| calls > 0),
        ..run_lifecycle::run_stop(
            rec,
            run_end,
            verdict.as_ref(),
            files_modified,
            ended.started,
            ended.tools.errors(),
            // The runner sees the agent's events, not its turns: nobody counted them.
            None,
        )
    };
    stop.claim = ended.agent_stop.map(|declared| claim(&declared, &stop));
    if let Some(claim) = stop.claim.as_ref().filter(|c| !c.discrepancies.is_empty()) {
        tracing::warn!(fields = %claim.discrepancies.join(", "), "the agent's run_stop disagrees with the runner's");
    }
    // Why the run is no result, when it is not.
    if let Some(why) = confinement.setup_failure() {
        rec.emit(
            None,
            Payload::Failure(run_lifecycle::environment_failure(why)),
        )?;
    }
    // An exec agent's commands are its own: the runner does not see them.
    let submitted = run_lifecycle::record_submission(
        rec,
        task,
        &judged,
        None,
        network_enabled,
        Some(ended.forged),
    )?;
    stop.diff_sha256 = submitted.diff_sha256;
    stop.final_diff = submitted.final_diff;
    stop.integrity = submitted.integrity;
    Ok((stop, judged.verdict))
}

/// How the run ended, from how the agent ended: a sandbox that could not be set up comes
/// first, then shutdown, then the agent's own `run_stop` (its report of how it chose to
/// end), then its exit.
fn run_end(end: &AgentEnd, confinement: &Confinement, agent_stop: Option<&RunStop>) -> RunEnd {
    match (end, confinement.setup_failure(), agent_stop) {
        // An agent that did not start always has its reason recorded.
        (_, Some(why), _) => run_lifecycle::environment_end(why.to_owned()),
        (AgentEnd::NotStarted, None, _) => {
            run_lifecycle::environment_end("the agent did not start".to_owned())
        }
        (AgentEnd::Shutdown, None, _) => RunEnd::early(ExitStatus::ExitError, "shutdown"),
        (_, None, Some(stop)) => {
            agent_declared_end(stop.exit_status, stop.early_stop_reason.as_deref())
        }
        (AgentEnd::Exited(status), None, None) if status.success() => RunEnd::submitted(),
        (AgentEnd::Exited(status), None, None) => {
            RunEnd::early(ExitStatus::ExitError, format!("agent exited with {status}"))
        }
        (AgentEnd::TimedOut, None, None) => {
            RunEnd::early(ExitStatus::ExitTimeout, "execution_timeout")
        }
    }
}

/// `declared` (the agent's `run_stop`) as a claim beside `actual` (the runner's).
fn claim(declared: &RunStop, actual: &RunStop) -> RunClaim {
    let mut discrepancies = Vec::new();
    let mut check = |field: &str, differs: bool| {
        if differs {
            discrepancies.push(field.to_owned());
        }
    };
    // Unknown on either side is no disagreement: nothing to compare.
    fn differ<T: PartialEq>(a: Option<T>, b: Option<T>) -> bool {
        matches!((a, b), (Some(a), Some(b)) if a != b)
    }
    check("api_calls", differ(declared.api_calls, actual.api_calls));
    check("cost_usd", differ(declared.cost_usd, actual.cost_usd));
    check(
        "final_score",
        differ(declared.final_score, actual.final_score),
    );
    check("success", differ(declared.success, actual.success));
    check(
        "tests_failed",
        differ(declared.tests_failed, actual.tests_failed),
    );
    check(
        "tests_passed",
        differ(declared.tests_passed, actual.tests_passed),
    );
    check(
        "total_tokens",
        differ(declared.total_tokens, actual.total_tokens),
    );
    RunClaim {
        success: declared.success,
        final_score: declared.final_score,
        tests_passed: declared.tests_passed,
        tests_failed: declared.tests_failed,
        total_tokens: declared.total_tokens,
        cost_usd: declared.cost_usd,
        api_calls: declared.api_calls,
        turns: declared.turns,
        discrepancies,
    }
}

/// Reads lines of at most [`MAX_LINE_BYTES`]; a longer line is consumed and reported as
/// [`LineError::Oversize`] without being held in memory.
struct LineReader<R> {
    inner: BufReader<R>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(inner: R) -> Self {
        LineReader {
            inner: BufReader::new(inner),
        }
    }

    /// The next line without its newline; `None` at end of input.
    async fn next(&mut self) -> std::io::Result<Option<Result<Vec<u8>, LineError>>> {
        let mut line = Vec::new();
        let mut oversize = false;
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok((!line.is_empty() || oversize).then(|| finish(line, oversize)));
            }
            let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if !oversize && line.len() + chunk.len() <= MAX_LINE_BYTES {
                line.extend_from_slice(chunk);
            } else {
                oversize = true;
                line = Vec::new();
            }
            let used = found.unwrap_or(buf.len());
            self.inner.consume(used);
            if found.is_some() {
                return Ok(Some(finish(line, oversize)));
            }
        }
    }
}

fn finish(mut line: Vec<u8>, oversize: bool) -> Result<Vec<u8>, LineError> {
    if oversize {
        return Err(LineError::Oversize);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.extend_from_slice(b"\n{\"a\":1}\r\nlast");
        let mut reader = LineReader::new(&input[..]);
        assert_eq!(
            reader.next().await.ok().flatten(),
            Some(Err(LineError::Oversize))
        );
        assert_eq!(
            reader.next().await.ok().flatten(),
            Some(Ok(b"{\"a\":1}".to_vec()))
        );
        assert_eq!(
            reader.next().await.ok().flatten(),
            Some(Ok(b"last".to_vec()))
        );
        assert_eq!(reader.next().await.ok().flatten(), None);
    }

    #[test]
    fn an_agent_cannot_declare_itself_an_infrastructure_failure() {
        for claimed in [ExitStatus::ExitEnvironment, ExitStatus::ExitApi] {
            let end = agent_declared_end(claimed, Some("provider down"));
            assert_eq!(end.status, ExitStatus::ExitError, "{claimed:?}");
            assert!(!end.is_infrastructure_failure());
        }
        let forfeit = agent_declared_end(ExitStatus::ExitForfeit, Some("gave up"));
        assert_eq!(forfeit.status, ExitStatus::ExitForfeit);
        assert_eq!(forfeit.reason.as_deref(), Some("gave up"));
        assert_eq!(
            agent_declared_end(ExitStatus::Submitted, None).status,
            ExitStatus::Submitted
        );
    }
}
