"""Warnings when a scenario leaves the ranges its calibrated profiles were measured at.

A profile written by ``agentsim calibrate`` records where its fit holds (``measured:``, see
:mod:`agentsim.measure.measured_range`). For every model that uses such a profile, this module
compares the scenario's calls to that model with the recorded ranges and returns warnings
(never errors: extrapolating may be what the user wants, but they should know):

* **Input tokens.** A call's prompt is the context's ``system`` tokens plus the call's new
  ``input`` (DESIGN.md §4). Its *practical support* is taken as the 1% and 99% quantiles of
  the call's ``input`` distribution plus ``system``. When the context grows (``grows:
  true``), earlier calls' tokens add to later prompts, so the range computed here is a lower
  bound of the real one, and the warning fires only when even that leaves the measured range.
* **Output tokens.** The 1% and 99% quantiles of the call's ``output`` distribution.
* **Queueing.** ``queueing: {ttft_grows: true}`` means the measured TTFT carries a queue
  (:mod:`agentsim.measure.queueing`): it holds only at the concurrency it was measured at.
* **Dropped terms.** ``dropped: [prefill_tps]`` means the measured prompts varied too little
  to fit a prefill speed: the base TTFT includes the prefill of the measured prompt size,
  so prompts of another size are timed wrongly.

A value is outside when it is below 0.9x the smallest or above 1.1x the largest measured
value (a 10% margin, so that a scenario sized like the measurements does not warn).
Each warning names the scenario file and line, the model and the profile.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.model.loading import line_of, load_data
from agentsim.model.profiles import load_profile
from agentsim.plan.compiler import compile_plan

__all__ = ["MARGIN", "QUANTILES", "range_warnings"]

QUANTILES = (0.01, 0.99)  # the practical support of a call's token distributions
MARGIN = 0.10  # share beyond the measured range that still counts as inside


def _where(file: str, line: int | None) -> str:
    return f"{file}, line {line}" if line else file


def _fmt(x: float) -> str:
    return f"{x:,.0f}"


def range_warnings(scenario, file: str | Path) -> list[str]:
    """Warnings (one sentence each) for the scenario's calls outside their profiles' measured ranges."""
    if not any(getattr(model, "profile", None) for model in scenario.models.values()):
        return []  # no profile, nothing to compare (and no second reading and compiling of the file)
    file = str(file)
    _, lines = load_data(file)
    base_dir = Path(file).parent
    plan = compile_plan(scenario)
    out: list[str] = []
    for name, model in scenario.models.items():
        ref = getattr(model, "profile", None)
        if not ref:
            continue
        try:
            prof, ppath = load_profile(ref, base_dir)
        except Exception:  # loading already reported any problem with the profile
            continue
        rng = prof.measured
        if rng is None:
            continue
        label = f"model '{name}' (profile {ref})"
        prof_line = line_of(lines, ("models", name, "profile"))
        if "prefill_tps" in rng.dropped and "prefill_tps" not in scenario.models[name].model_fields_set:
            out.append(
                f"{_where(file, prof_line)}: {label} has no prefill term (the measured prompts varied too little "
                "to fit one), so its base TTFT includes the prefill of the measured prompt size and prompts of "
                "another size are timed as if they were that size; measure with `agentsim measure --input-tokens "
                "LOW-HIGH` and calibrate again"
            )
        q = rng.queueing
        if q is not None and q.ttft_grows:
            out.append(
                f"{_where(file, prof_line)}: {label} was measured with queueing in its TTFT (TTFT grew with the "
                f"requests in flight): its TTFT holds only at a concurrency of about {q.valid_at_concurrency}, "
                "and a concurrency limit in the scenario would count the queue twice"
            )
        import numpy as np  # only for a profile with measured ranges

        calls = [c for c in plan.calls if any(plan.tiers[t].model == name for t in c.tiers)]
        for call in calls:
            checks = []
            if rng.input_tokens is not None and call.input is not None:
                q = call.input.ppf(np.array(QUANTILES)) + plan.ctx.system
                checks.append(("input", "prompt", q, rng.input_tokens))
            if rng.output_tokens is not None and call.output is not None:
                checks.append(("output", "output", call.output.ppf(np.array(QUANTILES)), rng.output_tokens))
            for key, what, (lo, hi), (mlo, mhi) in checks:
                if hi > (1 + MARGIN) * mhi or lo < (1 - MARGIN) * mlo:
                    line = line_of(lines, (*call.path, key)) or line_of(lines, call.path)
                    out.append(
                        f"{_where(file, line)}: call '{call.name}' on {label} has {what} sizes of about "
                        f"{_fmt(lo)}-{_fmt(hi)} tokens (1%-99%), outside the {_fmt(mlo)}-{_fmt(mhi)} measured "
                        f"in {ppath.name}: the profile's speeds are extrapolated there"
                    )
    return out
