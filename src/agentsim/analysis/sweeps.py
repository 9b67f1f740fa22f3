"""Sweeps: the same scenario evaluated over a grid of values of some of its numbers.

A sweep *axis* names one place in the scenario file and the values it takes::

    --set models.opus.speeds.fast.output_tps_x=1.5:4:0.5   # a range start:stop:step
    --set agent.steps[1].repeat.times=10,20,40             # a list
    --set 'models.opus.ttft={lognormal: {median: 2, p90: 6}}'  # one YAML value

or, in the scenario file itself::

    sweeps:
      - {set: models.opus.speeds.fast.output_tps_x, range: {start: 1.5, stop: 4, step: 0.5}}
      - {set: 'agent.steps[1].repeat.times', values: [10, 20, 40], label: act/observe iterations}

Paths are dotted keys with ``[i]`` list indices; a key containing dots is quoted
(``models."gpt-5.2".ttft``). A range runs from ``start`` in steps of ``step`` and
*includes* ``stop`` when ``stop`` lies on the grid (``1.5:4:0.5`` is 1.5, 2, ..., 4;
``1:4:2`` is 1, 3). It is computed in decimal arithmetic, so ``0.1:0.3:0.1`` gives
exactly three points. Several axes make a grid (their Cartesian product, the first
axis varying slowest). ``--set`` options replace the file's ``sweeps:``.

Places can also vary *together* (zipped): ``--zip PATH=VALUES`` options (all of them one group), or a
``together:`` item in the file, take value i of each at the same grid point, so two accounts' limits
move up a ladder of tiers side by side instead of in every combination::

    sweeps:
      - together:
          - {set: limits.opus.preset, values: [anthropic/tier-1, anthropic/tier-2]}
          - {set: limits.haiku.preset, values: [anthropic/tier-1, anthropic/tier-2]}

A group is one dimension of the grid (its places need the same number of values), crossed with the others.

Each grid point is the scenario's raw data with the values put in place, then
validated and compiled again, so a value that makes the scenario invalid is
reported like any other scenario error, naming the axis that set it. Every point
uses the same seed: the points share their random numbers (common random numbers),
so differences between neighbouring points are not noise.

Running: each grid point is one :func:`~agentsim.sim.simulation.simulate_plan` call, a
deterministic function of the point's plan, the runs and the seed (whatever the
processes it uses). Points are batched into tasks of at least ~100 ms (sized by a
short pilot run) and run on a process pool (``workers``) or a Dask cluster; the
rows are put back together in grid order, so the table is the same bytes whatever
the number of workers or the executor. A grid of fewer points than workers runs
one point at a time with its blocks of runs spread over the processes instead.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from agentsim.analysis.completion import THRESHOLD
from agentsim.model.loading import ErrorItem, ScenarioError, load_data
from agentsim.model.scenario import Scenario, suggest
from agentsim.plan.compiler import Plan, compile_plan
from agentsim.plan.sampling import block_spans
from agentsim.plan.validation import parse
from agentsim.sim.executors import EXECUTORS, Placement, unordered_map
from agentsim.sim.results import Results, summary_frame
from agentsim.sim.results import summary_rows as results_summary_rows
from agentsim.sim.simulation import choose_engine, simulate_plan

__all__ = [
    "EXECUTORS",
    "Sweep",
    "SweepAxis",
    "apply_values",
    "axes_from_scenario",
    "default_workers",
    "dimensions",
    "file_grid",
    "grid",
    "grid_size",
    "parse_path",
    "parse_set",
    "parse_zip",
    "range_values",
    "run_sweep",
    "summary_rows",
    "with_monthly_spend",
]

MAX_POINTS = 100_000  # a grid larger than this is almost certainly a typo in a range
TASK_SECONDS = 0.1  # smallest task worth sending to a worker


@dataclass(frozen=True)
class SweepAxis:
    """One swept place: its path in the scenario data and the values it takes."""

    path: tuple[str | int, ...]
    text: str  # the path as the user wrote it: also the column name in the sweep table
    values: tuple[Any, ...]
    origin: str  # "--set models.x=1,2" or "sweeps[0]": named in error messages
    label: str | None = None  # axis label for figures
    group: int | None = None  # axes of one group vary together (zipped): value i of each at point i

    @property
    def title(self) -> str:
        return self.label or self.text


# --------------------------------------------------------------------------- parsing


def parse_path(text: str) -> tuple[str | int, ...]:
    """``agent.steps[1].repeat.times`` -> ``('agent', 'steps', 1, 'repeat', 'times')``."""
    out: list[str | int] = []
    i, n = 0, len(text)
    expect_key = True
    while i < n:
        c = text[i]
        if c == "[":
            j = text.find("]", i)
            if j < 0 or not text[i + 1 : j].strip().isdigit():
                raise ValueError(f"'{text}': an index is written [N] with a whole number N")
            out.append(int(text[i + 1 : j]))
            i = j + 1
            expect_key = False
        elif c == ".":
            if expect_key:
                raise ValueError(f"'{text}': empty key before a dot")
            i += 1
            expect_key = True
        elif c in "\"'":
            j = text.find(c, i + 1)
            if j < 0:
                raise ValueError(f"'{text}': unclosed quote")
            out.append(text[i + 1 : j])
            i = j + 1
            expect_key = False
        else:
            j = i
            while j < n and text[j] not in ".[":
                j += 1
            out.append(text[i:j])
            i = j
            expect_key = False
    if not out or expect_key:
        raise ValueError(f"'{text}': not a path such as agent.steps[1].repeat.times")
    return tuple(out)


def _decimal(text: str) -> Decimal:
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(f"'{text}' is not a number") from None
    if not d.is_finite():
        raise ValueError(f"'{text}' is not a finite number")
    return d


def range_values(start: Any, stop: Any, step: Any) -> list[float | int]:
    """``start, start+step, ...`` up to ``stop`` (included when on the grid), in decimal arithmetic.

    Integers stay integers when all three are whole numbers written without a decimal point.
    """
    a, b, s = (_decimal(str(x)) for x in (start, stop, step))
    if s == 0:
        raise ValueError("the step of a range cannot be 0")
    if (b - a) * s < 0:
        raise ValueError(f"a range from {start} to {stop} needs a step of the other sign than {step}")
    count = int((b - a) / s) + 1
    if count > MAX_POINTS:
        raise ValueError(f"the range {start}:{stop}:{step} has {count:,} values (more than {MAX_POINTS:,})")
    integral = all(
        isinstance(x, int) or (isinstance(x, str) and x.strip().lstrip("+-").isdigit()) for x in (start, stop, step)
    )
    vals = [a + i * s for i in range(count)]
    return [int(v) for v in vals] if integral else [float(v) for v in vals]


def _scalar(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"'{text}' is not a valid value: {exc}") from None


def parse_values(text: str) -> list[Any]:
    """The value part of ``--set``: ``a:b:step`` (a range), ``x,y,z`` (a list), ``[..]`` or one YAML value."""
    t = text.strip()
    if not t:
        raise ValueError("no values after '='")
    if t.startswith("["):
        vals = _scalar(t)
        if not isinstance(vals, list) or not vals:
            raise ValueError(f"'{t}' is not a non-empty YAML list")
        return vals
    if t.startswith("{"):
        return [_scalar(t)]
    parts = t.split(":")
    if len(parts) > 1:
        if len(parts) != 3:
            raise ValueError(f"'{t}': a range is start:stop:step, e.g. 1.5:4:0.5")
        return range_values(*parts)
    return [_scalar(p) for p in t.split(",")]


def parse_set(text: str) -> SweepAxis:
    """One ``--set PATH=VALUES`` option."""
    if "=" not in text:
        raise ValueError(f"--set '{text}': write PATH=VALUES, e.g. agent.steps[1].repeat.times=10,20,40")
    lhs, rhs = text.split("=", 1)
    origin = f"--set {text}"
    try:
        path = parse_path(lhs.strip())
        values = parse_values(rhs)
    except ValueError as exc:
        raise ValueError(f"{origin}: {exc}") from None
    return SweepAxis(path, lhs.strip(), tuple(values), origin)


def parse_zip(texts: list[str], group: int = 0) -> list[SweepAxis]:
    """``--zip PATH=VALUES`` options: places varied together (value i of each at grid point i)."""
    import dataclasses

    axes = []
    for text in texts:
        try:
            axis = parse_set(text)
        except ValueError as exc:
            raise ValueError(str(exc).replace("--set", "--zip", 1)) from None
        axes.append(dataclasses.replace(axis, origin=f"--zip {text}", group=group))
    return axes


def axes_from_scenario(scenario: Scenario, file: str = "<scenario>", lines: dict | None = None) -> list[SweepAxis]:
    """The axes declared under the scenario's ``sweeps:`` (empty when it has none); the places of a
    ``together:`` item form one group (varied together)."""
    axes = []
    for i, spec in enumerate(scenario.sweeps or []):
        if spec.together is None:
            axes.append(_file_axis(spec, ("sweeps", i), f"sweeps[{i}]", None, file, lines))
            continue
        for j, member in enumerate(spec.together):
            where = ("sweeps", i, "together", j)
            axes.append(_file_axis(member, where, f"sweeps[{i}].together[{j}]", i, file, lines))
    return axes


def file_grid(scenario: Scenario, file: str = "<scenario>", lines: dict | None = None) -> list[SweepAxis]:
    """The axes of the scenario's ``sweeps:`` (:func:`axes_from_scenario`) with their grid checked
    (:func:`grid_size`): a grid too large, or places varied together with unequal counts, is a
    :class:`ScenarioError` at ``sweeps``. ``sweep``, ``report`` (before its simulation) and ``validate`` call it."""
    axes = axes_from_scenario(scenario, file, lines)
    try:
        grid_size(axes)
    except ValueError as exc:
        line = (lines or {}).get(("sweeps",))
        raise ScenarioError([ErrorItem(file, line, ("sweeps",), str(exc))]) from None
    return axes


def _file_axis(spec, where: tuple, origin: str, group: int | None, file: str, lines: dict | None) -> SweepAxis:
    try:
        path = parse_path(spec.set)
        if spec.values is not None:
            values = list(spec.values)
        else:
            r = spec.range
            values = range_values(_plain(r.start), _plain(r.stop), _plain(r.step))
    except ValueError as exc:
        raise ScenarioError([ErrorItem.at(file, lines or {}, where, str(exc))]) from None
    return SweepAxis(path, spec.set, tuple(values), origin, spec.label, group)


def _plain(x: float) -> int | float | str:
    """A range bound from the file: ints stay ints (so a range of whole numbers stays whole)."""
    return int(x) if float(x).is_integer() else repr(float(x))


def dimensions(axes: list[SweepAxis]) -> list[list[SweepAxis]]:
    """The grid's dimensions: each axis alone, or the axes of one group together (in order of first
    appearance). The axes of a group must have the same number of values."""
    dims: list[list[SweepAxis]] = []
    by_group: dict[int, list[SweepAxis]] = {}
    for a in axes:
        if a.group is None:
            dims.append([a])
        elif a.group in by_group:
            by_group[a.group].append(a)
        else:
            by_group[a.group] = [a]
            dims.append(by_group[a.group])
    for dim in dims:
        counts = {len(a.values) for a in dim}
        if len(counts) > 1:
            each = ", ".join(f"{a.origin.split('=')[0]} has {len(a.values)}" for a in dim)
            raise ValueError(f"places varied together need the same number of values: {each}")
    return dims


def grid_size(axes: list[SweepAxis]) -> int:
    """The number of points of the grid of ``axes`` (the axes of a group count once: :func:`dimensions`); a
    ValueError past :data:`MAX_POINTS`. The one check of the grid's size: ``sweep``'s, ``report``'s (before its
    simulation) and ``validate``'s."""
    total = math.prod(len(d[0].values) for d in dimensions(axes))
    if total > MAX_POINTS:
        raise ValueError(f"the grid has {total:,} points (more than {MAX_POINTS:,}); use fewer values")
    return total


