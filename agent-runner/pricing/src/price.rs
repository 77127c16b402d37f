//! What a model call costs: per-token prices, where they came from, and the exact cost of
//! a call's tokens.
//!
//! Prices come from, in order:
//! 1. overrides (`--prompt-price-per-mtok`, `--completion-price-per-mtok`, optionally
//!    `--cached-prompt-price-per-mtok`), for the run's own model only: `pricing_source =
//!    override`;
//! 2. the price table (`--prices FILE`, [`PriceTable`]), per model: `table`; a model the
//!    table does not name gets no price from it, never another model's;
//! 3. the provider's model listing (`GET {base}/models` in the OpenRouter shape:
//!    `data[].pricing.{prompt, completion, input_cache_read, input_cache_write}`, USD per
//!    token as decimal strings): `provider_api`;
//! 4. nothing: `unknown`. The call's `cost_usd` is then null (never 0) and a warning is
//!    logged when the price is looked up. A listed price of `"0"` is a free model and
//!    costs 0; a negative one (OpenRouter's `"-1"` for routers) is unknown.
//!
//! A call whose token counts are unknown (no answer, or an answer without usage) has a
//! null `cost_usd` and `pricing_source` `unknown` whatever the prices; they stay recorded.
//!
//! Prices are exact fixed-point numbers ([`TokenPrice`], 1e-18 USD units) parsed from
//! their decimal text, and a call's cost is summed in those units as integers ([`Usd`]);
//! the only rounding is the final conversion to the `f64` of `cost_usd`. A run's cost is
//! summed the same way: each call's `cost_usd` is read back as the exact decimal it
//! stands for, the sum is kept in integers and converted once, so `run_stop.cost_usd` is
//! the number nearest the exact sum (`0.1739628`, never `0.17396280000000017`). Cached prompt tokens are
//! billed at the cached price when one is known and at the prompt price otherwise; cache
//! writes likewise with the cache-write price; reasoning tokens at the completion price.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use bench_schemas::{Deliberation, PricingSource};
use serde::Deserialize;
use serde_json::Value;

use crate::usage::TokenUsage;

/// 1e-18 USD units per USD.
const UNITS_PER_USD: u128 = 1_000_000_000_000_000_000;
/// Decimal digits of a unit below one USD.
const UNIT_DIGITS: i32 = 18;

/// A price in USD per token, exact to 1e-18 USD.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenPrice {
    units: u128,
}

impl fmt::Debug for TokenPrice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}/Mtok", self.usd_per_mtok())
    }
}

/// A price text that is not a usable price.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    /// Not a decimal number (the text).
    #[error("{0:?} is not a decimal number")]
    NotANumber(String),
    /// Below zero (the text).
    #[error("{0:?} is negative")]
    Negative(String),
    /// Finer than the stored unit, 1e-18 USD, or too large for it (the text).
    #[error("{0:?} is more precise than 1e-18 USD per token or too large")]
    OutOfRange(String),
    /// One of the prompt and completion prices without the other.
    #[error("give both --prompt-price-per-mtok and --completion-price-per-mtok, or neither (a cached price alone is not enough)")]
    Incomplete,
    /// The price table could not be read or is not a table of prices.
    #[error("price table {path}: {reason}")]
    Table {
        /// The file.
        path: String,
        /// What is wrong, naming the model and key.
        reason: String,
    },
}

/// Prices per model, USD per million tokens, from a TOML file (`--prices FILE`):
///
/// ```toml
/// [models."gpt-4o-mini"]
/// prompt = 0.15
/// completion = 0.60
/// cached_prompt = 0.075   # optional, default: prompt
/// cache_write = 0.1875    # optional, default: prompt
/// source = "provider price page, 2026-11"
/// ```
///
/// Calls of a model it names are priced from it (`pricing_source` `table`); it prices no
/// other model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    models: Arc<BTreeMap<String, Prices>>,
}

/// One model's row of the file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableRow {
    prompt: toml::Value,
    completion: toml::Value,
    cached_prompt: Option<toml::Value>,
    cache_write: Option<toml::Value>,
    /// Where the prices come from: for the reader of the file.
    #[serde(rename = "source")]
    _source: Option<String>,
}

/// The file: `[models."<name>"]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    models: BTreeMap<String, TableRow>,
}

