"""``consumer: {speech: {first_audio, tokens_per_s, sentence_tokens}}``: text-to-speech, sentence by sentence.

The answer is cut into sentences of ``sentence_tokens`` tokens (drawn per sentence, rounded, at least 1;
the last may be shorter) ending at tokens ``e_k``. A sentence can be spoken once its last token is
delivered and ``first_audio`` seconds (drawn per call) have passed, and not before the previous one
is said: sentence ``k`` plays from ``s_k = max(d_{e_k} + first_audio, s_{k-1} + l_{k-1})`` for
``l_k = tokens_k / tokens_per_s`` (DESIGN.md §3.2). :func:`schedule` computes the ``s_k`` for a batch of
calls; from them::

    first_sentence_s = d_{e_1} - send          first_audio_s = s_1 - send
    silence_s = sum_{k>=2} (s_k - s_{k-1} - l_{k-1})        longest_silence_s = its largest term
    speech_done_s = s_K + l_K - send

and token ``j`` of sentence ``k`` is said at ``s_k + j / tokens_per_s`` (``spoken_s``, the page's and
the figure's). The speaking rate is the apparate point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import PosNum, StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import ConsumerKind, register_consumer
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import FIRST_AUDIO, SENTENCES, ConsumerCfg

__all__ = ["SpeechCfg", "SpeechSpec", "first_audio", "schedule", "sentence_ends"]


class SpeechSpec(StrictModel):
    """Text-to-speech: each complete sentence is spoken after the previous one."""

    first_audio: Annotated[Dist, Of("duration")] = Field(
        0.0, description="Seconds from a sentence's last token to its first audio (drawn per call)."
    )
    tokens_per_s: Annotated[PosNum, Of("speed", positive=True)] = Field(
        description="Speaking rate in tokens per second."
    )
    sentence_tokens: Annotated[Dist, Of("tokens")] = Field(
        20.0, description="Tokens per sentence, drawn per sentence (rounded, at least 1)."
    )


@dataclass(frozen=True)
class SpeechCfg(ConsumerCfg):
    """A voice speaking at ``rate`` tokens per second."""

    first_audio: Sampler | None = None  # seconds from a sentence's last token to its audio (drawn per call)
    sentence: Sampler | None = None  # tokens per sentence, drawn per sentence

    def sentences(self) -> Sampler | None:
        return self.sentence

    def token_draws(self) -> int:
        return int(self.sentence is not None and not self.sentence.is_constant)  # the sentence lengths


def compile_speech(c, spec: SpeechSpec, node, path, qoe: tuple) -> SpeechCfg:
    qoe_ttft, qoe_rate = qoe
    sp = (*path, "speech")
    cfg = SpeechCfg(
        "speech",
        spec.tokens_per_s,
        qoe_ttft=qoe_ttft,
        qoe_rate=qoe_rate or spec.tokens_per_s,
        first_audio=c.sampler(spec.first_audio, (*sp, "first_audio"), "first audio"),
        sentence=c.sampler(spec.sentence_tokens, (*sp, "sentence_tokens"), "sentence tokens", positive=True),
    )
    c.draw(node, FIRST_AUDIO, node.scope, cfg.first_audio)
    return cfg


def sentence_ends(sampler, block, key_node: int, flat: int, runs, n, cache=False):
    """Sentence lengths ``(calls, K)`` over ``n`` tokens: the last sentence shortened to fit, then zeros."""
    import numpy as np

    from agentsim.sim.stream_draws import group_sizes

    if sampler.is_constant:  # no draw: as many sentences of L tokens as the longest answer needs
        L = max(1, int(np.rint(sampler.constant_value)))
        got = np.full((len(n), max(-(-int(n.max()) // L) if len(n) else 1, 1)), L, dtype=np.int64)
    else:
        got = group_sizes(sampler, block, key_node, SENTENCES, flat, runs, n, cache)
    cum = np.minimum(np.cumsum(got, axis=1), n[:, None])
    start = np.concatenate([np.zeros((len(n), 1), dtype=np.int64), cum[:, :-1]], axis=1)
    return cum - start  # tokens per sentence; 0 once the answer is used up


def _latencies(slot):
    """The first-audio latency of each call of ``slot`` (drawn per call)."""
    from agentsim.sim.streaming import slot_values

    block, node = slot.block, slot.node
    return slot_values(block.get(node.id, FIRST_AUDIO), block, node, slot.runs, slot.flat)


def draws(cfg: SpeechCfg, slot, n) -> dict:
    """Each call's sentence lengths over its ``n`` tokens and its first-audio latency."""
    sentences = sentence_ends(cfg.sentence, slot.block, slot.node.id, slot.flat, slot.runs, n, cache=True)
    return {"sentences": sentences, "first_audio": _latencies(slot)}


