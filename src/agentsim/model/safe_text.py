"""Text agentsim read, made safe to show: on pages, tables, figures and CSV cells, and in error messages.

Names come from files a person may not have written: a scenario's name, description and variant names, the
model, tool and session names of a recorded trace. Where they are shown, two things must not happen:

* **A name that displays as another.** Unicode's bidirectional controls reorder what follows them:
  ``invoice\\u202efdp.exe`` displays as ``invoiceexe.pdf``; a zero-width space makes ``op\\u200bus`` look like
  ``opus``; a terminal escape (``\\x1b]8;;…``) can rewrite a terminal's screen. :func:`visible` replaces
  every such character (Unicode's format characters, category Cf, which holds the bidirectional controls
  U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C, the zero-width characters, the soft hyphen, the byte
  order mark and the tag characters; the control characters, Cc, but newline and tab where text keeps its
  lines; the line and paragraph separators, Zl and Zp; and the Hangul fillers that draw nothing) by its code
  written out, ``[U+202E]``: the name keeps every character it had, and shows them. It is applied at the
  boundary where text is shown: the HTML pages (every value a template prints, and the stream page's data),
  the command line's consoles (every string they render), every figure's text (when it is drawn), and
  every CSV cell (:func:`csv_frame`).
* **A cell that runs as a formula.** A spreadsheet runs a cell that starts with ``=``, ``+``, ``-``, ``@``, a
  tab or a carriage return (``=HYPERLINK(…)``, ``=cmd|' /C calc'!A0``). :func:`csv_cell` puts a single quote
  before such a text (OWASP's advice); a number, and a text that is a plain number such as ``-5``, stays
  as it is. :func:`csv_frame` does it to every text cell and column name of a table before it is written.

**Errors never repeat a file's contents.** A file named where a scenario, profile or replay config is
expected may be anything (``extends: /etc/shadow``); an error about one of its keys must not print the
line that holds it. :func:`key_text` quotes a key or a name only when it is a short plain name (letters,
digits, ``_ . - / + @ *`` and spaces, at most :data:`MAX_NAME` characters); anything else is described
(``<38 characters, not shown>``), never shown. :func:`value_text` describes a value by its kind (``text``, ``a
list``), and writes out only numbers, booleans and null: an error never quotes a text value. :func:`scrub`
applies the same rule to the quoted fragments of a parser's message.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

__all__ = ["MAX_NAME", "csv_cell", "csv_frame", "is_plain_name", "key_text", "scrub", "value_text", "visible"]

MAX_NAME = 40  # characters of a key an error message may quote

# characters that draw nothing although they are not format characters (Unicode category Lo)
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0")
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Zl", "Zp", "Cs"})
_KEEP_IN_LINES = frozenset("\n\t")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NAME = re.compile(r"[\w*][\w .\-/+@*]*")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _hidden(ch: str, lines: bool) -> bool:
    if ch in _FILLERS:
        return True
    if lines and ch in _KEEP_IN_LINES:
        return False
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES


def visible(text: str, lines: bool = False) -> str:
    """``text`` with every bidirectional, invisible or control character written out as ``[U+XXXX]``.

    ``lines``: newlines and tabs stay (a description, a message of several lines). Everything else that
    is printable (any script, emoji without joiners, accents) stays as it is.
    """
    if text.isprintable() and not any(ch in _FILLERS for ch in text):  # the usual case, at C speed
        return text
    return "".join(f"[U+{ord(ch):04X}]" if _hidden(ch, lines) else ch for ch in text)


def is_plain_name(text: str) -> bool:
    """A short name an error message may quote: letters, digits, ``_ . - / + @ *`` and spaces, at most
    :data:`MAX_NAME` characters, starting with a letter, digit, ``_`` or ``*``."""
    return len(text) <= MAX_NAME and _PLAIN_NAME.fullmatch(text) is not None


def key_text(key: Any) -> str:
    """A key (or a name read from a file) as an error message may show it: ``'name'`` when it is a plain
    name (:func:`is_plain_name`), a number as itself, anything else described, never quoted."""
    if isinstance(key, bool) or key is None:
        return f"'{str(key).lower() if key is not None else 'null'}'"
    if isinstance(key, int | float):
        return repr(key)
    text = str(key)
    if is_plain_name(text):
        return f"'{text}'"
    return f"<{len(text)} characters, not shown>"


def value_text(value: Any) -> str:
    """What a value is, for ``expected a number, got …``: numbers, booleans and null as themselves
    (bounded), text and containers by their kind only."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**15 else f"{float(value):.3g}"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else repr(value)
    if isinstance(value, str):
        if _NUMBER.fullmatch(value.strip()):
            return "a number in quotes (text)"
        return "text" if value else "empty text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a value of type {type(value).__name__}"


_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")


def scrub(message: str) -> str:
    """A parser's message with each quoted fragment longer than two characters shown by :func:`key_text`'s rule
    (a plain name stays, anything else is described), then made :func:`visible`."""

    def one(m: re.Match) -> str:
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        if len(inner) <= 2 or is_plain_name(inner):
            return m.group(0)
        return f"<{len(inner)} characters, not shown>"

    return visible(_QUOTED.sub(one, message), lines=True)


def csv_cell(value: Any) -> Any:
    """One CSV cell, safe to open in a spreadsheet: a text that starts like a formula gets a leading ``'``
    (a plain number written as text, such as ``-5``, does not), and is made :func:`visible`; anything that
    is not text is returned as it is."""
    if not isinstance(value, str):
        return value
    text = visible(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_frame(frame):
    """A copy of a pandas DataFrame whose text cells and column names are :func:`csv_cell`-safe; numeric,
    boolean and date columns untouched."""
    import pandas as pd

    out = frame.copy()
    for col in out.columns:
        s = out[col]
        if isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            out[col] = s.astype(object).map(csv_cell, na_action="ignore")
    out.columns = [csv_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out
