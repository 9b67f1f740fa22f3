"""Where to put fast mode: which steps to run on which speed tier (or model) under a budget.

The decision is made per *unit*: a named call, or a named group (``parallel``,
``repeat``, ``fanout``, ``choose``, ``subagent``) whose name, used as a variant key,
moves every call inside it (:mod:`agentsim.plan.compiler`). By default the units are the
outermost named steps that contain calls; ``steps=`` picks them by name. Each unit
has *options*: the speed tiers its model offers (``standard``, ``fast``...), and,
when ``models=`` is given, those models at each of their tiers.

An *assignment* (one option per unit) is written as a variant in the scenario's
own ``variants:`` vocabulary (``{speed: {unit: tier}, model: {unit: model}}``) on
top of a base variant, and every candidate is simulated on the same random
numbers (common random numbers). Measuring candidates by simulation is what
accounts for the critical path: upgrading a call that never decides when the run
ends (a parallel branch that always finishes early) costs more and saves nothing,
so it is never chosen.

Two modes:

* ``budget`` (USD per run): minimise the wall time (``p95`` or ``mean``) with mean
  cost at most the budget; where the scenario has ``slo`` targets the default (``metric="auto"``) is to
  maximise the share of runs meeting every target instead (targets drive verdicts: ``slo``);
* ``max_time`` (seconds): minimise mean cost with the wall time metric at most that;
* an SLO share (``min_slo_share``, contract v1.2): minimise mean cost with at least that share of runs
  meeting every ``slo`` target of the scenario ("the cheapest assignment with 95% of turns under 800 ms").
  It is the ``max_time`` search on the share of runs that miss (``slo_all_miss``, at most ``1 - share``).

When the scenario defines success (a ``fail`` step), candidates are ranked per successful task
(:func:`agentsim.analysis.tradeoffs.per_success`): "cost" is the cost per success (a budget is then USD per
success) and the ``mean`` time metric is the time to success; ``p95`` stays the p95 wall time of
completed runs.

Search: when the number of assignments is at most ``exhaustive_max`` (4096, i.e.
twelve two-way choices) every one is simulated and the best feasible is taken
(``method="exhaustive"`` past that bound is refused before anything is simulated, naming the greedy walk)
(ties: lower cost, then fewer changes from the base); the *frontier* shown is the
Pareto frontier of all of them. Beyond that, a greedy walk: from the base
assignment, first reach the constraint (moves by most seconds saved per dollar, or
dollars saved per second lost), then keep taking the single-unit move with the
best marginal ratio (seconds saved per dollar in ``budget`` mode, dollars saved
per second lost in ``max_time`` mode) that stays within the constraint, until no
move improves; the frontier shown is the path walked.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from agentsim.analysis.sweeps import summary_rows
from agentsim.analysis.tradeoffs import pareto_mask, per_success
from agentsim.model.scenario import Scenario, VariantSpec, all_steps, step_name, suggest
from agentsim.plan.compiler import Plan, compile_plan
from agentsim.sim.executors import process_pool
from agentsim.sim.simulation import simulate_plan

__all__ = ["Optimum", "Option", "Unit", "critical_table", "decision_units", "optimize", "variant_for"]

METRICS = {"p95": "wall_p95_s", "mean": "wall_mean_s", "slo": "slo_all_miss"}  # slo: runs missing a target
CHUNK = 32  # candidates simulated together (one plan with this many variants), at most
CHUNK_RUNS = 1 << 20  # ... and at most this many runs in all (variants x runs: the runs table of a chunk)


def chunk_size(runs: int) -> int:
    """How many candidates one simulation evaluates together: up to :data:`CHUNK`, fewer for many runs, so
    that a chunk's runs table (one row per run and candidate) stays about the size of ``run``'s. The
    candidates share the draws whatever the chunk (common random numbers), so it changes no figure."""
    return max(1, min(CHUNK, CHUNK_RUNS // max(1, runs)))


@dataclass(frozen=True)
class Option:
    """Run a unit's calls on ``speed`` of ``model`` (``None``: the model they already use)."""

    speed: str | None  # None together with model None: leave the unit as the base variant has it
    model: str | None = None

    @property
    def label(self) -> str:
        if self.speed is None and self.model is None:
            return "as is"
        if self.model is None:
            return str(self.speed)
        return self.model if self.speed == "standard" else f"{self.model}@{self.speed}"


