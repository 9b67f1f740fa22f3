"""Replaying recorded agent sessions under other speeds and prices.

"What would last month's sessions have cost, and how long would we have waited,
in fast mode (or on another model)?" Replay answers it from what was recorded
(:mod:`agentsim.traces.sessions`), without simulating anything that did not happen:

1. **Split each call** into time to first token (TTFT) and decode, using the
   recorded model's *speed profile* (:mod:`agentsim.model.profiles`; its median TTFT,
   median output speed and optional prefill speed): the expected TTFT is
   ``ttft·ttft_x + uncached_input / prefill_tps`` and the expected decode
   ``output / (output_tps·output_tps_x)`` (``*_x``: the recorded speed tier's
   effects). With the default ``ttft-first`` split the call's TTFT is the expected
   TTFT and the rest of its recorded duration is decode; a call faster than the
   profile expects is split in proportion to the two expectations (``proportional``
   always splits that way). A TTFT recorded in the trace is used as is.
2. **Re-time it** under the variant: TTFT scales with the target's expected TTFT,
   decode with the ratio of output speeds (a fast tier with ``output_tps_x: 2.5``
   divides decode by 2.5 and keeps TTFT).
3. **Re-price it** with the variant's price table: the genai-prices catalog entry
   of the (target) model with the tier's price context (``{speed: fast}``,
   ``{service_tier: priority}``...), as of the call's date, or a table from the
   replay config. Token usage is kept as recorded.
4. **Replay the timeline**: every node starts when its recorded predecessors end
   in the replayed timeline, plus its recorded lag; tools, human time and lags keep
   their recorded durations; a container (a subagent's Task tool) lasts as long as
   its replayed contents plus its recorded lead and tail. An identity replay gives
   back the recorded wall time and the recorded cost exactly.

The *critical path* of the replayed timeline splits each session's wall time into
time waiting on the model (TTFT + decode), on tools, on the human, and other (lags).

Defaults when nothing better is known (reported with every result): a model without
a profile gets :data:`DEFAULT_PROFILE` (TTFT 2 s, 60 output tokens/s; with the
``ttft-first`` split only the TTFT matters for calls slower than that); a ``fast``
tier without a speed effect gets ``output_tps_x: 2.5``, ``ttft_x: 1``; other tiers
(``priority``, ``flex``) change prices, not speed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import operator
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from agentsim.model import extensions
from agentsim.model.heap import gc_paused
from agentsim.pricing.rates import PriceError, Rates, call_cost, compile_price
from agentsim.replay.config import (
    DEFAULT_PROFILE,
    DEFAULT_TIER_EFFECTS,
    ReplayConfig,
    ReplayVariantSpec,
    Resolver,
    SpeedModel,
    Target,
    load_replay_config,
    mapped,
    parse_variant,
    recorded_profile,
    variant_target,
)
from agentsim.sim import payoff
from agentsim.sim.records import CALL_INT
from agentsim.traces.sessions import FileReport, Node, Session, calls_table, spans_table

__all__ = [
    "ReplayConfig",
    "ReplayResult",
    "ReplayVariantSpec",
    "load_replay_config",
    "parse_variant",
    "replay",
    "split_call",
    "timeline",
]

TIME_KINDS = ("model", "ttft", "decode", "tool", "human", "other")
RECORDED = "recorded"

# --------------------------------------------------------------------------- the split


def split_call(
    duration: float,
    expected_ttft: float,
    expected_decode: float,
    recorded_ttft: float | None = None,
    method: str = "ttft-first",
) -> tuple[float, float]:
    """Split a recorded call duration into (TTFT, decode); the two always add up to ``duration``."""
    if duration <= 0:
        return duration, 0.0
    if recorded_ttft is not None:
        ttft = min(max(recorded_ttft, 0.0), duration)
        return ttft, duration - ttft
    if method == "ttft-first" and duration >= expected_ttft + expected_decode:
        return expected_ttft, duration - expected_ttft
    total = expected_ttft + expected_decode
    if total <= 0:
        return duration, 0.0
    ttft = duration * (expected_ttft / total)
    return ttft, duration - ttft


# --------------------------------------------------------------------------- timelines


@dataclass
class Timeline:
    """A session's replayed timeline: node starts and ends, wall time and its critical-path split, and the
    person's turns (``(start, end)`` each: from their message to the agent's answer)."""

    start: dict[str, float]
    end: dict[str, float]
    origin: float
    wall_time_s: float
    time_s: dict[str, float]
    turns: list[tuple[float, float]] = field(default_factory=list)

    @property
    def waiting_s(self) -> float:
        """What the person waited: the sum of their turns (contract v1.3's ``waiting_s``)."""
        return math.fsum(b - a for a, b in self.turns)


def turns_of(roots: list[Node], start: dict[str, float], end: dict[str, float]) -> list[tuple[float, float]]:
    """The person's turns: the top-level nodes between their pauses (``human`` nodes), each turn from its first
    node's start to its last node's end. A session without pauses is one turn (its whole wall time)."""
    return _turns(sorted(roots, key=_ORDER), lambda n: start[n.id], lambda n: end[n.id])


_ORDER = operator.attrgetter("order")


def _turns(ordered: list[Node], start_of, end_of) -> list[tuple[float, float]]:
    """:func:`turns_of` of roots in order, their times given by ``start_of(node)`` and ``end_of(node)`` (``min`` and
    ``max`` of each turn's times, taken in one pass)."""
    out: list[tuple[float, float]] = []
    lo = hi = None
    for n in ordered:
        if n.kind == "human":
            if lo is not None:
                out.append((lo, hi))
                lo = None
            continue
        a, b = start_of(n), end_of(n)
        if lo is None:
            lo, hi = a, b
            continue
        if a < lo:
            lo = a
        if b > hi:
            hi = b
    if lo is not None:
        out.append((lo, hi))
    return out


@dataclass(slots=True)
class _Shape:
    """A session's nodes by id, and each container's nodes in processing order (``None``: the top level): what
    every replay of the session walks."""

    nodes: dict[str, Node]
    kids: dict[str | None, list[Node]]


def _shape(session: Session) -> _Shape:
    kids: dict[str | None, list[Node]] = {}
    for n in session.nodes:
        kids.setdefault(n.parent, []).append(n)
    for group in kids.values():
        group.sort(key=_ORDER)
    return _Shape({n.id: n for n in session.nodes}, kids)


def timeline(session: Session, parts: dict[str, tuple[float, float]], shape: _Shape | None = None) -> Timeline:
    """Replay ``session`` with each call lasting ``ttft + decode`` from ``parts`` (node id -> (ttft, decode));
    ``shape``, the session's :func:`_shape`, is made once for all of its replays (default: made here).

    Requires :func:`~agentsim.traces.sessions.link_nodes` to have run (importers do).
    """
    shape = shape or _shape(session)
    nodes, kids = shape.nodes, shape.kids
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    binding: dict[str, str | None] = {}  # node -> the predecessor that set its start
    last_child: dict[str, str] = {}

    def run(parent: str | None, new_from: float, rec_from: float) -> None:
        for n in kids.get(parent, ()):
            nid, preds = n.id, n.preds
            if len(preds) == 1:  # the usual case, without a search
                b = preds[0]
                new_anchor, rec_anchor = end[b], nodes[b].end
            elif preds:
                last, rec_anchor = _latest([nodes[p] for p in preds], end)
                b = last.id
                new_anchor = end[b]
            else:
                b, new_anchor, rec_anchor = None, new_from, rec_from
            binding[nid] = b
            s = new_anchor + (n.start - rec_anchor)
            start[nid] = s
            inner = kids.get(nid)
            if inner:
                run(nid, s, n.start)
                last, rec_end = _latest(inner, end)
                last_child[nid] = last.id
                end[nid] = end[last.id] + (n.end - rec_end)
            elif n.kind == "call":
                ttft, decode = parts[nid]
                end[nid] = s + (ttft + decode)
            else:
                end[nid] = s + (n.end - n.start)

    roots = kids.get(None, [])
    origin = min(n.start for n in roots)
    run(None, origin, origin)
    acc = dict.fromkeys(TIME_KINDS, 0.0)

    last_root = _latest(roots, end)[0]  # max by (end, -order)
    _critical_path(last_root.id, origin, nodes, parts, (start, end, binding, last_child), acc)
    acc["model"] = acc["ttft"] + acc["decode"]
    turns = _turns(roots, lambda n: start[n.id], lambda n: end[n.id])  # (roots are in order)
    return Timeline(start, end, origin, end[last_root.id] - origin, acc, turns)


def _latest(group: list[Node], end: dict[str, float]) -> tuple[Node, float]:
    """The node of ``group`` that ends last in the replay (the first in order among equals: ``max`` by
    ``(end, -order)``), and the latest recorded end in ``group`` (``max`` of the ends), in one pass."""
    best = group[0]
    best_end, rec_end = end[best.id], best.end
    for c in group[1:]:
        e = end[c.id]
        if e > best_end or (e == best_end and c.order < best.order):
            best, best_end = c, e
        if c.end > rec_end:
            rec_end = c.end
    return best, rec_end


def _critical_path(last: str, origin: float, nodes: dict, parts: dict, times: tuple, acc: dict) -> None:
    """Add the critical path that ends at ``last`` to ``acc`` by kind, from the last node back along the
    predecessors that set each start, into each container (its last child) and out again. The additions
    are made in the order of the walk written recursively, with a stack of the walks left to finish (the
    sums of calls and of the other time kept in locals, added in the same order)."""
    start, end, binding, last_child = times
    ttft_s, decode_s, other = acc["ttft"], acc["decode"], acc["other"]
    todo: list[tuple[str | None, float, bool]] = [(last, origin, False)]  # (node, floor, inside done)
    while todo:
        cur, floor, inside_done = todo.pop()
        while cur is not None:
            if not inside_done:
                inner = last_child.get(cur)
                if inner is not None:
                    other += end[cur] - end[inner]
                    todo.append((cur, floor, True))  # on from here once the container's own path is walked
                    todo.append((inner, start[cur], False))
                    break
                kind = nodes[cur].kind
                if kind == "call":
                    ttft, decode = parts[cur]
                    ttft_s += ttft
                    decode_s += decode
                elif kind in _OWN_SUMS:
                    acc[kind] += end[cur] - start[cur]
                else:
                    other += end[cur] - start[cur]
            inside_done = False
            b = binding[cur]
            other += start[cur] - (end[b] if b is not None else floor)
            cur = b
    acc["ttft"], acc["decode"], acc["other"] = ttft_s, decode_s, other


_OWN_SUMS = frozenset(TIME_KINDS) - {"ttft", "decode", "other"}  # node kinds summed under their own name


# --------------------------------------------------------------------------- replaying


@dataclass
class ReplayResult:
    """Recorded and replayed sessions: tables (long format, one ``variant`` column) and a summary."""

    sessions: list[Session]
    variants: dict[str, ReplayVariantSpec]
    calls: pd.DataFrame  # one row per (variant, call), 'recorded' first
    session_table: pd.DataFrame  # one row per (variant, session)
    spans: pd.DataFrame  # tools, human gaps and containers (recorded)
    assumptions: dict
    notes: list[str]
    reports: list[FileReport] = field(default_factory=list)
    value_of_time: float | None = None
    baseline: str = RECORDED  # what waiting_saved_s, session_saved_s and extra_cost_usd are measured against

    @property
    def names(self) -> list[str]:
        return [RECORDED, *self.variants]

    def totals(self, name: str) -> dict:
        rows = self.session_table[self.session_table.variant == name]
        tokens = [
            f"{k}_tokens" for k in ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output", "reasoning")
        ]
        calls = self.calls.loc[(self.calls.variant == name).to_numpy(), ["cost_usd", *tokens]]  # (not every column)
        cost = calls["cost_usd"]
        block = {
            "sessions": len(rows),
            "calls": len(calls),
            "turns": int(rows["turns"].sum()),
            "wall_time_s": _fsum(rows["wall_time_s"]),
            "waiting_s": _fsum(rows["waiting_s"]),
            "cost_usd": _fsum(cost[cost.notna()]),
            "unpriced_calls": int(cost.isna().sum()),
            "time_s": {k: _fsum(rows[f"{k}_s"]) for k in TIME_KINDS},
            "tokens": {k.removesuffix("_tokens"): int(calls[k].sum()) for k in tokens},
        }
        return block

    def summary_dict(self) -> dict:
        rec = self.totals(RECORDED)
        variants = {}
        for name, spec in self.variants.items():
            v = self.totals(name)
            dtime = v["wall_time_s"] - rec["wall_time_s"]
            dcost = v["cost_usd"] - rec["cost_usd"]
            per_hour = payoff.usd_per_hour_saved(dtime, dcost)
            saving = saving_summary(self.session_table[self.session_table.variant == name])
            pays = None
            if self.value_of_time is not None and name != self.baseline:
                pays = payoff.pays_off(-saving["waiting_saved_s"], saving["extra_cost_usd"], self.value_of_time)
            v["spec"] = spec.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
            v["vs_recorded"] = {
                "delta_time_s": dtime,
                "delta_cost_usd": dcost,
                "usd_per_hour_saved": per_hour,
                "pays_off": pays,
                "pays_off_basis": f"waiting_s against {self.baseline}",
            }
            v.update(saving)
            variants[name] = v
        starts = [s.start for s in self.sessions if s.dated]
        from agentsim.sim.results import version

        return _json_safe(
            {
                "agentsim_version": version(),
                "kind": "replay",
                "sessions": len(self.sessions),
                "first_session_start": _iso(min(starts)) if starts else None,
                "last_session_start": _iso(max(starts)) if starts else None,
                "undated_sessions": sum(1 for s in self.sessions if not s.dated),
                "sources": dict(sorted(Counter(s.source for s in self.sessions).items())),
                "value_of_time_usd_per_hour": self.value_of_time,
                "baseline": self.baseline,
                "assumptions": self.assumptions,
                "notes": self.notes,
                "files": [r.to_json() for r in self.reports],
                "recorded": rec,
                "variants": variants,
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.summary_dict(), indent=2, sort_keys=False) + "\n"

    def summary(self) -> pd.DataFrame:
        """One row per variant ('recorded' first): totals, changes, USD per hour saved, and per-session mean and
        p95 wall time and mean cost (what :meth:`plot_tradeoff` draws)."""
        doc = self.summary_dict()
        rows = []
        for name in self.names:
            v = doc["recorded"] if name == RECORDED else doc["variants"][name]
            vs = v.get("vs_recorded", {})
            t = self.session_table[self.session_table.variant == name]
            rows.append(
                {
                    "variant": name,
                    "wall_time_s": v["wall_time_s"],
                    "cost_usd": v["cost_usd"],
                    **{f"{k}_s": x for k, x in v["time_s"].items()},
                    "delta_time_s": vs.get("delta_time_s", 0.0),
                    "delta_cost_usd": vs.get("delta_cost_usd", 0.0),
                    "usd_per_hour_saved": vs.get("usd_per_hour_saved"),
                    "wall_mean_s": float(t["wall_time_s"].mean()),
                    "wall_p95_s": float(np.percentile(t["wall_time_s"], 95)),
                    "cost_mean_usd": float(t["cost_usd"].mean()),
                }
            )
        return pd.DataFrame(rows).set_index("variant")

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()

    # Figures are functions of the figures layer (agentsim.viz.figures); see Results.__getattr__ for plot_*.
    def __getattr__(self, name: str):
        if name.startswith("plot_") and extensions.load("figures"):
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _price_dates(sessions: list[Session], today: dt.date) -> str:
    undated = sum(1 for s in sessions if not s.dated)
    if not undated:
        return "as of each call's date (UTC)"
    text = f"as of {today.isoformat()} (today, UTC) for the {undated} sessions recorded without a date"
    return text if undated == len(sessions) else f"as of each call's date (UTC); {text}"


def saving_summary(rows: pd.DataFrame) -> dict:
    """What a variant saves against the recording (contract v1.3): in total and per session, with 95%
    intervals over the sessions (the sessions read are a sample of a team's sessions).

    ``waiting_saved_share`` is the share of the person's waiting saved (total saved / total recorded
    waiting; its interval by the delta method for a ratio of means); ``usd_per_hour_waiting_saved`` is the
    extra cost per hour of waiting saved (None unless waiting is saved)."""
    saved, extra = rows["waiting_saved_s"].to_numpy(float), rows["extra_cost_usd"].to_numpy(float)
    waited = rows["recorded_waiting_s"].to_numpy(float)
    total_saved, total_extra = _fsum(saved), _fsum(extra)
    return {
        "waiting_saved_s": total_saved,
        "session_saved_s": _fsum(rows["session_saved_s"]),
        "extra_cost_usd": total_extra,
        "usd_per_hour_waiting_saved": payoff.usd_per_hour_saved(-total_saved, total_extra),
        "waiting_saved_share": _ratio(saved, waited),
        "per_session": {
            k: _mean_ci(rows[k].to_numpy(float))
            for k in ("waiting_saved_s", "session_saved_s", "extra_cost_usd", "waiting_s", "wall_time_s")
        },
    }


def _mean_ci(x: np.ndarray) -> dict:
    """Mean with its 95% t interval, and the median and 90th percentile, of per-session values."""
    from scipy import stats

    n = len(x)
    mean = _fsum(x) / n
    half = float(stats.t.ppf(0.975, n - 1) * np.std(x, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {"mean": mean, "ci95": [mean - half, mean + half], "p50": float(np.median(x)), "p90": _q(x, 0.9)}


def _q(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x, q))


def _ratio(num: np.ndarray, den: np.ndarray) -> dict:
    """``sum(num) / sum(den)`` over sessions, with a 95% interval by the delta method (ratio of means)."""
    from scipy import stats

    n, total = len(num), _fsum(den)
    if total <= 0:
        return {"value": None, "ci95": [None, None]}
    r = _fsum(num) / total
    if n < 2:
        return {"value": r, "ci95": [None, None]}
    resid = num - r * den
    se = float(np.std(resid, ddof=1) / (math.sqrt(n) * (total / n)))
    half = float(stats.t.ppf(0.975, n - 1)) * se
    return {"value": r, "ci95": [r - half, r + half]}


def _fsum(series) -> float:
    return math.fsum(float(x) for x in series)


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat().replace("+00:00", "Z")


def _json_safe(x):
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_json_safe(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return _json_safe(float(x))
    return x


class _Notes:
    """Messages about calls, counted (``"... (3 calls)"``)."""

    def __init__(self):
        self.counts: Counter = Counter()

    def add(self, message: str) -> None:
        self.counts[message] += 1

    def lines(self) -> list[str]:
        return [f"{m} ({n} call{'s' if n != 1 else ''})" for m, n in sorted(self.counts.items())]


@dataclass(slots=True)
class _Plan:
    """One call under one variant: model, tier, speed, its (TTFT, decode) and its price table."""

    target: Target
    speed: SpeedModel
    tier: str
    ttft: float
    decode: float
    rates: Rates | None
    expected_ttft: float


def _recorded_speeds(sessions: list[Session]) -> dict:
    """Per model, the speeds its calls that record a TTFT show (:func:`recorded_profile`)."""
    ttfts: dict[str, list[float]] = {}
    speeds: dict[str, list[float]] = {}
    for s in sessions:
        for n in s.calls:
            c = n.call
            if c.ttft_s is None or n.duration <= 0:
                continue
            ttfts.setdefault(c.model, []).append(c.ttft_s)
            decode = n.duration - c.ttft_s
            if c.output_tokens >= 100 and decode > 0.1:  # too few tokens: the speed is noise
                speeds.setdefault(c.model, []).append(c.output_tokens / decode)
    out = {}
    for model in ttfts:
        prof = recorded_profile(model, ttfts[model], speeds.get(model, []))
        if prof is not None:
            out[model] = prof
    return out


DAY_S = 86_400


def utc_date(t: float, dates: dict[float, dt.date]) -> dt.date:
    """``datetime.fromtimestamp(t, UTC).date()``, from ``dates`` (day number -> date, filled as met) where ``t``
    is more than a millisecond from midnight (the microsecond rounding of ``fromtimestamp`` cannot change
    its day); a million calls in a few hundred days need a few hundred conversions."""
    if not 0 <= t < 4_102_444_800:  # before 1970 or after 2100: the conversion itself (and its errors)
        return dt.datetime.fromtimestamp(t, dt.UTC).date()
    day = t // DAY_S
    if not 1e-3 <= t - day * DAY_S <= DAY_S - 1e-3:
        return dt.datetime.fromtimestamp(t, dt.UTC).date()
    date = dates.get(day)
    if date is None:
        date = dates[day] = dt.datetime.fromtimestamp(day * DAY_S + DAY_S / 2, dt.UTC).date()
    return date


class _Planner:
    def __init__(self, sessions: list[Session], config: ReplayConfig):
        self.sessions, self.config = sessions, config
        self.res = Resolver(config, _recorded_speeds(sessions))
        self.notes = _Notes()
        self.today = dt.datetime.now(dt.UTC).date()
        self._dates: dict[float, dt.date] = {}  # day number -> its date (utc_date)

    def day(self, key: tuple, t: float) -> dt.date:
        """The date a call is priced as of: ``prices_as_of``, else its own (an undated session's: today, UTC)."""
        if self.config.prices_as_of is not None:
            return self.config.prices_as_of
        if not self.sessions[key[0]].dated:
            return self.today
        return utc_date(t, self._dates)

    def calls(self):
        for si, s in enumerate(self.sessions):
            for n in s.calls:
                yield (si, n.id), n

    def recorded(self) -> dict[tuple, _Plan]:
        """Each call as recorded: its model and tier, the TTFT/decode split of its duration, its price."""
        out, decided = {}, {}
        for key, n in self.calls():
            c = n.call
            k = (c.provider, c.model, c.tier, self.day(key, n.start))
            if k not in decided:
                decided[k] = self._recorded_choice(*k)
            t, sm, rates, notes = decided[k]
            for note in notes:
                self.notes.add(note)
            if not c.usage_recorded:
                self.notes.add("no token usage recorded: counted with 0 tokens, left unpriced (cost unknown, not $0)")
            e_ttft = sm.expected_ttft(c.tier, c.uncached_input_tokens, c.input_tokens)
            e_decode = sm.expected_decode(c.tier, c.output_tokens, c.input_tokens)
            ttft, decode = split_call(n.duration, e_ttft, e_decode, c.ttft_s, self.config.split)
            out[key] = _Plan(t, sm, c.tier, ttft, decode, rates, e_ttft)
        return out

    def _recorded_choice(self, provider, model, tier, day):
        t = self.res.target(provider, model)
        notes = []
        rates, why = self.res.rates(t, tier, day)
        if rates is None and tier != "standard":
            notes.append(f"recorded at tier {tier}: {why}; priced at the standard rate")
            rates, why = self.res.rates(t, "standard", day)
        if rates is None:
            notes.append(f"not priced: {why}")
        return t, self.res.speed(t), rates, notes

    def variant(self, name: str, spec: ReplayVariantSpec, rec: dict[tuple, _Plan]) -> dict[tuple, _Plan]:
        """Each call under a variant: re-timed by the ratio of expectations, re-priced by the variant's table."""
        out, decided = {}, {}
        for key, n in self.calls():
            c, r = n.call, rec[key]
            k = (r.target, r.tier, self.day(key, n.start))
            if k not in decided:
                decided[k] = self._variant_choice(name, spec, c.model, *k)
            t, sm, tier, rates, notes = decided[k]
            for note in notes:
                self.notes.add(note)
            e_ttft = sm.expected_ttft(tier, c.uncached_input_tokens, c.input_tokens)
            ttft = r.ttft * (e_ttft / r.expected_ttft) if r.expected_ttft > 0 else r.ttft
            # the ratio of the output speeds at this call's context size (context_speed, where a profile has it)
            rec_tps = r.speed.output_speed(r.tier, c.input_tokens)
            decode = r.decode * rec_tps / sm.output_speed(tier, c.input_tokens)
            out[key] = _Plan(t, sm, tier, ttft, decode, rates, e_ttft)
        return out

    def _variant_choice(self, name: str, spec: ReplayVariantSpec, model: str, rt: Target, rec_tier: str, day):
        """Target model, tier, price table and notes for the calls of one recorded (model, tier) on one day."""
        names = (model, rt.catalog, rt.catalog.split("/", 1)[1] if rt.catalog else None)
        new_model, _ = mapped(spec.model, names)
        t = rt if new_model is None else variant_target(self.res, new_model, name)
        new_tier, explicit = mapped(spec.speed, names)
        tier = new_tier or rec_tier
        notes = []
        override = mapped(spec.price or None, (*names, t.label, t.catalog))[0]
        if override is not None:
            try:
                rates = compile_price(override, day)
            except PriceError as exc:
                raise ValueError(f"variant '{name}': price of {t.label}: {exc.message}") from None
        else:
            rates, why = self.res.rates(t, tier, day)
            if rates is None and tier != "standard":
                if explicit:
                    raise ValueError(f"variant '{name}': {why}")
                if new_tier is None and t == rt:  # as recorded: the tier's speed, the standard price
                    notes.append(f"variant '{name}': recorded at tier {tier}: {why}; priced at the standard rate")
                else:
                    notes.append(f"variant '{name}': {why}; kept at standard")
                    tier = "standard"
                rates, why = self.res.rates(t, "standard", day)
            if rates is None:
                notes.append(f"variant '{name}': not priced: {why}")
        return t, self.res.speed(t), tier, rates, notes


def _costs(base: pd.DataFrame, rates: list[Rates | None]) -> np.ndarray:
    """USD per call (NaN where unpriced): :func:`call_cost` on the token columns, one table at a time."""
    out = np.full(len(base), np.nan)
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(rates):
        if r is not None:
            groups.setdefault(id(r), []).append(i)
    cols = {f"{k}_tokens": base[f"{k}_tokens"].to_numpy(dtype=np.float64) for k in CALL_INT}
    for idx in groups.values():
        ix = np.asarray(idx)
        inp, read, write, write_1h, out_, reasoning = (v[ix] for v in cols.values())
        out[ix] = call_cost(rates[idx[0]], inp, read, write, write_1h, out_ - reasoning, reasoning)
    return out


def _recorded_turns(shape: _Shape) -> list[tuple[float, float]]:
    return _turns(shape.kids.get(None, []), _START, _END)  # (the top level, in order)


_START, _END = operator.attrgetter("start"), operator.attrgetter("end")


@dataclass(slots=True)
class _Replayed:
    """One session under one variant: its wall time, turns (how many, and the waiting they add up to), cost
    and critical-path split."""

    wall: float
    turns: int
    waiting: float
    cost: float
    time_s: dict[str, float]


def _replayed(wall: float, turns: list[tuple[float, float]], cost: float, time_s: dict) -> _Replayed:
    return _Replayed(wall, len(turns), math.fsum(b - a for a, b in turns), cost, time_s)


def _session_row(name: str, s: Session, mine: _Replayed, rec: _Replayed, base: _Replayed) -> dict:
    """One (variant, session) row: its times, cost and turns, the changes against the recording (``delta_*``)
    and what it saves against the baseline (the recording, or ``--baseline``)."""
    saved, extra = base.waiting - mine.waiting, mine.cost - base.cost
    return {
        "variant": name,
        "session": s.id,
        "project": s.project,
        "source": s.source,
        "start": _iso(s.start) if s.dated else None,
        "calls": len(s.calls),
        "turns": mine.turns,
        "wall_time_s": mine.wall,
        "recorded_wall_time_s": rec.wall,
        "waiting_s": mine.waiting,
        "recorded_waiting_s": rec.waiting,
        "baseline_waiting_s": base.waiting,
        "cost_usd": mine.cost,
        **{f"{k}_s": v for k, v in mine.time_s.items()},
        "delta_time_s": mine.wall - rec.wall,
        "delta_cost_usd": mine.cost - rec.cost,
        "session_saved_s": base.wall - mine.wall,
        "waiting_saved_s": saved,
        "extra_cost_usd": extra,
        "usd_per_hour_waiting_saved": payoff.usd_per_hour_saved(-saved, extra),
    }


def _tabulate(sessions: list[Session], plans: dict[str, dict[tuple, _Plan]], baseline: str = RECORDED):
    """The long calls and sessions tables: one row per (variant, call) and per (variant, session)."""
    base = calls_table(sessions)
    keys = [(si, n.id) for si, s in enumerate(sessions) for n in s.calls]
    recorded = base["usage_recorded"].tolist()
    ps = {name: [plan[k] for k in keys] for name, plan in plans.items()}
    del keys
    # a call without recorded usage has no known cost
    rates = {name: [p.rates if ok else None for p, ok in zip(ps[name], recorded, strict=True)] for name in plans}
    costs = {name: _costs(base, rates[name]) for name in plans}
    replayed, starts, ends = _replay_sessions(sessions, ps, costs)
    added = [_calls_frame(name, ps[name], starts.pop(name), ends.pop(name), costs[name], rates[name]) for name in plans]
    rows = [
        _session_row(name, s, replayed[name][si], replayed[RECORDED][si], replayed[baseline][si])
        for name in plans
        for si, s in enumerate(sessions)
    ]
    return _long_calls(base, added), pd.DataFrame(rows)


def _replay_sessions(sessions: list[Session], ps: dict[str, list[_Plan]], costs: dict[str, np.ndarray]):
    """Each session under each variant (``ps``: each call's plan, in the order of the calls table): the
    :class:`_Replayed` per variant and session, and per variant the calls' replayed starts and ends."""
    replayed: dict[str, list[_Replayed]] = {name: [] for name in ps}
    starts: dict[str, list[float]] = {name: [] for name in ps}
    ends: dict[str, list[float]] = {name: [] for name in ps}
    i = 0
    for s in sessions:
        calls = s.calls
        shape = _shape(s)  # once for all the variants
        j = i + len(calls)
        for name, plan in ps.items():
            tl = timeline(s, {n.id: (p.ttft, p.decode) for n, p in zip(calls, plan[i:j], strict=True)}, shape)
            starts[name] += [tl.start[n.id] for n in calls]
            ends[name] += [tl.end[n.id] for n in calls]
            c = costs[name][i:j]
            cost = math.fsum(c[~np.isnan(c)].tolist())
            if name == RECORDED:  # the recording itself: wall time and turns from the recorded times
                replayed[name].append(_replayed(s.wall_time_s, _recorded_turns(shape), cost, tl.time_s))
            else:
                replayed[name].append(_replayed(tl.wall_time_s, tl.turns, cost, tl.time_s))
            del tl
        i = j
    return replayed, starts, ends


def _calls_frame(name: str, ps: list[_Plan], starts, ends, costs, rates) -> pd.DataFrame:
    """The columns a variant adds to the calls table (``variant`` first)."""
    frame = pd.DataFrame(index=pd.RangeIndex(len(ps)))
    frame.insert(0, "variant", name)
    frame["target_model"] = [p.target.label for p in ps]
    frame["target_tier"] = [p.tier for p in ps]
    frame["ttft_s"] = [p.ttft for p in ps]
    frame["decode_s"] = [p.decode for p in ps]
    frame["replay_start_s"] = starts
    frame["replay_end_s"] = ends
    frame["cost_usd"] = costs
    frame["price_source"] = [r.source if r is not None else None for r in rates]
    return frame


def _long_calls(base: pd.DataFrame, added: list[pd.DataFrame]) -> pd.DataFrame:
    """The long calls table: per variant, ``variant``, the recorded columns of ``base`` and the variant's own
    (``added``, emptied here), the variants one after the other. Built a column at a time: what ``pd.concat`` of
    each variant's whole table gives, without every variant's copy of ``base`` and the result held at once."""
    repeat = len(added)
    own = pd.concat(added, ignore_index=True)
    added.clear()
    out = own[["variant"]].copy()
    for col in base.columns:
        out[col] = pd.concat([base[col]] * repeat, ignore_index=True)
    for col in own.columns[1:]:
        out[col] = own[col]
    return out


def _models(plans: dict[str, dict[tuple, _Plan]]) -> dict[str, dict]:
    """Each target model's speed profile (as its first plan has it), by label."""
    models = {}
    for plan in plans.values():
        for p in plan.values():
            if p.target.label not in models:
                models[p.target.label] = p.speed.to_json()
    return models


def replay(
    sessions: list[Session],
    variants: dict[str, ReplayVariantSpec],
    config: ReplayConfig | None = None,
    reports: list[FileReport] | None = None,
    value_of_time: float | None = None,
    baseline: str | None = None,
) -> ReplayResult:
    """Replay recorded sessions under each variant (see the module docstring).

    Raises ValueError for a variant that asks for what cannot be priced (an explicit tier the model
    does not have, a model not in the catalog without a price).
    """
    config = config or ReplayConfig()
    if not sessions:
        raise ValueError("no sessions to replay")
    if RECORDED in variants:
        raise ValueError(f"'{RECORDED}' is the recorded baseline; give the variant another name")
    baseline = baseline or config.baseline or RECORDED
    if baseline != RECORDED and baseline not in variants:
        raise ValueError(
            f"baseline '{baseline}' is not one of the variants ({', '.join(variants)}); give one of them, or leave "
            "it out to compare with the recording"
        )
    planner = _Planner(sessions, config)
    with gc_paused():  # a plan and a row per call and variant: millions of objects made and kept
        plans = {RECORDED: planner.recorded()}
        for name, spec in variants.items():
            plans[name] = planner.variant(name, spec, plans[RECORDED])
        calls, session_table = _tabulate(sessions, plans, baseline)
        spans = spans_table(sessions)
    models = _models(plans)
    assumptions = {
        "split": config.split,
        "prices": f"as of {config.prices_as_of}" if config.prices_as_of else _price_dates(sessions, planner.today),
        "usage": "every variant keeps the recorded token usage (cache reads and writes included)",
        "default_profile": {
            "ttft_s": float(DEFAULT_PROFILE.ttft),
            "output_tps": float(DEFAULT_PROFILE.output_tps),
            "fast_output_tps_x": DEFAULT_TIER_EFFECTS["fast"][0],
        },
        "models": dict(sorted(models.items())),
    }
    if value_of_time is None and config.value_of_time is not None:
        value_of_time = config.value_of_time.usd_per_hour
    return ReplayResult(
        sessions,
        dict(variants),
        calls,
        session_table,
        spans,
        assumptions,
        planner.notes.lines(),
        list(reports or []),
        value_of_time,
        baseline,
    )
