"""Plausibility warnings: values a scenario may hold on purpose but that usually are typing slips.

They are warnings, not errors: the scenario still runs. Each has a key; a scenario silences
the ones it means with a top-level ``warnings: {ignore: [KEY, ...]}``. The keys:

* ``ttft_over_60s`` — a model's (or tier's) median TTFT above 60 s (milliseconds typed as seconds?);
* ``speed_multiplier_over_20`` — a tier's ``output_tps_x`` or ``ttft_x`` above 20;
* ``price_multiplier_over_20`` — a tier's ``price_x`` above 20;
* ``output_tps_over_50000`` / ``output_tps_under_1`` — a model's median output speed outside
  1 to 50,000 tokens/s;
* ``run_over_a_day`` — after simulating: a variant's mean wall time above 24 hours.

``validate`` lists them and ``run`` prints them on stderr above its table, each with file:line.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentsim.model.loading import ErrorItem, line_of
from agentsim.model.scenario import WARNING_KEYS, Scenario

__all__ = ["KEYS", "Warning_", "check_results", "check_scenario"]

KEYS = WARNING_KEYS  # written once, with the scenario's warnings: {ignore: [...]} (agentsim.model.scenario)
TTFT_MAX_S = 60.0
MULTIPLIER_MAX = 20.0
TPS_MAX, TPS_MIN = 50_000.0, 1.0
RUN_MAX_S = 86_400.0


@dataclass(frozen=True)
class Warning_:
    key: str
    item: ErrorItem  # where (file, line, path) and what

    def __str__(self) -> str:
        return f"warning: {self.item} [silence with warnings: {{ignore: [{self.key}]}}]"


def _median(spec) -> float:
    from agentsim.plan.distributions import sampler

    return sampler(spec).quantile(0.0)  # the quantile at Phi(0) = 0.5: no SciPy, and no NumPy for the usual families


def _ignored(scenario: Scenario) -> set[str]:
    return set(scenario.warnings.ignore) if scenario.warnings is not None else set()


def check_scenario(scenario: Scenario, file: str = "<scenario>", lines: dict | None = None) -> list[Warning_]:
    """The warnings visible before simulating, in the order of the models."""
    lines = lines or {}
    out: list[Warning_] = []

    def warn(key: str, path: tuple, message: str, hint: str) -> None:
        out.append(Warning_(key, ErrorItem.at(file, lines, path, message, hint)))

    for name, m in scenario.models.items():
        base = ("models", name)
        ttft = _median(m.ttft)
        if ttft > TTFT_MAX_S:
            warn("ttft_over_60s", (*base, "ttft"), f"median TTFT is {ttft:g} s, over a minute",
                 "TTFT is in seconds: 1500 ms is ttft: 1.5")  # fmt: skip
        tps = _median(m.output_tps)
        if tps > TPS_MAX:
            warn("output_tps_over_50000", (*base, "output_tps"), f"median output speed is {tps:,.0f} tokens/s",
                 "no served model is known to stream above 50,000 tokens/s per call")  # fmt: skip
        elif tps < TPS_MIN:
            warn("output_tps_under_1", (*base, "output_tps"), f"median output speed is {tps:g} tokens/s",
                 "output_tps is tokens per second, not seconds per token")  # fmt: skip
        for tier, s in m.speeds.items():
            tb = (*base, "speeds", tier)
            for field in ("output_tps_x", "ttft_x"):
                x = getattr(s, field)
                if x > MULTIPLIER_MAX:
                    warn("speed_multiplier_over_20", (*tb, field), f"{field} is {x:g}",
                         "a multiplier: 2.5 means 2.5 times, not 250%")  # fmt: skip
            if s.price_x is not None and s.price_x > MULTIPLIER_MAX:
                warn("price_multiplier_over_20", (*tb, "price_x"), f"price_x is {s.price_x:g}",
                     "a multiplier of the model's price: 6 means 6 times, not 600%")  # fmt: skip
    ignored = _ignored(scenario)
    return [w for w in out if w.key not in ignored]


def check_results(res, file: str = "<scenario>", lines: dict | None = None) -> list[Warning_]:
    """The warnings a simulation shows: a variant whose mean run is longer than a day."""
    if "run_over_a_day" in _ignored(res.scenario):
        return []
    out = []
    for name, v in res.summary_model().variants.items():
        mean = v.wall_time_s.mean
        if mean is not None and mean > RUN_MAX_S:
            item = ErrorItem(file, line_of(lines or {}, ("agent",)), ("agent",),
                             f"variant '{name}' runs {mean / 3600:,.1f} h on average, longer than a day",
                             "check the units of ttft, output_tps and tool times")  # fmt: skip
            out.append(Warning_("run_over_a_day", item))
    return out
