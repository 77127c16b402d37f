//! bench-pricing: what a model call costs. A call's token counts are read from the `usage`
//! block a provider sends ([`TokenUsage`]), a model's per-token prices come from overrides,
//! a price table ([`PriceTable`]) or the provider's model listing ([`Pricing`]), and a
//! call's cost is summed exactly ([`Usd`]).
//!
//! The one entry point is [`Pricing::resolve`]: the prices of a model, then
//! [`Pricing::stamp`] fills the pricing fields of each call's `deliberation`. Runs recorded
//! elsewhere (`agent-runner exec`, `agent-runner otlp`) are priced from the table alone
//! ([`price_from_table`], [`PriceTable::get`]). It imports nothing of the runner
//! (`tests/tests/module_graph.rs` checks); the provider's listing is fetched by the caller.
//!
//! # Layout
//!
//! - `usage`: [`TokenUsage`], the `usage` block in every shape providers send.
//! - `price`: prices, their sources and exact costs.

#![warn(missing_docs)]
// The module docs link the crate's private modules too, for readers of
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod price;
mod usage;

pub use price::{price_from_table, PriceError, PriceTable, Prices, Pricing, TokenPrice, Usd};
pub use usage::TokenUsage;