def grid(axes: list[SweepAxis]) -> list[dict[str, Any]]:
    """Every combination of the dimensions' values (:func:`dimensions`), the first varying slowest; the axes
    of one group take their values together (value i of each)."""
    if not axes:
        return [{}]
    grid_size(axes)
    dims = dimensions(axes)
    points = []
    for combo in itertools.product(*[range(len(d[0].values)) for d in dims]):
        points.append({a.text: a.values[k] for d, k in zip(dims, combo, strict=True) for a in d})
    return points


# --------------------------------------------------------------------------- applying values


def _set_in(data: Any, axis: SweepAxis, value: Any, file: str, lines: dict) -> None:
    """Put ``value`` at the axis' path; the last key may be new, everything before it must exist."""
    cur = data
    for depth, key in enumerate(axis.path):
        last = depth == len(axis.path) - 1
        here = axis.path[:depth]
        problem = None
        if isinstance(key, int):
            if not isinstance(cur, list):
                problem = (f"[{key}]: this is not a list", "")
            elif not 0 <= key < len(cur):
                problem = (f"[{key}]: there are {len(cur)} items here", f"use an index from 0 to {len(cur) - 1}")
        elif not isinstance(cur, dict):
            problem = (f"'{key}': this is not a mapping", "")
        elif key not in cur and not last:
            problem = (f"there is no key '{key}' here", suggest(key, list(cur)) or "keys: " + ", ".join(map(str, cur)))
        if problem is not None:
            msg, hint = problem
            raise ScenarioError([ErrorItem.at(file, lines, here, f"{axis.origin}: {msg}", hint or "check the path")])
        if last:
            cur[key] = copy.deepcopy(value)
        else:
            cur = cur[key]


