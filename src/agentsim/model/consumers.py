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

__all__ = ["ConsumerBase", "ConsumerSpec", "QoeSpec", "consumer_model"]


class QoeSpec(StrictModel):
    """The user's expectation for the Andes QoE score (arXiv 2404.16283)."""

    expected_ttft: NonNegNum = Field(1.0, description="Seconds the user expects to wait for the first token.")
    tokens_per_s: PosNum | None = Field(
        None, description="Pace the user digests tokens at (default: the reader's or speaker's pace, else 5)."
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
