"""Finding recorded sessions on disk and reading them with the right importer.

A path is a session file or a folder searched recursively (``*.jsonl``, and
``*.json`` for the span formats). With ``format="auto"`` each file's first lines (or,
for one JSON document, its first records) tell what it is: Claude Code lines carry
``parentUuid``/``sessionId``, Codex rollout lines are ``{"timestamp", "type",
"payload"}``, OTLP JSON has ``resourceSpans``, Langfuse observations a ``type`` such as
``GENERATION`` with ``startTime``, LangSmith runs ``run_type`` and ``start_time``, OpenAI
Agents SDK exports ``"object": "trace.span"`` or ``span_data``. Files that are none of
these are skipped (and counted); a file named explicitly that gives no API call is an
error (:class:`SessionInputError`), as is a set of paths that gives no session at all.

Every format is registered once, in :data:`READERS` (its detector and its reader).

The default places are ``~/.claude/projects`` and ``~/.codex/sessions``, each only
when it exists. Nothing is ever sent anywhere: files are only read.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.model.heap import gc_paused
from agentsim.model.input_files import input_problem
from agentsim.traces import claude_code, codex, kv_cache_tester, langfuse, langsmith, openai_agents, otel_sessions
from agentsim.traces.record_files import LIST_KEYS
from agentsim.traces.sessions import FileReport, Session

__all__ = [
    "FORMATS",
    "READERS",
    "SessionInputError",
    "default_paths",
    "detect_format",
    "read_sessions",
    "read_warnings",
    "select_sessions",
]


def _read_claude_code(files):
    return claude_code.read_claude_code(claude_code.session_groups(files))


# format -> (does a parsed record look like it, read files into (sessions, reports)), in detection order
READERS = {
    "codex": (codex.looks_like, codex.read_codex),
    "claude-code": (claude_code.looks_like, _read_claude_code),
    "otel": (lambda obj: "resourceSpans" in obj, otel_sessions.read_otel),
    "openai-agents": (openai_agents.looks_like, openai_agents.read_openai_agents),
    "langsmith": (langsmith.looks_like, langsmith.read_langsmith),
    "langfuse": (langfuse.looks_like, langfuse.read_langfuse),
    "kv-cache-tester": (kv_cache_tester.looks_like, kv_cache_tester.read_kv_traces),
}
FORMATS = ("auto", "claude-code", "codex", "otel", "langfuse", "langsmith", "openai-agents", "kv-cache-tester")
# formats that may be one .json document
JSON_FORMATS = ("otel", "langfuse", "langsmith", "openai-agents", "kv-cache-tester")
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


def _kind_of(obj) -> str | None:
    """The format a parsed JSON object (a line, a record, or a page of records) belongs to."""
    if not isinstance(obj, dict):
        return None
    items = next((obj[k] for k in LIST_KEYS if isinstance(obj.get(k), list)), None)
    for candidate in [obj, *(items[:5] if items else [])]:
        if isinstance(candidate, dict):
            for fmt, (looks_like, _) in READERS.items():
                if looks_like(candidate):
                    return fmt
    return None


def _kind_of_head(head: str) -> str | None:
    """A JSON document too large to read whole here: recognise the format by keys near its start."""
    if '"requests"' in head and ('"hash_ids"' in head or '"block_size"' in head):
        return "kv-cache-tester"
    if '"payload"' in head and '"timestamp"' in head:
        return "codex"
    if '"parentUuid"' in head or ('"sessionId"' in head and '"uuid"' in head):
        return "claude-code"
    if '"span_data"' in head or '"trace.span"' in head:
        return "openai-agents"
    if '"run_type"' in head and '"start_time"' in head:
        return "langsmith"
    if '"startTime"' in head and ('"traceId"' in head or '"parentObservationId"' in head):
        return "langfuse"
    if '"sessionId"' in head:
        return "claude-code"
    return None


def detect_format(path: Path) -> str | None:
    """One of :data:`READERS`' formats, or None when the first lines are none of these."""
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            head = fh.read(SNIFF_BYTES)
            whole = not fh.read(1)
    except OSError:
        return None
    stripped = head.lstrip()
    if stripped.startswith("{") and '"resourceSpans"' in head[:4096]:
        return "otel"
    if whole and stripped.startswith(("{", "[")):
        try:
            doc = json.loads(stripped)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, list):
            doc = {"data": doc}
        if doc is not None:
            return _kind_of(doc)
    for n, raw in enumerate(head.splitlines()):
        if n >= SNIFF_LINES:
            break
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        kind = _kind_of(obj)
        if kind is not None:
            return kind
    # a first line (or a document) longer than what was read: recognise the format by its keys
    return _kind_of_head(head) if stripped.startswith(("{", "[")) else None


