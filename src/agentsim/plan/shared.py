"""What a plan holds beyond its steps: provider accounts, the workload, provider conditions, and the
per-call draws that depend on the models (attempts, stalls).

* **Accounts** (``limits:``): each tier's accounts (``opus`` covers every tier of opus, ``opus@fast`` one);
* **the workload**: its arrival gaps or think times, drawn for a pseudo-node after every real node;
* **provider conditions**: per-run factors of each model's TTFT and speed, one pseudo-node per model
  (after the workload's), drawn with scope ``()`` so each run has one factor per model;
* per call, when some tier it can run on needs them: a uniform per *attempt* deciding a server error
  and one for the back-off jitter; whether its stream stalls, for how long and after which token.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentsim.model.scenario import Scenario, suggest
from agentsim.plan.distributions import Sampler, uniform
from agentsim.plan.nodes import (
    ARRIVAL,
    COND_TPS,
    COND_TTFT,
    STALL_AT,
    STALL_P,
    STALL_S,
    THINK,
    U_ERROR,
    U_JITTER,
    Draw,
    WorkloadCfg,
)

if TYPE_CHECKING:
    from agentsim.plan.compile_context import CompileContext

__all__ = ["attempt_draws", "compile_accounts", "compile_conditions", "compile_workload", "stall_draws"]


def compile_conditions(comp: CompileContext, scenario: Scenario) -> dict[str, int]:
    """Per-run provider-condition factors: one pseudo-node per model with ``conditions`` (after all real
    nodes and the workload's pseudo-node), drawn with scope () so each run has one factor per model."""
    out: dict[str, int] = {}
    for i, (model, mspec) in enumerate(scenario.models.items()):
        cond = mspec.conditions
        if cond is None:
            continue
        node = len(comp.nodes) + 1 + i
        where = ("models", model, "conditions")
        ttft_x = comp.sampler(cond.ttft_x, (*where, "ttft_x"), "conditions ttft_x", positive=True)
        tps_x = comp.sampler(cond.output_tps_x, (*where, "output_tps_x"), "conditions output_tps_x", positive=True)
        comp.draws.append(Draw(node, COND_TTFT, (), ttft_x))
        comp.draws.append(Draw(node, COND_TPS, (), tps_x))
        out[model] = node
    return out


def compile_accounts(comp: CompileContext, scenario: Scenario) -> list:
    """Account specs, and each tier's accounts (``opus`` covers every tier of opus, ``opus@fast`` one)."""
    if scenario.limits:  # agentsim.plan.limits imports SimPy: not for a scenario without limits
        from agentsim.plan.limits import AccountSpec

    accounts = []
    member: dict[int, list[int]] = {t.index: [] for t in comp.tiers}
    for name, spec in (scenario.limits or {}).items():
        idx = len(accounts)
        accounts.append(
            AccountSpec(
                idx,
                name,
                spec.concurrency,
                spec.rpm,
                spec.input_tpm,
                spec.output_tpm,
                spec.policy,
                spec.count_cache_reads,
            )
        )
        if spec.concurrency is None and spec.rpm is None and spec.input_tpm is None and spec.output_tpm is None:
            comp.problem(
                ("limits", name),
                "this account sets no limit",
                "give at least one of concurrency, rpm, input_tpm, output_tpm",
            )
        for i, ref in enumerate(spec.models):
            model, _, tier = ref.partition("@")
            where = ("limits", name, "models", i)
            if model not in scenario.models:
                comp.problem(
                    where,
                    f"model '{model}' is not defined under models",
                    suggest(model, list(scenario.models)) or "defined: " + ", ".join(scenario.models),
                )
                continue
            tiers = ["standard", *scenario.models[model].speeds]
            if tier and tier not in tiers:
                comp.problem(
                    where,
                    f"model '{model}' has no speed tier '{tier}'",
                    suggest(tier, tiers) or "its tiers: " + ", ".join(tiers),
                )
                continue
            for t in comp.tiers:
                if t.model == model and (not tier or t.speed == tier):
                    member[t.index].append(idx)
    for t in list(comp.tiers):
        comp.tiers[t.index] = replace(t, accounts=tuple(sorted(set(member.get(t.index, ())))))
    return accounts


def compile_workload(comp: CompileContext, scenario: Scenario) -> WorkloadCfg | None:
    wl = scenario.workload
    if wl is None or not wl.simulates_many:
        return None
    node = len(comp.nodes)  # a pseudo-node after all real ones keys the workload's own draws
    duration = wl.duration.total_seconds
    warmup = wl.warmup.total_seconds if wl.warmup is not None else 0.0
    if warmup >= duration:
        comp.problem(
            ("workload", "warmup"),
            f"warmup ({warmup:g} s) is not shorter than duration ({duration:g} s)",
            "shorten warmup or lengthen duration",
        )
    think = None
    if wl.arrivals is not None:
        rate = wl.arrivals.per_hour / 3600.0
        gap = Sampler("exponential", {"mean": 1.0 / rate})
        comp.draws.append(Draw(node, ARRIVAL, (), gap))
        return WorkloadCfg(node, "open", rate, None, None, duration, warmup)
    if wl.think_time is not None:
        think = comp.sampler(wl.think_time, ("workload", "think_time"), "think time")
        comp.draws.append(Draw(node, THINK, (), think))
    return WorkloadCfg(node, "closed", None, wl.concurrent, think, duration, warmup)


def attempt_draws(comp: CompileContext, accounts: list) -> None:
    """Per call and attempt: a draw deciding a server error, and one for back-off jitter. Both are drawn
    when first read (``late``): a workload whose calls cannot error, or whose refusals all carry a
    retry-after, never reads them (they are the largest draws of a block: one per attempt)."""
    tiers = comp.tiers
    if not accounts and not any(t.error_rate > 0 or t.timeout_s is not None for t in tiers):
        return
    for node in comp.nodes:
        if node.record != "call":
            continue
        attempts = 1
        for t in node.tiers:
            attempts = max(attempts, tiers[t].max_attempts)
            if tiers[t].fallback is not None:
                attempts = max(attempts, tiers[tiers[t].fallback].max_attempts)
        for purpose in (U_ERROR, U_JITTER):
            comp.draws.append(Draw(node.id, purpose, node.scope, None, extra=(attempts,), transform=uniform, late=True))


def stall_draws(comp: CompileContext) -> None:
    """Per call whose tier can stall: whether (STALL_P), how long (STALL_S) and after which token (STALL_AT)."""
    tiers = comp.tiers
    for node in comp.nodes:
        if node.record != "call":
            continue
        used = set(node.tiers) | {tiers[t].fallback for t in node.tiers if tiers[t].fallback is not None}
        # a stall process draws per instance slot, token-major (agentsim.sim.streaming), not here
        if any(
            tiers[t].stream is not None and tiers[t].stream.stall_p > 0 and not tiers[t].stream.stall_process
            for t in used
        ):
            for purpose in (STALL_P, STALL_S, STALL_AT):
                comp.draws.append(Draw(node.id, purpose, node.scope, None))
