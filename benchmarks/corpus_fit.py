"""Fitting the public corpus of real Claude Code sessions, and how well the fit predicts sessions it did not see.

    python benchmarks/corpus_fit.py PATH [--holdout 0.5] [--sim-runs N]

``PATH``: the ``traces/`` folder of callanjfox/kv-cache-tester (see benchmarks/corpus.py). In a child process,
runs ``agentsim fit PATH -o TMP/corpus.yaml --holdout 0.5 --json`` (the scenario is fitted on the sessions
whose id hashes above the holdout, and simulated), then prints, for the quantities a conversation is judged
on, the held-back sessions' mean and p90 against the simulation's, their errors and the report's verdict
(within 10% in mean and p90), and the CPU time and peak memory of the fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from startup import measured_run  # benchmarks/startup.py, beside this script

SHOWN = ("turn_s", "steps_per_turn", "turns", "server_s", "session_output_tokens", "wall_time_s", "cost_usd")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--holdout", type=float, default=0.5)
    ap.add_argument("--sim-runs", type=int, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentsim-corpus-fit-") as tmp:
        cmd = [sys.executable, "-m", "agentsim", "fit", str(args.path.resolve()), "-o", f"{tmp}/corpus.yaml"]
        cmd += ["--holdout", str(args.holdout), "--json"]
        if args.sim_runs:
            cmd += ["--sim-runs", str(args.sim_runs)]
        out, cpu, wall, peak = measured_run(cmd)
    rep = json.loads(out)
    s = rep["sessions"]
    print(f"fitted on {s['fitted']} sessions, compared with {s['compared']} held back; {rep['simulated_runs']:,} runs")
    head = ("quantity", "rec mean", "sim mean", "err", "rec p90", "sim p90", "err")
    print(f"{head[0]:24} " + " ".join(f"{h:>10}" if "err" not in h else f"{h:>7}" for h in head[1:]) + "  verdict")
    for name in SHOWN:
        q = rep["quantities"][name]
        r, m = q["recorded"], q["simulated"]
        print(
            f"{name:24} {r['mean']:>10.4g} {m['mean']:>10.4g} {q['mean_error']:>+7.1%} {r['p90']:>10.4g} "
            f"{m['p90']:>10.4g} {q['p90_error']:>+7.1%}  {q['verdict']}"
        )
    share = rep["figures"]["cache_read_share"]
    print(
        f"{'cache_read_share':24} {share['recorded']:>10.4g} {share['simulated']:>10.4g} {share['error']:>+7.1%} "
        f"{'':>10} {'':>10} {'':>7}  {share['verdict']}"
    )
    print(f"CPU {cpu:.0f} s, wall {wall:.0f} s, peak memory {peak:.0f} MiB")


if __name__ == "__main__":
    main()