@dataclass
class _Found:
    by_format: dict[str, list[Path]] = field(default_factory=lambda: {fmt: [] for fmt in READERS})
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
            patterns = ("*.jsonl", "*.json") if fmt in ("auto", *JSON_FORMATS) else ("*.jsonl",)
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
                        f"{f}: not a recognised session file (its first lines are none of Claude Code JSONL, "
                        "a Codex CLI rollout, OTLP JSON, a Langfuse, LangSmith or OpenAI Agents SDK export, a "
                        "kv-cache-tester trace); "
                        "give --format to read it as one of them"
                    )
                found.unknown.append(f)
            else:
                found.by_format[kind].append(f)


def read_sessions(paths: list[tuple[Path, str]]) -> tuple[list[Session], list[FileReport]]:
    """Read every session under ``paths`` (each a (path, format) pair); raise SessionInputError on unusable input.

    The cyclic garbage collector is paused while the files are read (:func:`~agentsim.model.heap.gc_paused`):
    a million spans are millions of objects made at once and kept, and every collection would walk all of
    those made so far (two fifths of the reading time of a file of 10^6 spans)."""
    found = _Found()
    _collect(paths, found)
    sessions: list[Session] = []
    reports: list[FileReport] = []
    with gc_paused():
        for fmt in FORMATS[1:]:
            if found.by_format[fmt]:
                s, r = READERS[fmt][1](found.by_format[fmt])
                sessions += s
                reports += r
    for rep in reports:
        if Path(rep.path).resolve() in found.named and rep.calls == 0 and not (rep.duplicates or rep.repeated):
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
    if all(n.parent is None for n in session.nodes):  # the usual flat session, without the walk
        return 1 if session.nodes else 0
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
    sessions: list[Session],
    since: dt.date | None = None,
    until: dt.date | None = None,
    project: str | None = None,
    timed_only: bool = False,
) -> list[Session]:
    """Sessions that started between ``since`` and ``until`` (UTC dates, inclusive; a session recorded without a
    date is kept) in a project whose name contains ``project``; with ``timed_only``, none with a call whose
    duration had to be estimated."""
    out = []
    for s in sessions:
        if s.dated:
            day = s.start_date
            if (since is not None and day < since) or (until is not None and day > until):
                continue
        if project is not None and project not in (s.project or ""):
            continue
        if timed_only and s.estimated_calls:
            continue
        out.append(s)
    return out


def read_warnings(reports: list[FileReport]) -> list[str]:
    """One warning per file with corrupt lines skipped or records already read from another file."""
    out = []
    for rep in reports:
        if rep.corrupt:
            where = rep.corrupt_text()
            out.append(f"{rep.path}: skipped {rep.corrupt} corrupt lines" + (f" ({where})" if where else ""))
        if rep.duplicates:
            out.append(
                f"{rep.path}: {rep.duplicates} records were already read from another file "
                "(a copy, or a path given twice) and are counted once"
            )
        if rep.repeated:
            out.append(f"{rep.path}: {rep.repeated} records repeat one earlier in the same file and are counted once")
    return out
