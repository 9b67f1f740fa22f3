"""What the genai-prices catalog says in prose only: the date a price variant ends.

The catalog gives a price variant's start as data, but its end (if at all) only in the words of its notes
(``price_comments``); :func:`ended_per_notes` reads such a sentence, and nothing else.
"""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["ended_per_notes"]

_ENDS = re.compile(r"\b(remov|end|retir|discontinu|withdraw|sunset|deprecat|until|no longer)", re.I)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


def ended_per_notes(comments: str | None, when: dict[str, str]) -> tuple[dt.date, str] | None:
    """The date the catalog's *notes* (its price comments, prose) say a price variant ends, and the sentence.

    genai-prices gives a variant's start as data but an end (if at all) only in words, e.g. "Anthropic
    removes fast mode from Opus 4.8 on 2026-11-30". A sentence counts when it names one of the variant's
    context values (``fast`` of ``{speed: fast}``, as a word), a word of ending (remove, end, retire,
    discontinue, withdraw, sunset, deprecate, until, no longer) and one ISO date; the earliest such date is
    returned. None when no sentence says so (the variant may still end: nothing is guessed).
    """
    if not comments or not when:
        return None
    words = [str(v).lower() for v in when.values()]
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(comments.split())):
        low = sentence.lower()
        dates = _DATE.findall(sentence)
        if len(dates) != 1 or not _ENDS.search(sentence):
            continue
        if not any(re.search(rf"\b{re.escape(w)}\b", low) for w in words):
            continue
        try:
            found.append((dt.date.fromisoformat(dates[0]), sentence))
        except ValueError:
            continue
    return min(found) if found else None
