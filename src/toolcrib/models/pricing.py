"""List prices of hosted models, for cost projection (``dry:MODEL`` and the eval reports).

Prices are USD per 1 million tokens, (input, output), as published on the providers' pricing pages
(openai.com/api/pricing, anthropic.com/pricing) as of 2025-06, standard tier, no batch or
cached-input discounts. They change: pass explicit prices in settings when the figure matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolcrib.errors import ConfigError

__all__ = ["PRICES", "Price", "price_for"]


@dataclass(frozen=True)
class Price:
    """USD per 1M input tokens and per 1M output tokens."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        """The USD cost of one call with these token counts."""
        return (tokens_in * self.input_usd_per_mtok + tokens_out * self.output_usd_per_mtok) / 1_000_000


# Checked 2025-06 against the providers' public pricing pages.
PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1": Price(2.00, 8.00),
    "o4-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-haiku": Price(0.80, 4.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-sonnet": Price(3.00, 15.00),
    "claude-opus-4": Price(15.00, 75.00),
    "local": Price(0.0, 0.0),
}


def price_for(model: str) -> Price:
    """The price of ``model``; a dated snapshot ("gpt-4o-mini-2024-07-18") takes its family's price."""
    key = model.strip().lower()
    if key.startswith(("openai:", "anthropic:")):
        key = key.split(":", 1)[1]
    if key in PRICES:
        return PRICES[key]
    # Longest known name that prefixes the model, so "gpt-4o-mini-…" is not priced as "gpt-4o".
    for known in sorted(PRICES, key=len, reverse=True):
        if key.startswith(known + "-"):
            return PRICES[known]
    known_names = ", ".join(sorted(PRICES))
    raise ConfigError(f"no price known for model '{model}'; known: {known_names}; or set "
                      "'input_usd_per_mtok' and 'output_usd_per_mtok'", key="model")