def apply_values(
    data: dict,
    axes: list[SweepAxis],
    point: dict[str, Any],
    *,
    file: str,
    lines: dict | None = None,
    source: str | os.PathLike | None = None,
) -> Scenario:
    """The scenario at one grid point: ``data`` with the point's values put in place, validated again."""
    return _apply(data, axes, point, file, lines or {}, source)[0]


def _apply(data, axes, point, file, lines, source) -> tuple[Scenario, Plan]:
    d = copy.deepcopy(data)
    for a in axes:
        if a.path and a.path[0] == "sweeps":
            raise ScenarioError([ErrorItem(file, None, a.path, f"{a.origin}: a sweep cannot change sweeps:")])
        _set_in(d, a, point[a.text], file, lines)
    d.pop("sweeps", None)
    try:
        sc = parse(d, file=file, lines=lines, source=source)
        plan = compile_plan(sc, file=file, lines=lines)
    except ScenarioError as exc:
        setting = ", ".join(f"{a.origin.split('=')[0]}={_show(point[a.text])}" for a in axes)
        raise ScenarioError(
            [ErrorItem(i.file, i.line, i.path, f"{i.message} (with {setting})", i.hint) for i in exc.items]
        ) from None
    return sc, plan


def _show(v: Any) -> str:
    return v if isinstance(v, str) else yaml.safe_dump(v, default_flow_style=True).strip().removesuffix("\n...")


