"""The sections of a summary that apply to some scenarios only: limits, workload, success, streaming.

``run`` prints them as rows of its table, the HTML report as tables of their own; both read them from
here, from the ``summary.json`` document (the typed :class:`~agentsim.sim.summary_model.Summary` of
:meth:`Results.summary_model`; a dict of it is validated into one), so a page shows exactly the
numbers ``run --json`` gives. A section is returned only when the document has it (a scenario without
limits has no limits section, one without ``fail`` steps no success section).

A :class:`Metric` is one figure per variant: a label, a kind that decides its format
(:mod:`agentsim.viz.format`: ``time`` in seconds, ``usd``, ``count``, ``share``, ``number``, ``rate``
and ``text``) and a getter of its value from one variant's part of the document (a
:class:`~agentsim.sim.summary_model.Variant`). Metrics of one
``group`` share a time unit where a table shows them together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentsim.model.consumers import higher_is_better
from agentsim.sim.summary_model import Apparate, SloTarget, Summary, Variant, as_summary
from agentsim.viz import format as fmt

__all__ = [
    "ACCOUNT_KINDS",
    "Metric",
    "Section",
    "account_metrics",
    "accounts_section",
    "first_variant",
    "format_metric",
    "limits_section",
    "slo_section",
    "stream_metric",
    "streaming_sections",
    "success_section",
    "workload_section",
    "worst_label",
]


@dataclass(frozen=True)
class Metric:
    label: str
    kind: str
    get: Callable[[Variant], Any]
    group: str | None = None


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    metrics: list[Metric] = field(default_factory=list)


def _path(*names: str) -> Callable[[Variant], Any]:
    """A getter of one figure of a variant along ``names``, where the path is data (a section's field, a call's
    metric): an attribute of the typed model, a key of its dict-typed fields (accounts, streaming calls, slo);
    None where a part is absent (an optional section, an account or call another variant lacks)."""

    def get(v):
        for n in names:
            if v is None:
                return None
            v = v.get(n) if isinstance(v, dict) else getattr(v, n, None)
        return v

    return get


def format_metric(metric: Metric, values: list, unit: fmt.Unit | None = None, decimals: int | None = None) -> list[str]:
    """One metric's values (one per variant) as text, in one unit and one number of decimals."""
    kind = metric.kind
    if kind == "time":
        return fmt.durations(values, unit=unit, decimals=decimals)
    if kind == "usd":
        return [fmt.usd(x) for x in values]
    if kind == "count":
        return [fmt.count(x) for x in values]
    if kind == "share":
        return [fmt.pct(x) for x in values]
    if kind == "rate":  # utilisation of a limit: whole percent
        return [fmt.pct(x, 0) for x in values]
    if kind == "number":
        return fmt.numbers(values, decimals=decimals)
    return [fmt.DASH if x is None else str(x) for x in values]


def _first(doc: Summary) -> Variant:
    return next(iter(doc.variants.values()))


# --------------------------------------------------------------------------- sections


def _section(doc: Summary | dict, key: str, title: str, rows: tuple[tuple[str, str, str], ...]) -> Section | None:
    """The section ``key`` of summary.json as metrics ``(label, kind, field)``; None when the document lacks it."""
    if getattr(_first(as_summary(doc)), key) is None:
        return None
    return Section(key, title, [Metric(label, kind, _path(key, field)) for label, kind, field in rows])


def workload_section(doc: Summary | dict) -> Section | None:
    """Runs counted, completed, failed and unfinished, throughput (workloads only)."""
    return _section(doc, "workload", "Workload", (
        ("runs counted", "count", "runs_counted"),
        ("completed", "count", "runs_completed"),
        ("failed", "count", "runs_failed"),
        ("failed share", "share", "failed_share"),
        ("unfinished at end", "count", "runs_unfinished"),
        ("throughput (runs/h)", "number", "throughput_runs_per_hour"),
        ("output tokens/min", "count", "output_tokens_per_min"),
        ("cost of failed runs", "usd", "cost_of_failed_runs_usd"),
    ))  # fmt: skip


_ATTEMPTS = (
    ("rejected_429", "429s"),
    ("retries", "retries"),
    ("errors", "errors"),
    ("timeouts", "timeouts"),
    ("fallbacks", "fallbacks"),
    ("failed_runs", "failed runs"),
)


def limits_section(doc: Summary | dict) -> Section | None:
    """Queueing, 429s, retries, errors, fallbacks and failed runs (shared limits or failing calls only)."""
    if _first(as_summary(doc)).limits is None:
        return None
    return Section("limits", "Shared limits", [
        Metric("queue wait mean", "time", _path("limits", "queue_wait_s", "mean"), "queue"),
        Metric("queue wait p95", "time", _path("limits", "queue_wait_s", "p95"), "queue"),
        Metric("calls that queued", "share", _path("limits", "queue_wait_s", "share_waiting")),
        *[Metric(label, "count", _path("limits", "attempts", key)) for key, label in _ATTEMPTS],
    ])  # fmt: skip