impl PriceTable {
    /// Reads the table of `path`.
    pub fn load(path: &Path) -> Result<PriceTable, PriceError> {
        let error = |reason: String| PriceError::Table {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        PriceTable::parse(&text).map_err(error)
    }

    /// Parses a table's text; the error names the model and key at fault.
    pub fn parse(text: &str) -> Result<PriceTable, String> {
        let file: TableFile = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut models = BTreeMap::new();
        for (model, row) in file.models {
            let price = |key: &str, value: &toml::Value| -> Result<TokenPrice, String> {
                let text = match value {
                    toml::Value::Float(f) => f.to_string(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                TokenPrice::per_mtok(&text).map_err(|e| format!("models.{model:?}.{key}: {e}"))
            };
            let optional = |key: &str, value: &Option<toml::Value>| {
                value.as_ref().map(|v| price(key, v)).transpose()
            };
            let prices = Prices {
                prompt: price("prompt", &row.prompt)?,
                completion: price("completion", &row.completion)?,
                cached_prompt: optional("cached_prompt", &row.cached_prompt)?,
                cache_write: optional("cache_write", &row.cache_write)?,
            };
            models.insert(model, prices);
        }
        Ok(PriceTable {
            models: Arc::new(models),
        })
    }

    /// The prices of `model`, if the table names it.
    pub fn get(&self, model: &str) -> Option<Prices> {
        self.models.get(model).copied()
    }
}

impl TokenPrice {
    /// Parses USD per token (`"0.00000015"`, `"1.5e-7"`), as the models endpoint sends it.
    pub fn per_token(text: &str) -> Result<TokenPrice, PriceError> {
        parse_scaled(text, UNIT_DIGITS).map(|units| TokenPrice { units })
    }

    /// Parses USD per million tokens (`"0.15"`), as the CLI takes it.
    pub fn per_mtok(text: &str) -> Result<TokenPrice, PriceError> {
        parse_scaled(text, UNIT_DIGITS - 6).map(|units| TokenPrice { units })
    }

    /// USD per million tokens (`deliberation.*_price_per_mtok`).
    pub fn usd_per_mtok(self) -> f64 {
        self.units as f64 / 1e12
    }

    fn cost_units(self, tokens: u64) -> u128 {
        self.units.saturating_mul(u128::from(tokens))
    }
}

/// `text` × 10^`scale` as an integer, exactly, or an error.
fn parse_scaled(text: &str, scale: i32) -> Result<u128, PriceError> {
    let t = text.trim();
    let bad = || PriceError::NotANumber(text.to_owned());
    let range = || PriceError::OutOfRange(text.to_owned());
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().map_err(|_| bad())?),
        None => (t, 0),
    };
    if let Some(rest) = mantissa.strip_prefix('-') {
        // "-0" is still zero; anything else below zero is not a price.
        return if rest.chars().all(|c| c == '0' || c == '.') && !rest.is_empty() {
            Ok(0)
        } else {
            Err(PriceError::Negative(text.to_owned()))
        };
    }
    let mantissa = mantissa.strip_prefix('+').unwrap_or(mantissa);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let mut digits: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        digits = digits
            .checked_mul(10)
            .and_then(|d| d.checked_add(u128::from(c as u8 - b'0')))
            .ok_or_else(range)?;
    }
    let frac_len = i32::try_from(frac.len()).map_err(|_| range())?;
    let shift = scale + exponent - frac_len;
    if shift >= 0 {
        let factor = 10u128.checked_pow(shift.unsigned_abs()).ok_or_else(range)?;
        digits.checked_mul(factor).ok_or_else(range)
    } else {
        let divisor = 10u128.checked_pow(shift.unsigned_abs());
        match divisor {
            Some(d) if digits.is_multiple_of(d) => Ok(digits / d),
            _ if digits == 0 => Ok(0),
            _ => Err(range()),
        }
    }
}

/// An amount of USD, exact to 1e-18 USD (the unit of [`TokenPrice`]): costs are summed in
/// it and converted to a number once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Usd {
    units: u128,
}

impl Usd {
    /// The exact amount a `cost_usd` number stands for: the shortest decimal that reads
    /// back as that number (what a producer wrote), to 1e-18 USD. `None` for a negative,
    /// non-finite or absurdly large number.
    pub fn from_number(usd: f64) -> Option<Usd> {
        if !usd.is_finite() || usd < 0.0 {
            return None;
        }
        // `Display` of an f64 is its shortest round-trip decimal, never in exponent form.
        let text = usd.to_string();
        let text = match text.split_once('.') {
            Some((int, frac)) if frac.len() > UNIT_DIGITS as usize => {
                format!("{int}.{}", &frac[..UNIT_DIGITS as usize])
            }
            _ => text,
        };
        parse_scaled(&text, UNIT_DIGITS)
            .ok()
            .map(|units| Usd { units })
    }

