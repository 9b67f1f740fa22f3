"""``agentsim fit``: recorded sessions in, a scenario (with its samples and profiles) and a fit report out.

:func:`fit_agent` runs the whole:

1. **Split** the sessions (``holdout``): a session is held back when the first 8 bytes of the SHA-256
   of its id, as a fraction of 2^64, fall below ``holdout`` — a split that depends only on the
   session, not on the order of the files or on the other sessions. Without a holdout the report
   compares with the fitted sessions themselves.
2. **Shapes** (:mod:`agentsim.fit.population`) of the fitted sessions; **speeds** per model
   (:mod:`agentsim.fit.speeds`) from every call of the model, as a calibrated profile (a model with
   too few calls gets its bundled profile when there is one, else replay's default assumption, said
   in the notes); **prices** from the replay config (``--config``) or the genai-prices catalog.
3. The **scenario** (:mod:`agentsim.fit.build`), written with its samples file and profiles into a
   temporary folder and simulated from there (``sim_runs`` runs), exactly as the user will run it.
4. The **report** (:mod:`agentsim.fit.report`): the simulation against the compared sessions,
   replayed as recorded (identity replay: the recorded wall time and the cost of the recorded usage).

The result holds every file's content; :meth:`FitResult.writers` gives them to an atomic writer.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.fit.build import build_scenario, model_key
from agentsim.fit.population import SessionShape, session_shape
from agentsim.fit.report import compare, recorded_samples, simulated_samples
from agentsim.fit.speeds import SpeedFit, fit_speeds
from agentsim.traces.sessions import Session

__all__ = ["FitError", "FitResult", "fit_agent", "held_back"]


class FitError(ValueError):
    """Sessions or options a scenario cannot be fitted from: the message says why and the fix."""


@dataclass
class FitResult:
    scenario: dict
    samples: dict[str, list[float]]
    profiles: dict[str, dict]  # file name -> profile document
    report: dict
    stem: str
    notes: list[str] = field(default_factory=list)

    def writers(self) -> dict:
        """File name -> function writing it (scenario YAML, samples CSV, profiles, the report JSON)."""
        import pandas as pd

        from agentsim.measure.calibrate import write_profile
        from agentsim.model import yaml_text
        from agentsim.model.safe_text import csv_frame

        out = {
            f"{self.stem}.yaml": lambda p: p.write_text(
                yaml_text.dump(self.scenario, sort_keys=False, width=110), encoding="utf-8"
            ),
            f"{self.stem}.fit.json": lambda p: p.write_text(json.dumps(self.report, indent=2) + "\n", encoding="utf-8"),
        }
        if self.samples:
            frame = pd.DataFrame({k: pd.Series(v) for k, v in self.samples.items()})
            out[f"{self.stem}.samples.csv"] = lambda p: csv_frame(frame).to_csv(p, index=False)
        for name, doc in self.profiles.items():
            out[name] = lambda p, d=doc: write_profile(p, d)
        return out


def held_back(session_id: str, fraction: float) -> bool:
    """Whether a session is held back for a holdout ``fraction`` (see the module docstring)."""
    h = int.from_bytes(hashlib.sha256(session_id.encode()).digest()[:8], "big") / 2**64
    return h < fraction


def _speed_inputs(shapes: list[SessionShape]) -> dict[str, tuple[list, list, list, list, Counter]]:
    """Per recorded model: durations, outputs, TTFTs, inputs and providers of all its calls."""
    out: dict[str, tuple[list, list, list, list, Counter]] = defaultdict(lambda: ([], [], [], [], Counter()))
    for s in shapes:
        for st in s.main.steps:
            items = [(st.call, st.duration), *st.sides]
            items += [(x.call, x.duration) for t in st.subagents for x in t.steps]
            for call, dur in items:
                d, o, t, i, prov = out[call.model]
                d.append(dur)
                o.append(call.output_tokens)
                t.append(call.ttft_s)
                i.append(call.input_tokens)
                prov[call.provider] += 1
    return out


def _profile_doc(stem: str, model: str, fit: SpeedFit, inputs: list, outputs: list, n: int, date: str) -> dict:
    doc = _speed_doc(stem, model, fit, inputs, outputs, n, date)
    ctx = fit.context
    if ctx is not None and ctx.block is not None:  # speed by context size (the rule calibrate uses)
        at = list(doc).index("notes")  # beside the speeds it scales
        items = list(doc.items())
        doc = dict([*items[:at], ("context_speed", ctx.block), *items[at:]])
        doc["notes"] += f" Speed by context size: {ctx.note}."
        doc["fit"]["context_speed"] = ctx.details()
    return doc


def _speed_doc(stem: str, model: str, fit: SpeedFit, inputs: list, outputs: list, n: int, date: str) -> dict:
    return {
        "profile": f"{stem}.{model_key(model)}",
        "description": f"{model}: speeds calibrated from {fit.calls:,} recorded calls",
        "kind": "calibrated",
        "source": f"agentsim fit of {n} recorded sessions ({fit.method})",
        "date": date,
        "ttft": fit.dist("ttft"),
        "output_tps": fit.dist("tps"),
        "notes": f"No prefill term: a call's duration is TTFT + (output + reasoning) / output_tps. Recorded calls "
        f"had {int(min(inputs)):,} to {int(max(inputs)):,} input and {int(min(outputs)):,} to {int(max(outputs)):,} "
        "output tokens.",
        "fit": {
            "method": fit.method,
            "calls": fit.calls,
            "call_duration_ks": fit.ks,
            "call_duration_s": {"recorded": fit.recorded, "fitted": fit.fitted},
        },
    }


def _speeds_and_prices(shapes, stem: str, date: str, config, notes: list[str]):
    """Profile file (or bundled name) and price spec per recorded model; the profile documents to write."""
    from agentsim.model.profiles import bundled_profiles, profile_problems
    from agentsim.replay.config import DEFAULT_PROFILE, Resolver

    resolver = Resolver(config)
    bundled = bundled_profiles()
    files, prices, docs = {}, {}, {}
    for model, (durs, outs, ttfts, inputs, provs) in sorted(_speed_inputs(shapes).items()):
        provider = min(provs, key=lambda p: (-provs[p], str(p)))
        target = resolver.target(provider, model)
        if target.spec is not None and target.spec.price is not None:
            prices[model] = target.spec.price.model_dump(mode="json", exclude_none=True)
        elif target.catalog is not None:
            prices[model] = {"catalog": target.catalog}
        else:
            raise FitError(
                f"model '{model}' is not in the genai-prices catalog: give its price in a replay config "
                f"(--config FILE with models: {{{model}: {{price: {{input_mtok: ..., output_mtok: ...}}}}}})"
            )
        fit = fit_speeds(durs, outs, ttfts, inputs)
        name = f"{stem}.{model_key(model)}.profile.yaml"
        why = f"{len(durs)} calls are too few to fit speeds (or too few have output tokens)"
        if fit is not None:
            doc = _profile_doc(stem, model, fit, inputs, outs, len(shapes), date)
            bad = profile_problems(doc) or _beyond_limits(fit)  # never write what agentsim would refuse
            if not bad:
                docs[name] = doc
                files[model] = f"./{name}"
                continue
            why = f"the speeds fitted to its {len(durs)} calls are not plausible ({bad[0]})"
        short = target.catalog.split("/", 1)[1] if target.catalog else None
        if short in bundled:
            files[model] = short
            notes.append(f"{model}: {why}; the bundled profile {short} is used")
            continue
        doc = DEFAULT_PROFILE.model_dump(mode="json", exclude_none=True)
        docs[name] = {**doc, "profile": f"{stem}.{model_key(model)}"}
        files[model] = f"./{name}"
        notes.append(f"{model}: {why}; replay's default assumption is used")
    return files, prices, docs


def _beyond_limits(fit: SpeedFit) -> list[str]:
    """The fitted lognormals' practical maxima (the 1 - 1e-12 quantile, as a scenario's check computes
    it) beyond what a scenario accepts: a spread so wide the fit says nothing."""
    from agentsim.model.base import MAX_SECONDS
    from agentsim.plan.distributions import Z_TOP

    top = fit.ttft_median * math.exp(Z_TOP * fit.ttft_sigma)
    if top > MAX_SECONDS:
        return [f"ttft can reach {top:.3g} s (median {fit.ttft_median:.3g} s, spread {fit.ttft_sigma:.3g})"]
    return []


def _price_date(sessions: list[Session], config) -> str:
    """The date the fitted scenario's catalog prices are as of: the replay config's ``prices_as_of``, else the
    last dated session's start, else (sessions recorded without a date) today, UTC."""
    import datetime as dt

    if config.prices_as_of is not None:
        return config.prices_as_of.isoformat()
    dated = [s.start_date for s in sessions if s.dated]
    return (max(dated) if dated else dt.datetime.now(dt.UTC).date()).isoformat()


