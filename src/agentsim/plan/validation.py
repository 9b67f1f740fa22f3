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
from agentsim.model.field_kinds import kind_problems
from agentsim.model.limit_presets import apply_limit_presets
from agentsim.model.loading import ErrorItem, Lines, ScenarioError, errors_from_validation, files_read, load_data
from agentsim.model.profiles import apply_profiles
from agentsim.model.registry import step_kinds
from agentsim.model.scenario import Problem, Scenario, check_references
from agentsim.plan.compiler import compile_plan
from agentsim.plan.nodes import Plan

__all__ = ["input_files", "load", "load_with_lines", "parse"]


def parse(
    data: dict[str, Any], *, file: str = "<scenario>", lines: Lines | None = None, source: str | Path | None = None
) -> Scenario:
    """Validate plain data as a scenario; raise :class:`ScenarioError` with every problem found.

    Every independent problem comes in one pass: values outside their kind's range
    (:mod:`agentsim.model.field_kinds`), the schema's problems, catalog prices and tiers, and the
    cross-field references, which run on a copy whose broken parts are replaced by valid stand-ins
    (:func:`_stand_ins`) when the schema fails, so a misspelt model is reported beside a missing key.
    """
    lines = lines or {}
    base_dir = Path(source).parent if source is not None else None
    read = list(getattr(lines, "read", ()))
    data = apply_profiles(data, file, lines, base_dir, read)
    data = apply_limit_presets(data, file, lines)
    items = [ErrorItem.at(file, lines, path, msg) for path, msg in kind_problems(data)]
    scenario: Scenario | None = None
    try:
        with gc_paused():
            scenario = Scenario.model_validate(data)
        problems = check_references(scenario)
    except ValidationError as exc:
        schema = errors_from_validation(exc, data, lines, file)
        # the scenario's own types speak first; the table of kinds adds what they do not check yet
        items = [*schema, *(i for i in items if not any(_related(i.path, s.path) for s in schema))]
        broken = [i.path for i in schema]
        problems = [p for p in _references_of(_stand_ins(data, broken)) if not any(_related(p.path, b) for b in broken)]
    items += [ErrorItem.at(file, lines, p.path, p.message, p.hint) for p in problems]
    if items:
        raise ScenarioError(_with_price_problems(items, data, file, lines))
    assert scenario is not None
    if source is not None:
        scenario._source = str(source)
    scenario._inputs = tuple(dict.fromkeys(read))
    return scenario


def _related(a: tuple, b: tuple) -> bool:
    """One path lies inside the other (or they are the same)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _references_of(data: dict | None) -> list[Problem]:
    if data is None:
        return []
    try:
        return check_references(Scenario.model_validate(data))
    except ValidationError:
        return []


PLACEHOLDER = {"wait": {"latency": 0}}  # a valid step that names nothing: stands in for a broken one


def _stand_in_step(step: Any) -> dict:
    """A valid step that keeps what references need of ``step``: its kind's stand-in (a call's keeps its model,
    :attr:`~agentsim.model.registry.StepKind.stand_in`), else the placeholder with the step's name."""
    key, spec = next(iter(step.items()), (None, None)) if isinstance(step, dict) and len(step) == 1 else (None, None)
    name = spec.get("name") if isinstance(spec, dict) and isinstance(spec.get("name"), str) else None
    kind = step_kinds().get(key) if isinstance(key, str) else None
    if kind is not None and kind.stand_in is not None and isinstance(spec, dict):
        return kind.stand_in(spec, name)
    ((place, keys),) = PLACEHOLDER.items()
    return {place: {**keys, **({"name": name} if name else {})}}


def _stand_in_model(model: Any) -> dict:
    speeds = model.get("speeds") if isinstance(model, dict) else None
    tiers = {t: {} for t in speeds if isinstance(t, str) and t != "standard"} if isinstance(speeds, dict) else {}
    return {"price": {"input_mtok": 0, "output_mtok": 0}, "ttft": 0, "output_tps": 1, "speeds": tiers}


_OPTIONAL_TOP = {"description", "seed", "runs", "workflows", "variants", "value_of_time", "prices_as_of", "limits",
                 "workload", "sweeps", "consumer", "warnings", "uncertainty"}  # fmt: skip


def _stand_ins(data: dict, broken: list[tuple]) -> dict | None:
    """A copy of ``data`` with every part holding a schema problem replaced by a valid stand-in (the step,
    the model, an optional top-level key dropped), so the cross-field checks can run on the rest; None when
    no such copy can be made (a required part is broken beyond that)."""
    import copy

    out = copy.deepcopy(data)
    for path in sorted(broken, key=len):
        if not _replace(out, path):
            return None
    return out


def _replace(data: dict, path: tuple) -> bool:
    if not path:
        return False
    if path[0] in _OPTIONAL_TOP and path[0] not in ("workflows",):
        data.pop(path[0], None)
        return True
    if path[0] == "name":
        data["name"] = "stand-in"
        return True
    # the deepest step on the path (an element of a list of steps or of branches) is replaced
    cur, step_at = data, None
    for key in path:
        if isinstance(cur, list):
            if not (isinstance(key, int) and 0 <= key < len(cur)):
                break
            if isinstance(cur[key], dict) and len(cur[key]) == 1 and next(iter(cur[key])) in step_kinds():
                step_at = (cur, key)
        elif not (isinstance(cur, dict) and key in cur):
            break
        cur = cur[key]
    if step_at is not None:
        container, key = step_at
        container[key] = _stand_in_step(container[key])
        return True
    if len(path) >= 2 and path[0] == "models" and isinstance(data.get("models"), dict) and path[1] in data["models"]:
        data["models"][path[1]] = _stand_in_model(data["models"][path[1]])
        return True
    if len(path) >= 2 and path[0] == "workflows" and isinstance(data.get("workflows"), dict):
        data["workflows"][path[1]] = {"steps": [_stand_in_step(PLACEHOLDER)]}
        return True
    if path[0] == "agent" and isinstance(data.get("agent"), dict) and len(path) >= 2 and path[1] == "context":
        data["agent"].pop("context", None)
        return True
    return False


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
            out.append(ErrorItem.at(file, lines, where, exc.message, exc.hint))
    return out


def _with_price_problems(items: list[ErrorItem], data: Any, file: str, lines: Lines) -> list[ErrorItem]:
    seen = {(i.path, i.message) for i in items}
    extra = [i for i in price_problems(data, file, lines) if (i.path, i.message) not in seen]
    return sorted([*items, *extra], key=lambda i: (i.line is None, i.line or 0))


def input_files(scenario: Scenario, plan: Plan | None = None) -> tuple[Path, ...]:
    """Every file read to make and compile ``scenario``: the file, the files it ``extends:``, its profiles and
    the empirical CSV files its distributions read (resolved; ``plan``: its compiled plan, when at hand). A
    command that writes checks its outputs against these (:mod:`agentsim.viz.outdir`): it never writes over
    what it read."""
    plan = compile_plan(scenario) if plan is None else plan
    return tuple(dict.fromkeys((*files_read(scenario), *plan.inputs)))


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
