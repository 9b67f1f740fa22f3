"""Compile a scenario into a Plan: the agent as a tree of numbered nodes, ready to run.

The plan is what both engines execute. Compiling does everything that does not
depend on a random draw, once:

* every step becomes a node with a stable id (pre-order), a display name and a
  *scope*: the ``repeat`` and ``fanout`` nodes around it. A node inside a
  ``repeat`` of up to 40 iterations has up to 40 instances per run; its sampled
  values form an array of shape ``(runs, 40)`` (see :mod:`agentsim.plan.sampling`);
* every distribution becomes a :class:`~agentsim.plan.distributions.Sampler`;
* every (model, speed tier) used by any variant becomes a :class:`~agentsim.plan.nodes.Tier` with its
  compiled price rates and speed multipliers (:mod:`agentsim.plan.tiers`), and every call knows which
  tier it uses in each variant;
* ``subagent`` steps are inlined with their own context settings;
* a probability or repeat count written ``{by: CALL, MODEL: value}`` is resolved to one value per
  variant from the tier the named call runs on there (:mod:`agentsim.plan.by_model`);
* accounts, the workload and each model's provider ``conditions`` become draws and tables of their
  own (:mod:`agentsim.plan.shared`).

What a step becomes is its kind's business: :meth:`Compiler.step` looks the step up in the registry
(:mod:`agentsim.model.registry`) and calls the kind's ``compile(compiler, step, scope, path)``, which
uses the helpers here (:meth:`Compiler.new_node`, :meth:`Compiler.sampler`, :meth:`Compiler.draw`,
:meth:`Compiler.seq`, :meth:`Compiler.later`...).

Problems found here (a tier a model does not offer, a speed distribution that
can reach zero, an unreadable empirical file, an unknown catalog model) are
reported with the dotted path of the offending value.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentsim.model.base import Memo, gc_paused
from agentsim.model.loading import ErrorItem, ScenarioError, source_of
from agentsim.model.registry import kind_of
from agentsim.model.scenario import Scenario
from agentsim.plan.by_model import Resolver
from agentsim.plan.compile_context import CompileContext
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import (  # the plan's vocabulary, importable from here too
    ARRIVAL,
    CHUNKS,
    COND_TPS,
    COND_TTFT,
    COUNT,
    FAIL,
    FIRST_AUDIO,
    GAPS,
    INPUT,
    INTERRUPT_P,
    INTERRUPT_X,
    LATENCY,
    MAX_SECONDS,
    MAX_TOKENS,
    OUTPUT,
    PICK,
    REASONING,
    SENTENCES,
    STALL_AT,
    STALL_P,
    STALL_S,
    THINK,
    U_ERROR,
    U_JITTER,
    U_TPS,
    U_TTFT,
    ConsumerCfg,
    ContextCfg,
    Draw,
    InterruptCfg,
    Node,
    Plan,
    SeqNode,
    StreamCfg,
    Tier,
    WorkloadCfg,
)
from agentsim.plan.shared import attempt_draws, compile_accounts, compile_conditions, compile_workload, stall_draws
from agentsim.plan.tiers import TierTable
from agentsim.plan.time_of_day import compile_time_of_day
from agentsim.pricing.rates import needs_default_date, today

__all__ = [
    "ARRIVAL",
    "CHUNKS",
    "COND_TPS",
    "COND_TTFT",
    "COUNT",
    "FAIL",
    "FIRST_AUDIO",
    "GAPS",
    "INPUT",
    "INTERRUPT_P",
    "INTERRUPT_X",
    "LATENCY",
    "MAX_SECONDS",
    "MAX_TOKENS",
    "OUTPUT",
    "PICK",
    "REASONING",
    "SENTENCES",
    "STALL_AT",
    "STALL_P",
    "STALL_S",
    "THINK",
    "U_ERROR",
    "U_JITTER",
    "U_TPS",
    "U_TTFT",
    "Compiler",
    "ConsumerCfg",
    "ContextCfg",
    "Draw",
    "InterruptCfg",
    "Node",
    "Plan",
    "SeqNode",
    "StreamCfg",
    "Tier",
    "WorkloadCfg",
    "compile_plan",
]


class Compiler:
    """One compile of a scenario: the step kinds' kit (``new_node``, ``sampler``, ``draw``, ``seq``, ``later``...)
    over a :class:`~agentsim.plan.compile_context.CompileContext` (``ctx``: the nodes, draws and tiers made so
    far, and the problems found), which the compiler's helpers take instead of the compiler."""

    def __init__(self, scenario: Scenario, base_dir: Path | None):
        self.ctx = ctx = CompileContext(scenario, base_dir, scenario.prices_as_of or today())  # one date per compile
        self.sc, self.base_dir, self.variants, self.prices_as_of = scenario, base_dir, ctx.variants, ctx.prices_as_of
        self.problems, self.nodes, self.draws = ctx.problems, ctx.nodes, ctx.draws  # the context's lists
        self.table = TierTable(ctx)
        self.groups: list[str] = []  # names of the enclosing named steps, outermost first
        self.branch_depth = 0  # parallel/fanout/pipeline branches around the step being compiled
        self._later: list[Callable[[Resolver], None]] = []

    @property
    def tiers(self) -> list[Tier]:
        return self.ctx.tiers

    # ------------------------------------------------------------------ helpers
    def problem(self, path, message, hint=""):
        self.ctx.problem(path, message, hint)

    def sampler(self, spec, path, what: str, *, positive=False, upper: float | None = None) -> Sampler:
        """A sampler of a distribution, checked: above zero (``positive``) or not negative, at most ``upper``."""
        return self.ctx.sampler(spec, path, what, positive=positive, upper=upper)

    def new_node(self, cls, name, scope, path, **kw) -> Node:
        node = cls(id=len(self.nodes), name=name, scope=scope, path=tuple(path), **kw)
        self.nodes.append(node)
        return node

    def draw(self, node, purpose, scope, s, integer=False, **kw) -> None:
        """Declare a sampled quantity of ``node`` (see :class:`~agentsim.plan.nodes.Draw`)."""
        self.draws.append(Draw(node.id, purpose, scope, s, integer, **kw))

    def tier(self, model: str, speed: str, where: tuple) -> int | None:
        return self.table.tier(model, speed, where)

    def later(self, fn: Callable[[Resolver], None]) -> None:
        """Run ``fn(resolver)`` once every call is compiled (model-dependent values: agentsim.plan.by_model)."""
        self._later.append(fn)

    # ------------------------------------------------------------------ steps
    def seq(self, steps, scope, path, name="") -> SeqNode:
        """Steps run in order; a step that starts on the previous call's output is given that call."""
        node = self.new_node(SeqNode, name, scope, path)
        node.steps = tuple(self.step(s, scope, (*path, i)) for i, s in enumerate(steps))
        for prev, step in zip(node.steps, node.steps[1:], strict=False):
            if step.follows_call and prev.record == "call":
                step.call = prev
        return node

    def branch(self, branch, scope, path) -> SeqNode:
        """A parallel branch: a list of steps, or one step (a sequence of one)."""
        if isinstance(branch, list):
            return self.seq(branch, scope, path)
        node = self.new_node(SeqNode, "", scope, path)
        node.steps = (self.step(branch, scope, path),)
        return node

    def step(self, step, scope, path) -> Node:
        """Compile one step with its kind's ``compile``; its name is a group name for the calls inside it."""
        name = step.name
        if name:
            self.groups.append(name)
            try:
                return kind_of(step).compile(self, step, scope, path)
            finally:
                self.groups.pop()
        return kind_of(step).compile(self, step, scope, path)

    def resolve(self) -> None:
        """Resolve what waited for every call (model-dependent values), in the order it was asked for."""
        resolver = Resolver(self.ctx)
        for fn in self._later:
            fn(resolver)


