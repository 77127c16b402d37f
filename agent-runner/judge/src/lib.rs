//! bench-judge: judges what an agent submitted for a task. A run's submission is its
//! workspace as one bounded diff against the fixture; the verdict is computed from that
//! diff alone, applied to a fresh pristine copy and tested in the sandbox by runners the
//! judge owns (never from an exit code of code the agent wrote), with the judge's own
//! files put back first. What the agent did to those files, what it left out of the diff
//! and what it ran become the run's integrity flags.
//!
//! The one entry point is [`judge_submitted`]: judge this submission (the scratch copy a
//! run left) of this task ([`bench_task::LoadedTask`]) under this
//! [`Confinement`](bench_sandbox::Confinement), and get the [`Verdict`], the
//! [`Submission`] and whether the scratch copy itself judges otherwise. The probes between
//! turns ([`judge`]), re-grading a diff ([`judge_diff`], [`regrade`]) and the run's
//! [`integrity_flags`] are the same judge seen from elsewhere.
//!
//! It depends on the sandbox and task crates only, and imports nothing of the runner
//! (`tests/tests/module_graph.rs` checks).
//!
//! # Layout
//!
//! - `judge`: running a task's judge tests with the harness scripts it embeds, and the
//!   SWE-bench judge; [`Verdict`] and [`FailReason`].
//! - `submission`: what a run hands in, its workspace as one bounded diff ([`Submission`]).
//! - `submitted`: the final verdict of a run ([`judge_submitted`], [`cutoff_score`]).
//! - `protect`: the judge's own files put back before the verdict ([`Tampered`]).
//! - `integrity`: the integrity flags of a judged run ([`integrity_flags`]).

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod integrity;
mod judge;
mod protect;
mod submission;
mod submitted;

pub use integrity::{flags as integrity_flags, Seen as IntegritySeen};
pub use judge::{
    judge, judge_diff, judge_submission, regrade, unjudged, FailReason, FailedTest,
    SweBenchVerdict, Verdict, SCORING_VERSION,
};
pub use protect::{Change, Tampered};
pub use submission::{CaptureError, Excluded, Exclusion, Submission};
pub use submitted::{cutoff_score, judge_submitted};
