"""Finding recorded sessions on disk and reading them with the right importer.

A path is a session file or a folder searched recursively (``*.jsonl``, and
``*.json`` for OpenTelemetry). With ``format="auto"`` each file's first lines tell
what it is: Claude Code lines carry ``parentUuid``/``sessionId``, Codex rollout lines
are ``{"timestamp", "type", "payload"}``, OTLP JSON has ``resourceSpans``. Files that
are none of these are skipped (and counted); a file named explicitly that gives no
API call is an error (:class:`SessionInputError`), as is a set of paths that gives
no session at all.

The default places are ``~/.claude/projects`` and ``~/.codex/sessions``, each only
when it exists. Nothing is ever sent anywhere: files are only read.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.model.input_files import input_problem
from agentsim.traces import claude_code, codex, otel_sessions
from agentsim.traces.sessions import FileReport, Session

__all__ = ["FORMATS", "SessionInputError", "default_paths", "detect_format", "read_sessions", "select_sessions"]

FORMATS = ("auto", "claude-code", "codex", "otel")
SNIFF_LINES = 50
SNIFF_BYTES = 256 * 1024
MAX_NESTING = 200  # containers (agents, tools holding subagents) inside one another, per session


class SessionInputError(ValueError):
    """Recorded sessions that cannot be used (missing path, unknown format, nothing usable)."""


def default_paths(home: Path | None = None) -> list[tuple[Path, str]]:
    """``~/.claude/projects`` (Claude Code) and ``~/.codex/sessions`` (Codex), those that exist."""
    home = home or Path.home()
    out = []
    for rel, fmt in ((".claude/projects", "claude-code"), (".codex/sessions", "codex")):
        p = home / rel
        if p.is_dir():
            out.append((p, fmt))
    return out


def detect_format(path: Path) -> str | None:
    """claude-code, codex, otel, or None when the first lines are none of these."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    stripped = head.lstrip()
    if stripped.startswith("{") and '"resourceSpans"' in head[:4096]:
        return "otel"
    for n, raw in enumerate(head.splitlines()):
        if n >= SNIFF_LINES:
            break
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        if "resourceSpans" in obj:
            return "otel"
        if codex.looks_like(obj):
            return "codex"
        if claude_code.looks_like(obj):
            return "claude-code"
    # a first line longer than what was read: recognise the format by its keys
    if stripped.startswith("{") and '"payload"' in head and '"timestamp"' in head:
        return "codex"
    if stripped.startswith("{") and ('"parentUuid"' in head or '"sessionId"' in head):
        return "claude-code"
    return None


@dataclass
class _Found:
    by_format: dict[str, list[Path]] = field(default_factory=lambda: {"claude-code": [], "codex": [], "otel": []})
    named: set[Path] = field(default_factory=set)  # files named explicitly (nothing usable is an error)
    unknown: list[Path] = field(default_factory=list)


def _collect(paths: list[tuple[Path, str]], found: _Found) -> None:
    seen: set[Path] = set()
    for path, fmt in paths:
        bad = input_problem(path, "session")
        if bad is not None:
            raise SessionInputError(f"{path}: {bad[0]} ({bad[1]})")
        if not path.exists():
            raise SessionInputError(f"{path}: no such file or folder (give a session file or a folder of them)")
        if path.is_file():
            files = [path]
            found.named.add(path.resolve())
        else:
            patterns = ("*.jsonl", "*.json") if fmt in ("auto", "otel") else ("*.jsonl",)
            files = sorted(f for pat in patterns for f in path.rglob(pat) if f.is_file())
        for f in files:
            bad = input_problem(f, "session")
            if bad is not None:
                raise SessionInputError(f"{f}: {bad[0]} ({bad[1]})")
            key = f.resolve()
            if key in seen:
                continue
            seen.add(key)
            kind = fmt if fmt != "auto" else detect_format(f)
            if kind is None:
                if key in found.named:
                    raise SessionInputError(
                        f"{f}: not a recognised session file (its first lines are neither Claude Code JSONL, "
                        "a Codex CLI rollout nor OTLP JSON); give --format to read it as one of them"
                    )
                found.unknown.append(f)
            else:
                found.by_format[kind].append(f)