def _check_system_tokens(comp: Compiler, scenario: Scenario) -> None:
    for where, cspec in [(("agent",), scenario.agent.context)] + [
        (("workflows", w), wf.context) for w, wf in scenario.workflows.items() if wf.context is not None
    ]:
        if cspec.system > MAX_TOKENS:
            comp.problem(
                (*where, "context", "system"),
                f"{cspec.system:.3g} system tokens is above the limit of {MAX_TOKENS:.3g}",
                "check the value (a typo?)",
            )


def _check_closed_loop(comp: Compiler, root: Node, workload) -> None:
    if workload is not None and workload.kind == "closed":
        from agentsim.plan.sizeguard import zero_time_reason

        zero = zero_time_reason(root, comp.tiers, workload.think)
        if zero:
            comp.problem(
                ("workload", "concurrent"),
                f"a run of this agent can take no simulated time ({zero}), so the closed workload's agents "
                "would start run after run at the same instant and the simulation would never end",
                "give the agent a step that takes time, or a workload.think_time above zero",
            )


def _check_streamed_answers(comp: Compiler) -> None:
    """A call whose answer is followed token by token may not reach more than MAX_STREAMED_TOKENS visible tokens:
    its per-token timeline is held in memory (agentsim.plan.sizeguard, streamed answers)."""
    from agentsim.plan.sizeguard import MAX_STREAMED_TOKENS, streamed_calls

    for s in streamed_calls(comp.nodes, comp.tiers):
        if s.top > MAX_STREAMED_TOKENS:
            comp.problem(
                (*s.node.path, "output"),
                f"this call's answer is streamed token by token (it has {s.why}) and can reach {s.top:.3g} output "
                f"tokens, above the limit of {MAX_STREAMED_TOKENS:,} for a streamed answer",
                "clip it, e.g. {lognormal: {median: 800, p90: 3000}, max: 100000}, or stream "
                "nothing from this call (no consumer, interrupt, pipeline or stall process)",
            )