# --------------------------------------------------------------------------- rows of the sweep table

SUMMARY_COLUMNS = (
    "wall_mean_s", "wall_ci95_lo_s", "wall_ci95_hi_s", "wall_p50_s", "wall_p90_s", "wall_p95_s", "wall_p99_s",
    "cost_mean_usd", "cost_ci95_lo_usd", "cost_ci95_hi_usd", "cost_p95_usd", "calls_mean",
    "input_tokens_mean", "cache_read_tokens_mean", "cache_write_tokens_mean", "output_tokens_mean",
    "reasoning_tokens_mean", "queue_s", "ttft_s", "decode_s", "tool_s", "wait_s",
    "delta_time_s", "delta_cost_usd", "usd_per_hour_saved", "pays_off",
)  # fmt: skip


def summary_rows(res: Results) -> list[dict[str, Any]]:
    """One row per variant of a :class:`Results`: the figures of its ``summary.json``, flattened."""
    return results_summary_rows(res.summary_model())


# --------------------------------------------------------------------------- the work


@dataclass(frozen=True)
class _Grid:
    """What a worker needs to build any grid point: the file's data and the axes."""

    data: dict
    lines: dict
    axes: list[SweepAxis]
    file: str
    source: str | None  # the file (relative paths in the scenario are relative to it); None: a dict

    def plan(self, point: dict[str, Any]) -> Plan:
        return _apply(self.data, self.axes, point, self.file, self.lines, self.source)[1]


@dataclass
class _Task:
    """Grid points built and simulated one after the other by one worker."""

    grid: _Grid
    seed: int
    runs: int
    engine: str
    items: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    inner_workers: int = 1  # processes simulate_plan may use for the blocks of one point


def _run_task(task: _Task) -> list[tuple[int, str, Any]]:
    """Build and simulate each point of a task: ``(index, "rows", rows)`` or ``(index, "error", items)``."""
    out: list[tuple[int, str, Any]] = []
    for i, point in task.items:
        try:
            plan = task.grid.plan(point)
        except ScenarioError as exc:
            out.append((i, "error", exc.items))
            continue
        where = Placement(workers=task.inner_workers)
        res = simulate_plan(plan, task.runs, task.seed, engine=task.engine, where=where)
        out.append((i, "rows", summary_rows(res)))
    return out


