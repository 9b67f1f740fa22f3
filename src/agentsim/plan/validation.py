"""From a scenario file or plain data to a validated scenario that the compiler accepts.

:func:`load` = read the file (:func:`agentsim.model.loading.load_data`: ``extends:``, the line of
every key) → :func:`parse` (fill speeds from ``profile:`` files, validate with pydantic, check
cross-field references) → compile once (:func:`agentsim.plan.compiler.compile_plan`), so that problems
only the compiler sees (empirical files, catalog prices, tiers) are reported at load time with
their place. Every problem is a :class:`~agentsim.model.loading.ScenarioError` pointing at a line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentsim.model.loading import ErrorItem, Lines, ScenarioError, errors_from_validation, line_of, load_data
from agentsim.model.profiles import apply_profiles
from agentsim.model.scenario import Problem, Scenario, check_references
from agentsim.plan.compiler import compile_plan

__all__ = ["load", "parse"]


def parse(
    data: dict[str, Any], *, file: str = "<scenario>", lines: Lines | None = None, source: str | Path | None = None
) -> Scenario:
    """Validate plain data as a scenario; raise :class:`ScenarioError` with every problem found."""
    lines = lines or {}
    base_dir = Path(source).parent if source is not None else None
    data = apply_profiles(data, file, lines, base_dir)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(errors_from_validation(exc, data, lines, file)) from None
    problems: list[Problem] = check_references(scenario)
    if problems:
        raise ScenarioError([ErrorItem(file, line_of(lines, p.path), p.path, p.message, p.hint) for p in problems])
    if source is not None:
        scenario._source = str(source)
    return scenario


def load(path: str | Path) -> Scenario:
    """Load and validate a scenario file (YAML, JSON or TOML)."""
    data, lines = load_data(path)
    scenario = parse(data, file=str(path), lines=lines, source=path)
    # Compile once so that problems only visible to the compiler (empirical files,
    # catalog prices, tiers) are reported at load time, with their place.
    compile_plan(scenario, file=str(path), lines=lines)
    return scenario