    /// The number nearest to the amount (`cost_usd`): one correctly rounded conversion.
    pub fn to_number(self) -> f64 {
        let whole = self.units / UNITS_PER_USD;
        let rest = self.units % UNITS_PER_USD;
        format!("{whole}.{rest:018}")
            .parse()
            .unwrap_or(f64::INFINITY)
    }

    /// `self + other`, saturating at the largest amount.
    pub fn saturating_add(self, other: Usd) -> Usd {
        Usd {
            units: self.units.saturating_add(other.units),
        }
    }
}

/// Per-token prices of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prices {
    /// Uncached prompt tokens.
    pub prompt: TokenPrice,
    /// Completion tokens, reasoning included.
    pub completion: TokenPrice,
    /// Prompt tokens read from the cache; `None` = billed as `prompt`.
    pub cached_prompt: Option<TokenPrice>,
    /// Prompt tokens written to the cache; `None` = billed as `prompt`.
    pub cache_write: Option<TokenPrice>,
}

impl Prices {
    /// The override prices of the CLI: prompt and completion together or not at all.
    pub fn from_overrides(
        prompt: Option<TokenPrice>,
        completion: Option<TokenPrice>,
        cached_prompt: Option<TokenPrice>,
    ) -> Result<Option<Prices>, PriceError> {
        match (prompt, completion) {
            (Some(prompt), Some(completion)) => Ok(Some(Prices {
                prompt,
                completion,
                cached_prompt,
                cache_write: None,
            })),
            (None, None) if cached_prompt.is_none() => Ok(None),
            _ => Err(PriceError::Incomplete),
        }
    }

    /// The exact cost of `usage`.
    pub fn cost(&self, usage: &TokenUsage) -> Usd {
        let units = self.prompt.cost_units(usage.uncached_input())
            + self
                .cached_prompt
                .unwrap_or(self.prompt)
                .cost_units(usage.cached_input)
            + self
                .cache_write
                .unwrap_or(self.prompt)
                .cost_units(usage.cache_write)
            + self.completion.cost_units(usage.output);
        Usd { units }
    }
}

/// The prices of one model for one run.
#[derive(Debug, Clone, PartialEq)]
pub enum Pricing {
    /// Known prices, and where they came from (`override` or `provider_api`).
    Known {
        /// Where the prices came from.
        source: PricingSource,
        /// The prices.
        prices: Prices,
    },
    /// No price: costs are null.
    Unknown {
        /// Why, for the log.
        reason: String,
    },
}

impl Pricing {
    /// The prices of `model`: `overrides` when given (the run's own model), else the
    /// `table`'s row of the model, else the provider's listing (`listing`, awaited only
    /// then). Logs a warning when the price stays unknown.
    pub async fn resolve<E: fmt::Display>(
        listing: impl Future<Output = Result<Value, E>>,
        model: &str,
        overrides: Option<Prices>,
        table: Option<&PriceTable>,
    ) -> Pricing {
        let known = |source, prices| Pricing::Known { source, prices };
        let pricing = match (overrides, table.and_then(|t| t.get(model))) {
            (Some(prices), _) => known(PricingSource::Override, prices),
            (None, Some(prices)) => known(PricingSource::Table, prices),
            (None, None) => match listing.await {
                Ok(listing) => Pricing::from_listing(&listing, model),
                Err(e) => Pricing::Unknown {
                    reason: format!("cannot list the provider's models: {e}"),
                },
            },
        };
        if let Pricing::Unknown { reason } = &pricing {
            tracing::warn!(model, %reason, "price unknown: cost_usd of this model's calls will be null (give its prices in a --prices table)");
        }
        pricing
    }

