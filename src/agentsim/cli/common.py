"""What every command module shares: the typer ``app``, the error console, exit codes, number formats.

Command modules (:mod:`agentsim.cli.main` for ``run``/``validate``, and ``cli_measure``, ``cli_prices``,
``cli_replay``, ``cli_tradeoffs``) import this module and add their commands to ``app``;
:mod:`agentsim.cli.main` imports them all (one place) and holds ``main``. Exit codes: 0 success,
2 bad input (one paragraph per problem naming the file, the place and the fix; also a command that ran
out of memory), 1 a run that failed for another reason, 130 interrupted. Set ``AGENTSIM_DEBUG=1`` to see a
traceback instead.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Annotated

import typer

__all__ = [
    "OPTION_KINDS",
    "BadInput",
    "DurationOpt",
    "ExecutorOpt",
    "MaxCallsOpt",
    "NoSizeLimitOpt",
    "QuietOpt",
    "SchedulerOpt",
    "app",
    "as_console",
    "check_executor_options",
    "check_number_options",
    "err_console",
    "fmt_s",
    "fmt_usd",
    "handle_errors",
    "parse_duration",
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
            from agentsim.cli.consoles import VisibleConsole

            LazyConsole._console = VisibleConsole(
                stderr=True, soft_wrap=True, highlight=False, markup=False, emoji=False
            )
        return LazyConsole._console

    def __getattr__(self, name: str):
        return getattr(self.unwrap(), name)


def as_console(console):
    """The rich ``Console`` behind ``console`` (:data:`err_console`, or a ``Console`` itself)."""
    return console.unwrap() if isinstance(console, LazyConsole) else console


err_console = LazyConsole()


# --------------------------------------------------------------------------- numeric options

# Every numeric option's quantity kind (agentsim.model.domain), by parameter name: checked for every command
# by handle_errors, before the command runs, so NaN, inf, denormals and absurd sizes exit 2 naming the
# option and its range. An option missing here is still checked as a finite "number" (and
# tests/test_cli_options.py fails until it gets its kind). (kind, positive: 0 refused too)
OPTION_KINDS: dict[str, tuple[str, bool]] = {
    "runs": ("count", True),
    "seed": ("seed", False),
    "workers": ("workers", False),
    "max_calls": ("count", True),
    "budget_usd_per_run": ("usd", False),
    "max_p95": ("duration", True),
    "max_mean": ("duration", True),
    "min_slo_share": ("prob", False),
    "max_failed_share": ("prob", False),
    "runs_per_month": ("rate", False),
    "seats": ("count", True),
    "runs_per_seat_per_day": ("rate", False),
    "working_days": ("days_per_month", False),
    "value_of_time": ("usd", False),
    "requests": ("count", True),
    "concurrency": ("count", True),
    "output_tokens": ("tokens", True),
    "timeout": ("duration", True),
    "limit": ("count", False),
    "run": ("count", False),
    "speed": ("factor", False),
    "holdout": ("prob", False),
    "percentile": ("percentile", False),
    "sim_runs": ("count", True),
}

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | float, option: str = "") -> float:
    """A duration option: seconds (``420``) or a number with a unit (``420s``, ``7min``, ``1.5h``, ``2d``,
    ``250ms``), checked against the duration range; :class:`BadInput` names the option otherwise."""
    import re

    if isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)\s*([a-z]*)\s*", text.lower())
        if m is None or m.group(2) not in _UNITS:
            raise BadInput(
                f"{option} {text!r}: give a duration in seconds (420) or with a unit: 420s, 7min, 1.5h, 2d, 250ms"
            )
        value = float(m.group(1)) * _UNITS[m.group(2)]
    from agentsim.model.domain import problem

    msg = problem("duration", value, positive=True)
    if msg is not None:
        raise BadInput(f"{option} {text}: {msg}")
    return value


def DurationOpt(help: str, *names: str):
    """A duration option, declared ``str``: seconds, or with a unit (420s, 7min, 1.5h). :func:`handle_errors`
    hands the command its value in seconds (a float), or exits 2 naming the option."""
    return typer.Option(*names, metavar="DURATION", help=help + ": seconds, or with a unit (420s, 7min, 1.5h).")


def _option_name(param: str) -> str:
    """The option as the user typed it (``--max-p95``), from the running click command."""
    import click

    ctx = click.get_current_context(silent=True)
    for p in ctx.command.params if ctx is not None else ():
        if p.name == param and p.opts:
            return max(p.opts, key=len)
    return "--" + param.replace("_", "-")


def check_number_options(kwargs: dict) -> None:
    """Every numeric option against its kind's range (:data:`OPTION_KINDS`); :class:`BadInput` otherwise.

    Duration options (declared ``str``, see :func:`DurationOpt`) are replaced by their value in seconds."""
    from agentsim.model.domain import problem

    for name, value in kwargs.items():
        kind, positive = OPTION_KINDS.get(name, ("number", False))
        if kind == "duration" and isinstance(value, str):
            kwargs[name] = parse_duration(value, _option_name(name))
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        msg = problem(kind, value, positive=positive)
        if msg is not None:
            raise BadInput(f"{_option_name(name)} {value}: {msg}")


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
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar (there is none when stderr is not a terminal).")
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


class _NoteHandler(logging.Handler):
    """The library's notes (logger ``agentsim``: a file written directly, not by rename) as ``note: ...`` on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(f"note: {record.getMessage()}", markup=False)


