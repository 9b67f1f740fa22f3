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

from agentsim.model.base import gc_paused
from agentsim.model.loading import ErrorItem, Lines, ScenarioError, errors_from_validation, line_of, load_data
from agentsim.model.profiles import apply_profiles
from agentsim.model.scenario import Problem, Scenario, check_references
from agentsim.plan.compiler import compile_plan

__all__ = ["load", "load_with_lines", "parse"]


def parse(
    data: dict[str, Any], *, file: str = "<scenario>", lines: Lines | None = None, source: str | Path | None = None
) -> Scenario:
    """Validate plain data as a scenario; raise :class:`ScenarioError` with every problem found."""
    lines = lines or {}
    base_dir = Path(source).parent if source is not None else None
    data = apply_profiles(data, file, lines, base_dir)
    try:
        with gc_paused():
            scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        items = errors_from_validation(exc, data, lines, file)
        raise ScenarioError(_with_price_problems(items, data, file, lines)) from None
    problems: list[Problem] = check_references(scenario)
    if problems:
        items = [ErrorItem(file, line_of(lines, p.path), p.path, p.message, p.hint) for p in problems]
        raise ScenarioError(_with_price_problems(items, data, file, lines))
    if source is not None:
        scenario._source = str(source)
    return scenario


def price_problems(data: Any, file: str, lines: Lines) -> list[ErrorItem]:
    """Catalog and tier problems of every price table that is valid on its own (a catalog name that
    does not exist, a speed tier the catalog does not sell), found without a valid scenario: so that
    ``validate`` reports them in the same pass as the scenario's other problems."""
    import datetime as dt

    from agentsim.model.scenario import PriceSpec
    from agentsim.pricing.rates import PriceError, compile_price

    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        return []
    try:
        as_of = dt.date.fromisoformat(str(data["prices_as_of"])) if data.get("prices_as_of") is not None else None
    except ValueError:
        as_of = None
    tables: list[tuple[tuple, Any]] = []
    for name, m in models.items():
        if not isinstance(m, dict):
            continue
        tables.append((("models", name, "price"), m.get("price")))
        speeds = m.get("speeds")
        if isinstance(speeds, dict):
            for tier, sp in speeds.items():
                if isinstance(sp, dict):
                    tables.append((("models", name, "speeds", tier, "price"), sp.get("price")))
    out = []
    for path, price in tables:
        if not isinstance(price, dict) or "catalog" not in price:
            continue
        try:
            spec = PriceSpec.model_validate(price)
            compile_price(spec, as_of)
        except ValidationError:
            continue  # reported by the scenario's validation
        except PriceError as exc:
            where = (*path, *exc.subpath)
            out.append(ErrorItem(file, line_of(lines, where), where, exc.message, exc.hint))
    return out


def _with_price_problems(items: list[ErrorItem], data: Any, file: str, lines: Lines) -> list[ErrorItem]:
    seen = {(i.path, i.message) for i in items}
    extra = [i for i in price_problems(data, file, lines) if (i.path, i.message) not in seen]
    return sorted([*items, *extra], key=lambda i: (i.line is None, i.line or 0))


def load(path: str | Path) -> Scenario:
    """Load and validate a scenario file (YAML, JSON or TOML)."""
    return load_with_lines(path)[0]


def load_with_lines(path: str | Path) -> tuple[Scenario, Lines]:
    """:func:`load`, also returning the line of every key of the file (for warnings that point at it),
    so that the command line reads each file once."""
    with gc_paused():  # linear in the steps (agentsim.model.base.gc_paused)
        data, lines = load_data(path)
        scenario = parse(data, file=str(path), lines=lines, source=path)
        # Compile once so that problems only visible to the compiler (empirical files,
        # catalog prices, tiers) are reported at load time, with their place.
        compile_plan(scenario, file=str(path), lines=lines)
    return scenario, lines
