"""``optimize --max-failed-share X``: the smallest limits that keep failed runs at most X.

Parses what the ``optimize`` command was given, runs the candidates as a sweep
(:func:`agentsim.analysis.sweeps.run_sweep`), picks with
:func:`agentsim.analysis.limits_search.smallest_limits`, and renders the answer: one row per candidate
and variant with its failed share, throughput, 429s and binding account and limit, the chosen one
marked. Exit code 3 when no candidate meets the bound (the closest is named), 2 for bad input.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from agentsim.cli.common import BadInput
from agentsim.cli.progress import progress_bar

__all__ = ["limits_document", "limits_table", "optimize_limits"]

EXIT_INFEASIBLE = 3  # as optimize's: no candidate meets the constraint


def optimize_limits(file: Path, bound: float | None, axes, variants: list[str] | None, others: dict, run: dict) -> None:
    """The ``optimize`` command over limit candidates (see the module doc); ``run``: runs, seed, workers,
    json, quiet."""
    from agentsim.analysis.limits_search import smallest_limits
    from agentsim.analysis.sweeps import run_sweep

    if bound is None:
        raise BadInput("--set, --zip and --variant go with --max-failed-share (the limits that keep failed runs "
                       "under a share); give --max-failed-share, e.g. 0.01")  # fmt: skip
    given = [k for k, v in others.items() if v is not None]
    if given:
        raise BadInput(f"--max-failed-share chooses among limit candidates; it does not combine with {given[0]}")
    with progress_bar(run["quiet"] or run["json"], "candidates") as bar:
        try:
            sw = run_sweep(file, axes, runs=run["runs"], seed=run["seed"], workers=run["workers"], progress=bar)
            choice = smallest_limits(sw, bound, variants)
        except ValueError as exc:
            raise BadInput(f"{file}: {exc}") from None
    if run["json"]:
        sys.stdout.write(json.dumps(limits_document(choice), indent=2, allow_nan=False) + "\n")
    else:
        from agentsim.cli.ended import table_console
        from agentsim.cli.tables import print_table

        console = table_console()
        print_table(limits_table(choice), console=console)
        console.print(_answer(choice), markup=False, highlight=False)
    if not choice.feasible:
        raise typer.Exit(EXIT_INFEASIBLE)


def _setting(choice, point: int) -> str:
    p = choice.sweep.points[point]
    return ", ".join(f"{k}={v}" for k, v in p.items())


def _answer(choice) -> str:
    bound = f"{100 * choice.max_failed_share:g}%"
    if choice.feasible:
        return f"chosen: {_setting(choice, choice.chosen)} (the first candidate with at most {bound} of runs failed)"
    return (f"no candidate keeps failed runs at most {bound}; the closest is {_setting(choice, choice.closest)} "
            f"(exit code {EXIT_INFEASIBLE})")  # fmt: skip


def limits_table(choice):
    """One row per candidate and variant: failed share, completed, runs/h, 429s, binding, time and cost."""
    from rich.table import Table

    from agentsim.cli.ended import ENDED_HEADS, ended_cells, ended_columns
    from agentsim.viz import format as fmt

    sw, t = choice.sweep, choice.candidates
    table = Table(
        title=f"{sw.scenario.name}: the smallest limits with at most {100 * choice.max_failed_share:g}% of runs "
        f"failed or unfinished in {', '.join(choice.variants)} ({len(sw.points)} candidates, seed {sw.seed})",
        title_justify="left",
        caption="candidates in the order given (smallest first); ◀ = chosen; binds = the account.limit that "
        "refused the most requests (or was waited for longest); wall time and cost of the completed runs",
        caption_justify="left",
    )
    ended = ended_columns(t)
    for h in [*[a.label or str(a.path[-1]) for a in sw.axes], "variant", *ended, "mean wall", "mean cost", "meets"]:
        table.add_column(ENDED_HEADS.get(h, h), no_wrap=True)
    for _, r in t.iterrows():
        table.add_row(*[str(r[a.text]) for a in sw.axes], str(r["variant"]), *ended_cells(r, ended),
                      fmt.durations([r["wall_mean_s"]])[0] if "wall_mean_s" in r else "–",
                      fmt.usd(r["cost_mean_usd"]) if "cost_mean_usd" in r else "–",
                      ("yes" if r["meets"] else "no") + (" ◀" if r["point"] == choice.chosen else ""))  # fmt: skip
    return table


def limits_document(choice) -> dict:
    """``optimize --max-failed-share --json``: the bound, the candidates with their figures, the choice."""

    def plain(v):
        if hasattr(v, "item"):
            v = v.item()
        return None if isinstance(v, float) and not math.isfinite(v) else v

    sw = choice.sweep
    return {
        "scenario": sw.scenario.name, "seed": sw.seed, "mode": "limits",
        "max_failed_share": choice.max_failed_share, "variants": choice.variants,
        "feasible": choice.feasible, "exit_code": 0 if choice.feasible else EXIT_INFEASIBLE,
        "axes": [{"set": a.text, "values": list(a.values), "together": a.group is not None} for a in sw.axes],
        "chosen": None if choice.chosen is None else {"point": choice.chosen, **sw.points[choice.chosen]},
        "closest": {"point": choice.closest, **sw.points[choice.closest]},
        "candidates": [{k: plain(v) for k, v in r.items()} for r in choice.candidates.to_dict(orient="records")],
    }  # fmt: skip
