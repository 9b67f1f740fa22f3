"""A scenario file's opening comments as the paragraphs and lists they were written as.

Scenario files open with a comment that says what the scenario asks and where every number comes
from. YAML comments are lines, but the text is prose wrapped at the editor's width: a report that
showed one line per bullet would cut sentences in half. :func:`comment_blocks` reads the comment lines
at the top of a file (before its first key) back into blocks:

* a line ``#`` alone (or a line that is not a comment) ends a block;
* a line starting ``- `` or ``* `` starts a list item; the lines after it that are indented belong
  to the item (``#   writes 1.25x ...``), and an unindented line ends the list and starts a paragraph;
* the other lines of a block are joined into one paragraph, with single spaces.

Tool directives (``# yaml-language-server: ...``) are left out. :func:`paragraphs` does the same for
a ``description:`` text (blank lines separate paragraphs, single newlines are joined).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Block", "comment_blocks", "paragraphs"]

_DIRECTIVES = ("yaml-language-server:", "-*-", "vim:")


@dataclass
class Block:
    """A paragraph (``items`` empty) or a list (``text`` empty, one string per item)."""

    text: str = ""
    items: list[str] = field(default_factory=list)


def _header_lines(text: str) -> list[str | None]:
    """The comment lines before the first key, without ``#`` and one space; None for a blank comment."""
    out: list[str | None] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if out:
                out.append(None)
            continue
        if not line.startswith("#"):
            break
        body = line.lstrip("#")
        body = body[1:] if body.startswith(" ") else body
        if body.strip().startswith(_DIRECTIVES):
            continue
        out.append(body.rstrip() if body.strip() else None)
    return out


def comment_blocks(text: str) -> list[Block]:
    """The opening comment of a scenario file as paragraphs and lists (module docstring)."""
    blocks: list[Block] = []
    current: Block | None = None
    for line in [*_header_lines(text), None]:
        if line is None:
            current = None
            continue
        stripped = line.lstrip()
        bullet = stripped[:2] in ("- ", "* ")
        indented = line[:1] == " " and not bullet
        if bullet:
            if current is None or not current.items:
                current = Block()
                blocks.append(current)
            current.items.append(stripped[2:].strip())
        elif current is not None and current.items and indented:
            current.items[-1] += " " + stripped
        elif current is not None and not current.items:
            current.text += " " + stripped
        else:
            current = Block(text=stripped)
            blocks.append(current)
    return blocks


def paragraphs(text: str | None) -> list[str]:
    """A description as paragraphs: blank lines separate them, single line breaks are joined."""
    if not text:
        return []
    out, lines = [], []
    for line in [*text.splitlines(), ""]:
        if line.strip():
            lines.append(line.strip())
        elif lines:
            out.append(" ".join(lines))
            lines = []
    return out