AS_IS = Option(None, None)


@dataclass(frozen=True)
class Unit:
    """A variant key (step or group name) and the options it can take."""

    name: str
    kind: str
    calls: tuple[int, ...]  # call node ids it moves
    inner: tuple[str, ...]  # names of named steps inside it (their base-variant keys are dropped)
    options: tuple[Option, ...]
    base: int  # index of the option the base variant amounts to


def _declared_names(scenario: Scenario) -> set[str]:
    return {n for _, s in all_steps(scenario) if (n := step_name(s))}


def decision_units(
    plan: Plan, base: str | None = None, steps: list[str] | None = None, models: list[str] | None = None
) -> tuple[list[Unit], list[str]]:
    """The units and their options; also the names of steps left as they are in the base variant
    (calls under no named step, and units with a single option)."""
    declared = _declared_names(plan.scenario)
    bv = _base_index(plan, base)
    _check_choices(plan.scenario, declared, steps, models)
    found = _Owners(declared, set(steps) if steps else None)
    found.walk(plan.root, [])
    order = list(dict.fromkeys(found.owner.values()))
    if steps:
        order = [s for s in steps if s in order]
    units, uncovered = [], found.uncovered
    for name in order:
        calls = tuple(cid for cid, u in found.owner.items() if u == name)
        options, base_index = _options(plan, bv, calls, models)
        if len(options) < 2:  # nothing to choose: it stays as it is
            uncovered.append(name)
            continue
        inside = tuple(sorted(found.inner.get(name, set()) - set(order)))
        units.append(Unit(name, found.kinds.get(name, "call"), calls, inside, tuple(options), base_index))
    return units, list(dict.fromkeys(uncovered))


def _base_index(plan: Plan, base: str | None) -> int:
    """The index of the base variant (default: the first), which must exist."""
    base = base or plan.variants[0]
    if base not in plan.variants:
        raise ValueError(
            f"there is no variant '{base}' ({suggest(base, plan.variants) or 'variants: ' + ', '.join(plan.variants)})"
        )
    return plan.variants.index(base)


def _check_choices(sc: Scenario, declared: set[str], steps: list[str] | None, models: list[str] | None) -> None:
    """Every step named to decide on is a declared step or group, and every model offered exists."""
    for name in steps or []:
        if name not in declared:
            hint = suggest(name, sorted(declared)) or "named: " + ", ".join(sorted(declared))
            raise ValueError(f"there is no step or group named '{name}' ({hint})")
    for m in models or []:
        if m not in sc.models:
            raise ValueError(
                f"there is no model '{m}' ({suggest(m, list(sc.models)) or 'models: ' + ', '.join(sc.models)})"
            )


@dataclass
class _Owners:
    """Which unit owns each call of a plan, found by one walk over its tree: the outermost declared name
    around it, or with ``selected`` the innermost selected one (none: the call is uncovered)."""

    declared: set[str]
    selected: set[str] | None
    owner: dict[int, str] = field(default_factory=dict)  # call id -> unit name
    kinds: dict[str, str] = field(default_factory=dict)
    inner: dict[str, set[str]] = field(default_factory=dict)
    uncovered: list[str] = field(default_factory=list)

    def walk(self, node, chain: list[str]) -> None:
        """Visit ``node`` and its subtree; ``chain`` the enclosing declared names, outermost first."""
        here = chain
        if node.name in self.declared and node.kind != "seq":
            here = [*chain, node.name]
            self.kinds.setdefault(node.name, node.kind)
            for outer in chain:
                self.inner.setdefault(outer, set()).add(node.name)
        if node.record == "call":
            self._own(node, here)
        for child in node.children():
            self.walk(child, here)

    def _own(self, node, here: list[str]) -> None:
        """Give a call to its unit, or count it uncovered."""
        if self.selected is None:
            unit = here[0] if here else None
        else:
            unit = next((n for n in reversed(here) if n in self.selected), None)
        if unit is None:
            self.uncovered.append(node.name)
        else:
            self.owner[node.id] = unit


