"""Reading scenario files, and turning every mistake into ``file:line: path: message (hint)``.

YAML is parsed with PyYAML's composer so that every value keeps the line it came
from; JSON is read the same way (it is YAML's flow style), TOML through
``tomllib`` (without line numbers). A file may say ``extends: base.yaml`` to start
from another scenario and override parts of it (mappings merge key by key,
everything else is replaced; a key that excludes others, such as a distribution
family or a duration unit, replaces the parent's alternatives instead of joining them).
Alias expansion and nesting are bounded before any data is built (a "billion laughs"
file is refused, not expanded).

Validation errors from pydantic, and the cross-field :class:`~agentsim.model.scenario.Problem`
list, are mapped back to the line of the offending key (:func:`line_of`,
:func:`errors_from_validation`; :mod:`agentsim.plan.validation` turns data into a checked
scenario), so a user reads::

    scenarios/x.yaml:14: agent.steps[2].call.model: model 'opsu' is not defined under models (did you mean 'opus'?)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentsim.model.input_files import InputError, read_bounded
from agentsim.model.scenario import DIST_FAMILIES, Scenario

__all__ = [
    "ErrorItem",
    "ScenarioError",
    "errors_from_validation",
    "format_path",
    "line_of",
    "load_data",
    "source_of",
]


@dataclass(frozen=True)
class ErrorItem:
    file: str
    line: int | None
    path: tuple[str | int, ...]
    message: str
    hint: str = ""

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        dotted = format_path(self.path)
        text = f"{where}: {dotted + ': ' if dotted else ''}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text


class ScenarioError(Exception):
    """Bad input in a scenario (or trace, or option): one paragraph per problem, with file and line."""

    def __init__(self, items: list[ErrorItem]):
        self.items = items
        super().__init__("\n".join(str(i) for i in items))


def format_path(path: tuple[str | int, ...]) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


# --------------------------------------------------------------------------- YAML with lines

_Lines = dict[tuple[str | int, ...], int]
Lines = _Lines  # the line of every path of a file read by load_data


def _construct(node: yaml.Node, path: tuple, lines: _Lines, file: str) -> Any:
    """Build plain Python data from a composed YAML node, recording each path's line."""
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ScenarioError(
                    [
                        ErrorItem(
                            file,
                            key_node.start_mark.line + 1,
                            path,
                            "YAML merge keys (<<) are not supported",
                            "use extends: base.yaml to reuse a scenario",
                        )
                    ]
                )
            key = _construct(key_node, path, {}, file)
            if isinstance(key, list | dict):
                raise ScenarioError([ErrorItem(file, key_node.start_mark.line + 1, path, "a key must be a string")])
            if key in out:
                raise ScenarioError(
                    [
                        ErrorItem(
                            file,
                            key_node.start_mark.line + 1,
                            (*path, key),
                            "duplicate key",
                            "each key may appear once in a mapping",
                        )
                    ]
                )
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _construct(value_node, (*path, key), lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(v, (*path, i), lines, file) for i, v in enumerate(node.value)]
    key = (node.tag, node.value, node.style)
    if key in _scalars:  # the same text with the same tag is the same (immutable) value
        return _scalars[key]
    try:
        value = yaml.SafeLoader.construct_object(_scalar_loader, node)  # type: ignore[arg-type]
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate ("\ud800" in JSON) cannot be printed or written
            if "\0" in value:
                raise ScenarioError(
                    [
                        ErrorItem(
                            file,
                            node.start_mark.line + 1,
                            path,
                            "this text holds a NUL character (\\0), which no name, file name or table can hold",
                            "remove it",
                        )
                    ]
                )
        if len(_scalars) < 100_000:
            _scalars[key] = value
        return value
    except UnicodeEncodeError:
        raise ScenarioError(
            [
                ErrorItem(
                    file,
                    node.start_mark.line + 1,
                    path,
                    "this text holds a lone UTF-16 surrogate (an escape like \\ud800 without its pair)",
                    "remove the escape or write the character itself",
                )
            ]
        ) from None
    except (ValueError, OverflowError, yaml.YAMLError) as exc:  # e.g. a date like 2026-02-30
        raise ScenarioError(
            [ErrorItem(file, node.start_mark.line + 1, path, f"'{node.value}' is not a valid value: {exc}")]
        ) from None