def _raise_problems(comp: Compiler, file: str | None, src: str | None, lines: dict | None) -> None:
    file = file or src or "<scenario>"
    lines = lines or {}
    seen, items = set(), []
    for p in comp.problems:
        if (p.path, p.message) in seen:
            continue
        seen.add((p.path, p.message))
        items.append(ErrorItem.at(file, lines, p.path, p.message, p.hint))
    raise ScenarioError(items)


def compile_plan(scenario: Scenario, *, file: str | None = None, lines: dict | None = None) -> Plan:
    """Compile a validated scenario; raise :class:`ScenarioError` on problems found.

    A scenario is frozen, so it is compiled once: loading compiles it to report the compiler's problems,
    and ``validate``, ``run`` and the rest get that plan again (a copy made with ``model_copy``, whose
    fields may differ, is compiled anew). ``file`` and ``lines`` only place the problems of a compile that
    fails, which is never kept."""
    plan = scenario._plan.of(scenario)
    if plan is None:
        with gc_paused():  # linear in the steps (agentsim.model.base.gc_paused)
            plan = _compile(scenario, file, lines)
        scenario._plan = Memo(scenario, plan)
    return plan


def _compile(scenario: Scenario, file: str | None, lines: dict | None) -> Plan:
    src = source_of(scenario)
    comp = Compiler(scenario, Path(src).parent if src else None)
    ctx = ContextCfg.from_spec(scenario.agent.context)
    _check_system_tokens(comp, scenario)
    root = comp.seq(scenario.agent.steps, (), ("agent", "steps"), name="agent")
    comp.resolve()
    # Every model must compile even if no step uses it (a typo in an unused price is still a typo).
    for model in scenario.models:
        comp.tier(model, "standard", ("models", model))
        for speed in scenario.models[model].speeds:
            comp.tier(model, speed, ("models", model, "speeds", speed))
    accounts = compile_accounts(comp.ctx, scenario)
    stall_draws(comp.ctx)
    workload = compile_workload(comp.ctx, scenario)
    _check_closed_loop(comp, root, workload)
    _check_streamed_answers(comp)
    conditions = compile_conditions(comp.ctx, scenario)
    attempt_draws(comp.ctx, accounts)
    if comp.problems:
        _raise_problems(comp, file, src, lines)
    specs = [s for m in scenario.models.values() for s in (m.price, *(t.price for t in m.speeds.values()))]
    as_of = comp.prices_as_of if needs_default_date(specs) else scenario.prices_as_of
    return Plan(
        scenario,
        root,
        ctx,
        comp.tiers,
        list(comp.variants),
        comp.nodes,
        comp.draws,
        accounts,
        workload,
        as_of,
        conditions,
        compile_time_of_day(scenario),
        tuple(comp.ctx.read),
    )
