"""A call's timeline as one typed value, built in one place for both engines.

:class:`CallTimeline` holds what happens to a call between its send and its end: the send time, the
seconds to the first token, the tokens (visible and reasoning), the output speed, the decode and
stall seconds, the end, and -- when the call is cut before its end (a user's interruption) -- the
:class:`Cut`. Its fields are Python floats for one call or NumPy arrays for many (the same IEEE
operations either way, as in :mod:`agentsim.sim.rules`, whose formulas it applies)::

    decode        = (output + reasoning) / tps                    rules.decode
    end           = send + ((ttft + decode) [+ stall])            rules.duration
    first_token   = send + ttft
    first_visible = (send + ttft) + reasoning / tps               rules.first_visible

:func:`timeline` builds it; every reader of a call's times uses it: the fast path's call, the DES's
streamed calls and its record builder (a plain DES call records only its start, TTFT and tokens in the
event loop and :func:`timeline` rebuilds the rest for the whole block), the streaming rules
(:func:`agentsim.sim.streaming.streams`), the consumer metrics and the stream page.

:class:`CallSlot` says *which* calls a batch holds: runs ``runs`` of a block, in one instance slot
``flat`` of a call node (the key of their per-token random streams).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agentsim.sim import rules

__all__ = ["CallSlot", "CallTimeline", "Cut", "timeline"]


@dataclass(frozen=True)
class Cut:
    """Where a call stops before its end: the time, the visible tokens that have arrived by then (billed,
    and all that joins the context), and the seconds of its stall already spent."""

    at: Any
    output: Any
    stalled: Any


@dataclass(frozen=True)
class CallTimeline:
    """One call's (or many calls') timeline; see the module doc for the formulas."""

    send: Any
    ttft: Any
    output: Any
    reasoning: Any
    tps: Any
    decode: Any
    stall: Any  # None: the call's tier cannot stall
    end: Any
    cut: Cut | None = None

    @property
    def duration(self) -> Any:
        """Seconds from the send to the (uncut) end: ``(ttft + decode) [+ stall]``."""
        return rules.duration(self.ttft, self.decode, self.stall)

    @property
    def first_token(self) -> Any:
        return self.send + self.ttft

    @property
    def first_visible(self) -> Any:
        return rules.first_visible(self.send, self.ttft, self.reasoning, self.tps)

    def cut_at(self, cut: Cut) -> CallTimeline:
        """The timeline of the call stopped at ``cut`` (one call; see :func:`cut_array` for many):
        it ends at the cut, with the visible tokens billed and the decode and stall spent by then."""
        end = self.send + (cut.at - self.send)  # as an engine reaches it: a wait of (cut - send) after the send
        return replace(
            self,
            end=end,
            output=cut.output,
            decode=rules.cut_decode(end, self.send, self.ttft, cut.stalled),
            stall=cut.stalled,
            cut=cut,
        )


def timeline(send, ttft, output, reasoning, tps, stall=None, decode=None) -> CallTimeline:
    """The timeline of calls sent at ``send`` (``decode``: when the caller has it already)."""
    dec = rules.decode(output, reasoning, tps) if decode is None else decode
    return CallTimeline(send, ttft, output, reasoning, tps, dec, stall, send + rules.duration(ttft, dec, stall))


def cut_array(tl: CallTimeline, hit, cut: Cut) -> CallTimeline:
    """:meth:`CallTimeline.cut_at` over arrays: the calls where ``hit`` stop at ``cut``, the others run on."""
    import numpy as np

    end = tl.send + (cut.at - tl.send)
    return replace(
        tl,
        end=np.where(hit, end, tl.end),
        output=np.where(hit, cut.output, tl.output),
        decode=np.where(hit, rules.cut_decode(end, tl.send, tl.ttft, cut.stalled), tl.decode),
        stall=None if tl.stall is None else np.where(hit, cut.stalled, tl.stall),
        cut=cut,
    )


@dataclass(frozen=True)
class CallSlot:
    """Which calls a batch holds: runs ``runs`` (block-local) of ``block``, in instance slot ``flat`` of ``node``."""

    block: Any
    node: Any
    flat: int
    runs: Any
