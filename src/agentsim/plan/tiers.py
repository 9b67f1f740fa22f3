"""The (model, speed tier) pairs a plan uses, compiled once each: speed samplers, prices, streams, retries.

A call on model ``opus`` at tier ``fast`` is timed and billed by the :class:`~agentsim.plan.nodes.Tier`
``opus@fast``: the model's TTFT and output-speed samplers, the tier's multipliers (``ttft_x``,
``output_tps_x``), its price (its own table, ``price_x`` times the model's, or the model's), its
stream (the tier's ``stream`` replaces the model's), its factors by context size (the tier's
``context_speed`` replaces the model's: :mod:`agentsim.plan.context_speed`), its prompt-cache TTL
and its retry policy. A model's fallback is the standard tier of the model it falls back to.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from agentsim.model.scenario import RetrySpec, suggest
from agentsim.plan.context_speed import compile_context_speed
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import MAX_SECONDS, TTL_SECONDS, StreamCfg, Tier
from agentsim.pricing.rates import PriceError, Rates, compile_price

if TYPE_CHECKING:
    from agentsim.plan.compile_context import CompileContext

__all__ = ["TierTable"]


class TierTable:
    """The tiers of one compile, made on first request (``tier(model, speed)`` is their index)."""

    def __init__(self, comp: CompileContext):
        self.comp = comp
        self.tiers: list[Tier] = comp.tiers  # the context's list: the helpers read it there
        self._index: dict[tuple[str, str], int] = {}
        self._model_rates: dict[str, Rates] = {}

    def rates_of(self, model: str) -> Rates:
        comp = self.comp
        if model not in self._model_rates:
            spec = comp.sc.models[model].price
            try:
                self._model_rates[model] = compile_price(spec, comp.prices_as_of)
            except PriceError as exc:
                comp.problem(("models", model, "price", *exc.subpath), exc.message, exc.hint)
                self._model_rates[model] = compile_price(type(spec)(input_mtok=0, output_mtok=0))
        return self._model_rates[model]

    def tier(self, model: str, speed: str, where: tuple) -> int | None:
        """The index of ``model`` at ``speed`` (compiled on first use), or None (reported) if it has no such tier."""
        key = (model, speed)
        if key in self._index:
            return self._index[key]
        comp = self.comp
        mspec = comp.sc.models.get(model)
        if mspec is None:
            return None
        if speed != "standard" and speed not in mspec.speeds:
            tiers = ["standard", *mspec.speeds]
            comp.problem(
                where,
                f"model '{model}' has no speed tier '{speed}'",
                suggest(speed, tiers) or "its tiers: " + ", ".join(tiers),
            )
            return None
        t = self._make(model, speed, mspec)
        self.tiers.append(t)
        self._index[key] = t.index
        if mspec.fallback is not None:
            fb = self.tier(mspec.fallback.model, "standard", ("models", model, "fallback", "model"))
            self.tiers[t.index] = replace(t, fallback=fb, fallback_after=mspec.fallback.after)
        return t.index

    def _make(self, model: str, speed: str, mspec) -> Tier:
        comp = self.comp
        mpath = ("models", model)
        ttft = comp.sampler(mspec.ttft, (*mpath, "ttft"), "ttft", upper=MAX_SECONDS)
        tps = comp.sampler(mspec.output_tps, (*mpath, "output_tps"), "output_tps", positive=True)
        rates, ttft_x, tps_x = self._tier_price(model, speed, mspec)
        stream_spec, spath = mspec.stream, (*mpath, "stream")
        if speed != "standard" and mspec.speeds[speed].stream is not None:
            stream_spec, spath = mspec.speeds[speed].stream, (*mpath, "speeds", speed, "stream")
        ctx_speed = mspec.context_speed  # a tier's own replaces the model's
        if speed != "standard" and mspec.speeds[speed].context_speed is not None:
            ctx_speed = mspec.speeds[speed].context_speed
        retry = mspec.retry or RetrySpec()
        return Tier(
            len(self.tiers),
            model,
            speed,
            ttft,
            tps,
            ttft_x,
            tps_x,
            mspec.prefill_tps if mspec.prefill_tps is not None else math.inf,
            rates,
            TTL_SECONDS[mspec.cache.ttl] if mspec.cache is not None else None,
            error_rate=mspec.error_rate,
            timeout_s=mspec.timeout,
            max_attempts=retry.max_attempts,
            backoff_base=retry.backoff_base,
            backoff_cap=retry.backoff_cap,
            full_jitter=retry.jitter == "full",
            honour_retry_after=retry.honour_retry_after,
            stream=self._stream(stream_spec, spath),
            context_speed=compile_context_speed(ctx_speed),
        )

    def _tier_price(self, model: str, speed: str, mspec) -> tuple[Rates, float, float]:
        """(rates, ttft_x, output_tps_x) of a tier: its own price table, price_x times the model's, or the model's."""
        base_rates = self.rates_of(model)
        if speed == "standard":
            return base_rates, 1.0, 1.0
        sspec = mspec.speeds[speed]
        rates = base_rates
        if sspec.price is not None:
            try:
                rates = compile_price(sspec.price, self.comp.prices_as_of)
            except PriceError as exc:
                where = ("models", model, "speeds", speed, "price", *exc.subpath)
                self.comp.problem(where, exc.message, exc.hint)
        elif sspec.price_x is not None:
            rates = base_rates.scaled(sspec.price_x, f"{base_rates.source} x{sspec.price_x:g}")
        # neither: the tier is billed at the model's own price
        return rates, sspec.ttft_x, sspec.output_tps_x

    def _stream(self, spec, path) -> StreamCfg | None:
        if spec is None:
            return None
        comp = self.comp
        chunk = comp.sampler(spec.chunk_tokens, (*path, "chunk_tokens"), "chunk tokens", positive=True)
        stall = spec.stall
        if stall is None:
            return StreamCfg(chunk, spec.jitter_cv, 0.0, Sampler("constant", {"value": 0.0}))
        stall_s = comp.sampler(stall.seconds, (*path, "stall", "seconds"), "stall seconds", upper=MAX_SECONDS)
        at = tuple(sorted(set(stall.at_chunks or ())))
        return StreamCfg(chunk, spec.jitter_cv, stall.rate, stall_s, stall.form, at)
