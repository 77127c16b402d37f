//! Honest cost accounting: token counts from every provider's usage shape, never double
//! counted; costs exact (to 1e-9 USD, so to the cent) with override prices and with the
//! provider's listed prices; an unknown price gives a null cost, never $0; a call that got
//! no answer, or an answer without usage, has null tokens (never 0) and makes the run's
//! `total_tokens` null, while answered calls keep their exact counts, checked in
//! ClickHouse; the cost limit ends the run with `exit_cost`.

use std::time::Duration;

use agent_runner::{PriceTable, Prices, TokenPrice};
use bench_schemas::{ExitStatus, PricingSource};
use benchstream_tests::{OpenAiServer, Reply};
use serde_json::{json, Value};

use super::{
    fixture, models, provider, reference_replies, run, run_published, unpriced_models, with_prices,
    TASK,
};
use crate::common::start_pipeline;

/// One scripted call: the usage block the stand-in sends and the counts it must yield
/// (input includes cached and written, output includes reasoning).
struct Billed {
    usage: Value,
    input: u64,
    cached: u64,
    written: u64,
    output: u64,
    reasoning: u64,
}

/// The four calls of the reference solution, each in another provider's usage shape.
fn billed_calls() -> Vec<Billed> {
    vec![
        // OpenAI / OpenRouter.
        Billed {
            usage: json!({"prompt_tokens": 12000, "completion_tokens": 900, "total_tokens": 12900,
                "prompt_tokens_details": {"cached_tokens": 8000},
                "completion_tokens_details": {"reasoning_tokens": 300}}),
            input: 12000,
            cached: 8000,
            written: 0,
            output: 900,
            reasoning: 300,
        },
        // DeepSeek.
        Billed {
            usage: json!({"prompt_tokens": 15000, "completion_tokens": 400,
                "prompt_cache_hit_tokens": 12000, "prompt_cache_miss_tokens": 3000}),
            input: 15000,
            cached: 12000,
            written: 0,
            output: 400,
            reasoning: 0,
        },
        // Anthropic fields next to OpenAI's, naming the same cached tokens twice.
        Billed {
            usage: json!({"prompt_tokens": 18000, "completion_tokens": 250,
                "prompt_tokens_details": {"cached_tokens": 15000},
                "cache_read_input_tokens": 15000, "cache_creation_input_tokens": 1000}),
            input: 18000,
            cached: 15000,
            written: 1000,
            output: 250,
            reasoning: 0,
        },
        // No cache at all.
        Billed {
            usage: json!({"prompt_tokens": 20000, "completion_tokens": 50}),
            input: 20000,
            cached: 0,
            written: 0,
            output: 50,
            reasoning: 0,
        },
    ]
}

/// Prices in 1e-12 USD per token: prompt, cached prompt, cache write, completion.
struct PicoPrices([u128; 4]);

impl PicoPrices {
    /// The exact cost of `b`, in 1e-12 USD.
    fn cost(&self, b: &Billed) -> u128 {
        let [prompt, cached, written, completion] = self.0;
        u128::from(b.input - b.cached - b.written) * prompt
            + u128::from(b.cached) * cached
            + u128::from(b.written) * written
            + u128::from(b.output) * completion
    }
}

fn scripted_with_usage(listing: Value) -> OpenAiServer {
    let replies = reference_replies(TASK)
        .into_iter()
        .zip(billed_calls())
        .map(|(reply, billed)| reply.usage(billed.usage));
    OpenAiServer::with_replies(listing, replies)
}

fn mtok(text: &str) -> TokenPrice {
    TokenPrice::per_mtok(text).expect("valid price")
}

