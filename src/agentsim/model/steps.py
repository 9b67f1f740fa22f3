"""The steps of an agent as a scenario writes them: one mapping with one step-kind key each.

What the keys of each kind are (``call: {name, model, input, output...}``) is the kind's own module
(:mod:`agentsim.steps`), registered in :mod:`agentsim.model.registry`. This module holds what every
kind shares:

* :data:`Step`, the tagged union of the registered kinds' models, assembled when pydantic first builds
  a schema that uses it (so a kind registered by any module before the first scenario is read is a
  step like the others), and :class:`StepModel`, the base of a kind's ``{KIND: spec}`` model;
* the join of branches (:data:`Join`: ``all``, ``any`` or ``{k: N}``) that ``parallel`` and ``fanout`` share;
* the walks with dotted paths: :func:`walk_step` and :func:`iter_steps` (every step, nested ones
  included), :func:`sequences` (every list of steps run in order), :func:`step_name`. A kind says
  which lists of steps it holds with its ``sequences(step, here)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from agentsim.model import registry
from agentsim.model.base import StrictModel, integer, suggest
from agentsim.model.safe_text import key_text, value_text

__all__ = [
    "Join",
    "KJoin",
    "Path",
    "Step",
    "StepModel",
    "in_order",
    "iter_steps",
    "join_k",
    "sequences",
    "step_kind_names",
    "step_name",
    "walk_step",
]

Path = tuple[str | int, ...]


class StepModel(StrictModel):
    """Base of a kind's step model ``{KIND: spec}``: one field, named after the kind, holding its spec."""

    @property
    def spec(self) -> Any:
        cls = type(self)
        field = _KIND_FIELD.get(cls)
        if field is None:
            field = _KIND_FIELD[cls] = next(iter(cls.model_fields))
        return getattr(self, field)

    @property
    def name(self) -> str | None:
        """The ``name`` the step was given, if any."""
        return getattr(self.spec, "name", None)


_KIND_FIELD: dict[type, str] = {}  # step model class -> its one field (the kind's key)


def step_kind_names() -> tuple[str, ...]:
    """The keys a step can have, in the order the vocabulary lists them."""
    version = registry.version()
    if _names[0] != version:
        _names[:] = [version, tuple(registry.step_kinds())]
    return _names[1]


_names: list = [-1, ()]  # [registry version, the step kinds' names]


def _check_step_shape(value: Any) -> Any:
    if isinstance(value, StrictModel):
        return value
    kinds = step_kind_names()
    if not isinstance(value, dict) or len(value) != 1:
        got = (
            f"a mapping of {len(value)} keys"
            + (f" ({', '.join(key_text(k) for k in list(value)[:4])})" if value else "")
            if isinstance(value, dict)
            else value_text(value)
        )
        raise PydanticCustomError(
            "bad_step",
            "a step is a mapping with exactly one of {kinds}; got {got}",
            {"kinds": ", ".join(kinds), "got": got},
        )
    (kind,) = value
    if kind not in kinds:
        hint = suggest(kind, kinds) or "step types: " + ", ".join(kinds)
        raise PydanticCustomError(
            "unknown_step", "unknown step type {kind} ({hint})", {"kind": key_text(kind), "hint": hint}
        )
    return value


def _step_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return next(iter(value), None)
    try:
        return registry.kind_of(value).name
    except KeyError:
        return None


_union: dict[int, Any] = {}  # registry version -> the union type


def step_union() -> Any:
    """The tagged union of every registered step kind's model (rebuilt when a kind is registered)."""
    version = registry.version()
    if version not in _union:
        options = tuple(Annotated[k.step, Tag(name)] for name, k in registry.step_kinds().items())
        _union.clear()
        _union[version] = Annotated[
            Union[options],  # noqa: UP007 (a union of a tuple of types)
            Discriminator(_step_tag),
            BeforeValidator(_check_step_shape),
        ]
    return _union[version]


class Step:
    """One step: a mapping with exactly one step-kind key (the union of the registered kinds' models).

    Used as a type in field annotations; pydantic asks it for its schema when it builds one, and it
    answers with :func:`step_union`.
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return handler(step_union())


class KJoin(StrictModel):
    k: Annotated[int, BeforeValidator(integer), Field(ge=1)] = Field(
        description="The join completes when k branches have finished."
    )


Join = Literal["all", "any"] | KJoin


def join_k(join: Any) -> int | None:
    """How many branches a join waits for: None for all, 1 for any, else k."""
    if join == "all":
        return None
    if join == "any":
        return 1
    return join.k


def in_order(steps: list[Any], path: Path) -> tuple[list[Any], list[Path]]:
    """A list of steps run in order, with each step's path (a kind's ``sequences`` yields these)."""
    return steps, [(*path, i) for i in range(len(steps))]


def walk_step(step: Any, here: Path) -> Iterator[tuple[Path, Any]]:
    """Yield ``(path, step)`` for ``step`` and every step nested inside it, depth first."""
    yield here, step
    for steps, paths in registry.kind_of(step).sequences(step, here):
        for s, p in zip(steps, paths, strict=True):
            yield from walk_step(s, p)


def iter_steps(steps: list[Any], path: Path) -> Iterator[tuple[Path, Any]]:
    """Yield ``(path, step)`` for every step, depth first, including nested ones."""
    for i, step in enumerate(steps):
        yield from walk_step(step, (*path, i))


def sequences(steps: list[Any], path: Path) -> Iterator[tuple[list[Any], list[Path]]]:
    """Yield ``(steps, paths)`` for every list of steps run in order, this one and the nested ones."""
    pending = [in_order(steps, path)]
    while pending:
        seq, paths = pending.pop()
        yield seq, paths
        for step, here in zip(reversed(seq), reversed(paths), strict=True):
            pending.extend(reversed(list(registry.kind_of(step).sequences(step, here))))


def step_name(step: Any) -> str | None:
    """The ``name`` a step was given, if any."""
    return step.name