MAX_NODES = 1_000_000  # values in a scenario after YAML aliases are expanded (a "billion laughs" has 10^9)
MAX_DEPTH = 100  # nesting of mappings and lists


def _check_size(root: yaml.Node, file: str) -> None:
    """Refuse alias bombs, recursive aliases and absurd nesting before building any Python data.

    Aliases make the composed YAML a graph: the expanded size of a node is 1 + the sizes of its
    children, counted once per node (memoised), so a file of nested aliases is measured without
    being expanded.
    """
    size: dict[int, int] = {}
    # iterative depth-first walk: (node, depth, its children once they are done, else None)
    stack: list[tuple[yaml.Node, int, list | None]] = [(root, 1, None)]
    on_path: set[int] = set()
    scalar = yaml.ScalarNode
    while stack:
        node, depth, kids = stack.pop()
        key = id(node)
        if kids is not None:
            on_path.discard(key)
            size[key] = min(1 + sum(map(size.__getitem__, map(id, kids))), MAX_NODES + 1)
            if size[key] > MAX_NODES:
                raise ScenarioError(
                    [
                        ErrorItem(
                            file,
                            node.start_mark.line + 1,
                            (),
                            f"this value expands to more than {MAX_NODES:,} values (YAML aliases *name "
                            "repeat what an anchor &name holds)",
                            "use fewer or less nested aliases",
                        )
                    ]
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise ScenarioError(
                [
                    ErrorItem(
                        file,
                        node.start_mark.line + 1,
                        (),
                        "a YAML alias refers to the value that contains it (a recursive alias)",
                        "an alias *name must come after its anchor &name has ended",
                    )
                ]
            )
        if depth > MAX_DEPTH:
            raise ScenarioError(
                [
                    ErrorItem(
                        file,
                        node.start_mark.line + 1,
                        (),
                        f"values are nested more than {MAX_DEPTH} levels deep",
                        "a scenario needs far fewer levels; check the brackets and indentation",
                    )
                ]
            )
        on_path.add(key)
        kids = _children(node)
        stack.append((node, depth, kids))
        for k in kids:
            if id(k) in size:
                continue
            if type(k) is scalar and depth < MAX_DEPTH:  # a leaf within the depth limit: one value, no visit
                size[id(k)] = 1
            else:
                stack.append((k, depth + 1, None))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


_scalar_loader = yaml.SafeLoader("")
_scalars: dict[tuple, Any] = {}  # (tag, text, style) -> the scalar it makes (a scenario repeats most of them)


def _compose(text: str) -> yaml.Node:
    """The YAML node tree, by libyaml's C parser when it is installed (ten times faster: a scenario of 100,000
    steps); a file it refuses is read again by the pure-Python parser, whose messages are the ones reported."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.compose(text, Loader=loader)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=yaml.SafeLoader)


def _read_yaml(text: str, file: str) -> tuple[Any, _Lines]:
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        context = str(exc.context) if exc.context else ""
        if exc.context_mark is not None and mark is not None and exc.context_mark.line != mark.line:
            # where the construct opened (an unclosed bracket, a quote) as well as where the parser stopped
            context += f" that opened on line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1},"
        msg = " ".join(x for x in (context, str(exc.problem) if exc.problem else "") if x)
        raise ScenarioError(
            [ErrorItem(file, line, (), f"not valid YAML: {msg}", "check indentation, colons, brackets and quotes")]
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([ErrorItem(file, None, (), f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise ScenarioError(
            [
                ErrorItem(
                    file,
                    None,
                    (),
                    "values are nested too deeply to read",
                    f"a scenario needs far fewer than {MAX_DEPTH} levels; check the brackets and indentation",
                )
            ]
        ) from None
    if node is None:
        raise ScenarioError([ErrorItem(file, None, (), "the file is empty", "start from scenarios/chat-turn.yaml")])
    _check_size(node, file)
    lines: _Lines = {}
    data = _construct(node, (), lines, file)
    return data, lines


def _no_nul(data: Any, file: str, path: tuple = ()) -> None:
    """No text of a TOML file holds a NUL character (YAML and JSON text is checked as it is built)."""
    stack = [(path, data)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*here, k), v) for k, v in value.items())
            keys = [k for k in value if "\0" in k]
            if keys:
                here, value = (*here, keys[0]), keys[0]
        elif isinstance(value, list):
            stack.extend(((*here, i), v) for i, v in enumerate(value))
        if isinstance(value, str) and "\0" in value:
            raise ScenarioError([ErrorItem(file, None, here, "this text holds a NUL character (\\0)", "remove it")])


def _resolve(path: Path, where: tuple) -> Path:
    """``path`` with its symbolic links followed; a loop of links is a ScenarioError at ``where``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11-3.12: RuntimeError("Symlink loop ..."); later: OSError
        raise ScenarioError(
            [ErrorItem(*where, f"{path}: the path is a loop of symbolic links ({exc})", "point it at a file")]
        ) from None


def load_data(path: str | Path, _chain: tuple[Path, ...] = (), kind: str = "scenario") -> tuple[dict[str, Any], _Lines]:
    """Read a scenario file to plain data (after ``extends:``), with the line of every path.

    ``kind`` names the file's kind for its size limit (:data:`agentsim.model.input_files.MAX_BYTES`:
    scenario, profile, replay config); a file above it is refused before it is parsed."""
    path = Path(path)
    file = str(path)
    try:
        text = read_bounded(path, kind)
    except InputError as exc:
        raise ScenarioError([ErrorItem(file, None, (), exc.message, exc.hint)]) from None
    except FileNotFoundError:
        raise ScenarioError([ErrorItem(file, None, (), "no such file", "check the path")]) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ScenarioError([ErrorItem(file, None, (), f"cannot read the file: {exc}")]) from None
    if path.suffix.lower() == ".toml":
        import tomllib  # here: a YAML scenario (the usual case) need not import it

        try:
            data, lines = tomllib.loads(text), {}
            _no_nul(data, file)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError([ErrorItem(file, None, (), f"not valid TOML: {exc}")]) from None
        except RecursionError:
            raise ScenarioError([ErrorItem(file, None, (), "values are nested too deeply to read")]) from None
    else:
        data, lines = _read_yaml(text, file)
    if not isinstance(data, dict):
        raise ScenarioError(
            [ErrorItem(file, lines.get((), None), (), "a scenario is a mapping (name:, models:, agent: ...)")]
        )
    if "extends" in data:
        base_ref = data.pop("extends")
        if not isinstance(base_ref, str):
            raise ScenarioError([ErrorItem(file, lines.get(("extends",)), ("extends",), "extends takes a file name")])
        where = (file, lines.get(("extends",)), ("extends",))
        if "\0" in base_ref:
            raise ScenarioError([ErrorItem(*where, "the file name holds a NUL character", "remove it")])
        base_path = _resolve(path.parent / base_ref, where)
        here = _resolve(path, where)
        if base_path == here:
            raise ScenarioError([ErrorItem(*where, "a file cannot extend itself")])
        chain = (*_chain, here)
        if base_path in chain:
            cycle = " -> ".join(p.name for p in (*chain[chain.index(base_path) :], base_path))
            raise ScenarioError([ErrorItem(*where, f"extends goes round in a circle ({cycle})", "break the cycle")])
        if len(chain) > 20:
            raise ScenarioError([ErrorItem(*where, "more than 20 files extend one another", "flatten the chain")])
        if not base_path.is_file():
            raise ScenarioError(
                [
                    ErrorItem(
                        *where,
                        f"extends names '{base_ref}', but there is no such file ({base_path})",
                        "check the path; it is relative to this file",
                    )
                ]
            )
        base, _ = load_data(base_path, chain, kind)
        data = _merge(base, data)
    return data, lines


# Keys that exclude one another in a mapping, as sets of keys that go together. When a file that
# extends another sets one of them, the parent's alternatives are dropped instead of merged: a
# child's {hours: 6} replaces a parent's {seconds: 600}, a child's {normal: ...} a parent's {lognormal: ...}.
_ALTERNATIVES: tuple[tuple[frozenset[str], ...], ...] = (
    tuple(frozenset({f}) for f in DIST_FAMILIES),
    tuple(frozenset({u}) for u in ("seconds", "minutes", "hours", "days")),
    (frozenset({"median", "p90"}), frozenset({"mean", "sd"})),
    (frozenset({"runs_per_month"}), frozenset({"runs_per_day"}), frozenset({"seats", "runs_per_seat_per_day"})),
    (frozenset({"times"}), frozenset({"continue_p", "max"})),
    (frozenset({"arrivals"}), frozenset({"concurrent", "think_time"})),
    (frozenset({"values"}), frozenset({"range"})),
)


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for group in _ALTERNATIVES:
            chosen = [keys for keys in group if keys & over.keys()]
            if chosen and any(keys & base.keys() for keys in group if keys not in chosen):
                for keys in group:
                    if keys not in chosen:
                        for k in keys:
                            out.pop(k, None)
        for k, v in over.items():
            out[k] = _merge(out[k], v) if k in out else v
        return out
    return over


# --------------------------------------------------------------------------- validation -> errors


def _data_path(data: Any, loc: tuple) -> tuple[str | int, ...]:
    """Follow pydantic's ``loc`` through the raw data, dropping union tags that are not keys."""
    path: list[str | int] = []
    cur = data
    for part in loc:
        if (isinstance(cur, dict) and part in cur) or (
            isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur)
        ):
            path.append(part)
            cur = cur[part]
        # else: a tag added by a discriminated union ('call', 'lognormal', 'number'...): skip
    return tuple(path)


