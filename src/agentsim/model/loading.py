"""Reading scenario files, and turning every mistake into ``file:line: path: message (hint)``.

YAML is parsed with PyYAML's composer so that every value keeps the line it came
from; JSON is read the same way (it is YAML's flow style), TOML through
``tomllib`` (without line numbers). A file may say ``extends: base.yaml`` to start
from another scenario and override parts of it (mappings merge key by key,
everything else is replaced; a key that excludes others, such as a distribution
family or a duration unit, replaces the parent's alternatives instead of joining them;
``variants: {NAME: null}`` drops a variant the base defines).
Alias expansion and nesting are bounded: a file with anchors is measured before any data is
built (a "billion laughs" file is refused, not expanded), any other while its data is built.

Validation errors from pydantic, and the cross-field :class:`~agentsim.model.scenario.Problem`
list, are mapped back to the line of the offending key (:func:`line_of`,
:func:`errors_from_validation`; :mod:`agentsim.plan.validation` turns data into a checked
scenario), so a user reads::

    scenarios/x.yaml:14: agent.steps[2].call.model: model 'opsu' is not defined under models (did you mean 'opus'?)
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentsim.model.base import suggest
from agentsim.model.input_files import InputError, read_bounded
from agentsim.model.safe_text import is_plain_name, scrub, visible
from agentsim.model.scenario import DIST_FAMILIES, Scenario

__all__ = [
    "ErrorItem",
    "Lines",
    "ScenarioError",
    "errors_from_validation",
    "files_read",
    "format_path",
    "line_of",
    "load_data",
    "no_dropped_variants",
    "place",
    "source_of",
]


@dataclass(frozen=True)
class ErrorItem:
    file: str
    line: int | None
    path: tuple[str | int, ...]
    message: str
    hint: str = ""

    @classmethod
    def at(cls, file: str, lines: dict, path: tuple, message: str, hint: str = "") -> ErrorItem:
        """A problem at ``path`` of data read by :func:`load_data`, placed in the file that holds it (``file``,
        or a file it ``extends:``) at the line of ``path`` or of its nearest enclosing key."""
        where, line = place(lines, path, file)
        return cls(where, line, path, message, hint)

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        dotted = format_path(self.path)
        text = f"{where}: {dotted + ': ' if dotted else ''}{self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return visible(text, lines=True)


class ScenarioError(Exception):
    """Bad input in a scenario (or trace, or option): one paragraph per problem, with file and line."""

    def __init__(self, items: list[ErrorItem]):
        self.items = items
        super().__init__("\n".join(str(i) for i in items))


def format_path(path: tuple[str | int, ...]) -> str:
    """``agent.steps[2].call.model``; a key that is not a plain name (:func:`agentsim.model.safe_text.is_plain_name`)
    shows as ``<key of N characters>``, never as its text (a key may be a line of a file that is no scenario)."""
    out = ""
    for p in path:
        if isinstance(p, int) and not isinstance(p, bool):
            out += f"[{p}]"
        else:
            text = str(p)
            shown = text if is_plain_name(text) else f"<key of {len(text)} character{'s' if len(text) != 1 else ''}>"
            out += ("." if out else "") + shown
    return out


# --------------------------------------------------------------------------- YAML with lines


class Lines(dict):
    """The line of every path of the data :func:`load_data` read (``path -> line``).

    ``files``: for a path that comes from a file the one read ``extends:`` (directly or further up the
    chain), that file; a path not in it is the read file's own. ``read``: every file read to make the
    data, resolved (the file itself first, then its bases), for the output checks
    (:mod:`agentsim.viz.outdir`: a command never writes over what it read).
    """

    __slots__ = ("files", "read")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.files: dict[tuple, str] = {}
        self.read: list[Path] = []


def _construct(node: yaml.Node, path: tuple, lines: dict, file: str) -> Any:
    """Build plain Python data from a composed YAML node, recording each path's line (:class:`_Builder`)."""
    lines.setdefault(path, node.start_mark.line + 1)
    return _Builder(node, lines, file).build(node, path)