def _options(plan: Plan, bv: int, calls: tuple[int, ...], models: list[str] | None) -> tuple[list[Option], int]:
    """A unit's options (the speed tiers all its models offer, and the given models at each of theirs), and
    the index of the one the base variant amounts to (``AS_IS`` first when none does)."""
    sc = plan.scenario
    tiers = [plan.tiers[plan.nodes[c].tiers[bv]] for c in calls]
    base_models = list(dict.fromkeys(t.model for t in tiers))
    speeds = [
        s
        for s in ["standard", *sc.models[base_models[0]].speeds]
        if all(s == "standard" or s in sc.models[m].speeds for m in base_models)
    ]
    options = [Option(s) for s in speeds]
    for m in models or []:
        if len(base_models) == 1 and m == base_models[0]:
            continue
        options += [Option(s, m) for s in ["standard", *sc.models[m].speeds]]
    same = len({(t.model, t.speed) for t in tiers}) == 1
    if same and Option(tiers[0].speed) in options:
        return options, options.index(Option(tiers[0].speed))
    return [AS_IS, *options], 0


def variant_for(base: VariantSpec, units: list[Unit], assignment: tuple[int, ...]) -> VariantSpec:
    """The assignment as a variant: the base variant's keys, with each unit's choice on top."""
    speed, model = dict(base.speed), dict(base.model)
    for unit, k in zip(units, assignment, strict=True):
        opt = unit.options[k]
        if opt == AS_IS or k == unit.base:  # the base variant already runs these calls so
            continue
        for key in (unit.name, *unit.inner):
            speed.pop(key, None)
            model.pop(key, None)
        speed[unit.name] = opt.speed
        if opt.model is not None:
            model[unit.name] = opt.model
    return VariantSpec(speed=speed, model=model)


def variant_dict(spec: VariantSpec) -> dict[str, Any]:
    """A variant as it would be written under ``variants:``."""
    out: dict[str, Any] = {}
    if spec.speed:
        out["speed"] = dict(spec.speed)
    if spec.model:
        out["model"] = dict(spec.model)
    return out


def _evaluate_chunk(scenario: Scenario, specs: list[VariantSpec], runs: int, seed: int) -> list[dict]:
    variants = {f"c{i}": s for i, s in enumerate(specs)}
    sc = scenario.model_copy(update={"variants": variants})
    plan = compile_plan(sc)
    rows = [_with_miss(per_success(r)) for r in summary_rows(simulate_plan(plan, runs, seed))]
    # a candidate's own figures only: its name and its deltas against the chunk's first candidate say
    # nothing (which candidates share a chunk depends on the runs, see chunk_size)
    return [{k: v for k, v in r.items() if k not in _CHUNK_RELATIVE} for r in rows]


_CHUNK_RELATIVE = ("variant", "delta_time_s", "delta_cost_usd", "usd_per_hour_saved", "pays_off")


def _with_miss(row: dict) -> dict:
    """A summary row with the share of runs missing some slo target (1 when no run has an outcome)."""
    if "slo_all_share" in row:
        share = row["slo_all_share"]
        row["slo_all_miss"] = 1.0 if share is None else 1.0 - share
    return row


@dataclass
class _Evaluator:
    scenario: Scenario
    base: VariantSpec
    units: list[Unit]
    runs: int
    seed: int
    workers: int = 1
    progress: Callable[[int], None] | None = None
    cache: dict[tuple[int, ...], dict] = field(default_factory=dict)

    def __call__(self, assignments: list[tuple[int, ...]]) -> list[dict]:
        todo = [a for a in dict.fromkeys(assignments) if a not in self.cache]
        size = chunk_size(self.runs)
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
        args = [[variant_for(self.base, self.units, a) for a in chunk] for chunk in chunks]
        if self.workers > 1 and len(chunks) > 1:
            with process_pool(min(self.workers, len(chunks))) as pool:
                futs = [pool.submit(_evaluate_chunk, self.scenario, specs, self.runs, self.seed) for specs in args]
                results = []
                for f, chunk in zip(futs, chunks, strict=True):
                    results.append(f.result())
                    if self.progress:
                        self.progress(len(chunk))
        else:
            results = []
            for specs, chunk in zip(args, chunks, strict=True):
                results.append(_evaluate_chunk(self.scenario, specs, self.runs, self.seed))
                if self.progress:
                    self.progress(len(chunk))
        for chunk, rows in zip(chunks, results, strict=True):
            for a, row in zip(chunk, rows, strict=True):
                self.cache[a] = row
        return [self.cache[a] for a in assignments]


