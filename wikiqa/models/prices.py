"""Cost estimates: the one price table. USD per million tokens, ESTIMATES from public list prices.

Check a provider's current price list before quoting a cost; a model not listed here gets no
estimate (None) rather than a guess. Offline models cost nothing.
"""

from __future__ import annotations

from pydantic import BaseModel

from wikiqa.models.protocol import TokenUsage

PRICE_NOTE = "estimate from wikiqa.models.prices (list prices, USD per Mtok); not a bill"


class Price(BaseModel):
    input: float
    output: float
    cache_write: float
    cache_read: float


# Matched by prefix, longest first, so "claude-sonnet-4-6" finds "claude-sonnet-4".
PRICES: dict[str, Price] = {
    "claude-opus-4": Price(input=5.0, output=25.0, cache_write=6.25, cache_read=0.50),
    "claude-sonnet-4": Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30),
    "claude-haiku-4": Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10),
}
FREE = ("extractive", "scripted")


def estimate_cost(model: str, usage: TokenUsage) -> float | None:
    """Estimated USD for `usage` on `model`, or None when the model has no listed price."""
    if model.startswith(FREE):
        return 0.0
    name = model.partition(":")[2] or model
    for prefix in sorted(PRICES, key=len, reverse=True):
        if name.startswith(prefix):
            p = PRICES[prefix]
            total = (
                usage.input_tokens * p.input
                + usage.output_tokens * p.output
                + usage.cache_write_tokens * p.cache_write
                + usage.cache_read_tokens * p.cache_read
            )
            return round(total / 1_000_000, 6)
    return None