class _Builder:
    """Plain data from a composed YAML tree in one pass, the line of every path recorded as it goes.

    It counts the values it builds and the depth it reaches: a tree of more than :data:`MAX_NODES` values or
    nested deeper than :data:`MAX_DEPTH` is handed to :func:`_check_size`, which refuses it with the place and
    message it always gave. A tree holds no alias unless its file has an anchor, and then :func:`_read_yaml`
    measures it before (the expanded size of a graph).
    """

    __slots__ = ("count", "file", "lines", "root")

    def __init__(self, root: yaml.Node, lines: dict, file: str):
        self.root, self.lines, self.file, self.count = root, lines, file, 1

    def build(self, node: yaml.Node, path: tuple) -> Any:
        cls = type(node)
        if cls is yaml.MappingNode:
            return self._mapping(node, path)
        if cls is yaml.SequenceNode:
            return self._sequence(node, path)
        return _scalar(node, path, self.file)

    def _grow(self, node: yaml.Node, path: tuple, values: int) -> None:
        """Count the ``values`` children of a container at ``path``: too many or too deep is refused."""
        self.count += values
        if values and (self.count > MAX_NODES or len(path) + 1 >= MAX_DEPTH):
            _check_size(self.root, self.file)  # raises: the values of a tree, or its depth, are above the limits
            raise AssertionError("the YAML tree is above its limits, but _check_size did not refuse it")

    def _sequence(self, node: yaml.Node, path: tuple) -> list:
        self._grow(node, path, len(node.value))
        lines, build = self.lines, self.build
        out = []
        for i, v in enumerate(node.value):
            here = (*path, i)
            lines.setdefault(here, v.start_mark.line + 1)
            out.append(build(v, here))
        return out

    def _mapping(self, node: yaml.Node, path: tuple) -> dict:
        self._grow(node, path, 2 * len(node.value))
        lines, build = self.lines, self.build
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            if key in out:
                raise ScenarioError(
                    [ErrorItem(self.file, key_node.start_mark.line + 1, (*path, key), "duplicate key",
                               "each key may appear once in a mapping")]
                )  # fmt: skip
            here = (*path, key)
            lines[here] = key_node.start_mark.line + 1
            out[key] = build(value_node, here)
        return out

    def _key(self, key_node: yaml.Node, path: tuple) -> Any:
        """A mapping's key: a scalar; a merge key (<<) and a mapping or list used as a key are refused."""
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise ScenarioError(
                [ErrorItem(self.file, key_node.start_mark.line + 1, path, "YAML merge keys (<<) are not supported",
                           "use extends: base.yaml to reuse a scenario")]
            )  # fmt: skip
        if type(key_node) is yaml.ScalarNode:
            return _scalar(key_node, path, self.file)
        key = _Builder(key_node, {}, self.file).build(key_node, path)
        if isinstance(key, list | dict):
            raise ScenarioError([ErrorItem(self.file, key_node.start_mark.line + 1, path, "a key must be a string")])
        return key


def _scalar(node: yaml.Node, path: tuple, file: str) -> Any:
    """The value of a scalar node: finite, printable text (the same text with the same tag is the same immutable
    value, made once)."""
    key = (node.tag, node.value, node.style)
    value = _scalars.get(key, _UNMADE)
    if value is not _UNMADE:
        return value
    try:
        value = yaml.SafeLoader.construct_object(_scalar_loader, node)  # type: ignore[arg-type]
    except (ValueError, OverflowError, yaml.YAMLError) as exc:  # e.g. a date like 2026-02-30
        raise _bad_value(node, path, file, exc) from None
    if type(value) is float and not math.isfinite(value):
        raise ScenarioError([_not_finite(file, node.start_mark.line + 1, path, value)])
    if isinstance(value, str):
        _check_text(value, node.start_mark.line + 1, path, file)
    if len(_scalars) < 100_000:
        _scalars[key] = value
    return value


_UNMADE = object()


