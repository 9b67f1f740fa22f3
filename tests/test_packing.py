"""Run columns packed for transit come back exactly: same bits, same dtype, fewer bytes.

Each case is built by hand with values on the edges of the narrow types (127/128, -129, 2**31),
NaN and -0.0 (constants are compared by their bits), so a packer that rounded, clipped or folded
two different bit patterns into one constant fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentsim.sim.packing import new_column, pack_columns, packed_nbytes, raw, unpack_into


def _roundtrip(blocks: list[dict[str, np.ndarray]], name: str) -> np.ndarray:
    packed = pack_columns(blocks)[name]
    n = sum(b[name].size for b in blocks)
    col = new_column(n + 3, blocks[0][name].dtype)
    unpack_into(col, 2, packed)  # at an offset, as a task's runs sit in the table
    assert col[:2].tolist() == [0, 0] and col[-1] == 0  # nothing written outside its runs
    return col[2 : 2 + n]


@pytest.mark.parametrize(
    "values, travels_as",
    [
        ([0, 127, -128, 5], np.int8),
        ([0, 128, 7], np.int16),
        ([-129, 1], np.int16),
        ([32768, 0], np.int32),
        ([2**31, 0], np.int64),  # does not fit int32: sent as it is
        ([-(2**31), 2**31 - 1], np.int32),
    ],
)
def test_integers_travel_in_the_narrowest_type_that_holds_them(values, travels_as):
    a = np.array(values, dtype=np.int64)
    _, n, data = pack_columns([{"x": a}])["x"]
    assert n == a.size and data.dtype == travels_as
    back = _roundtrip([{"x": a[:1]}, {"x": a[1:]}], "x")
    assert back.dtype == np.int64 and back.tolist() == values


def test_a_constant_column_travels_as_one_value_compared_by_its_bits():
    same = np.full(1000, 0.2880000000000001)
    _, n, data = pack_columns([{"c": same}])["c"]
    assert n == 1000 and data.size == 1
    assert _roundtrip([{"c": same}], "c").tobytes() == same.tobytes()
    nan = np.full(10, np.nan)
    assert pack_columns([{"c": nan}])["c"][2].size == 1  # NaN equals itself bit for bit
    signed = np.array([0.0, -0.0, 0.0])  # equal as numbers, not as bits: kept whole
    assert pack_columns([{"c": signed}])["c"][2].size == 3
    assert _roundtrip([{"c": signed}], "c").tobytes() == signed.tobytes()
    negzero = np.full(4, -0.0)  # a constant that is not zero bits is written, not skipped
    assert _roundtrip([{"c": negzero}], "c").tobytes() == negzero.tobytes()


def test_floats_travel_unchanged_and_blocks_are_concatenated_in_order():
    rng = np.random.default_rng(3)
    blocks = [{"w": rng.random(5)}, {"w": rng.random(3)}, {"w": rng.random(4)}]
    whole = np.concatenate([b["w"] for b in blocks])
    _, n, data = pack_columns(blocks)["w"]
    assert n == 12 and data.dtype == np.float64
    assert _roundtrip(blocks, "w").tobytes() == whole.tobytes()


def test_packing_a_typical_block_carries_fewer_bytes():
    # float columns as they are, small counts as int8/int16, unused token kinds and zero breakdowns as one value
    n = 4096
    rng = np.random.default_rng(0)
    cols = {
        "wall_time_s": rng.random(n),
        "calls": rng.integers(2, 6, n),
        "input_tokens": rng.integers(3000, 6001, n),
        "reasoning_tokens": np.zeros(n, dtype=np.int64),
        "queue_s": np.zeros(n),
        "status": np.zeros(n, dtype=np.int8),
    }
    packed = pack_columns([cols])
    assert packed_nbytes(packed) == n * (8 + 1 + 2) + 8 + 8 + 1
    assert packed_nbytes({k: raw(a) for k, a in cols.items()}) == sum(a.nbytes for a in cols.values())
    for name, a in cols.items():
        assert _roundtrip([cols], name).tobytes() == a.tobytes()