@dataclass
class Optimum:
    """What :func:`optimize` found."""

    method: str  # exhaustive or greedy
    mode: str  # budget or max_time
    metric: str  # p95, mean, or slo (the share of runs missing a target: min_slo_share or a budget's goal)
    limit: float
    units: list[Unit]
    uncovered: list[str]
    base_variant: str
    assignment: tuple[int, ...]
    feasible: bool
    variant: dict[str, Any]  # the chosen assignment in the variants: vocabulary
    chosen: dict[str, Any]  # its summary row
    baseline: dict[str, Any]  # the base assignment's summary row
    frontier: pd.DataFrame  # exhaustive: Pareto frontier of all candidates; greedy: the path walked
    evaluated: int
    min_slo_share: float | None = None  # the share of runs meeting every slo target asked for (metric "slo")
    targets: dict[str, float] = field(default_factory=dict)  # the scenario's slo targets (rows: slo_KEY_...)

    @property
    def choices(self) -> dict[str, str]:
        return {u.name: u.options[k].label for u, k in zip(self.units, self.assignment, strict=True)}


def metric_column(scenario: Scenario, metric: str) -> str:
    """The summary column ``metric`` (``mean``, ``p95``, ``slo``) ranks on: the person's waiting where the
    scenario has turns (contract v1.3: their pauses are not waiting), else the wall time."""
    if metric != "slo" and compile_plan(scenario).turn_nodes:
        return {"p95": "waiting_p95_s", "mean": "waiting_mean_s"}[metric]
    return METRICS[metric]


def _row_of(units: list[Unit], a: tuple[int, ...], m: dict, col: str) -> dict[str, Any]:
    row = {
        "assignment": ", ".join(f"{u.name}={u.options[k].label}" for u, k in zip(units, a, strict=True)),
        "time_s": m[col],
        "wall_mean_s": m["wall_mean_s"],
        "wall_p95_s": m["wall_p95_s"],
        "cost_mean_usd": m["cost_mean_usd"],
    }
    row |= {k: v for k, v in m.items() if k.startswith("slo_") and k != "slo_all_miss"}  # targets: shares, p95
    if "basis" in m:  # per success: cost_mean_usd / wall_mean_s are per success; per-run figures beside
        row |= {"cost_per_run_usd": m["cost_per_run_usd"], "success_share": m["success_share"], "basis": m["basis"]}
    return row