def _notes_to_stderr() -> None:
    logger = logging.getLogger("agentsim")
    if not any(isinstance(h, _NoteHandler) for h in logger.handlers):
        logger.addHandler(_NoteHandler(logging.INFO))
        logger.propagate = False


_OUT_OF_MEMORY = (
    "out of memory: this command needs more memory than the machine (or the process's limit, ulimit -v) gives; "
    "use fewer runs, smaller repeat or fanout counts, or a shorter workload, and keep the size guard on (without "
    "--no-size-limit a simulation too large for the machine is refused before it starts)"
)


_STDOUT_CLOSED = (
    "standard output was closed before everything was written to it (the command reading it, such as `head`, "
    "ended first); what was printed is incomplete: write to a file (--out, -o, or > FILE) to keep it all"
)


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (polled: the pipe reports an error); if so it is
    pointed at /dev/null, so that nothing more (the process's own last flush included) fails on it."""
    import select

    try:
        fd = sys.stdout.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        if not any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poll.poll(0)):
            return False
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's captured output)
        return False
    return True


def handle_errors(fn: Callable) -> Callable:
    """Turn known errors into messages and exit codes instead of tracebacks."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        _notes_to_stderr()
        try:
            from agentsim.plan.sizeguard import size_limits

            check_number_options(kwargs)
            # --max-calls / --no-size-limit (declared by commands that simulate) apply for the whole command
            from agentsim.model.heap import reads_kept

            with size_limits(kwargs.pop("max_calls", None), kwargs.pop("no_size_limit", False)), reads_kept():
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            if not _stdout_closed():
                raise
            _fail(f"error: {_STDOUT_CLOSED}", 2)
        except Exception as exc:
            if _is(exc, "agentsim.model.loading", "ScenarioError"):
                _fail("\n".join(f"error: {item}" for item in exc.items), 2)
            if isinstance(exc, BadInput) or any(_is(exc, *where) for where in _BAD_INPUT):
                _fail(f"error: {exc}", 2)
            if isinstance(exc, MemoryError):  # past the size guard (--no-size-limit), or a machine short of memory
                _fail(f"error: {_OUT_OF_MEMORY}", 2)
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


def signed(fmt, x):
    if x is None:
        return "–"
    s = fmt(abs(x))
    return ("+" if x > 0 else "−" if x < 0 else "±") + s
