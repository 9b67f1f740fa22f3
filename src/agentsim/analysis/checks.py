"""What every command checks on a scenario file before it simulates, in one place, for ``validate``.

``validate`` must give the verdict every command gives: loading (schema, domain limits, references,
prices, the compiler's own checks: :func:`agentsim.plan.validation.load_with_lines`) and, on top,
what the commands check before their work:

* ``sweep`` and ``report``: the ``sweeps:`` section (paths, ranges: a step of 0, a grid too large)
  and the scenario at every swept value (each axis' values applied one at a time and validated);
* ``run``, ``report``, ``size``, ``optimize``, ``sweep``: the size guard at the scenario's runs
  (:func:`agentsim.plan.sizeguard.check_plan`, with the engine ``auto`` would choose).

:func:`command_problems` returns every such problem as :class:`~agentsim.model.loading.ErrorItem`s.
"""

from __future__ import annotations

import copy
from pathlib import Path

from agentsim.model.loading import ErrorItem, Lines, ScenarioError, load_data
from agentsim.model.scenario import Scenario
from agentsim.plan.compiler import compile_plan
from agentsim.plan.sizeguard import SizeError, check_plan

__all__ = ["command_problems"]


def command_problems(path: str | Path, scenario: Scenario, lines: Lines) -> list[ErrorItem]:
    """The problems a command would find in a scenario that loads: sweeps and the size guard."""
    file = str(path)
    items = _sweep_problems(path, scenario, lines)
    plan = compile_plan(scenario, file=file, lines=lines)
    try:
        try:
            check_plan(plan, scenario.runs, "des")  # the stricter limit: what passes it passes on every engine
        except SizeError:
            from agentsim.sim.simulation import choose_engine  # NumPy: only for a scenario near the limits

            check_plan(plan, scenario.runs, choose_engine(plan, "auto"))
    except SizeError as exc:
        items.append(ErrorItem(file, None, ("runs",), f"run would refuse this scenario: {exc}"))
    return items


def _sweep_problems(path: str | Path, scenario: Scenario, lines: Lines) -> list[ErrorItem]:
    if not scenario.sweeps:
        return []
    from agentsim.analysis.sweeps import apply_values, axes_from_scenario, file_grid  # pandas: only with sweeps

    file = str(path)
    try:
        axes = axes_from_scenario(scenario, file, lines)
    except ScenarioError as exc:
        return list(exc.items)
    items: list[ErrorItem] = []
    try:
        file_grid(scenario, file, lines)  # sweep's and report's check of the grid
    except ScenarioError as exc:
        items.extend(exc.items)
    data, _ = load_data(path)
    base = {a.text: a.values[0] for a in axes}
    seen = set()
    for a in axes:
        for value in a.values:
            point = {**base, a.text: value}
            try:
                apply_values(copy.deepcopy(data), axes, point, file=file, lines=lines, source=path)
            except ScenarioError as exc:
                new = [i for i in exc.items if (i.path, i.message) not in seen]
                seen.update((i.path, i.message) for i in new)
                items.extend(new)
    return items
