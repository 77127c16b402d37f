//! The check of a provider before the first run of `run` or `sweep` with an `llm` policy
//! ([`check`]): one cheap call, so that a wrong URL, key or model ends the command at
//! once with the provider's answer instead of failing every run.
//!
//! The call is the model listing (`GET {base}/models`): an unreachable provider, a
//! refused key (401, 403) or a wrong path (an HTTP error) fail it, and a listing that does
//! not name the model is a wrong model. A provider without a listing (404, 405, a reply
//! that is not JSON) is asked for a one-token completion of each model instead. The check
//! is one attempt, without the runs' retries.

use serde_json::Value;

use super::client::{CallError, ChatClient, ChatRequest, ClientError, Message};
use super::ProviderConfig;

/// Why the provider failed its check: no run was started.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The HTTP client could not be made.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The provider did not answer, or refused.
    #[error("the provider at {url} failed its check before the first run: {source}")]
    Call {
        /// The base URL.
        url: String,
        /// Its answer, or why there was none.
        #[source]
        source: CallError,
    },
    /// The listing does not name the model.
    #[error("provider {url} does not list model {model:?}; it lists {listed}")]
    NotListed {
        /// The base URL.
        url: String,
        /// The model asked for.
        model: String,
        /// The first models it lists.
        listed: String,
    },
}

/// Models named in a "does not list" error at most.
const LISTED_SHOWN: usize = 10;

/// Checks that the provider of `config` answers and serves every model of `models`.
pub async fn check(config: &ProviderConfig, models: &[&str]) -> Result<(), CheckError> {
    let client = ChatClient::new(config.clone())?;
    let url = config.base_url.clone();
    let call = |source| CheckError::Call {
        url: url.clone(),
        source,
    };
    match client.models().await {
        Ok(listing) => {
            let Some(ids) = listing.get("data").and_then(Value::as_array).map(|data| {
                data.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .collect::<Vec<_>>()
            }) else {
                return Ok(());
            };
            match models.iter().find(|model| !ids.contains(model)) {
                None => Ok(()),
                Some(model) => Err(CheckError::NotListed {
                    url: url.clone(),
                    model: (*model).to_owned(),
                    listed: listed(&ids),
                }),
            }
        }
        Err(
            CallError::Status {
                status: 404 | 405, ..
            }
            | CallError::Malformed { .. },
        ) => {
            for model in models {
                client.chat(&one_token(model)).await.map_err(call)?;
            }
            Ok(())
        }
        Err(e) => Err(call(e)),
    }
}

/// The cheapest completion of `model`: one token.
fn one_token(model: &str) -> ChatRequest {
    ChatRequest {
        model: model.to_owned(),
        messages: vec![Message::User {
            content: "ping".to_owned(),
        }],
        tools: Vec::new(),
        temperature: None,
        max_tokens: Some(1),
        seed: 0,
    }
}

/// The first [`LISTED_SHOWN`] of `ids`, and how many more.
fn listed(ids: &[&str]) -> String {
    if ids.is_empty() {
        return "none".to_owned();
    }
    let shown: Vec<String> = ids
        .iter()
        .take(LISTED_SHOWN)
        .map(|id| format!("{id:?}"))
        .collect();
    match ids.len().saturating_sub(LISTED_SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}