def first_audio(cfg: SpeechCfg, slot, sb):
    """When each call of the batch is first heard (absolute): the delivery of its first sentence's last token
    plus its first-audio latency (``s_1`` before any wait for an earlier sentence: there is none)."""
    import numpy as np

    from agentsim.sim.stream_draws import first_size

    first = first_size(cfg.sentence, slot.block, slot.node.id, SENTENCES, slot.flat, np.asarray(slot.runs), sb.N)
    e1 = np.maximum(first, 1) - 1
    return np.take_along_axis(sb.D, e1[:, None], axis=1)[:, 0] + _latencies(slot)


def schedule(cfg: SpeechCfg, sb, sentences, first_audio, stop=None) -> dict:
    """When each sentence plays (``starts``, calls x sentences, NaN for none), its seconds (``seconds``), and
    per call the silence between sentences, the longest one, and the end of speech (absolute).

    ``stop`` (absolute, ``inf`` where the person does not interrupt): the voice stops there; a silence the
    person is in at ``stop`` counts up to ``stop``, a sentence that would start at or after it never plays.
    """
    import numpy as np

    D = sb.D
    C, width = D.shape
    K = sentences.shape[1]
    ends = np.cumsum(sentences, axis=1) - 1
    b = np.take_along_axis(D, np.clip(ends, 0, width - 1), axis=1) + first_audio[:, None]
    dur = sentences / cfg.rate
    stop = np.full(C, np.inf) if stop is None else stop
    if C < ROWS_ONE_BY_ONE:  # few long answers: the same rule one call at a time, in floats (same bits)
        rows = [_one_call(b[c], dur[c], int(np.count_nonzero(sentences[c])), float(stop[c])) for c in range(C)]
        starts = np.full((C, K), np.nan)
        for c, (row, *_) in enumerate(rows):
            starts[c, : len(row)] = row
        silence, longest, done = (np.array([r[i] for r in rows], dtype=np.float64).reshape(C) for i in (1, 2, 3))
        return {"b": b, "starts": starts, "seconds": dur, "silence": silence, "longest": longest, "done": done}
    starts = np.full((C, K), np.nan)
    s_prev = starts[:, 0] = b[:, 0]
    silence, longest, done = np.zeros(C), np.zeros(C), s_prev + dur[:, 0]
    for k in range(1, K):  # a loop over sentences, vectorised over calls
        live = sentences[:, k] > 0
        e_prev = s_prev + dur[:, k - 1]
        s_k = np.maximum(b[:, k], e_prev)
        gap = np.clip(np.minimum(s_k, stop) - e_prev, 0.0, s_k - e_prev)  # the silence before it, up to stop
        silence = np.where(live, silence + gap, silence)
        longest = np.where(live, np.maximum(longest, gap), longest)
        s_prev = np.where(live, s_k, s_prev)
        played = live & (s_k < stop)
        starts[:, k] = np.where(played, s_k, np.nan)
        done = np.where(played, s_k + dur[:, k], done)
    return {"b": b, "starts": starts, "seconds": dur, "silence": silence, "longest": longest, "done": done}


ROWS_ONE_BY_ONE = 64  # below this many calls, schedule() loops over each call's sentences in floats


def _one_call(b, dur, live: int, stop: float) -> tuple[list, float, float, float]:
    """:func:`schedule` of one call in Python floats: ``(starts of the sentences played, silence, longest, done)``.

    The same IEEE operations in the same order as the loop over calls (``np.maximum(x, y)`` is ``x if x >= y
    else y`` and ``np.clip(x, lo, hi)`` is ``min(max(x, lo), hi)`` with ``max(a, b) = a if a > b else b``, for
    the finite values a live sentence has), so both give the same bits; a loop over a handful of NumPy values
    costs microseconds per sentence, this one a fraction of one (a long answer: a few calls per batch)."""
    b, dur = b.tolist(), dur.tolist()
    s_prev = b[0]
    starts, silence, longest, done = [s_prev], 0.0, 0.0, s_prev + dur[0]
    if stop == math.inf and live > 1:  # no interruption: the silence before a sentence is s_k - e_prev, or none
        for k in range(1, live):
            e_prev = s_prev + dur[k - 1]
            if b[k] > e_prev:  # the voice waits for the sentence (at b[k] == e_prev the silence is 0 either way)
                gap = b[k] - e_prev
                silence = silence + gap
                longest = longest if longest >= gap else gap
                s_prev = b[k]
            else:
                s_prev = e_prev
            starts.append(s_prev)
        return starts, silence, longest, s_prev + dur[live - 1]
    for k in range(1, live):
        e_prev = s_prev + dur[k - 1]
        s_k = b[k] if b[k] >= e_prev else e_prev
        x = (s_k if s_k <= stop else stop) - e_prev
        x = x if x > 0.0 else 0.0
        hi = s_k - e_prev
        gap = x if x < hi else hi
        silence = silence + gap
        longest = longest if longest >= gap else gap
        s_prev = s_k
        if not s_k < stop:
            break  # the voice stopped: no later sentence plays (their silences are after the stop: 0)
        starts.append(s_k)
        done = s_k + dur[k]
    return starts, silence, longest, done


