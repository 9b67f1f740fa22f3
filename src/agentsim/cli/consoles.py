"""The command line's consoles: rich ``Console`` objects that show every string they render made visible.

Every table, title, message and error the command line prints goes through a console made here, which
writes out the bidirectional, invisible and control characters of the text it renders
(:func:`agentsim.model.safe_text.visible`): a variant named ``invoice\\u202efdp.exe`` prints as
``invoice[U+202E]fdp.exe``, and a terminal escape in a trace's model name prints as ``[U+001B]…``
instead of acting on the terminal. (rich's own styling is added after the text is rendered, so it stays.)
"""

from __future__ import annotations

import errno
from typing import Any

from rich.console import Console

from agentsim.model.safe_text import visible

__all__ = ["VisibleConsole"]


class VisibleConsole(Console):
    """A rich ``Console`` whose strings (cells, titles, messages) are made visible before they are rendered."""

    def render_str(self, text: str, **options: Any):
        return super().render_str(visible(text, lines=True), **options)

    def on_broken_pipe(self) -> None:
        """The pipe this console writes to was closed by its reader (``| head``): rich would end the process with
        status 1; this raises the error for the command's handler instead, which ends it with its message
        and status 2 (:func:`agentsim.cli.common.handle_errors`)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output pipe was closed by its reader")