def optimize(
    scenario: Scenario,
    *,
    budget_usd_per_run: float | None = None,
    max_time_s: float | None = None,
    min_slo_share: float | None = None,
    metric: str = "auto",
    base: str | None = None,
    steps: list[str] | None = None,
    models: list[str] | None = None,
    runs: int | None = None,
    seed: int | None = None,
    method: str = "auto",
    exhaustive_max: int = 4096,
    workers: int = 1,
    progress: Callable[[int, int | None], None] | None = None,
) -> Optimum:
    """Choose speed tiers (or models) per unit; see the module docstring for the modes and the search."""
    mode, limit, metric = _constraint(scenario, budget_usd_per_run, max_time_s, min_slo_share, metric)
    if method not in ("auto", "exhaustive", "greedy"):
        raise ValueError(f"unknown method '{method}' (choose auto, exhaustive or greedy)")
    plan = compile_plan(scenario)
    units, uncovered = decision_units(plan, base, steps, models)
    if not units:
        raise ValueError("no named step or group with calls to decide on: name the steps (name: ...) in the scenario")
    base_name = base or plan.variants[0]
    base_spec = scenario.variant_specs()[base_name]
    runs = scenario.runs if runs is None else int(runs)
    seed = scenario.seed if seed is None else int(seed)
    combos = math.prod(len(u.options) for u in units)
    method = _search_method(method, units, combos, exhaustive_max)
    tick = _counter(progress, combos if method == "exhaustive" else None)
    ev = _Evaluator(scenario, base_spec, units, runs, seed, workers, tick)
    goal = _Goal(mode, metric_column(scenario, metric), limit)
    base_a = tuple(u.base for u in units)
    if method == "exhaustive":
        chosen_a, chosen, frontier, is_ok = _exhaustive(units, ev, base_a, goal)
    else:
        chosen_a, frontier, is_ok = _greedy(units, ev, base_a, goal)
        chosen = ev([chosen_a])[0]
    baseline = ev([base_a])[0]
    return Optimum(
        method=method, mode=mode, metric=metric, limit=limit, units=units, uncovered=uncovered,
        base_variant=base_name, assignment=chosen_a, feasible=is_ok,
        variant=variant_dict(variant_for(base_spec, units, chosen_a)), chosen=chosen, baseline=baseline,
        frontier=frontier, evaluated=len(ev.cache), min_slo_share=min_slo_share, targets=dict(scenario.slo or {}),
    )  # fmt: skip


def _constraint(
    scenario: Scenario,
    budget_usd_per_run: float | None,
    max_time_s: float | None,
    min_slo_share: float | None,
    metric: str,
) -> tuple[str, float, str]:
    """The search's mode (``budget`` or ``max_time``), its limit and the metric it ranks on, from the one
    constraint given (a share of runs meeting the slo is a maximum share missing it)."""
    if min_slo_share is not None:
        if budget_usd_per_run is not None or max_time_s is not None:
            raise ValueError("give one constraint: a budget, a maximum wall time or a share of runs meeting the slo")
        if not scenario.slo:
            raise ValueError("a share of runs meeting the slo needs slo targets: add slo: {METRIC: target, ...}")
        if not 0.0 <= min_slo_share <= 1.0:
            raise ValueError(f"the share of runs meeting the slo is between 0 and 1, got {min_slo_share}")
        max_time_s, metric = 1.0 - float(min_slo_share), "slo"
    if (budget_usd_per_run is None) == (max_time_s is None):
        raise ValueError("give exactly one of a budget (USD per run) or a maximum wall time (s)")
    metric = _metric(scenario, metric, budget_usd_per_run is not None, min_slo_share)
    mode = "budget" if budget_usd_per_run is not None else "max_time"
    limit = float(budget_usd_per_run if budget_usd_per_run is not None else max_time_s)
    return mode, limit, metric


def _search_method(method: str, units: list[Unit], combos: int, exhaustive_max: int) -> str:
    """``exhaustive`` or ``greedy``: ``auto`` is exhaustive up to ``exhaustive_max`` assignments; an exhaustive
    search past it is refused."""
    if method == "auto":
        return "exhaustive" if combos <= exhaustive_max else "greedy"
    if method == "exhaustive" and combos > exhaustive_max:
        raise ValueError(_too_many(units, combos, exhaustive_max))
    return method


def _counter(progress: Callable[[int, int | None], None] | None, total: int | None) -> Callable[[int], None]:
    """A callback that adds up the candidates evaluated and reports ``(done, total)`` to ``progress``."""
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, total)

    return tick


@dataclass(frozen=True)
class _Goal:
    """What a search aims at: in ``budget`` mode the least ``col`` with mean cost at most ``limit``, in
    ``max_time`` mode the least cost with ``col`` at most ``limit``."""

    mode: str
    col: str
    limit: float

    def feasible(self, m: dict) -> bool:
        """Whether a candidate's summary row meets the constraint."""
        return m["cost_mean_usd"] <= self.limit if self.mode == "budget" else m[self.col] <= self.limit