def measure(cfg: SpeechCfg, sb, n, sentences=None, first_audio=None, stop=None) -> dict:
    """The speech metrics of every call of the batch, read from :func:`schedule`.

    ``stop``: where the person barges in (absolute; ``inf``: never). The voice stops there: no first audio
    when it comes later, silence counted up to it (and from the last sentence to it when the answer was cut
    off while the person waited for more), the speech done at ``stop`` at the latest. ``_end``: when the
    voice would finish the whole answer (``inf`` when the answer was cut off).
    """
    import numpy as np

    s = schedule(cfg, sb, sentences, first_audio, stop)
    has, send = n > 0, sb.send
    whole = n >= sb.N
    heard = has if stop is None else has & (s["starts"][:, 0] < stop)
    silence, longest, done = s["silence"], s["longest"], s["done"]
    if stop is not None:  # cut off while the person waited for the rest: silent from the last sentence on
        # (only when every sentence that arrived was played: a sentence whose audio would start at or after
        # the stop was waited for, and schedule() counted that silence up to the stop already)
        waited = np.count_nonzero(sentences > 0, axis=1) > np.count_nonzero(~np.isnan(s["starts"]), axis=1)
        tail = np.where(~whole & ~waited & (done < stop), stop - done, 0.0)
        tail = np.where(np.isfinite(tail), tail, 0.0)
        silence, longest, done = silence + tail, np.maximum(longest, tail), np.minimum(done, stop)
    return {
        "first_sentence_s": np.where(has, s["b"][:, 0] - first_audio - send, np.nan),
        "first_audio_s": np.where(heard, s["starts"][:, 0] - send, np.nan),
        "silence_s": np.where(heard, silence, np.nan),
        "longest_silence_s": np.where(heard, longest, np.nan),
        "speech_done_s": np.where(heard, done - send, np.nan),
        "_end": np.where(whole, s["done"], np.inf),
    }


def timeline(cfg: SpeechCfg, sb, n, sentences=None, first_audio=None) -> dict:
    """``spoken_s``: when each token is said (calls x tokens; NaN beyond ``n``)."""
    import numpy as np

    s = schedule(cfg, sb, sentences, first_audio)
    C, width = sb.D.shape
    spoken = np.full((C, width), np.nan)
    for c in range(C):  # token j (1-based) of sentence k: s_k + j / rate
        sizes = sentences[c][sentences[c] > 0]
        k = np.repeat(np.arange(len(sizes)), sizes)
        j = np.arange(len(k)) - np.repeat(np.cumsum(sizes) - sizes, sizes) + 1
        spoken[c, : len(k)] = s["starts"][c, k] + j / cfg.rate
    return {"spoken_s": spoken}


DOCS = (  # the kind's section of docs/scenarios.md: (its model, heading, example, where)
    (
        SpeechSpec,
        "consumer.speech",
        """\
speech: {first_audio: 0.3, tokens_per_s: 3, sentence_tokens: {uniform: {low: 12, high: 30}}}
""",
        ("speech",),
    ),
)


KIND = register_consumer(
    ConsumerKind(
        "speech",
        SpeechSpec,
        compile_speech,
        ("first_sentence_s", "first_audio_s", "silence_s", "longest_silence_s", "speech_done_s"),
        measure,
        since_send=("first_sentence_s", "first_audio_s", "speech_done_s"),
        qoe_pace=3.3,  # Andes (arXiv 2404.16283, §3.1): see docs/concepts.md#qoe
        draws=draws,
        timeline=timeline,
        columns={"spoken_s": ("spoken", ":")},
        labels={
            "first_sentence_s": "first sentence",
            "first_audio_s": "first audio",
            "speech_done_s": "speech done",
            "silence_s": "silence",
            "longest_silence_s": "longest silence",
        },
        table=("first_audio_s", "silence_s"),
        pace=lambda cfg: cfg.rate,
        first_audio=first_audio,
        voice="first_audio_s",
        docs=DOCS,
        summary="Text-to-speech, sentence by sentence.",
    )
)
