"""Who consumes a call's streamed answer (contract v1.1): ``consumer: {KIND: {...}, qoe: {...}}``.

The kinds (``reader``, ``speech``, ``render``) are registered consumer kinds (:mod:`agentsim.consumers`,
one module each); :data:`ConsumerSpec` is the model of a ``consumer:`` mapping made from them when
pydantic first builds a schema that uses it: one optional field per kind, exactly one of them given,
and an optional :class:`QoeSpec` (the user's expectation for the Andes QoE score). What each consumer
measures is its kind's module, what every consumer shares :mod:`agentsim.sim.streaming`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model import registry
from agentsim.model.base import NonNegNum, PosNum, StrictModel

__all__ = [
    "COMMON",
    "HIGHER_IS_BETTER",
    "QOE_TTFT",
    "RUN_METRICS",
    "VOICE",
    "ConsumerBase",
    "ConsumerSpec",
    "QoeSpec",
    "consumer_model",
    "from_ask",
    "higher_is_better",
    "metrics_of",
]

# The streaming metrics (summary.json's names, DESIGN.md §3.2-3.3; what they mean: agentsim.sim.stream_metrics).
# Every consumer has these: the first two first, then the consumer kind's own and their from-ask twins, then the
# rest (COMMON[2:]).
COMMON = (
    "ttft_s",
    "first_word_s",
    "longest_gap_s",
    "gaps_over_250ms",
    "gaps_over_1s",
    "itl_p50_s",
    "itl_p95_s",
    "itl_p99_s",
    "qoe",
    "qoe_from_ask",
    "interrupted_share",
    "cut_share",
    "wasted_usd",
)
VOICE = "voice_to_voice_s"  # of a kind with a voice (ConsumerKind.voice): from the end of the person's speech
RUN_METRICS = (
    "wall_time_s",
    "cost_usd",
    "waiting_s",
    "turn_s",
)  # per-run figures an slo target may name besides the streaming ones


HIGHER_IS_BETTER = ("qoe", "qoe_from_ask")  # scores whose bad tail is low: their worst 5% is the p5, not the p95


def higher_is_better(metric: str) -> bool:
    """Whether more of ``metric`` (``qoe`` or ``CALL.qoe``) is better: a floor as an slo target, its tail low."""
    return metric.rsplit(".", 1)[-1] in HIGHER_IS_BETTER


def from_ask(metric: str) -> str:
    """The name of a since-the-send metric measured from the ask: ``first_audio_s`` -> ``first_audio_from_ask_s``."""
    return metric[:-2] + "_from_ask_s"


def metrics_of(kind: str) -> tuple[str, ...]:
    """The streaming metrics of a consumer kind, in the order of summary.json (``none``: the common ones)."""
    if kind == "none":  # a call without a consumer that can be interrupted
        return COMMON
    k = registry.consumer_kind(kind)
    voice = (VOICE,) if k.voice else ()
    return (*COMMON[:2], *k.metrics, *(from_ask(m) for m in k.since_send), *voice, *COMMON[2:])


QOE_TTFT = 1.3  # s: the first token a person expects by default (Andes, arXiv 2404.16283; docs/concepts.md#qoe)


class QoeSpec(StrictModel):
    """The user's expectation for the Andes QoE score (arXiv 2404.16283)."""

    expected_ttft: NonNegNum = Field(QOE_TTFT, description="Seconds the user expects to wait for the first token.")
    tokens_per_s: PosNum | None = Field(
        None,
        description="Pace the user digests tokens at (default by consumer kind: reading 4.8 tokens/s, "
        "listening 3.3 tokens/s).",
    )


class ConsumerBase(StrictModel):
    """Base of the ``consumer:`` model: one field per registered consumer kind, exactly one given."""

    @model_validator(mode="after")
    def _one(self) -> ConsumerBase:
        names = list(registry.consumer_kinds())
        given = [k for k in names if getattr(self, k) is not None]
        if len(given) != 1:
            kinds = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
            raise PydanticCustomError(
                "consumer_kind",
                "a consumer is exactly one of {kinds}, e.g. {example}; got: {given}",
                {"kinds": kinds, "example": "{reader: {words_per_min: 250}}", "given": ", ".join(given) or "none"},
            )
        return self

    @property
    def kind(self) -> str:
        """The consumer kind given (``reader``...)."""
        return next(k for k in registry.consumer_kinds() if getattr(self, k) is not None)

    @property
    def spec(self) -> Any:
        """The given kind's own keys."""
        return getattr(self, self.kind)


_models: dict[int, type] = {}  # registry version -> the model


def consumer_model() -> type:
    """The ``consumer:`` model of the registered kinds (made once per set of kinds)."""
    version = registry.version()
    if version not in _models:
        fields: dict[str, Any] = {
            name: (kind.spec | None, Field(None, description=kind.summary))
            for name, kind in registry.consumer_kinds().items()
        }
        fields["qoe"] = (QoeSpec | None, Field(None, description="Expected TTFT and pace for the QoE score."))
        kinds = ", ".join(registry.consumer_kinds())
        model = create_model("ConsumerSpec", __base__=ConsumerBase, __module__=__name__, **fields)
        model.__doc__ = f"Who consumes a call's output as it streams: one of {kinds}."
        _models.clear()
        _models[version] = model
    return _models[version]


class ConsumerSpec:
    """A ``consumer:`` mapping (the model of the registered consumer kinds): a type for field annotations;
    pydantic asks it for its schema when it builds one, and it answers with :func:`consumer_model`."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return handler(consumer_model())
