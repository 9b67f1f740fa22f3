"""``consumer: {render: {tokens}}``: a generated interface that first draws once it has enough tokens.

The interface renders when token ``m`` is delivered: ``first_render_s = d_m - send``, with ``m`` the
``tokens`` it needs (``all``: the answer's ``N``). An answer shorter than ``m`` renders at its last
token; one cut off before its ``m``-th token never renders (the metric is then left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.domain import Of, quantity_or
from agentsim.model.registry import ConsumerKind, register_consumer
from agentsim.plan.nodes import ConsumerCfg

__all__ = ["RenderCfg", "RenderSpec"]


class RenderSpec(StrictModel):
    """A generated interface that can first draw once it has ``tokens`` tokens (or ``all`` of them)."""

    tokens: Annotated[quantity_or("tokens", "all", positive=True), Of("tokens", positive=True)] = Field(
        description="Tokens needed before the first render."
    )


@dataclass(frozen=True)
class RenderCfg(ConsumerCfg):
    """An interface drawn once it has ``render_tokens`` tokens (None: all of them)."""

    render_tokens: int | None = None


def compile_render(c, spec: RenderSpec, node, path, qoe: tuple) -> RenderCfg:
    qoe_ttft, qoe_rate = qoe
    tokens = None if spec.tokens == "all" else spec.tokens
    return RenderCfg("render", 0.0, qoe_ttft=qoe_ttft, qoe_rate=qoe_rate or 5.0, render_tokens=tokens)


def measure(cfg: RenderCfg, sb, n, **draws) -> dict:
    import numpy as np

    # an answer shorter than the tokens needed renders at its last token; a cut-off one before that, never
    m = sb.N.copy() if cfg.render_tokens is None else np.minimum(cfg.render_tokens, sb.N)
    ok = (n >= m) & (m >= 1)
    idx = np.clip(m - 1, 0, sb.D.shape[1] - 1)
    return {"first_render_s": np.where(ok, np.take_along_axis(sb.D, idx[:, None], axis=1)[:, 0] - sb.send, np.nan)}


DOCS = (  # the kind's section of docs/scenarios.md: (its model, heading, example, where)
    (
        RenderSpec,
        "consumer.render",
        """\
render: {tokens: 200}
""",
        ("render",),
    ),
)


KIND = register_consumer(
    ConsumerKind(
        "render",
        RenderSpec,
        compile_render,
        ("first_render_s",),
        measure,
        since_send=("first_render_s",),
        qoe_pace=4.8,  # Andes (arXiv 2404.16283, §3.1): see docs/concepts.md#qoe
        labels={"first_render_s": "first render"},
        docs=DOCS,
        summary="An interface drawn once enough tokens arrived.",
    )
)