def _check_text(value: str, line: int, path: tuple, file: str) -> None:
    """Text of a file holds no lone UTF-16 surrogate ("\\ud800" in JSON: it cannot be printed or written) and no NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ScenarioError(
            [ErrorItem(file, line, path, "this text holds a lone UTF-16 surrogate (an escape like \\ud800 without "
                       "its pair)", "remove the escape or write the character itself")]
        ) from None  # fmt: skip
    if "\0" in value:
        raise ScenarioError(
            [ErrorItem(file, line, path, "this text holds a NUL character (\\0), which no name, file name or table "
                       "can hold", "remove it")]
        )  # fmt: skip


def _not_finite(file: str, line: int | None, path: tuple, value: float) -> ErrorItem:
    """NaN or an infinity in a file: no number agentsim reads may be one (agentsim.model.domain)."""
    return ErrorItem(
        file,
        line,
        path,
        f"{'NaN' if math.isnan(value) else 'an infinity'} ({value!r}) is not a number agentsim can use: every number "
        "in a scenario, a profile or a replay config is finite",
        "write a finite number (a large one where you meant no limit), or leave the key out for its default",
    )


def _bad_value(node: yaml.Node, path: tuple, file: str, exc: Exception) -> ScenarioError:
    """A scalar YAML cannot build: a date or number is repeated (digits and separators only), any other text is
    not (it may be a secret)."""
    shown = f"'{node.value}'" if _DATE_OR_NUMBER.fullmatch(node.value) else "this value"
    return ScenarioError(
        [ErrorItem(file, node.start_mark.line + 1, path, f"{shown} is not a valid value: {scrub(str(exc))}")]
    )


_DATE_OR_NUMBER = re.compile(r"[0-9:.+\-TZtz ]{1,40}")


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
                raise _size_error(node, file, "expands")
            continue
        if key in size:
            continue
        if key in on_path:
            raise _size_error(node, file, "recursive")
        if depth > MAX_DEPTH:
            raise _size_error(node, file, "deep")
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


def _size_error(node: yaml.Node, file: str, why: str) -> ScenarioError:
    """What :func:`_check_size` found at ``node``: a value that ``expands`` above :data:`MAX_NODES` values, a
    ``recursive`` alias or nesting too ``deep``."""
    message, hint = {
        "expands": (
            f"this value expands to more than {MAX_NODES:,} values (YAML aliases *name repeat what an anchor &name "
            "holds)",
            "use fewer or less nested aliases",
        ),
        "recursive": (
            "a YAML alias refers to the value that contains it (a recursive alias)",
            "an alias *name must come after its anchor &name has ended",
        ),
        "deep": (
            f"values are nested more than {MAX_DEPTH} levels deep",
            "a scenario needs far fewer levels; check the brackets and indentation",
        ),
    }[why]
    return ScenarioError([ErrorItem(file, node.start_mark.line + 1, (), message, hint)])


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


def _read_yaml(text: str, file: str) -> tuple[Any, Lines]:
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        context = str(exc.context) if exc.context else ""
        if exc.context_mark is not None and mark is not None and exc.context_mark.line != mark.line:
            # where the construct opened (an unclosed bracket, a quote) as well as where the parser stopped
            context += f" that opened on line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1},"
        msg = scrub(" ".join(x for x in (context, str(exc.problem) if exc.problem else "") if x))  # no file text
        raise ScenarioError(
            [ErrorItem(file, line, (), f"not valid YAML: {msg}", "check indentation, colons, brackets and quotes")]
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (its message quotes the text)
        where = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
        code = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or "\0")
        raise ScenarioError(
            [ErrorItem(file, where, (), f"not valid YAML: a character YAML does not allow (#x{code:04x})")]
        ) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([ErrorItem(file, None, (), f"not valid YAML: {scrub(type(exc).__name__)}")]) from None
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
    if "&" in text:  # an anchor: aliases may repeat it, so the tree's expanded size is measured before it is built
        _check_size(node, file)
    lines = Lines()
    data = _construct(node, (), lines, file)
    return data, lines


def _no_nul(data: Any, file: str, path: tuple = ()) -> None:
    """No text of a TOML file holds a NUL character, and no number is NaN or infinite (YAML and JSON values are
    checked as they are built)."""
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
        if type(value) is float and not math.isfinite(value):
            raise ScenarioError([_not_finite(file, None, here, value)])


def _resolve(path: Path, where: tuple) -> Path:
    """``path`` with its symbolic links followed; a loop of links is a ScenarioError at ``where``."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11-3.12: RuntimeError("Symlink loop ..."); later: OSError
        raise ScenarioError(
            [ErrorItem(*where, f"{path}: the path is a loop of symbolic links ({exc})", "point it at a file")]
        ) from None


