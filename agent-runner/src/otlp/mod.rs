//! `agent-runner otlp`: the command-line front-end of the `bench-otlp` receiver, which
//! turns OpenTelemetry traces and GenAI log events into benchmark events.
//!
//! - [`args`]: the command's flags → a validated [`OtlpConfig`].
//! - [`run`]: binds, starts the publisher, serves until shutdown, drains the publisher,
//!   and reports ([`OtlpReport`]) with the exit code of what was delivered.

pub(crate) mod args;

use std::fmt;

use bench_delivery::{DeliveryReport, Publisher};
use bench_otlp::{serve, Counts, Listeners};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Exit, Outcome};

pub use args::{OtlpArgs, OtlpConfig};

/// What `agent-runner otlp` reports when it stops.
#[derive(Debug, Clone)]
pub struct OtlpReport {
    /// What the receiver took.
    pub counts: Counts,
    /// What the publisher did with it.
    pub delivery: DeliveryReport,
}

impl fmt::Display for OtlpReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "otlp: {} requests, {} spans ({} rejected), {} GenAI log records ({} other \
             records rejected), {} metric data points (counted, not stored), {} events, {} \
             model calls after their run was closed, {} runs closed by --run-timeout, {} \
             closing spans and {} evaluation records after their run was closed",
            c.requests,
            c.spans,
            c.rejected_spans,
            c.log_records,
            c.rejected_log_records,
            c.metric_points,
            c.events,
            c.late_calls,
            c.timed_out_runs,
            c.late_roots,
            c.late_evaluations
        )?;
        writeln!(f, "{}", self.delivery)
    }
}

impl Outcome for OtlpReport {
    fn exit(&self) -> Exit {
        self.delivery.exit()
    }
}

/// Binds, starts the publisher, serves until `shutdown`, then drains the publisher.
pub async fn run(config: OtlpConfig, shutdown: CancellationToken) -> Result<OtlpReport, Error> {
    let listeners = Listeners::bind(&config.receiver).await?;
    let publisher = Publisher::connect(&config.publish).await?;
    // A publisher that failed for good (spool full or broken) can keep nothing more: stop.
    let stop = shutdown.child_token();
    let failed = publisher.failed();
    let stop_on_failure = stop.clone();
    let watch = tokio::spawn(async move {
        failed.cancelled().await;
        stop_on_failure.cancel();
    });
    let counts = serve(listeners, &config.receiver, publisher.handle(), stop).await;
    watch.abort();
    let delivery = publisher.finish().await?;
    Ok(OtlpReport {
        counts: counts?,
        delivery,
    })
}
