"""The rows the DES records as it goes: their layouts, and how a row is appended.

Each row is ``(node, run, instance, *layout)`` as doubles, appended to an ``array('d')`` that NumPy reads
without a copy (:mod:`agentsim.sim.des_records`). A row is packed with :mod:`struct` and appended as bytes:
``array.extend`` of a tuple parses each number on its own (about 1.7 µs more for a call's 19 numbers, at
every call), while a ``Struct`` converts each with the same ``PyFloat_AsDouble`` and writes them at once,
so the bytes are the same.

* ``CALL_RECORD``: a call recorded in full (cancelled, failed or limited);
* ``PLAIN_RECORD``: a plain call that completed (the rest of its timeline is rebuilt per block);
* ``SPAN_FIELDS``: a tool, wait or listen step;
* ``ATTEMPT_RECORD``: an attempt that did not complete its call, or a retried success.
"""

from __future__ import annotations

import struct

from agentsim.sim.records import CALL_FIELDS, SPAN_FIELDS

__all__ = [
    "ATTEMPT_RECORD",
    "CALL_RECORD",
    "PLAIN_RECORD",
    "SPAN_FIELDS",
    "WHERE",
    "attempt_row",
    "call_row",
    "plain_row",
    "span_row",
]

WHERE = ("node", "run", "instance")
CALL_RECORD = (*CALL_FIELDS, "tier")
PLAIN_RECORD = ("t_start", "ttft", "input", "cache_read", "cache_write", "cache_write_1h")
ATTEMPT_RECORD = (
    "attempt",
    "tier",
    "outcome",
    "t_submit",
    "t_start",
    "t_end",
    "input",
    "cache_read",
    "cache_write",
    "cache_write_1h",
    "output",
    "reasoning",
)


def _packer(layout: tuple[str, ...]):
    """``pack(node, run, instance, *fields)``: the row's bytes, as ``array('d')`` holds them."""
    return struct.Struct(f"={len(WHERE) + len(layout)}d").pack


call_row = _packer(CALL_RECORD)
plain_row = _packer(PLAIN_RECORD)
span_row = _packer(SPAN_FIELDS)
attempt_row = _packer(ATTEMPT_RECORD)