def load_data(path: str | Path, _chain: tuple[Path, ...] = (), kind: str = "scenario") -> tuple[dict[str, Any], Lines]:
    """Read a scenario file to plain data (after ``extends:``), with the line of every path.

    ``kind`` names the file's kind for its size limit (:data:`agentsim.model.input_files.MAX_BYTES`:
    scenario, profile, replay config); a file above it is refused before it is parsed. The lines
    (:class:`Lines`) say which file holds each path and list every file read."""
    path = Path(path)
    file = str(path)
    try:
        text = read_bounded(path, kind)
    except InputError as exc:
        raise ScenarioError([ErrorItem(file, None, (), exc.message, exc.hint)]) from None
    except FileNotFoundError:
        raise ScenarioError([ErrorItem(file, None, (), "no such file", "check the path")]) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ScenarioError([ErrorItem(file, None, (), f"cannot read the file: {scrub(str(exc))}")]) from None
    if path.suffix.lower() == ".toml":
        import tomllib  # here: a YAML scenario (the usual case) need not import it

        try:
            data, lines = tomllib.loads(text), Lines()
            _no_nul(data, file)
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError([ErrorItem(file, None, (), f"not valid TOML: {scrub(str(exc))}")]) from None
        except RecursionError:
            raise ScenarioError([ErrorItem(file, None, (), "values are nested too deeply to read")]) from None
    else:
        data, lines = _read_yaml(text, file)
    lines.read.append(Path(os.path.realpath(path)))
    if not isinstance(data, dict):
        raise ScenarioError(
            [ErrorItem(file, lines.get((), None), (), "a scenario is a mapping (name:, models:, agent: ...)")]
        )
    if "extends" in data:
        data, lines = _extend(data, lines, path, _chain, kind)
    else:
        no_dropped_variants(data, lines, file)
    return data, lines


def _extend(data: dict, lines: Lines, path: Path, chain: tuple[Path, ...], kind: str) -> tuple[dict, Lines]:
    """``data`` (which says ``extends: BASE``) merged over its base, with the lines of both files."""
    file = str(path)
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
    chain = (*chain, here)
    if base_path in chain:
        cycle = " -> ".join(p.name for p in (*chain[chain.index(base_path) :], base_path))
        raise ScenarioError([ErrorItem(*where, f"extends goes round in a circle ({cycle})", "break the cycle")])
    if len(chain) > 20:
        raise ScenarioError([ErrorItem(*where, "more than 20 files extend one another", "flatten the chain")])
    if not base_path.exists():  # (a folder, a pipe or a device is told by the reading, below)
        raise ScenarioError(
            [
                ErrorItem(
                    *where,
                    f"extends names '{base_ref}', but there is no such file ({base_path})",
                    "check the path; it is relative to this file",
                )
            ]
        )
    drops = _dropped(data, lines, file)
    base, base_lines = load_data(base_path, chain, kind)
    _drop_variants(base, drops, lines, file, str(base_path), bool(data.get("variants")))
    return _merge(base, data), _merged_lines(base_lines, lines, data, str(base_path))


def _dropped(data: dict, lines: Lines, file: str) -> list[str]:
    """The variants a file that extends another drops (``variants: {NAME: null}``), taken out of its data."""
    variants = data.get("variants")
    if not isinstance(variants, dict):
        return []
    drops = [name for name, spec in variants.items() if spec is None]
    for name in drops:
        del variants[name]
    if not variants and drops:
        del data["variants"]
    return drops


