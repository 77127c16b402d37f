//! How Smith's JSON values are read: the `deserialize_with` functions that turn its
//! encodings (`Duration` objects, widened f32, PascalCase enums, externally tagged enums)
//! into this crate's values. Each encoding is converted here and nowhere else. It knows
//! only this crate's types, none of the mapped Smith payloads (`payload`) or the envelope
//! (`envelope`), which read through it.

use serde::de::{Error, IntoDeserializer};
use serde::{Deserialize, Deserializer};

use crate::payload::{ContextDecision, ExitKind, Failure, FailureRoot, SandboxLimits};
use crate::payload::{FinalErrorState, RecoveryAttempt, SegmentType};

/// The shortest decimal that reads back as the same `f32`: Smith's f32 fields arrive
/// widened to f64 (`0.7f32` as `0.699999988079071`), which is not what the producer set.
/// `None` when the value is outside the f32 range, which no f32 field can hold.
pub fn shortest_f32_decimal(widened: f64) -> Option<f64> {
    // The cast is the point: the value was an f32 before Smith widened it. Display of an
    // f32 prints the shortest digits that round-trip to it.
    #[allow(clippy::cast_possible_truncation)]
    let narrow = widened as f32;
    if !narrow.is_finite() {
        return None;
    }
    narrow.to_string().parse::<f64>().ok()
}

fn f32_from<E: Error>(widened: f64) -> Result<f64, E> {
    shortest_f32_decimal(widened)
        .ok_or_else(|| E::custom(format!("{widened} is outside the f32 range")))
}

/// An f32 field (see [`shortest_f32_decimal`]).
pub(super) fn f32_value<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    f32_from(f64::deserialize(d)?)
}

/// An `Option<f32>` field.
pub(super) fn f32_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)?.map(f32_from).transpose()
}

/// A Rust `Duration` as serde writes it, `{secs, nanos}`, in milliseconds. The rest below
/// a millisecond is dropped, as `Duration::as_millis` does.
pub(super) fn duration_ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Duration {
        secs: u64,
        nanos: u32,
    }
    let Duration { secs, nanos } = Duration::deserialize(d)?;
    if nanos >= 1_000_000_000 {
        return Err(D::Error::custom(format!(
            "nanos {nanos} is not below 1 000 000 000"
        )));
    }
    secs.checked_mul(1000)
        .and_then(|ms| ms.checked_add(u64::from(nanos / 1_000_000)))
        .ok_or_else(|| D::Error::custom(format!("{secs} s does not fit in u64 milliseconds")))
}

/// A unit variant of a Smith enum (`"SearchResults"`) read as this crate's snake_case
/// enum (`search_results`).
pub(super) fn pascal_case<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let name = String::deserialize(d)?;
    // A snake_case name is not a Smith variant; refuse it rather than accept both.
    if !name.starts_with(|c: char| c.is_ascii_uppercase()) || name.contains('_') {
        return Err(D::Error::custom(format!(
            "{name:?} is not a PascalCase variant"
        )));
    }
    let mut snake = String::with_capacity(name.len() + 4);
    for (i, c) in name.char_indices() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    T::deserialize(snake.into_deserializer())
        .map_err(|e: serde::de::value::Error| D::Error::custom(format!("{name:?}: {e}")))
}

/// Smith's `ExitKind`: unit variants for outcomes without a message, newtype variants
/// (`{"Flake": "msg"}`) for those with one; the kind and its message.
pub(super) fn exit_kind<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<(ExitKind, Option<String>), D::Error> {
    #[derive(Deserialize)]
    enum Wire {
        Ok,
        Deterministic(String),
        Flake(String),
        Oom,
        Timeout,
        UserError(String),
        SystemError(String),
    }
    Ok(match Wire::deserialize(d)? {
        Wire::Ok => (ExitKind::Ok, None),
        Wire::Deterministic(m) => (ExitKind::Deterministic, Some(m)),
        Wire::Flake(m) => (ExitKind::Flake, Some(m)),
        Wire::Oom => (ExitKind::Oom, None),
        Wire::Timeout => (ExitKind::Timeout, None),
        Wire::UserError(m) => (ExitKind::UserError, Some(m)),
        Wire::SystemError(m) => (ExitKind::SystemError, Some(m)),
    })
}

/// Smith's `SandboxLimits`: this crate's, with `cpu_cores` an f32.
pub(super) fn sandbox_limits<'de, D: Deserializer<'de>>(d: D) -> Result<SandboxLimits, D::Error> {
    #[derive(Deserialize)]
    struct Wire {
        memory_mb: u64,
        #[serde(deserialize_with = "f32_value")]
        cpu_cores: f64,
        disk_mb: u64,
        network_enabled: bool,
        execution_timeout_ms: u64,
    }
    let w = Wire::deserialize(d)?;
    Ok(SandboxLimits {
        memory_mb: Some(w.memory_mb),
        cpu_cores: w.cpu_cores,
        disk_mb: w.disk_mb,
        network_enabled: w.network_enabled,
        execution_timeout_ms: w.execution_timeout_ms,
    })
}

