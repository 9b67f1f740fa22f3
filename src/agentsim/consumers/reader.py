"""``consumer: {reader: {tokens_per_s | words_per_min}}``: a person reading the answer as it streams.

The reader reads at a fixed pace ``r`` tokens/s (``words_per_min / 0.75 / 60``: 1 token = 0.75 words)
and never ahead of the text: token ``i`` is read at ``f_i = max(d_i, f_{i-1}) + 1/r`` with ``f_0`` the
send time and ``d_i`` its delivery (DESIGN.md §3.2), which unrolls to::

    f_i = i / r + max(send, max_{j <= i} (d_j - (j - 1) / r))

:func:`read_times` computes these per token for a batch of calls; the metrics are read from them:
``reader_done_s = f_n - send`` (``n``: the tokens delivered) and ``reader_wait_s = (f_n - send) - n / r``
(time spent waiting for text, at least 0). When the person interrupts at ``t`` before finishing, reading
stops there: ``reader_done_s = t - send`` (contract v1.2). The stream page and figure draw the same
``f_i`` (``read_s``).
The reader's pace is its *apparate point*: an output speed above it makes it wait for nothing after
the first token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import PosNum, StrictModel
from agentsim.model.domain import Of
from agentsim.model.registry import ConsumerKind, register_consumer
from agentsim.plan.nodes import ConsumerCfg

__all__ = ["ReaderCfg", "ReaderSpec", "read_times"]


class ReaderSpec(StrictModel):
    """A person reading the answer as it streams, at a fixed pace (1 token = 0.75 words)."""

    tokens_per_s: Annotated[PosNum | None, Of("speed", positive=True)] = Field(
        None, description="Reading pace in tokens per second."
    )
    words_per_min: Annotated[PosNum | None, Of("words_per_min", positive=True)] = Field(
        None, description="Or: reading pace in words per minute."
    )

    @model_validator(mode="after")
    def _one(self) -> ReaderSpec:
        if (self.tokens_per_s is None) == (self.words_per_min is None):
            raise PydanticCustomError(
                "reader_pace",
                "a reader takes one of tokens_per_s or words_per_min, e.g. {example}",
                {"example": "{words_per_min: 250}"},
            )
        return self

    @property
    def rate(self) -> float:
        """Reading pace in tokens per second."""
        return self.tokens_per_s if self.tokens_per_s is not None else self.words_per_min / 0.75 / 60.0


@dataclass(frozen=True)
class ReaderCfg(ConsumerCfg):
    """A reader at ``rate`` tokens per second."""


def compile_reader(c, spec: ReaderSpec, node, path, qoe: tuple) -> ReaderCfg:
    qoe_ttft, qoe_rate = qoe
    return ReaderCfg("reader", spec.rate, qoe_ttft=qoe_ttft, qoe_rate=qoe_rate or spec.rate)


def read_times(cfg: ReaderCfg, sb, n):
    """``f_i`` of every call of the batch (calls x tokens, absolute seconds; NaN beyond its ``n`` tokens)."""
    import numpy as np

    from agentsim.sim.streaming import delivered

    Dv = delivered(sb, n)
    r = cfg.rate
    i = np.arange(Dv.shape[1])
    with np.errstate(invalid="ignore"):
        ahead = np.fmax.accumulate(Dv - i[None, :] / r, axis=1)
        f = (i[None, :] + 1) / r + np.maximum(sb.send[:, None], ahead)
    return np.where(np.isnan(Dv), np.nan, f)


def measure(cfg: ReaderCfg, sb, n, stop=None, **draws) -> dict:
    """``reader_done_s`` and ``reader_wait_s`` of every call of the batch, read from :func:`read_times`.

    ``stop`` (absolute, ``inf`` where the person does not interrupt): the person stops reading there. A
    reader still reading, or waiting for more text, at ``stop`` is done at ``stop``, and waiting at the
    end for text that never came counts as waiting. ``_end``: when the reader would finish the whole answer
    (``inf`` when the answer was cut: it never comes), which decides whether ``stop`` interrupted anything.
    """
    import numpy as np

    f_n = np.take_along_axis(read_times(cfg, sb, n), np.maximum(n - 1, 0)[:, None], axis=1)[:, 0]
    has, send, r = n > 0, sb.send, cfg.rate
    whole = n >= sb.N
    end = np.where(whole, f_n, np.inf)
    done, wait = f_n, np.maximum((f_n - send) - n / r, 0.0)
    if stop is not None:
        interrupted = stop < end
        tail = np.where(interrupted & ~whole, np.maximum(stop - f_n, 0.0), 0.0)  # waiting for text cut off
        done = np.where(interrupted, stop, f_n)
        wait = wait + tail
    return {
        "reader_done_s": np.where(has, done - send, np.nan),
        "reader_wait_s": np.where(has, wait, np.nan),
        "_end": end,
    }


def timeline(cfg: ReaderCfg, sb, n, **draws) -> dict:
    return {"read_s": read_times(cfg, sb, n)}


DOCS = (  # the kind's section of docs/scenarios.md: (its model, heading, example, where)
    (
        ReaderSpec,
        "consumer.reader",
        """\
reader: {words_per_min: 250}      # 1 token = 0.75 words: 5.56 tokens/s
""",
        ("reader",),
    ),
)


KIND = register_consumer(
    ConsumerKind(
        "reader",
        ReaderSpec,
        compile_reader,
        ("reader_done_s", "reader_wait_s"),
        measure,
        since_send=("reader_done_s", "reader_wait_s"),
        qoe_pace=4.8,  # Andes (arXiv 2404.16283, §3.1): see docs/concepts.md#qoe
        timeline=timeline,
        columns={"read_s": ("read", "--")},
        labels={"reader_done_s": "reader done", "reader_wait_s": "reader waits"},
        pace=lambda cfg: cfg.rate,
        docs=DOCS,
        units={"ReaderSpec.words_per_min": "words / min"},
        summary="A person reading at a pace.",
    )
)