def _split(sessions: list[Session], holdout: float) -> tuple[list[Session], list[Session]]:
    if not 0 <= holdout < 1:
        raise FitError(f"--holdout {holdout:g}: give a fraction from 0 (compare with the fitted sessions) up to 0.9")
    if holdout == 0:
        return sessions, sessions
    fit = [s for s in sessions if not held_back(s.id, holdout)]
    ref = [s for s in sessions if held_back(s.id, holdout)]
    if not fit or not ref:
        raise FitError(
            f"--holdout {holdout:g} leaves {len(fit)} sessions to fit and {len(ref)} to compare with: "
            "give more sessions or another fraction"
        )
    return fit, ref


def fit_agent(
    sessions: list[Session],
    *,
    name: str,
    stem: str,
    config=None,
    idle: str = "include",
    holdout: float = 0.0,
    runs: int = 2000,
    sim_runs: int | None = None,
) -> FitResult:
    """Fit a scenario to ``sessions`` (see the module docstring); raises :class:`FitError` on unusable input."""
    from agentsim.replay.config import ReplayConfig

    if idle not in ("include", "exclude"):
        raise FitError(f"--idle '{idle}': choose include or exclude")
    config = config or ReplayConfig()
    fit_set, ref_set = _split(sessions, holdout)
    shapes = [sh for sh in map(session_shape, fit_set) if sh.main.steps]
    if not shapes:
        raise FitError("none of the sessions has a call to fit a scenario to")
    notes: list[str] = []
    last = _price_date(fit_set, config)
    files, prices, profiles = _speeds_and_prices(shapes, stem, last, config, notes)
    built = build_scenario(shapes, name, f"{stem}.samples.csv", files, prices, idle=idle, runs=runs, prices_as_of=last)
    result = FitResult(built.scenario, built.columns, profiles, {}, stem, notes + built.notes)
    result.report = _report(result, fit_set, ref_set, config, idle, sim_runs or max(2000, 4 * len(ref_set)))
    return result