    /// The prices a models listing (`{"data": [{"id", "pricing": {...}}]}`) gives `model`.
    pub fn from_listing(listing: &Value, model: &str) -> Pricing {
        let unknown = |reason: String| Pricing::Unknown { reason };
        let Some(entry) = listing
            .get("data")
            .and_then(Value::as_array)
            .and_then(|models| {
                models
                    .iter()
                    .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
            })
        else {
            return unknown(format!("the provider does not list model {model:?}"));
        };
        let Some(pricing) = entry.get("pricing") else {
            return unknown(format!("the provider lists no pricing for {model:?}"));
        };
        let price = |key: &str| -> Option<Result<TokenPrice, PriceError>> {
            let text = match pricing.get(key)? {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Some(Err(PriceError::NotANumber(key.to_owned()))),
            };
            Some(TokenPrice::per_token(&text))
        };
        let required = |key: &str| match price(key) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(format!("pricing.{key} of {model:?}: {e}")),
            None => Err(format!("pricing.{key} of {model:?} is missing")),
        };
        let optional = |key: &str| price(key).and_then(Result::ok);
        match (required("prompt"), required("completion")) {
            (Ok(prompt), Ok(completion)) => Pricing::Known {
                source: PricingSource::ProviderApi,
                prices: Prices {
                    prompt,
                    completion,
                    cached_prompt: optional("input_cache_read"),
                    cache_write: optional("input_cache_write"),
                },
            },
            (Err(reason), _) | (_, Err(reason)) => unknown(reason),
        }
    }

    /// Fills the pricing fields of a call's `deliberation`: source, prices, and
    /// `cost_usd` of its token counts. The cost is null, with source `unknown`, when the
    /// price or the call's tokens are unknown (the prices, when known, stay recorded).
    pub fn stamp(&self, d: &mut Deliberation) {
        match self {
            Pricing::Known { source, prices } => {
                let usage = reported_usage(d);
                d.cost_usd = usage.map(|u| prices.cost(&u).to_number());
                d.pricing_source = if usage.is_some() {
                    *source
                } else {
                    PricingSource::Unknown
                };
                d.prompt_price_per_mtok = Some(prices.prompt.usd_per_mtok());
                d.completion_price_per_mtok = Some(prices.completion.usd_per_mtok());
                d.cached_prompt_price_per_mtok = prices.cached_prompt.map(TokenPrice::usd_per_mtok);
            }
            Pricing::Unknown { .. } => {
                d.cost_usd = None;
                d.pricing_source = PricingSource::Unknown;
                d.prompt_price_per_mtok = None;
                d.completion_price_per_mtok = None;
                d.cached_prompt_price_per_mtok = None;
            }
        }
    }
}

/// Prices `d` from `table` when the table names its model (`pricing_source` `table`, the
/// cost from its token counts); leaves it as it is otherwise: what a producer reported of
/// a model the table does not name is its own account.
pub fn price_from_table(table: Option<&PriceTable>, d: &mut Deliberation) {
    if let Some(prices) = table.and_then(|t| t.get(&d.model)) {
        Pricing::Known {
            source: PricingSource::Table,
            prices,
        }
        .stamp(d);
    }
}