def _too_many(units: list[Unit], combos: int, bound: int) -> str:
    """Why an exhaustive search is refused before it starts (its count of assignments is past the bound)."""
    sizes = sorted({len(u.options) for u in units})
    each = f"{sizes[0]} options for each of {len(units)} units" if len(sizes) == 1 else f"{len(units)} units"
    count = f"{combos:,}" if combos < 10**15 else f"{combos:.3g}"
    return (
        f"an exhaustive search would simulate {count} assignments ({each}), more than the {bound:,} it is "
        "bounded to: use --method greedy (or auto, which takes the greedy walk beyond that), or decide on "
        "fewer steps with --steps"
    )


def _metric(scenario: Scenario, metric: str, budget: bool, min_slo_share: float | None) -> str:
    """The metric a search ranks on: ``auto`` is the share of runs missing a target (``slo``) for a budget on a
    scenario with ``slo`` targets, else ``p95``; ``slo`` with a budget needs targets."""
    if metric == "auto":
        return "slo" if budget and scenario.slo else "p95"
    if metric == "slo" and budget and not scenario.slo:
        raise ValueError("ranking on the slo needs slo targets: add slo: {METRIC: target, ...}")
    if metric not in METRICS or (metric == "slo" and not budget and min_slo_share is None):
        raise ValueError(f"unknown metric '{metric}' (choose p95, mean{', slo' if scenario.slo else ''} or auto)")
    return metric


def _exhaustive(units, ev, base_a: tuple, goal: _Goal):
    """Every assignment simulated: the best feasible one (ties: lower cost, then fewer changes from the base;
    none feasible: the closest to the constraint) and the Pareto frontier of all of them."""
    mode, col = goal.mode, goal.col

    def changes(a) -> int:
        return sum(k != b for k, b in zip(a, base_a, strict=True))

    space = list(itertools.product(*[range(len(u.options)) for u in units]))
    rows = ev(space)
    key_time = [(r[col], r["cost_mean_usd"], changes(a), i) for i, (a, r) in enumerate(zip(space, rows, strict=True))]
    key_cost = [(r["cost_mean_usd"], r[col], changes(a), i) for i, (a, r) in enumerate(zip(space, rows, strict=True))]
    keys = key_time if mode == "budget" else key_cost
    ok = [i for i, r in enumerate(rows) if goal.feasible(r)]
    if ok:
        best = min(ok, key=lambda i: keys[i])
    else:  # nothing meets the constraint: the closest to it
        best = min(range(len(rows)), key=lambda i: key_cost[i] if mode == "budget" else key_time[i])
    mask = pareto_mask([r[col] for r in rows], [r["cost_mean_usd"] for r in rows])
    front = [
        _row_of(units, space[i], rows[i], col) | {"feasible": goal.feasible(rows[i]), "chosen": i == best}
        for i in range(len(rows))
        if mask[i]
    ]
    frontier = pd.DataFrame(front).sort_values(["cost_mean_usd", "time_s"], kind="stable", ignore_index=True)
    return space[best], rows[best], frontier, goal.feasible(rows[best])


_EPS = 1e-12


def _greedy(units, ev, start, goal: _Goal):
    """The greedy walk (see the module docstring); returns (assignment, path table, feasible)."""
    walk = _Walk(units, ev, goal.col, start)
    while not goal.feasible(walk.m):  # phase 1: reach the constraint
        if not walk.step(lambda m, r: _reach_key(goal, m, r), "reach"):
            return walk.cur, pd.DataFrame(walk.path), False
    while walk.step(lambda m, r: _improve_key(goal, m, r), "improve"):  # phase 2: improve within it
        pass
    return walk.cur, pd.DataFrame(walk.path), True


def _reach_key(goal: _Goal, m: dict, r: dict) -> tuple | None:
    """How good a move towards the constraint is (None: it is not one): money saved per second lost in
    ``budget`` mode, seconds saved per dollar in ``max_time`` mode."""
    dt, dc = r[goal.col] - m[goal.col], r["cost_mean_usd"] - m["cost_mean_usd"]
    if goal.mode == "budget" and dc < -_EPS:  # save money, per second lost
        return (dt <= _EPS, -dc / max(dt, _EPS) if dt > _EPS else -dc)
    if goal.mode == "max_time" and dt < -_EPS:  # save time, per dollar
        return (dc <= _EPS, -dt / max(dc, _EPS) if dc > _EPS else -dt)
    return None


