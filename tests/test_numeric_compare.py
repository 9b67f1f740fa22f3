"""The fixture comparison (tests/numeric_compare.py) forgives a last-digit change and nothing more."""

from __future__ import annotations

import pytest

from numeric_compare import assert_same_numbers, differences


@pytest.mark.parametrize(
    ("suffix", "base", "last_digit", "real_change"),
    [
        (".json", '{"a": [1, 0.1234567890123456]}', '{"a": [1, 0.1234567890123457]}', '{"a": [1, 0.12345679]}'),
        (".jsonl", '{"t": 2}\n{"t": 3.5706}\n', '{"t": 2}\n{"t": 3.5706000000000004}\n', '{"t": 2}\n{"t": 3.5707}\n'),
        (".csv", "x,y\n1772445601.369408,a\n", "x,y\n1772445601.3694081,a\n", "x,y\n1772445601.4,a\n"),
        (".yaml", "p: {m: 0.4882}\nn: 3\n", "p: {m: 0.48820000000000008}\nn: 3\n", "p: {m: 0.4883}\nn: 3\n"),
    ],
)
def test_last_digit_is_forgiven_a_real_change_is_not(tmp_path, suffix, base, last_digit, real_change):
    expected = tmp_path / f"expected{suffix}"
    expected.write_text(base)
    for text in (base, last_digit):
        assert_same_numbers(tmp_path / "unused", expected, text=text)
    with pytest.raises(AssertionError):
        assert_same_numbers(tmp_path / "unused", expected, text=real_change)


def test_structure_strings_and_types_must_match():
    assert differences({"a": 1}, {"b": 1})
    assert differences([1, 2], [1, 2, 3])
    assert differences("abc", "abd")
    assert differences(True, 1)  # a boolean is not the number 1
    assert differences(None, 0)
    assert not differences({"x": [float("nan")]}, {"x": [float("nan")]})
    assert not differences(0.0, 1e-17)