def _report(result: FitResult, fit_set, ref_set, config, idle: str, sim_runs: int) -> dict:
    from agentsim.model.loading import ScenarioError
    from agentsim.replay.retime import replay
    from agentsim.sim.simulation import simulate

    with tempfile.TemporaryDirectory(prefix="agentsim-fit-") as tmp:
        for fname, write in result.writers().items():
            write(Path(tmp) / fname)
        try:
            res = simulate(Path(tmp) / f"{result.stem}.yaml", runs=sim_runs)
        except (ScenarioError, ValueError) as exc:  # said of the files the user asked for, never the temporary ones
            text = str(exc).replace(str(Path(tmp)) + "/", "").replace(str(Path(tmp)), ".")
            raise FitError(
                f"the fitted scenario would not run, so nothing was written: {text}; this is a fault of agentsim's "
                "fit on these sessions: leave out the sessions of the model named, or report it"
            ) from None
    ref_shapes = [sh for sh in map(session_shape, ref_set) if sh.main.steps]
    keep = {s.id for s in ref_shapes}
    rep = replay([s for s in ref_set if s.id in keep], {}, config)
    table = rep.session_table[rep.session_table.variant == "recorded"]
    comparison = compare(recorded_samples(ref_shapes, table, idle), simulated_samples(res))
    shrinks = sum(s.main.shrinks for s in ref_shapes)
    steps = sum(len(s.main.steps) for s in ref_shapes)
    overlapped = sum(st.overlapped for s in ref_shapes for st in s.main.steps)
    return {
        "sessions": {
            "fitted": len(fit_set),
            "compared": len(ref_shapes),
            "compared_with": "the fitted sessions" if fit_set is ref_set else "the held-back sessions",
        },
        "idle": idle,
        "simulated_runs": sim_runs,
        "engine": res.engine,
        **comparison,
        "limits": {
            "steps_whose_context_shrank": shrinks,
            "steps_overlapping_the_next": overlapped,
            "steps": steps,
            "note": "a fitted context grows, and is compacted (context.compact) where the sessions show at least 3 "
            "compactions; overlapping main-thread calls are replayed one after the other",
        },
        "notes": result.notes,
    }