/// Runs the billed script and checks every deliberation's tokens, source and cost, and
/// the run's totals, against `prices`.
async fn assert_exact_costs(
    server: &OpenAiServer,
    llm: agent_runner::LlmConfig,
    source: PricingSource,
    prices: PicoPrices,
    per_mtok: (f64, f64),
) {
    let finished = run(fixture("raw"), llm).await;
    let result = &finished.summary.result;
    assert_eq!(result.success, Some(true), "{result:?}");
    let deliberations = finished.deliberations();
    let billed = billed_calls();
    assert_eq!(deliberations.len(), billed.len());
    let mut total_pico = 0u128;
    for (d, b) in deliberations.iter().zip(&billed) {
        assert_eq!(
            (
                d.input_tokens,
                d.cached_input_tokens,
                d.cache_write_tokens,
                d.output_tokens,
                d.reasoning_tokens
            ),
            (
                Some(b.input),
                Some(b.cached),
                Some(b.written),
                Some(b.output),
                Some(b.reasoning)
            ),
            "tokens of {}",
            d.raw_output
        );
        assert_eq!(d.pricing_source, source);
        assert_eq!(
            (d.prompt_price_per_mtok, d.completion_price_per_mtok),
            (Some(per_mtok.0), Some(per_mtok.1))
        );
        let expected = prices.cost(b);
        total_pico += expected;
        let cost = d.cost_usd.expect("known price gives a cost");
        assert!(
            (cost - expected as f64 / 1e12).abs() < 1e-9,
            "cost {cost} != {expected} pUSD"
        );
    }
    let run_cost = result.cost_usd.expect("run cost known");
    assert!(
        (run_cost - total_pico as f64 / 1e12).abs() < 1e-9,
        "run cost {run_cost}"
    );
    assert_eq!(
        (run_cost * 100.0).round() as u128,
        (total_pico + 5_000_000_000) / 10_000_000_000,
        "run cost to the cent"
    );
    let tokens: u64 = billed.iter().map(|b| b.input + b.output).sum();
    assert_eq!(
        (result.total_tokens, result.api_calls),
        (Some(tokens), Some(4))
    );
    assert_eq!(server.chat_requests().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn override_prices_give_exact_costs() {
    let server = scripted_with_usage(models());
    let prices = Prices::from_overrides(Some(mtok("2.5")), Some(mtok("10")), Some(mtok("0.25")))
        .expect("valid overrides")
        .expect("overrides given");
    // Cache writes have no override: billed as prompt tokens.
    let pico = PicoPrices([2_500_000, 250_000, 2_500_000, 10_000_000]);
    let llm = with_prices(provider(&server), prices);
    assert_exact_costs(&server, llm, PricingSource::Override, pico, (2.5, 10.0)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_listed_prices_give_exact_costs() {
    let server = scripted_with_usage(models());
    // bench/priced-model in models.json: $3 / $15 per Mtok, cache read $0.30, write $3.75.
    let pico = PicoPrices([3_000_000, 300_000, 3_750_000, 15_000_000]);
    assert_exact_costs(
        &server,
        provider(&server),
        PricingSource::ProviderApi,
        pico,
        (3.0, 15.0),
    )
    .await;
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.path == "/api/v1/models"),
        "prices come from the models endpoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_cost_in_clickhouse_is_the_exact_sum_of_its_calls() {
    let (nats, sink) = start_pipeline().await;
    // At $3 / $15 per Mtok: 0.04704 + 0.023385 + 0.041541 + 0.106026 = 0.217992 USD,
    // which a float sum of the four makes 0.21799200000000002.
    let usages = [(9805, 1175), (5135, 532), (8727, 1024), (30457, 977)];
    let replies =
        reference_replies(TASK)
            .into_iter()
            .zip(usages)
            .map(|(reply, (prompt, completion))| {
                reply.usage(json!({"prompt_tokens": prompt, "completion_tokens": completion}))
            });
    let server = OpenAiServer::with_replies(models(), replies);

    let summary = run_published(fixture("raw"), provider(&server), &nats, &sink).await;

    let run_id = summary.run_id;
    let float_sum: f64 = [0.04704, 0.023385, 0.041541, 0.106026].iter().sum();
    assert_ne!(
        float_sum.to_string(),
        "0.217992",
        "a float sum would be off"
    );
    sink.wait_for(
        &format!(
            "SELECT count(), groupArray(toString(cost_usd)) FROM \
             (SELECT cost_usd FROM benchstream.deliberations FINAL \
              WHERE run_id = '{run_id}' ORDER BY seq) FORMAT TSV"
        ),
        "4\t['0.04704','0.023385','0.041541','0.106026']",
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT toString(cost_usd), success, total_tokens FROM benchstream.run_stops FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        // 9805 + 1175 + 5135 + 532 + 8727 + 1024 + 30457 + 977 tokens, exact.
        "0.217992\t1\t57832",
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_tokens_nobody_reported_is_null_in_clickhouse_and_so_is_the_run_total() {
    let (nats, sink) = start_pipeline().await;
    // Call 1 hangs past the per-call timeout (no answer); call 2 is answered without a
    // usage block; calls 3 to 5 report their usage.
    let hung = Reply::text("too late").delayed(Duration::from_secs(5));
    let mut reference = reference_replies(TASK).into_iter();
    let unmetered = reference.next().expect("a first step").usage(Value::Null);
    let metered = reference
        .zip([(5135, 532), (8727, 1024), (30457, 977)])
        .map(|(reply, (prompt, completion))| {
            reply.usage(json!({"prompt_tokens": prompt, "completion_tokens": completion}))
        });
    let server = OpenAiServer::with_replies(models(), [hung, unmetered].into_iter().chain(metered));
    let mut llm = provider(&server);
    llm.provider.timeout = Duration::from_millis(300);

    let summary = run_published(fixture("raw"), llm, &nats, &sink).await;

    let result = &summary.result;
    assert_eq!(result.success, Some(true), "{result:?}");
    assert_eq!(
        (result.api_calls, result.total_tokens, result.cost_usd),
        (Some(5), None, None)
    );
    let run_id = summary.run_id;
    // At $3 / $15 per Mtok the known calls cost what their tokens say; the two others
    // have NULL tokens and cost, with their model's prices still recorded.
    sink.wait_for(
        &format!(
            "SELECT status, input_tokens, cached_input_tokens, cache_write_tokens, \
             output_tokens, reasoning_tokens, toString(cost_usd), pricing_source, \
             prompt_price_per_mtok FROM benchstream.deliberations FINAL \
             WHERE run_id = '{run_id}' ORDER BY seq FORMAT TSV"
        ),
        &[
            "timeout\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\tunknown\t3",
            "ok\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\tunknown\t3",
            "ok\t5135\t0\t0\t532\t0\t0.023385\tprovider_api\t3",
            "ok\t8727\t0\t0\t1024\t0\t0.041541\tprovider_api\t3",
            "ok\t30457\t0\t0\t977\t0\t0.106026\tprovider_api\t3",
        ]
        .join("\n"),
    )
    .await;
    sink.wait_for(
        &format!(
            "SELECT total_tokens, cost_usd, api_calls, success FROM benchstream.run_stops FINAL \
             WHERE run_id = '{run_id}' FORMAT TSV"
        ),
        "\\N\t\\N\t5\t1",
    )
    .await;
    sink.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_price_gives_a_null_cost_not_zero() {
    let server = scripted_with_usage(unpriced_models("bench/priced-model"));
    let finished = run(fixture("raw"), provider(&server)).await;
    assert_eq!(finished.summary.result.success, Some(true));
    let deliberations = finished.deliberations();
    assert_eq!(deliberations.len(), 4);
    for d in deliberations {
        assert_eq!(d.pricing_source, PricingSource::Unknown);
        assert_eq!((d.cost_usd, d.prompt_price_per_mtok), (None, None));
        assert!(
            d.input_tokens.is_some_and(|t| t > 0),
            "tokens are still counted"
        );
    }
    assert_eq!(finished.summary.result.cost_usd, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_limit_ends_the_run_with_exit_cost() {
    // 400k prompt tokens at $3/Mtok = $1.20, over raw.toml's $1 limit after one call.
    let expensive = json!({"prompt_tokens": 400000, "completion_tokens": 10});
    let replies = reference_replies(TASK)
        .into_iter()
        .map(|r| r.usage(expensive.clone()));
    let server = OpenAiServer::with_replies(models(), replies);
    let finished = run(fixture("raw"), provider(&server)).await;
    let result = &finished.summary.result;
    assert_eq!(result.exit_status, ExitStatus::ExitCost, "{result:?}");
    assert_eq!(result.api_calls, Some(1));
    assert!(result.cost_usd.is_some_and(|c| c >= 1.0));
    assert_eq!(server.chat_requests().len(), 1);
}

/// `provider(server)` with the price table `text`.
fn with_table(server: &OpenAiServer, text: &str) -> agent_runner::LlmConfig {
    let mut llm = provider(server);
    llm.price_table = Some(PriceTable::parse(text).expect("valid table"));
    llm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_table_prices_its_models_before_the_listing_and_no_other_model() {
    // The listing prices the model at $3/$15; the table's $1/$2 win.
    let server = scripted_with_usage(models());
    let table = "[models.\"bench/priced-model\"]\nprompt = 1\ncompletion = 2\n";
    let finished = run(fixture("raw"), with_table(&server, table)).await;
    let deliberations = finished.deliberations();
    assert_eq!(deliberations.len(), 4);
    for (d, billed) in deliberations.iter().zip(billed_calls()) {
        assert_eq!(d.pricing_source, PricingSource::Table);
        // No cached or cache-write price in the table: those tokens at the prompt price.
        let expected = (billed.input as f64 + 2.0 * billed.output as f64) / 1e6;
        assert!(
            (d.cost_usd.expect("priced") - expected).abs() < 1e-12,
            "{d:?}"
        );
    }

    // A model the table does not name, and the provider does not price: null, never the
    // table's other model's price.
    let server = scripted_with_usage(unpriced_models("bench/priced-model"));
    let table = "[models.\"bench/other-model\"]\nprompt = 1\ncompletion = 2\n";
    let finished = run(fixture("raw"), with_table(&server, table)).await;
    for d in finished.deliberations() {
        assert_eq!(
            (d.cost_usd, d.pricing_source),
            (None, PricingSource::Unknown)
        );
    }
    assert_eq!(finished.summary.result.cost_usd, None);
}
