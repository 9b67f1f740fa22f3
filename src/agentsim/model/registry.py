"""The registry of step kinds and consumer kinds: every reader of "which kind is this?" asks it.

A **step kind** (``call``, ``tool``, ``wait``, ``listen``, ``parallel``...) and a **consumer kind**
(``reader``, ``speech``, ``render``) each live in one module of :mod:`agentsim.steps` or
:mod:`agentsim.consumers`, which holds everything about the kind -- its keys (a pydantic model), its
compilation, its size bounds, its discrete-event and vectorised forms -- and registers one
:class:`StepKind` (or :class:`ConsumerKind`) here. The scenario's ``Step`` union, the compiler, the size
guard, both engines, the summary's streaming section and the timeline read the kinds from here, never
from a list of their own.

This module sits in the lowest layer and imports no kind, so every layer can read it and no layer
imports upwards. The built-in kinds register themselves when their package is imported; the package
root (``agentsim/__init__.py``: the composition root, outside the layers) installs the loader that
imports them, and the registry runs it on first use. A kind defined elsewhere (a test's toy kind, a
plug-in) is added with :func:`register_step` / :func:`register_consumer` before the first scenario is
read.

The registry keeps no state beyond the kinds themselves (plain dictionaries filled at import time).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

__all__ = [
    "ConsumerKind",
    "Slot",
    "StepKind",
    "consumer_kind",
    "consumer_kinds",
    "kind_of",
    "load_kinds",
    "register_consumer",
    "register_step",
    "set_loader",
    "step_kind",
    "step_kinds",
    "table_metrics",
]


def _no_sequences(step: Any, here: tuple) -> Iterable[tuple[tuple, list]]:
    return ()


@dataclass(frozen=True)
class Slot:
    """A breakdown slot: where seconds of a run's critical path go (``breakdown_s.NAME``, the runs table's
    ``NAME_s``). ``label``: its row in the ``run`` table; ``legend``: its name in figures; ``colour``: its
    colour there (the breakdown bars, a run's timeline). The engines' own slots are :mod:`agentsim.sim.slots`'s;
    a step kind whose time is none of them declares its own (``StepKind.slots``)."""

    name: str
    label: str
    legend: str
    colour: str


@dataclass(frozen=True, eq=False)
class StepKind:
    """One step kind: what its module gives every reader.

    * ``name``: the step's key in a scenario file (``listen:``);
    * ``step``: the pydantic model of ``{name: spec}`` (the model layer's ``Step`` union is made of these);
    * ``compile(compiler, step, scope, path) -> Node``: the plan node, its children and its draws;
    * ``des(runner, node, flow, flat)``: the discrete-event form, an iterable the runner yields from;
    * ``fast(evaluator, node, state, ix)``: the vectorised form; ``None`` with a ``des_only`` reason
      when the fast path leaves the kind to the DES;
    * ``sequences(step, here)``: the lists of steps run in order inside the step, with their paths
      (``()`` for a leaf);
    * ``check(scenario, step, path, previous)``: cross-field problems (names that must exist, a step
      that must follow a call), a list of :class:`~agentsim.model.base.Problem`;
    * ``stand_in(spec, name) -> dict``: a valid step that keeps what the cross-field checks need of a step of
      this kind whose keys are broken (its name, a call's model), so ``validate`` reports the scenario's
      other problems in the same pass; ``None``: a wait of 0 s with the step's name;
    * ``slots``: the breakdown slots of its own (:class:`Slot`), reported when a plan has a node whose ``slot``
      names one (a ``listen`` step's time goes to ``listen``);
    * ``summary``: one line for the scenario reference, and ``docs`` its sections there:
      ``(definition, heading, example, where)`` (see :mod:`agentsim.docs_gen`), and ``units`` the unit of
      each numeric key the reference cannot guess (``{"ListenSpec.stt": "s"}``).

    Size bounds, instance axes, records and lanes are the node's (``agentsim.plan.compiler.Node``).
    """

    name: str
    step: type
    compile: Callable
    des: Callable
    fast: Callable | None
    des_only: str = ""
    sequences: Callable[[Any, tuple], Iterable[tuple[tuple, list]]] = _no_sequences
    check: Callable | None = None
    stand_in: Callable[[dict, str | None], dict] | None = None
    slots: tuple[Slot, ...] = ()
    summary: str = ""
    docs: tuple = ()
    units: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.fast is None and not self.des_only:
            raise ValueError(f"step kind '{self.name}' has no fast-path form and gives no reason (des_only)")


@dataclass(frozen=True, eq=False)
class ConsumerKind:
    """One consumer kind: who reads, hears or draws a call's streamed answer.

    * ``name``: its key under ``consumer:`` (``reader``);
    * ``spec``: the pydantic model of its keys;
    * ``compile(compiler, spec, call_node, path, qoe) -> ConsumerCfg``: its compiled form (and draws);
    * ``metrics``: the names of its own metrics, in the order of ``summary.json``, and
      ``measure(cfg, stream, n, **draws) -> {metric: array}`` computing them over a batch of calls
      (``stream``: their :class:`~agentsim.sim.streaming.StreamBatch`; ``n``: the tokens each delivered);
    * ``draws(cfg, slot, n) -> dict``: the per-call or per-sentence numbers it needs, for a batch;
    * ``timeline(cfg, stream, n, **draws) -> {column: matrix}``: its per-token times (``read_s``,
      ``spoken_s``), the same rule ``measure`` reads its metrics from, and ``columns``: column ->
      (label, line style) for the stream page and figure;
    * ``labels``: metric -> short label for tables (the CLI, the report), in reading order; a metric without
      one is labelled by its name; ``table``: the metrics the CLI's ``run`` table shows (default: those
      labelled);
    * ``pace(cfg)``: the tokens per second it consumes at, or ``None`` (the apparate point);
    * ``first_audio(cfg, slot, stream) -> times``: when the person first hears each call of a batch (absolute
      seconds), for a kind with a voice: an interruption ``after_first_audio`` counts from it, and ``voice``
      names the metric (since the send) that ``voice_to_voice_s`` is measured with (``first_audio_s``);
    * ``since_send``: those of its metrics that are seconds since the call was sent; each also exists from
      the person's ask as ``<name>_from_ask_s`` (contract v1.2), the time from the ask to the send added;
    * ``qoe_pace``: the pace (tokens/s) the Andes QoE expects of this kind when the scenario gives none.

    ``measure`` may take ``stop`` (absolute times, ``inf`` where none: the person interrupts there, and
    consuming stops) and return ``_end``, when the consumer would have consumed the whole answer (``inf``
    when it was cut off); an interruption at or after ``_end`` interrupted nothing.
    """

    name: str
    spec: type
    compile: Callable
    metrics: tuple[str, ...]
    measure: Callable
    since_send: tuple[str, ...] = ()
    qoe_pace: float = 4.8
    draws: Callable | None = None
    timeline: Callable | None = None
    columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    table: tuple[str, ...] | None = None
    pace: Callable | None = None
    first_audio: Callable | None = None
    voice: str = ""
    summary: str = ""
    docs: tuple = ()
    units: dict[str, str] = field(default_factory=dict)


_steps: dict[str, StepKind] = {}
_by_type: dict[type, StepKind] = {}
_consumers: dict[str, ConsumerKind] = {}
_loader: list[Callable[[], None]] = []  # the built-in kinds' loader, run once on first use
_version = [0]  # bumped by every registration (caches of derived types compare it)


def set_loader(loader: Callable[[], None]) -> None:
    """Install the function that imports the built-in kinds (the package root does, once)."""
    _loader[:] = [loader]


def _load() -> None:
    if _loader:
        loader = _loader.pop()
        loader()


def version() -> int:
    """A number that changes whenever a kind is registered (for caches of types built from the kinds)."""
    _load()
    return _version[0]


def register_step(kind: StepKind) -> StepKind:
    """Add a step kind (a kind of the same name is replaced: a module imported twice registers twice)."""
    old = _steps.get(kind.name)
    if old is not None:
        _by_type.pop(old.step, None)
    _steps[kind.name] = kind
    _by_type[kind.step] = kind
    _version[0] += 1
    return kind


def table_metrics(kind: ConsumerKind) -> tuple[str, ...]:
    """The metrics of a consumer kind that the CLI's ``run`` table shows."""
    return tuple(kind.labels) if kind.table is None else kind.table


def register_consumer(kind: ConsumerKind) -> ConsumerKind:
    """Add a consumer kind (one of the same name is replaced)."""
    _consumers[kind.name] = kind
    _version[0] += 1
    return kind


def load_kinds(package: str, path: Iterable[str], order: tuple[str, ...], consumers: bool) -> None:
    """Import every module of ``package`` (at ``path``), which registers its kinds: the names in ``order`` first,
    then the others by name; then list the package's kinds (step kinds, or consumer kinds with ``consumers``)
    in that order whichever module was imported first (a test or a notebook importing one kind's module
    directly registers it early: the summary's tables and the scenario's union must not depend on that)."""
    names = [m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_")]
    names.sort(key=lambda n: (order.index(n) if n in order else len(order), n))
    for name in names:
        import_module(f"{package}.{name}")
    kinds = _consumers if consumers else _steps
    first = {n: kinds[n] for n in names if n in kinds}
    rest = {n: k for n, k in kinds.items() if n not in first}
    kinds.clear()
    kinds.update({**first, **rest})


def step_kinds() -> dict[str, StepKind]:
    """Every step kind by name, in registration order."""
    _load()
    return _steps


def step_kind(name: str) -> StepKind:
    _load()
    return _steps[name]


def kind_of(step: Any) -> StepKind:
    """The kind of a validated step (an instance of some kind's ``step`` model)."""
    _load()
    return _by_type[type(step)]


def consumer_kinds() -> dict[str, ConsumerKind]:
    """Every consumer kind by name, in registration order."""
    _load()
    return _consumers


def consumer_kind(name: str) -> ConsumerKind:
    _load()
    return _consumers[name]