/// Smith's `PruningDecision`: this crate's [`ContextDecision`], with a PascalCase
/// `segment_type` and an integer `segment_kb`.
pub(super) fn context_decision<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<ContextDecision, D::Error> {
    #[derive(Deserialize)]
    struct Wire {
        segment_id: String,
        kept: bool,
        segment_kb: u64,
        #[serde(deserialize_with = "pascal_case")]
        segment_type: SegmentType,
        impact_probe_ev: Option<f64>,
        pruning_algorithm: String,
        confidence_score: f64,
    }
    let w = Wire::deserialize(d)?;
    Ok(ContextDecision {
        segment_id: w.segment_id,
        kept: w.kept,
        // KiB counts well below 2^53 are exact in f64.
        #[allow(clippy::cast_precision_loss)]
        segment_kb: w.segment_kb as f64,
        segment_type: w.segment_type,
        impact_probe_ev: w.impact_probe_ev,
        pruning_algorithm: w.pruning_algorithm,
        confidence_score: w.confidence_score,
    })
}

/// Smith's `FailureAnalysis`: this crate's [`Failure`], with an externally tagged
/// `first_failure_root`.
pub(super) fn failure<'de, D: Deserializer<'de>>(d: D) -> Result<Failure, D::Error> {
    #[derive(Deserialize)]
    struct Wire {
        #[serde(deserialize_with = "failure_root")]
        first_failure_root: FailureRoot,
        recovery_attempts: Vec<RecoveryAttempt>,
        final_error_state: FinalErrorState,
        contributing_factors: Vec<String>,
        remediation_suggestions: Vec<String>,
    }
    let w = Wire::deserialize(d)?;
    Ok(Failure {
        first_failure_root: w.first_failure_root,
        recovery_attempts: w.recovery_attempts,
        final_error_state: w.final_error_state,
        contributing_factors: w.contributing_factors,
        remediation_suggestions: w.remediation_suggestions,
    })
}

/// Smith's `FailureRoot` (`{"Build": {…}}`) as this crate's `kind`-tagged one. The only
/// difference in content: `Context.pruning_error` is a bool in Smith and text here, so it
/// becomes `"true"` or `"false"`.
fn failure_root<'de, D: Deserializer<'de>>(d: D) -> Result<FailureRoot, D::Error> {
    #[derive(Deserialize)]
    enum Wire {
        Build {
            error_type: String,
            command: String,
        },
        Import {
            missing_module: String,
            suggested_fix: String,
        },
        Path {
            invalid_path: String,
            expected_location: String,
        },
        Flake {
            flaky_test: String,
            failure_rate: f64,
        },
        Semantic {
            logic_error: String,
            context: String,
        },
        Planning {
            reasoning_error: String,
            step_number: u32,
        },
        Context {
            missing_info: String,
            pruning_error: bool,
        },
        Tool {
            tool_name: String,
            usage_error: String,
        },
    }
    Ok(match Wire::deserialize(d)? {
        Wire::Build {
            error_type,
            command,
        } => FailureRoot::Build {
            error_type,
            command,
        },
        Wire::Import {
            missing_module,
            suggested_fix,
        } => FailureRoot::Import {
            missing_module,
            suggested_fix,
        },
        Wire::Path {
            invalid_path,
            expected_location,
        } => FailureRoot::Path {
            invalid_path,
            expected_location,
        },
        Wire::Flake {
            flaky_test,
            failure_rate,
        } => FailureRoot::Flake {
            flaky_test,
            failure_rate,
        },
        Wire::Semantic {
            logic_error,
            context,
        } => FailureRoot::Semantic {
            logic_error,
            context,
        },
        Wire::Planning {
            reasoning_error,
            step_number,
        } => FailureRoot::Planning {
            reasoning_error,
            step_number,
        },
        Wire::Context {
            missing_info,
            pruning_error,
        } => FailureRoot::Context {
            missing_info,
            pruning_error: pruning_error.to_string(),
        },
        Wire::Tool {
            tool_name,
            usage_error,
        } => FailureRoot::Tool {
            tool_name,
            usage_error,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn widened_f32_values_get_their_shortest_decimal() {
        for (widened, shortest) in [
            (0.699_999_988_079_071, 0.7),
            (0.800_000_011_920_929, 0.8),
            (0.600_000_023_841_857_9, 0.6),
            (0.899_999_976_158_142_1, 0.9),
            (2.0, 2.0),
            (4.5, 4.5),
            (0.1, 0.1),
        ] {
            assert_eq!(shortest_f32_decimal(widened), Some(shortest), "{widened}");
        }
        assert_eq!(shortest_f32_decimal(1e39), None);
    }

    #[test]
    fn durations_become_milliseconds() {
        let ms = |v: serde_json::Value| duration_ms(v).map_err(|e| e.to_string());
        assert_eq!(ms(json!({"secs": 300, "nanos": 0})), Ok(300_000));
        assert_eq!(ms(json!({"secs": 1, "nanos": 999_999})), Ok(1000));
        assert_eq!(ms(json!({"secs": 0, "nanos": 2_500_000})), Ok(2));
        assert!(ms(json!({"secs": 0, "nanos": 1_000_000_000})).is_err());
        assert!(ms(json!({"secs": u64::MAX, "nanos": 0})).is_err());
        assert!(ms(json!(300)).is_err());
    }

    #[test]
    fn pascal_case_variants_become_snake_case() {
        let seg = |s: &str| pascal_case::<_, SegmentType>(json!(s)).map_err(|e| e.to_string());
        assert_eq!(seg("ErrorLogs"), Ok(SegmentType::ErrorLogs));
        assert_eq!(seg("FileContent"), Ok(SegmentType::FileContent));
        assert!(seg("error_logs").is_err());
        assert!(seg("errorLogs").is_err());
        assert!(seg("Logs").is_err());
    }
}