def line_of(lines: _Lines, path: tuple) -> int | None:
    """The line of ``path`` in a file read by :func:`load_data`, or of its nearest enclosing key."""
    for n in range(len(path), -1, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


_FRIENDLY = {
    "missing": "missing required key",
    "greater_than": "must be greater than {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "too_short": "must not be empty",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "bool_type": "expected true or false",
    "string_type": "expected a string",
    "dict_type": "expected a mapping",
    "list_type": "expected a list",
    "literal_error": "expected {expected}",
    "model_type": "expected a mapping",
}


def errors_from_validation(exc: ValidationError, data: Any, lines: _Lines, file: str) -> list[ErrorItem]:
    """A pydantic error as one :class:`ErrorItem` per problem, each at the line of the offending key."""
    items: list[ErrorItem] = []
    seen: set[tuple] = set()
    for err in exc.errors(include_url=False):
        path = _data_path(data, tuple(err["loc"]))
        etype = err["type"]
        ctx = err.get("ctx") or {}
        hint = ""
        if etype == "unknown_key":
            path = (*path, ctx["key"])
            msg = f"unknown key '{ctx['key']}'"
            hint = ctx.get("hint", "")
        elif etype in ("union_tag_invalid", "union_tag_not_found"):
            continue  # reported better by the shape checks
        elif etype in _FRIENDLY:
            try:
                msg = _FRIENDLY[etype].format(**ctx)
            except (KeyError, IndexError):
                msg = err["msg"]
            if etype == "missing":
                path = (*path, err["loc"][-1])
                msg = "missing required key"
        else:
            msg = err["msg"]
            if msg.startswith("Value error, "):
                msg = msg[len("Value error, ") :]
            # custom errors carry their own hint in parentheses already
        key = (path, msg)
        if key in seen:
            continue
        seen.add(key)
        items.append(ErrorItem(file, line_of(lines, path), path, msg, hint))
    # When a value fails several members of a union, keep the most specific (deepest) messages.
    if len(items) > 1:
        deepest = max(len(i.path) for i in items)
        by_prefix = [
            i
            for i in items
            if not any(j is not i and len(j.path) > len(i.path) and j.path[: len(i.path)] == i.path for j in items)
        ]
        items = by_prefix or [i for i in items if len(i.path) == deepest]
    return items


def source_of(scenario: Scenario) -> str | None:
    return scenario._source