def _improve_key(goal: _Goal, m: dict, r: dict) -> tuple | None:
    """How good a move within the constraint is (None: it leaves it or does not improve): seconds saved per
    dollar in ``budget`` mode, dollars saved per second in ``max_time`` mode."""
    if not goal.feasible(r):
        return None
    dt, dc = r[goal.col] - m[goal.col], r["cost_mean_usd"] - m["cost_mean_usd"]
    if goal.mode == "budget" and dt < -_EPS * max(1.0, abs(m[goal.col])):  # seconds saved per dollar
        return (dc <= 0, -dt / dc if dc > 0 else -dt)
    if goal.mode == "max_time" and dc < -_EPS * max(1.0, abs(m["cost_mean_usd"])):  # dollars saved per second
        return (dt <= 0, -dc / dt if dt > 0 else -dc)
    return None


class _Walk:
    """A greedy walk under way: where it stands (``cur``, its row ``m``), the path so far and what it has seen."""

    def __init__(self, units: list[Unit], ev: _Evaluator, col: str, start: tuple[int, ...]) -> None:
        self.units, self.ev, self.col, self.cur = units, ev, col, start
        self.m = ev([start])[0]
        self.path = [_row_of(units, start, self.m, col) | {"move": "start", "phase": "start"}]
        self.visited = {start}

    def step(self, key: Callable[[dict, dict], tuple | None], phase: str) -> bool:
        """Take the unvisited single-unit move of highest ``key(m, row)`` (None: not a move); False if none."""
        cand = [a for a in self._neighbours() if a not in self.visited]
        rows = self.ev(cand)
        scored = [(k, a, r) for a, r in zip(cand, rows, strict=True) if (k := key(self.m, r)) is not None]
        if not scored:
            return False
        _, best, mb = max(scored, key=lambda s: s[0])
        self.path.append(_row_of(self.units, best, mb, self.col) | {"move": self._moved(best), "phase": phase})
        self.visited.add(best)
        self.cur, self.m = best, mb
        return True

    def _neighbours(self) -> list[tuple[int, ...]]:
        """The assignments one unit's option away from where the walk stands."""
        a = self.cur
        return [(*a[:i], k, *a[i + 1 :]) for i, u in enumerate(self.units) for k in range(len(u.options)) if k != a[i]]

    def _moved(self, b: tuple[int, ...]) -> str:
        """The move from where the walk stands to ``b``, as ``unit: old → new`` parts."""
        return "; ".join(
            f"{u.name}: {u.options[x].label} → {u.options[y].label}"
            for u, x, y in zip(self.units, self.cur, b, strict=True)
            if x != y
        )


def critical_table(scenario: Scenario, opt: Optimum, runs: int = 500, seed: int | None = None) -> pd.DataFrame:
    """Per step, its share of the wall time on the critical path in the base and in the chosen assignment.

    Columns: ``step, kind, base_share, chosen_share, base_on_path, chosen_on_path`` (see
    :func:`agentsim.analysis.timeline.critical_share`).
    """
    from agentsim.analysis.timeline import critical_share

    base = scenario.variant_specs()[opt.base_variant]
    chosen = variant_for(base, opt.units, opt.assignment)
    sc = scenario.model_copy(update={"variants": {"base": base, "chosen": chosen}})
    res = simulate_plan(compile_plan(sc), runs, scenario.seed if seed is None else seed)
    share = critical_share(res.calls, res.spans, res.runs, max_runs=runs)
    parts = [
        share[share["variant"] == v][["step", "kind", "share", "on_path"]]
        .rename(columns={"share": f"{v}_share", "on_path": f"{v}_on_path"})
        .set_index(["step", "kind"])
        for v in ("base", "chosen")
    ]
    order = list(dict.fromkeys([*parts[0].index, *parts[1].index]))  # plan order
    return parts[0].reindex(order).join(parts[1].reindex(order)).reset_index()