/// The token counts `d` reports, when it reports all of them.
fn reported_usage(d: &Deliberation) -> Option<TokenUsage> {
    Some(TokenUsage {
        input: d.input_tokens?,
        cached_input: d.cached_input_tokens?,
        cache_write: d.cache_write_tokens?,
        output: d.output_tokens?,
        reasoning: d.reasoning_tokens?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_price_table_prices_the_models_it_names_exactly_and_no_other() {
        let table = PriceTable::parse(
            r#"
[models."gpt-4o-mini"]
prompt = 0.15
completion = 0.60
cached_prompt = 0.075   # optional, default: prompt
cache_write = 0.1875    # optional
source = "provider price page, 2026-11"

[models."local/qwen"]
prompt = 0
completion = "0.000001"
"#,
        )
        .expect("valid table");
        let mini = table.get("gpt-4o-mini").expect("named");
        assert_eq!(mini.prompt, TokenPrice::per_mtok("0.15").expect("price"));
        assert_eq!(mini.completion, TokenPrice::per_mtok("0.6").expect("price"));
        assert_eq!(mini.cached_prompt, TokenPrice::per_mtok("0.075").ok());
        assert_eq!(mini.cache_write, TokenPrice::per_mtok("0.1875").ok());
        let qwen = table.get("local/qwen").expect("named");
        assert_eq!((qwen.cached_prompt, qwen.cache_write), (None, None));
        assert_eq!(table.get("gpt-4o"), None, "no other model's price");
    }

    #[test]
    fn a_bad_price_table_is_refused_naming_the_model_and_key() {
        for (text, wanted) in [
            ("[models.m]\nprompt = 1\n", "missing field `completion`"),
            (
                "[models.m]\nprompt = 1\ncompletion = -2\n",
                "models.\"m\".completion",
            ),
            (
                "[models.m]\nprompt = 1\ncompletion = 2\ncolour = 3\n",
                "unknown field `colour`",
            ),
            ("[model.m]\nprompt = 1\n", "unknown field `model`"),
        ] {
            let error = PriceTable::parse(text).expect_err(text);
            assert!(error.contains(wanted), "{text}: {error}");
        }
    }

    fn per_token(s: &str) -> TokenPrice {
        TokenPrice::per_token(s).expect("valid price")
    }

    #[test]
    fn prices_parse_exactly() {
        assert_eq!(
            per_token("0.00000015"),
            TokenPrice::per_mtok("0.15").expect("valid")
        );
        assert_eq!(per_token("1.5e-7"), per_token("0.00000015"));
        assert_eq!(per_token("0.0000000375").units, 37_500_000_000);
        assert_eq!(per_token("0").units, 0);
        assert_eq!(per_token("-0").units, 0);
        assert!(matches!(
            TokenPrice::per_token("-1"),
            Err(PriceError::Negative(_))
        ));
        assert!(matches!(
            TokenPrice::per_token("abc"),
            Err(PriceError::NotANumber(_))
        ));
        assert!(matches!(
            TokenPrice::per_token("."),
            Err(PriceError::NotANumber(_))
        ));
        assert!(matches!(
            TokenPrice::per_token("0.0000000000000000001"),
            Err(PriceError::OutOfRange(_))
        ));
        assert_eq!(
            TokenPrice::per_mtok("2.5").expect("valid").usd_per_mtok(),
            2.5
        );
    }

    #[test]
    fn cost_splits_cached_and_written_tokens() {
        let prices = Prices {
            prompt: TokenPrice::per_mtok("3").expect("valid"),
            completion: TokenPrice::per_mtok("15").expect("valid"),
            cached_prompt: Some(TokenPrice::per_mtok("0.3").expect("valid")),
            cache_write: Some(TokenPrice::per_mtok("3.75").expect("valid")),
        };
        let usage = TokenUsage {
            input: 10_000,
            cached_input: 6_000,
            cache_write: 1_000,
            output: 2_000,
            reasoning: 500,
        };
        // 3000×3 + 6000×0.3 + 1000×3.75 + 2000×15 = 44_550 USD per Mtok-token.
        assert_eq!(prices.cost(&usage).to_number(), 0.04455);
    }

    #[test]
    fn costs_sum_exactly_and_convert_once() {
        let calls = [0.04704, 0.023385, 0.041541, 0.106026];
        let float_sum: f64 = calls.iter().sum();
        assert_eq!(
            float_sum.to_string(),
            "0.21799200000000002",
            "a float sum is noisy"
        );
        let exact = calls
            .iter()
            .map(|&c| Usd::from_number(c).expect("a cost"))
            .fold(Usd::default(), Usd::saturating_add);
        assert_eq!(exact.to_number().to_string(), "0.217992");
        assert_eq!(Usd::from_number(1e-20), Some(Usd::default()));
        assert_eq!(Usd::from_number(-0.5), None);
        assert_eq!(Usd::from_number(f64::NAN), None);
    }

    #[test]
    fn overrides_need_prompt_and_completion() {
        let p = TokenPrice::per_mtok("1").ok();
        assert!(Prices::from_overrides(p, p, None).expect("valid").is_some());
        assert_eq!(Prices::from_overrides(None, None, None), Ok(None));
        assert_eq!(
            Prices::from_overrides(p, None, None),
            Err(PriceError::Incomplete)
        );
        assert_eq!(
            Prices::from_overrides(None, None, p),
            Err(PriceError::Incomplete)
        );
    }

    #[test]
    fn listing_gives_known_or_unknown_prices() {
        let listing = json!({"data": [
            {"id": "openai/gpt-4o-mini", "pricing": {"prompt": "0.00000015", "completion": "0.0000006", "input_cache_read": "0.000000075"}},
            {"id": "openrouter/auto", "pricing": {"prompt": "-1", "completion": "-1"}},
            {"id": "local-model"}
        ]});
        let Pricing::Known { source, prices } =
            Pricing::from_listing(&listing, "openai/gpt-4o-mini")
        else {
            panic!("known")
        };
        assert_eq!(source, PricingSource::ProviderApi);
        assert_eq!(prices.cached_prompt, TokenPrice::per_mtok("0.075").ok());
        for model in ["openrouter/auto", "local-model", "absent"] {
            assert!(
                matches!(
                    Pricing::from_listing(&listing, model),
                    Pricing::Unknown { .. }
                ),
                "{model}"
            );
        }
    }
}
