"""What every command module shares: the typer ``app``, the error console, exit codes, number formats.

Command modules (:mod:`agentsim.cli.main` for ``run``/``validate``, and ``cli_measure``, ``cli_prices``,
``cli_replay``, ``cli_tradeoffs``) import this module and add their commands to ``app``;
:mod:`agentsim.cli.main` imports them all (one place) and holds ``main``. Exit codes: 0 success,
2 bad input (one paragraph per problem naming the file, the place and the fix), 1 a run that
failed for another reason, 130 interrupted. Set ``AGENTSIM_DEBUG=1`` to see a traceback instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import wraps
from typing import Annotated

import typer
from rich.console import Console

from agentsim.model.loading import ScenarioError
from agentsim.viz.outdir import OutputError

__all__ = [
    "BadInput",
    "MaxCallsOpt",
    "NoSizeLimitOpt",
    "app",
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

err_console = Console(stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False)


MaxCallsOpt = Annotated[
    float | None,
    typer.Option(
        "--max-calls",
        min=1,
        help="Refuse a simulation of more simulated calls (all variants) than this (default: 2e9).",
        show_default=False,
    ),
]
NoSizeLimitOpt = Annotated[
    bool, typer.Option("--no-size-limit", help="Lift the size guards (calls and memory estimated up front).")
]


class BadInput(Exception):
    """Bad input that is not a scenario file (an option, a trace): exit 2."""


def _fail(message: str, code: int) -> None:
    err_console.print(message, markup=False)
    raise typer.Exit(code)


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
        except ScenarioError as exc:
            _fail("\n".join(f"error: {item}" for item in exc.items), 2)
        except (BadInput, OutputError) as exc:
            _fail(f"error: {exc}", 2)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except Exception as exc:
            from agentsim.plan.sizeguard import SizeError
            from agentsim.sim.simulation import EngineError

            if isinstance(exc, EngineError | SizeError):
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
    if x is None:
        return "–"
    if abs(x) >= 100:
        return f"${x:,.0f}"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    return f"${x:.4f}"


def fmt_n(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}"


def signed(fmt, x):
    if x is None:
        return "–"
    s = fmt(abs(x))
    return ("+" if x > 0 else "−" if x < 0 else "±") + s
