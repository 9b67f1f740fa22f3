"""Reading and replaying the public corpus of real Claude Code sessions: time and memory (issue 35).

    python benchmarks/corpus.py PATH [--variant V ...] [--prices-as-of DATE]

``PATH`` is the ``traces/`` folder of callanjfox/kv-cache-tester (about 740 JSON files, 440 MB; the
repository is not part of agentsim: fetch it, e.g. ``git clone https://github.com/callanjfox/kv-cache-tester``).
In a child process (so its peak memory is its own), runs ``agentsim replay PATH --json`` with the given
variants and prints the CPU and wall seconds, the peak resident memory, and the sessions, turns and calls
read. Goal: the whole corpus in under 2 minutes and 2 GB.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from startup import measured_run  # benchmarks/startup.py, beside this script


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--variant", "-v", action="append", default=None)
    ap.add_argument("--prices-as-of", default="2026-12-01")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "agentsim", "replay", str(args.path), "--json", "--prices-as-of", args.prices_as_of]
    for v in args.variant or ["fast"]:
        cmd += ["-v", v]
    out, cpu, wall, peak = measured_run(cmd)
    doc = json.loads(out)
    rec = doc["recorded"]
    files = sum(1 for f in doc["files"] if f["format"] == "kv-cache-tester")
    print(f"files read          {files:>12,}")
    print(f"sessions            {doc['sessions']:>12,}")
    print(f"turns               {rec['turns']:>12,}")
    print(f"API calls           {rec['calls']:>12,}")
    print(f"CPU                 {cpu:>12.1f} s")
    print(f"wall                {wall:>12.1f} s   (goal: under 120 s)")
    print(f"peak memory         {peak:>12.0f} MiB (goal: under 2,048 MiB)")


if __name__ == "__main__":
    main()