def _drop_variants(base: dict, drops: list[str], lines: Lines, file: str, base_file: str, adds: bool) -> None:
    """Take the variants ``drops`` names out of the ``base`` scenario: each must be one of its own, and one
    must be left unless the file adds one (``adds``); a scenario without variants would compare a default one."""
    if not drops:
        return
    inherited = base.get("variants") if isinstance(base.get("variants"), dict) else {}
    for name in drops:
        if name not in inherited:
            have = ", ".join(map(str, inherited)) or "none"
            raise ScenarioError([ErrorItem(
                file, lines.get(("variants", name)), ("variants", name),
                f"'{name}: null' drops an inherited variant, but {base_file} has no variant '{name}'",
                suggest(str(name), [str(k) for k in inherited]) or f"its variants: {have}",
            )])  # fmt: skip
        del inherited[name]
    if not inherited and not adds:
        raise ScenarioError([ErrorItem(
            file, lines.get(("variants", drops[-1])), ("variants", drops[-1]),
            f"this drops every variant of {base_file}, and a scenario compares at least one",
            "keep one of them, or add a variant of this file's own",
        )])  # fmt: skip


def no_dropped_variants(data: dict, lines: Lines, file: str) -> None:
    """A ``variants: {NAME: null}`` outside a file that extends another drops nothing: refused, said so."""
    variants = data.get("variants")
    for name, spec in variants.items() if isinstance(variants, dict) else ():
        if spec is None:
            raise ScenarioError([ErrorItem(
                file, lines.get(("variants", name)), ("variants", name),
                f"variant '{name}' is null: null drops a variant inherited through extends:, and this file extends "
                "no other", "give the variant a mapping ({} for the baseline's settings), or delete the line",
            )])  # fmt: skip


def _merged_lines(base: Lines, own: Lines, own_data: dict, base_file: str) -> Lines:
    """The lines of a file merged over its base: its own paths, and the base's paths it did not replace (a
    path under a value of its own that is not a mapping was replaced; mappings merge), each with its file."""
    replaced: set[tuple] = set()
    stack: list[tuple[tuple, Any]] = [((), own_data)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*here, k), v) for k, v in value.items())
        elif here:
            replaced.add(here)
    out = Lines(own)
    out.files.update(own.files)
    for p, line in base.items():
        if p in own or any(p[:n] in replaced for n in range(1, len(p))):
            continue
        out[p] = line
        out.files[p] = base.files.get(p, base_file)
    out.read[:] = [*own.read, *base.read]
    return out


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


def line_of(lines: dict, path: tuple) -> int | None:
    """The line of ``path`` in a file read by :func:`load_data`, or of its nearest enclosing key."""
    return place(lines, path, "")[1]


def place(lines: dict, path: tuple, file: str) -> tuple[str, int | None]:
    """``(file, line)`` of ``path`` (or of its nearest enclosing key) in data read by :func:`load_data` from
    ``file``: the file is the one that holds that key (a base the file ``extends:`` for a key of the base)."""
    files = getattr(lines, "files", None) or {}
    for n in range(len(path), -1, -1):
        if path[:n] in lines:
            return files.get(path[:n], file), lines[path[:n]]
    return file, None


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


def errors_from_validation(exc: ValidationError, data: Any, lines: dict, file: str) -> list[ErrorItem]:
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
            msg = "unknown key" + (f" '{ctx['key']}'" if is_plain_name(ctx["key"]) else "")
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
        items.append(ErrorItem.at(file, lines, path, msg, hint))
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


def files_read(scenario: Scenario) -> tuple[Path, ...]:
    """Every file read to make ``scenario`` (the file, the files it ``extends:``, its profiles), resolved; empty
    for a scenario made from data. (:func:`agentsim.plan.validation.input_files` adds what its compile read.)"""
    return scenario._inputs
