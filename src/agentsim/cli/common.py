"""What every command module shares: the typer ``app``, the error console, exit codes, number formats.

Command modules (:mod:`agentsim.cli.main` for ``run``/``validate``, and ``cli_measure``, ``cli_prices``,
``cli_replay``, ``cli_tradeoffs``) import this module and add their commands to ``app``;
:mod:`agentsim.cli.main` imports them all (one place) and holds ``main``. Exit codes: 0 success,
2 bad input (one paragraph per problem naming the file, the place and the fix), 1 a run that
failed for another reason, 130 interrupted. Set ``AGENTSIM_DEBUG=1`` to see a traceback instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Annotated

import typer

__all__ = [
    "BadInput",
    "ExecutorOpt",
    "MaxCallsOpt",
    "NoSizeLimitOpt",
    "SchedulerOpt",
    "app",
    "as_console",
    "check_executor_options",
    "err_console",
    "fmt_n",
    "fmt_s",
    "fmt_usd",
    "handle_errors",
    "signed",
]

app = typer.Typer(
    name="agentsim",
    help="Simulate LLM agents: wall time and cost across models, providers and speed tiers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class LazyConsole:
    """The stderr console, made on first use, so that rich is imported only by a command that prints.

    Attributes (``print``, ``is_terminal``...) go to the rich ``Console``; where a real ``Console`` object
    is needed (a progress bar's ``console=``), pass :func:`as_console` of it.
    """

    _console = None

    def unwrap(self):
        if LazyConsole._console is None:
            from rich.console import Console

            LazyConsole._console = Console(stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False)
        return LazyConsole._console

    def __getattr__(self, name: str):
        return getattr(self.unwrap(), name)


def as_console(console):
    """The rich ``Console`` behind ``console`` (:data:`err_console`, or a ``Console`` itself)."""
    return console.unwrap() if isinstance(console, LazyConsole) else console


err_console = LazyConsole()


MaxCallsOpt = Annotated[
    float | None,
    typer.Option(
        "--max-calls",
        min=1,
        help="Refuse a simulation of more simulated calls (all variants) than this (default: 2e9).",
        show_default=False,
    ),
]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        help="Where the work runs: process (--workers processes here) or dask (a Dask cluster: --scheduler, "
        "or a local cluster of --workers processes). Results do not depend on it."
    ),
]
SchedulerOpt = Annotated[
    str | None,
    typer.Option(help="Dask scheduler address, e.g. tcp://host:8786 (default: start a local cluster)."),
]
NoSizeLimitOpt = Annotated[
    bool, typer.Option("--no-size-limit", help="Lift the size guards (calls and memory estimated up front).")
]


class BadInput(Exception):
    """Bad input that is not a scenario file (an option, a trace): exit 2."""


def _fail(message: str, code: int) -> None:
    err_console.print(message, markup=False)
    raise typer.Exit(code)


# Errors of bad input (exit 2) raised by the library, by module and class. They are looked up in
# sys.modules, never imported here: an exception of a module that was never imported cannot be raised,
# and start-up (``agentsim --help``) stays free of the scenario model, NumPy and pandas.
_BAD_INPUT = (
    ("agentsim.viz.outdir", "OutputError"),
    ("agentsim.sim.simulation", "EngineError"),
    ("agentsim.plan.sizeguard", "SizeError"),
    ("agentsim.sim.executors", "ExecutorError"),
)


def check_executor_options(executor: str, scheduler: str | None) -> None:
    """--executor and --scheduler of a command that can run on Dask."""
    if executor not in ("process", "dask"):
        raise BadInput(f"--executor {executor!r}: choose process or dask")
    if scheduler and executor != "dask":
        raise BadInput("--scheduler needs --executor dask")


def _is(exc: BaseException, module: str, name: str) -> bool:
    mod = sys.modules.get(module)
    return mod is not None and isinstance(exc, getattr(mod, name))


def handle_errors(fn: Callable) -> Callable:
    """Turn known errors into messages and exit codes instead of tracebacks."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            from agentsim.plan.sizeguard import size_limits

            # --max-calls / --no-size-limit (declared by commands that simulate) apply for the whole command
            with size_limits(kwargs.pop("max_calls", None), kwargs.pop("no_size_limit", False)):
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as exc:
            if _is(exc, "agentsim.model.loading", "ScenarioError"):
                _fail("\n".join(f"error: {item}" for item in exc.items), 2)
            if isinstance(exc, BadInput) or any(_is(exc, *where) for where in _BAD_INPUT):
                _fail(f"error: {exc}", 2)
            if os.environ.get("AGENTSIM_DEBUG"):
                raise
            _fail(
                f"error: the run failed: {type(exc).__name__}: {exc} "
                "(set AGENTSIM_DEBUG=1 for a traceback, and please report it)",
                1,
            )

    return wrapper


# --------------------------------------------------------------------------- rendering


def fmt_s(x: float | None) -> str:
    if x is None:
        return "–"
    if abs(x) >= 3600:
        return f"{x / 3600:.2f} h"
    if abs(x) >= 120:
        return f"{x / 60:.1f} min"
    return f"{x:.1f} s" if abs(x) >= 10 else f"{x:.2f} s"


def fmt_usd(x: float | None) -> str:
    """USD by the one rule of :mod:`agentsim.viz.format` (shared with the HTML report)."""
    from agentsim.viz.format import usd

    return usd(x)


def fmt_n(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}"


def signed(fmt, x):
    if x is None:
        return "–"
    s = fmt(abs(x))
    return ("+" if x > 0 else "−" if x < 0 else "±") + s
