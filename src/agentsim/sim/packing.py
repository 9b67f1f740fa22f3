"""Per-run columns in transit: several blocks' columns packed into few, exact, narrow arrays.

When the blocks of one simulation run elsewhere (worker processes, a Dask cluster), each task runs
several consecutive blocks and sends their per-run columns back; the client copies them into the
runs table. On a machine whose cores the client shares with the workers, the bytes received and
copied there are the serial part of the simulation, so a task sends, per column, one array for all
its blocks (consecutive blocks are consecutive runs) and no more bytes than the values need:

* a column whose values are all the same bits (a token kind the scenario never uses, a breakdown
  that stays 0, a fixed cost) travels as that one value;
* an integer column travels as the narrowest signed integer type holding its minimum and maximum
  (int8, int16, int32, else as it is); the client widens it back when copying, which is exact;
* floating-point columns travel as they are: never rounded.

The client's columns keep the engines' dtypes and start zeroed (:func:`new_column`), so a column
that is 0 in every run is never written (nor its memory touched) and the runs table is the same
bytes as in one process.

A packed column is a tuple ``(dtype, n, data)``: ``n`` runs of ``dtype``; ``data`` holds ``n`` values or
one value for all of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["new_column", "pack_columns", "packed_nbytes", "raw", "unpack_into"]

_NARROW = (np.int8, np.int16, np.int32)


def raw(arr: np.ndarray) -> tuple:
    """``arr`` as a packed column, unchanged (for blocks that never leave this process)."""
    return arr.dtype, arr.size, arr


def pack_columns(blocks: list[dict[str, np.ndarray]]) -> dict[str, tuple]:
    """The columns of consecutive blocks (each a name -> array dict, same names), packed per name."""
    out = {}
    for name in blocks[0]:
        arr = blocks[0][name] if len(blocks) == 1 else np.concatenate([b[name] for b in blocks])
        out[name] = _pack(arr)
    return out


def _pack(arr: np.ndarray) -> tuple:
    n = arr.size
    if n > 1 and arr.itemsize in (1, 2, 4, 8):
        bits = arr.view(f"u{arr.itemsize}")  # compare bits: NaN == NaN, -0.0 != 0.0
        if (bits == bits[0]).all():
            return arr.dtype, n, arr[:1].copy()
    if arr.dtype.kind in "iu" and n:
        lo, hi = arr.min(), arr.max()
        for t in _NARROW:
            if t().itemsize < arr.itemsize and np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
                return arr.dtype, n, arr.astype(t)
    return arr.dtype, n, arr


def packed_nbytes(packed: dict[str, tuple]) -> int:
    """The bytes of data a packed set of columns carries."""
    return sum(data.nbytes for _, _, data in packed.values())


def new_column(size: int, dtype) -> np.ndarray:
    """A zeroed column of the runs table (zeroed memory is not touched until written)."""
    return np.zeros(size, dtype=dtype)


def unpack_into(column: np.ndarray, first: int, packed: tuple) -> None:
    """Copy a packed column into ``column[first : first + n]`` (a column made by :func:`new_column`)."""
    _, n, data = packed
    if data.size == 1 and n != 1:
        if not data.view(f"u{data.itemsize}")[0]:
            return  # all-zero bits: the column is zeroed already
        column[first : first + n] = data[0]
    else:
        column[first : first + n] = data
