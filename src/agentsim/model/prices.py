"""Prices as a scenario writes them: explicit USD per million tokens, long-context tiers, or a catalog entry.

Units are genai-prices' (``*_mtok``: USD per million tokens; ``requests_kcount``: USD per 1000
requests). A :class:`PriceSpec` names a genai-prices ``catalog`` model or gives the rates itself;
explicit rates beside ``catalog`` override it. What a call costs is :mod:`agentsim.pricing.rates`.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import NonNegNum, PriceDate, StrictModel, integer

__all__ = ["PRICE_FIELDS", "PriceSpec", "Rate", "Tier", "TieredPrice"]


class Tier(StrictModel):
    start: Annotated[int, BeforeValidator(integer), Field(ge=0)] = Field(
        description="Tier applies when total input tokens exceed this."
    )
    price: NonNegNum = Field(description="USD per million tokens for every token of this kind in the call.")


class TieredPrice(StrictModel):
    """Long-context pricing: ``{base: 3, tiers: [{start: 200000, price: 6}]}``.

    genai-prices semantics: the call's total input tokens decide the tier, and
    that tier's rate applies to *all* tokens of this kind in the call.
    """

    base: NonNegNum = Field(description="USD per million tokens up to the first tier.")
    tiers: list[Tier] = Field(min_length=1, description="Long-context tiers, by increasing start.")

    @field_validator("tiers")
    @classmethod
    def _ascending(cls, tiers: list[Tier]) -> list[Tier]:
        starts = [t.start for t in tiers]
        if starts != sorted(starts) or len(set(starts)) != len(starts):
            raise PydanticCustomError("tiers_order", "tier starts must be strictly increasing, got {s}", {"s": starts})
        return tiers


def _rate_tag(value: Any) -> str:
    return "tiered" if isinstance(value, dict | TieredPrice) else "number"


# A price: a number, or a mapping of long-context tiers (one error message either way, not one per form).
Rate = Annotated[Annotated[NonNegNum, Tag("number")] | Annotated[TieredPrice, Tag("tiered")], Discriminator(_rate_tag)]

PRICE_FIELDS = (
    "input_mtok",
    "output_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "output_reasoning_mtok",
    "requests_kcount",
)


class PriceSpec(StrictModel):
    """Explicit USD per million tokens, or a genai-prices ``catalog`` reference.

    Explicit fields given alongside ``catalog`` override that field of the
    catalog price (negotiated rates).
    """

    catalog: str | None = Field(None, description="genai-prices 'provider/model', e.g. anthropic/claude-opus-4-8")
    context: dict[str, str] | None = Field(
        None, description="genai-prices price context, e.g. {speed: fast} or {service_tier: flex}"
    )
    date: PriceDate | None = Field(None, description="Price as of this date (YYYY-MM-DD); default: prices_as_of.")
    input_mtok: Rate | None = Field(None, description="Uncached input tokens.")
    output_mtok: Rate | None = Field(None, description="Visible output tokens.")
    cache_read_mtok: Rate | None = Field(None, description="Prompt-cache reads (default: input_mtok).")
    cache_write_mtok: Rate | None = Field(None, description="5-minute prompt-cache writes (default: input_mtok).")
    cache_write_1h_mtok: Rate | None = Field(None, description="1-hour cache writes (default: cache_write_mtok).")
    output_reasoning_mtok: Rate | None = Field(None, description="Defaults to output_mtok.")
    requests_kcount: Rate | None = Field(None, description="USD per 1000 requests (a fee per call).")
    source: str | None = Field(
        None,
        description="Where these prices come from and when, for readers (e.g. 'Anthropic pricing page, Feb 2026'); "
        "shown next to every verdict that uses them.",
    )

    @model_validator(mode="after")
    def _something_given(self) -> PriceSpec:
        if self.catalog is None:
            if self.input_mtok is None or self.output_mtok is None:
                raise PydanticCustomError(
                    "price_incomplete",
                    "an explicit price needs at least input_mtok and output_mtok (or name a catalog price: {example})",
                    {"example": "{catalog: provider/model}"},
                )
            if self.context is not None or self.date is not None:
                raise PydanticCustomError("price_context", "context and date only apply to a catalog price", {})
        return self
