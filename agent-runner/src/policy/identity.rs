//! What of a model-backed policy enters its run config, and so `cfg_hash`, besides the
//! scenario's settings: the endpoint its calls go to, `max_tokens`, and the system prompt
//! and tool definitions it is given, by hash. Two runs that differ in any of these are
//! two policies, never pooled. [`identify`] fills them in wherever a run config is made
//! ready to run (`run`, a sweep's base config), [`refresh`] updates them after a sweep
//! changed a setting they derive from (the tools offered).

use bench_schemas::{sha256_hex, Hash256, RunConfig};
use serde_json::Value;

use super::llm::prompt;
use super::LlmConfig;
use bench_task::PolicyKind;

/// Sets the policy-identity fields of `config` for a `kind` policy reaching its provider
/// as `llm` says: all of them for a model-backed policy, none for one that calls no
/// model (a scripted policy, or a model-backed one with no provider, which does not
/// start).
pub fn identify(config: &mut RunConfig, kind: PolicyKind, llm: Option<&LlmConfig>) {
    let llm = llm.filter(|_| kind == PolicyKind::Llm);
    config.endpoint = llm.map(|l| normalise_endpoint(&l.provider.base_url));
    config.max_tokens = llm.and_then(|l| l.provider.max_tokens);
    config.system_prompt_sha256 = llm.map(|_| sha256_hex(prompt::SYSTEM_PROMPT.as_bytes()));
    config.tool_definitions_sha256 = llm.map(|_| tool_definitions_sha256(config));
}

/// Brings the identity of an identified `config` up to date after its settings changed
/// (a sweep applies its matrix to an identified base config): the tool definitions
/// hashed are those of the tools the config offers now. A config with no identity (a
/// policy that calls no model) stays without one.
pub fn refresh(config: &mut RunConfig) {
    if config.tool_definitions_sha256.is_some() {
        config.tool_definitions_sha256 = Some(tool_definitions_sha256(config));
    }
}

/// SHA-256 of the tool definitions a model is given with `config`'s tools.
fn tool_definitions_sha256(config: &RunConfig) -> Hash256 {
    let definitions = Value::Array(prompt::tool_definitions(&config.available_tools));
    sha256_hex(definitions.to_string().as_bytes())
}

/// The endpoint as `cfg_hash` knows it: scheme and host lower-cased, the scheme's default
/// port added when none is given (80 for http, 443 for https), user info dropped and a
/// trailing `/` trimmed. The host is kept as written (never resolved): `localhost` and
/// `127.0.0.1` are two endpoints.
pub fn normalise_endpoint(url: &str) -> String {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.trim_end_matches('/').to_owned();
    };
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = rest
        .find(['/', '?', '#'])
        .map_or((rest, ""), |at| rest.split_at(at));
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // A port follows the last `:` outside an IPv6 literal's brackets.
    let (host, port) = match host_port.rfind(':') {
        Some(at) if !host_port[at..].contains(']') => (&host_port[..at], &host_port[at + 1..]),
        _ => (host_port, ""),
    };
    let port = match (port, scheme.as_str()) {
        ("", "http") => "80",
        ("", "https") => "443",
        (port, _) => port,
    };
    let port = if port.is_empty() {
        String::new()
    } else {
        format!(":{port}")
    };
    format!(
        "{scheme}://{}{port}{}",
        host.to_ascii_lowercase(),
        path.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bench_schemas::Canonical;

    use super::*;
    use crate::provider::ProviderConfig;

    #[test]
    fn endpoints_are_normalised_only_by_case_default_port_and_trailing_slash() {
        for (given, expected) in [
            ("http://127.0.0.1:18080/v1/", "http://127.0.0.1:18080/v1"),
            ("HTTP://LocalHost/v1", "http://localhost:80/v1"),
            (
                "https://OpenRouter.ai/api/v1",
                "https://openrouter.ai:443/api/v1",
            ),
            ("http://127.0.0.1:1", "http://127.0.0.1:1"),
            ("http://user:secret@host:8000/v1", "http://host:8000/v1"),
            ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
            ("http://[::1]/v1", "http://[::1]:80/v1"),
        ] {
            assert_eq!(normalise_endpoint(given), expected, "{given}");
        }
        // Taken as written: the host is never resolved, the path's case is kept.
        assert_ne!(
            normalise_endpoint("http://localhost:8000/v1"),
            normalise_endpoint("http://127.0.0.1:8000/v1")
        );
        assert_ne!(
            normalise_endpoint("http://h:8000/V1"),
            normalise_endpoint("http://h:8000/v1")
        );
    }

    fn llm(base_url: &str, max_tokens: Option<u32>) -> LlmConfig {
        LlmConfig {
            provider: ProviderConfig {
                base_url: base_url.to_owned(),
                api_key: None,
                timeout: Duration::from_secs(1),
                max_tokens,
            },
            price_overrides: None,
            price_table: None,
            max_format_errors: 1,
            max_provider_failures: 1,
        }
    }

    fn llm_local() -> RunConfig {
        let text = include_str!("../../../scenarios/llm-local.toml");
        bench_task::Scenario::parse(std::path::Path::new("llm-local.toml"), text)
            .expect("llm-local scenario")
            .config
    }

    /// Golden: the `cfg_hash` of `scenarios/llm-local.toml` run against
    /// `http://127.0.0.1:18080/v1` with the provider's `max_tokens`. It changes when the
    /// config's fields, the system prompt or the tool definitions change: every stored
    /// `cfg_hash` then means another policy, so change it deliberately.
    #[test]
    fn every_setting_that_changes_behaviour_changes_cfg_hash() {
        let identified = |url: &str, max_tokens: Option<u32>| {
            let mut config = llm_local();
            identify(&mut config, PolicyKind::Llm, Some(&llm(url, max_tokens)));
            config
        };
        let base = identified("http://127.0.0.1:18080/v1", None);
        assert_eq!(
            base.canonical_hash().as_str(),
            "8e076eb0219ebc8ce1ddbe7742ce673bfd4aa0856db7daf90c87f511e5d799a9"
        );
        let mut variants = vec![
            identified("http://127.0.0.1:1/v1", None),
            identified("http://localhost:18080/v1", None),
            identified("http://127.0.0.1:18080", None),
            identified("http://127.0.0.1:18080/v1", Some(512)),
        ];
        let mut hotter = base.clone();
        hotter.temperature = Some(0.7);
        variants.push(hotter);
        let mut fewer_tools = base.clone();
        fewer_tools.available_tools.retain(|t| t != "grep");
        identify(
            &mut fewer_tools,
            PolicyKind::Llm,
            Some(&llm("http://127.0.0.1:18080/v1", None)),
        );
        assert_ne!(
            fewer_tools.tool_definitions_sha256,
            base.tool_definitions_sha256
        );
        variants.push(fewer_tools);
        for variant in &variants {
            assert_ne!(
                variant.canonical_hash(),
                base.canonical_hash(),
                "{variant:?}"
            );
        }
        // Only normalisation makes two written endpoints one.
        assert_eq!(
            identified("HTTP://127.0.0.1:18080/v1/", None).canonical_hash(),
            base.canonical_hash()
        );
        // A policy that calls no model states none of it.
        let mut scripted = base;
        identify(&mut scripted, PolicyKind::Scripted, None);
        assert_eq!(scripted, llm_local());
    }
}