ACCOUNT_KINDS = ("concurrency", "rpm", "input_tpm", "output_tpm")


def account_metrics(doc: Summary | dict, account: str) -> list[Metric]:
    """One account's requests in flight (when any variant uses it) and the use of each of its limits."""
    doc = as_summary(doc)
    first = _first(doc).limits.accounts[account]
    every = [(v.limits.accounts or {}).get(account) for v in doc.variants.values()]
    base = ("limits", "accounts", account)
    out = []
    if any(a is not None and a.concurrency.max_in_flight for a in every):
        out.append(Metric("in flight mean", "number", _path(*base, "concurrency", "mean_in_flight")))
        out.append(Metric("in flight max", "count", _path(*base, "concurrency", "max_in_flight")))
    for kind in ACCOUNT_KINDS:  # the Account's fields of the same names
        if _path(kind, "utilisation")(first) is not None:
            out.append(Metric(f"{kind} use", "rate", _path(*base, kind, "utilisation")))
    return out


def accounts_section(doc: Summary | dict) -> Section | None:
    """Per account of the shared limits: requests in flight and the use of each limit (``run``'s rows)."""
    doc = as_summary(doc)
    first = _first(doc)
    if first.limits is None or not first.limits.accounts:
        return None
    metrics = []
    for account in first.limits.accounts:
        metrics += [Metric(f"{account} {m.label}", m.kind, m.get) for m in account_metrics(doc, account)]
    return Section("accounts", "Accounts", metrics)


def success_section(doc: Summary | dict) -> Section | None:
    """Success share, cost per success and time to success (scenarios with ``fail`` steps)."""
    return _section(doc, "success", "Success", (
        ("success share", "share", "share"),
        ("cost per success", "usd", "cost_per_success_usd"),
        ("time to success", "time", "time_to_success_s"),
    ))  # fmt: skip


def first_variant(doc: Summary | dict) -> Variant:
    """The first variant's part of a summary document (the one whose sections decide which apply)."""
    return _first(as_summary(doc))


def slo_section(doc: Summary | dict) -> Section | None:
    """The share of runs meeting each of the scenario's ``slo`` targets, and all of them (``slo:``)."""
    slo: dict[str, SloTarget] | None = _first(as_summary(doc)).slo
    if not slo:
        return None
    metrics = []
    for key, entry in slo.items():
        if key == "all":
            continue
        op = "≥" if higher_is_better(key) else "≤"
        metrics.append(Metric(f"{key} {op} {_target_text(key, entry.target)}", "share", _path("slo", key, "share")))
    metrics.append(Metric("all targets met", "share", _path("slo", "all", "share")))
    return Section("slo", "Targets (share of runs meeting them)", metrics)


def _target_text(metric: str, target: float) -> str:
    if metric.endswith("_s"):
        return fmt.durations([target])[0]
    if metric.endswith("_usd"):
        return fmt.usd(target)
    return f"{target:g}"


WORST = {"p95": "p5", "p99": "p1"}  # a tail percentile of a score where more is better: its worst side


def worst_label(stat: str, names) -> str:
    """A tail row's label where some of ``names`` are scores where more is better (their worst 5% is the p5):
    ``worst 5% (p95; QoE: p5)``; else the statistic itself."""
    from agentsim.sim.stream_metrics import label_of

    low = [label_of(n) for n in names if higher_is_better(n)]
    if stat not in WORST or not low:
        return stat
    share = 100 - int(stat[1:])
    return f"worst {share}% ({stat}; {', '.join(low)}: {WORST[stat]})"


def stream_metric(name: str, stat: str, call: str) -> Metric:
    """One streaming metric of one call (``stat``: mean, p50, p95 or p99) with the kind its name gives. A tail
    (p95, p99) of a score where more is better (the QoE) is its worst side: the p5 or p1 (:data:`WORST`)."""
    if stat in WORST and higher_is_better(name):
        stat = WORST[stat]
    if name.endswith("_usd"):
        kind = "usd"
    elif name.endswith("_share"):
        kind = "share"
    elif name.endswith("_s"):
        kind = "time"
    else:
        kind = "number"
    from agentsim.sim.stream_metrics import label_of

    return Metric(label_of(name), kind, _path("streaming", "calls", call, name, stat))


def streaming_sections(doc: Summary | dict) -> list[tuple[str, list[str], Apparate | None]]:
    """Per call with a consumer: ``(call, metric names in reading order, apparate point of the first variant)``."""
    from agentsim.sim.stream_metrics import reading_order

    first = _first(as_summary(doc))
    if first.streaming is None:
        return []
    keys = reading_order()  # the common metrics' and each consumer kind's labels, in reading order

    def order(name: str) -> tuple[int, str]:
        return (keys.index(name) if name in keys else len(keys), name)

    out = []
    for call, metrics in first.streaming.calls.items():
        out.append((call, sorted(metrics, key=order), first.streaming.apparate.get(call)))
    return out
