"""Who consumes a call's streamed answer (contract v1.1): a reader, a text-to-speech voice, a UI render.

A call's ``consumer:`` (or the scenario's default) is one of them, with an optional ``qoe``
expectation for the Andes QoE score; an ``interrupt`` lets the user cut the answer off. What each
consumer measures is :mod:`agentsim.sim.streaming`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import NonNegNum, PosNum, Prob, StrictModel
from agentsim.model.distributions import Dist

__all__ = ["ConsumerSpec", "InterruptSpec", "QoeSpec", "ReaderSpec", "RenderSpec", "SpeechSpec"]


class ReaderSpec(StrictModel):
    """A person reading the answer as it streams, at a fixed pace (1 token = 0.75 words)."""

    tokens_per_s: PosNum | None = Field(None, description="Reading pace in tokens per second.")
    words_per_min: PosNum | None = Field(None, description="Or: reading pace in words per minute.")

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


class SpeechSpec(StrictModel):
    """Text-to-speech: each complete sentence is spoken after the previous one."""

    first_audio: Dist = Field(
        0.0, description="Seconds from a sentence's last token to its first audio (drawn per call)."
    )
    tokens_per_s: PosNum = Field(description="Speaking rate in tokens per second.")
    sentence_tokens: Dist = Field(20.0, description="Tokens per sentence, drawn per sentence (rounded, at least 1).")


class RenderSpec(StrictModel):
    """A generated interface that can first draw once it has ``tokens`` tokens (or ``all`` of them)."""

    tokens: Annotated[int, Field(ge=1)] | Literal["all"] = Field(description="Tokens needed before the first render.")


class QoeSpec(StrictModel):
    """The user's expectation for the Andes QoE score (arXiv 2404.16283)."""

    expected_ttft: NonNegNum = Field(1.0, description="Seconds the user expects to wait for the first token.")
    tokens_per_s: PosNum | None = Field(
        None, description="Pace the user digests tokens at (default: the reader's or speaker's pace, else 5)."
    )


class ConsumerSpec(StrictModel):
    """Who consumes a call's output as it streams: one of reader, speech, render."""

    reader: ReaderSpec | None = Field(None, description="A person reading at a pace.")
    speech: SpeechSpec | None = Field(None, description="Text-to-speech, sentence by sentence.")
    render: RenderSpec | None = Field(None, description="An interface drawn once enough tokens arrived.")
    qoe: QoeSpec | None = Field(None, description="Expected TTFT and pace for the QoE score.")

    @model_validator(mode="after")
    def _one(self) -> ConsumerSpec:
        given = [k for k in ("reader", "speech", "render") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "consumer_kind",
                "a consumer is exactly one of reader, speech or render, e.g. {example}; got: {given}",
                {"example": "{reader: {words_per_min: 250}}", "given": ", ".join(given) or "none"},
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("reader", "speech", "render") if getattr(self, k) is not None)


class InterruptSpec(StrictModel):
    """The user cuts the answer off (barge-in): with probability ``p``, a time after the first token or audio."""

    p: Prob = Field(description="Probability that the call is interrupted.")
    after_first_token: Dist | None = Field(None, description="Seconds after the first visible token.")
    after_first_audio: Dist | None = Field(None, description="Or: seconds after the first audio (speech consumer).")

    @model_validator(mode="after")
    def _one(self) -> InterruptSpec:
        if (self.after_first_token is None) == (self.after_first_audio is None):
            raise PydanticCustomError(
                "interrupt_when", "an interrupt takes one of after_first_token or after_first_audio", {}
            )
        return self
