"""The Jinja2 environment of agentsim's HTML pages: autoescaped, strict, every printed value made visible.

Names on a page come from files (the scenario's name, description, variants, steps, comments; a trace's
models and tools). Every value a template prints goes through :func:`finalize`, which writes out the
bidirectional and invisible characters of its text (:func:`agentsim.model.safe_text.visible`: a variant
``invoice\\u202efdp.exe`` shows as ``invoice[U+202E]fdp.exe``, not as ``invoiceexe.pdf``) before the
autoescape; markup built by the page's own code (tables, sentences naming a variant) is treated the same
(the replacement holds no ``<``, ``>`` or ``&``, so the markup stays what it was). Data a page embeds as
JSON for its script (the stream page's timeline) goes through :func:`visible_data` first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup

from agentsim.model.safe_text import visible

__all__ = ["environment", "finalize", "visible_data"]


def finalize(value: Any) -> Any:
    """What a template prints of ``value``: its text made visible (newlines and tabs kept), markup kept markup."""
    if isinstance(value, Markup):
        return Markup(visible(str(value), lines=True))
    if isinstance(value, str):
        return visible(value, lines=True)
    return value


def visible_data(obj: Any) -> Any:
    """A JSON-ready value with every string in it (keys too) made visible."""
    if isinstance(obj, str):
        return visible(obj, lines=True)
    if isinstance(obj, dict):
        return {visible_data(k): visible_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [visible_data(v) for v in obj]
    return obj


def environment(**options: Any):
    """A Jinja2 environment over ``viz/templates``: autoescape, undefined names an error, :func:`finalize`."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=finalize,
        **options,
    )