def default_workers() -> int:
    """All the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _batch(
    grid_: _Grid, points: list[dict], seed: int, runs: int, engine: str, workers: int, point_seconds: float
) -> list[_Task]:
    """Grid points in tasks of at least TASK_SECONDS, and several tasks per worker for balance."""
    target = max(TASK_SECONDS, min(2.0, point_seconds * len(points) / max(1, workers * 8)))
    per_task = max(1, math.ceil(target / max(point_seconds, 1e-9)))
    return [
        _Task(grid_, seed, runs, engine, [(i, points[i]) for i in range(k, min(k + per_task, len(points)))])
        for k in range(0, len(points), per_task)
    ]


def _execute(
    tasks: list[_Task],
    workers: int,
    executor: str,
    scheduler: str | None,
    progress: Callable[[int, int], None] | None,
) -> dict[int, tuple[str, Any]]:
    """Run the tasks anywhere, in any order; return ``(kind, payload)`` of every point by its index."""
    total = sum(len(t.items) for t in tasks)
    rows: dict[int, tuple[str, Any]] = {}

    def collect(out) -> None:
        for i, kind, payload in out:
            rows[i] = (kind, payload)
        if progress is not None:
            progress(len(rows), total)

    if progress is not None:
        progress(0, total)
    for out in unordered_map(_run_task, tasks, workers=workers, executor=executor, scheduler=scheduler):
        collect(out)
    return rows


# --------------------------------------------------------------------------- the sweep


@dataclass
class Sweep:
    """A finished sweep: the table (one row per grid point x variant) and what made it."""

    scenario: Scenario  # the scenario at the first grid point
    axes: list[SweepAxis]
    points: list[dict[str, Any]]
    table: pd.DataFrame
    seed: int
    runs: int
    engine: str
    tasks: int = 0  # how many tasks the work was cut into (depends on timing, never on the results)

    @property
    def variants(self) -> list[str]:
        return list(dict.fromkeys(self.table["variant"]))

    @property
    def columns(self) -> list[str]:
        """The swept columns of :attr:`table`, in axis order."""
        return [a.text for a in self.axes]

    def gains(self, axis: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """The marginal gain per unit of the swept ``axis`` at each point, and the knee (analysis.sweep_gains)."""
        from agentsim.analysis.sweep_gains import sweep_gains

        return sweep_gains(self, axis, metric)

    def knees(self, axis: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """Where returns diminish along ``axis``: the knee per variant (agentsim.analysis.sweep_gains)."""
        from agentsim.analysis.sweep_gains import sweep_knees

        return sweep_knees(self, axis, metric)

    def independent_of(self, column: str) -> list[str]:
        """The swept columns that vary independently of ``column`` (not in its group)."""
        dims = dimensions(self.axes)
        return [a.text for d in dims if column not in [b.text for b in d] for a in d]


def _axis_column(values: list[Any]) -> pd.Series:
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pd.Series(values, dtype="int64")
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return pd.Series(values, dtype="float64")
    if all(isinstance(v, str) for v in values):
        return pd.Series(values, dtype=object)
    return pd.Series([_show(v) for v in values], dtype=object)


def run_sweep(
    source: str | os.PathLike | dict,
    axes: list[SweepAxis] | None = None,
    *,
    runs: int | None = None,
    seed: int | None = None,
    engine: str = "auto",
    workers: int | None = None,
    executor: str = "process",
    scheduler: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Sweep:
    """Evaluate a scenario file (or a ``dict`` shaped like one) over a grid.

    ``axes`` (from :func:`parse_set`) replace the file's ``sweeps:``; ``runs`` and
    ``seed`` override the scenario's; ``workers`` (default: all cores) processes,
    or a Dask cluster with ``executor="dask"`` (``scheduler`` an address such as
    ``tcp://host:8786``, or None to start a local cluster of ``workers`` processes).
    ``progress(done, total)`` is called as grid points finish.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor '{executor}' (choose one of {', '.join(EXECUTORS)})")
    path, file, data, lines = _read_source(source)
    base = parse(copy.deepcopy(data), file=file, lines=lines, source=path)
    axes = _sweep_axes(file_grid(base, file, lines) if axes is None else axes, file)
    points = grid(axes)
    runs, seed, workers = _counts(base, runs, seed, workers)

    grid_ = _Grid(data, lines, list(axes), file, None if path is None else str(path))
    first = grid_.plan(points[0])  # the first point is checked here, the others where they run
    used_engine = choose_engine(first, engine)
    point_seconds = _point_seconds(first, runs, seed, engine)
    if executor == "process" and workers > 1 and len(points) < workers and len(block_spans(runs)) > 1:
        # Few points of many runs: one point at a time, its blocks spread over the processes.
        tasks = [_Task(grid_, seed, runs, engine, [(i, p)], inner_workers=workers) for i, p in enumerate(points)]
        done = _execute(tasks, 1, "process", None, progress)
    else:
        tasks = _batch(grid_, points, seed, runs, engine, workers, point_seconds)
        done = _execute(tasks, workers, executor, scheduler, progress)
    table = _sweep_table(points, axes, _rows_by_point(done))
    return Sweep(first.scenario, axes, points, table, seed, runs, used_engine, len(tasks))


def _read_source(source: str | os.PathLike | dict) -> tuple[Path | None, str, dict, dict]:
    """The scenario's path, the name its errors give, its raw data and its line numbers (none for a dict)."""
    if isinstance(source, dict):  # plain data shaped like a file, checked like one (errors name <dict>)
        return None, "<dict>", copy.deepcopy(source), {}
    path = Path(source)
    data, lines = load_data(path)
    return path, str(path), data, lines


def _sweep_axes(axes: list[SweepAxis], file: str) -> list[SweepAxis]:
    """The axes, checked: at least one, and no place swept twice."""
    if not axes:
        raise ScenarioError(
            [ErrorItem(file, None, ("sweeps",), "nothing to sweep", "add a sweeps: section or give --set PATH=VALUES")]
        )
    seen = set()
    for a in axes:
        if a.text in seen:
            raise ValueError(f"{a.origin}: '{a.text}' is swept twice")
        seen.add(a.text)
    return axes


def _counts(base: Scenario, runs: int | None, seed: int | None, workers: int | None) -> tuple[int, int, int]:
    """The runs, seed and workers of a sweep: those given, else the scenario's (all cores), checked."""
    runs = base.runs if runs is None else int(runs)
    seed = base.seed if seed is None else int(seed)
    if runs < 1 or seed < 0:
        raise ValueError("runs must be at least 1 and seed at least 0")
    workers = default_workers() if workers is None else int(workers)
    if workers < 1:
        raise ValueError("workers must be at least 1")
    return runs, seed, workers


def _point_seconds(first: Plan, runs: int, seed: int, engine: str) -> float:
    """About how long one grid point takes, from a short pilot run of the first (a workload: infinite)."""
    if first.workload is not None:  # a workload is one long simulation per point: a task each
        return math.inf
    n_pilot = min(runs, 64)
    t0 = time.perf_counter()
    simulate_plan(first, n_pilot, seed, engine=engine)  # only to size the tasks
    return (time.perf_counter() - t0) / n_pilot * runs


def _rows_by_point(done: dict[int, tuple[str, Any]]) -> dict[int, Any]:
    """The summary rows of every grid point by its index; the first point that failed raises its errors."""
    failed = sorted(i for i, (kind, _) in done.items() if kind == "error")
    if failed:
        raise ScenarioError(done[failed[0]][1])
    return {i: payload for i, (_, payload) in done.items()}


def _sweep_table(points: list[dict[str, Any]], axes: list[SweepAxis], rows_of: dict[int, Any]) -> pd.DataFrame:
    """One row per grid point x variant, in grid order: the point, its swept values, its summary."""
    index = [i for i in range(len(points)) for _ in rows_of[i]]
    table = summary_frame([r for i in range(len(points)) for r in rows_of[i]])
    table.insert(0, "point", np.array(index, dtype=np.int64))
    for j, a in enumerate(axes):
        col = _axis_column([points[int(i)][a.text] for i in table["point"]])
        table.insert(1 + j, a.text, col.to_numpy())
    return _marked(table)


def _marked(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its booleans typed, the rows whose figures are of the completed runs only (above
    1% failed) marked, and its Pareto frontiers."""
    from agentsim.analysis.tradeoffs import mark_pareto

    table["pays_off"] = table["pays_off"].astype("boolean")
    if "failed_share" in table.columns:  # wall time and cost then describe only the runs that completed
        table["completed_runs_only"] = table["failed_share"].astype("float64") > THRESHOLD
    return mark_pareto(table)


def with_monthly_spend(sw: Sweep, runs_per_month: float) -> Sweep:
    """The sweep with an ``api_usd_per_month`` column: each row's mean cost (per success, when the scenario
    has ``fail`` steps) times ``runs_per_month`` (:func:`agentsim.analysis.volume.monthly_volume`)."""
    import dataclasses

    cost = "cost_per_success_usd" if "cost_per_success_usd" in sw.table.columns else "cost_mean_usd"
    table = sw.table.assign(api_usd_per_month=sw.table[cost].astype("float64") * float(runs_per_month))
    return dataclasses.replace(sw, table=table)