def read_sessions(paths: list[tuple[Path, str]]) -> tuple[list[Session], list[FileReport]]:
    """Read every session under ``paths`` (each a (path, format) pair); raise SessionInputError on unusable input."""
    found = _Found()
    _collect(paths, found)
    sessions: list[Session] = []
    reports: list[FileReport] = []
    if found.by_format["claude-code"]:
        s, r = claude_code.read_claude_code(claude_code.session_groups(found.by_format["claude-code"]))
        sessions += s
        reports += r
    if found.by_format["codex"]:
        s, r = codex.read_codex(found.by_format["codex"])
        sessions += s
        reports += r
    if found.by_format["otel"]:
        s, r = otel_sessions.read_otel(found.by_format["otel"])
        sessions += s
        reports += r
    for rep in reports:
        if Path(rep.path).resolve() in found.named and rep.calls == 0 and not rep.duplicates:
            raise SessionInputError(_nothing_usable(rep))
    for session in sessions:
        depth = _nesting(session)
        if depth > MAX_NESTING:
            raise SessionInputError(
                f"{session.file}: session {session.id} nests agent and tool spans {depth} levels deep; agentsim "
                f"replays up to {MAX_NESTING} levels: leave this file out, or flatten the trace's span tree"
            )
    if found.unknown:
        reports.append(
            FileReport(
                f"{len(found.unknown)} other files",
                "unknown",
                notes=[
                    "not session files; skipped: "
                    + ", ".join(str(f) for f in found.unknown[:5])
                    + (" ..." if len(found.unknown) > 5 else "")
                ],
            )
        )
    if not sessions:
        where = ", ".join(str(p) for p, _ in paths)
        detail = "; ".join(_nothing_usable(r) for r in reports if r.format != "unknown")[:2000]
        raise SessionInputError(
            f"no recorded session with API calls found in {where}" + (f": {detail}" if detail else "")
        )
    sessions.sort(key=lambda s: (s.start, s.id))
    return sessions, reports


def _nesting(session: Session) -> int:
    """How deep containers nest in a session (1: no container), without recursion."""
    parent = {n.id: n.parent for n in session.nodes}
    depth: dict[str | None, int] = {None: 0}
    for nid in parent:
        chain = []
        cur: str | None = nid
        while cur not in depth and len(chain) <= len(parent):
            chain.append(cur)
            cur = parent.get(cur)
        base = depth.get(cur, 0)
        for k, c in enumerate(reversed(chain), start=1):
            depth[c] = base + k
    return max(depth.values())


def _nothing_usable(rep: FileReport) -> str:
    msg = f"{rep.path}: nothing usable as a {rep.format} session ({rep.lines} lines read, no API call with usage found"
    if rep.corrupt:
        msg += f"; {rep.corrupt} corrupt lines skipped"
        if rep.corrupt_lines:
            msg += f", first at line(s) {', '.join(map(str, rep.corrupt_lines))}"
        if rep.first_problem:
            msg += f" ({rep.first_problem})"
    if rep.notes:
        msg += "; " + "; ".join(rep.notes)
    return msg + ")"


def select_sessions(
    sessions: list[Session], since: dt.date | None = None, until: dt.date | None = None, project: str | None = None
) -> list[Session]:
    """Sessions that started between ``since`` and ``until`` (UTC dates, inclusive) in a project whose name
    contains ``project``."""
    out = []
    for s in sessions:
        day = s.start_date
        if since is not None and day < since:
            continue
        if until is not None and day > until:
            continue
        if project is not None and project not in (s.project or ""):
            continue
        out.append(s)
    return out
