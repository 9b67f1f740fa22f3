"""Quantile tables: a smooth transform ``z -> x`` evaluated at NumPy speed, to a stated accuracy.

Some families have no cheap quantile function: a gamma draw is
``gammaincinv(k, Phi(z))``, an iterative special function that costs hundreds
of nanoseconds per draw, against a few for a lognormal's ``exp(mu + sigma z)``.
A :class:`QuantileTable` replaces such a call in the *body* of the normal
distribution by a piecewise cubic Hermite interpolant of ``y(z) = log x(z)``
on a uniform grid in ``z``:

* the interpolant matches ``y`` and its exact derivative ``y'`` at every knot,
  so its error on an interval of width ``h`` is at most ``h**4 max|y''''| / 384``;
* it works in ``log x`` because there the transform is gently curved for every
  shape (``log x`` is close to linear or quadratic in ``z``), and because an
  absolute error ``e`` in ``log x`` is a relative error of about ``e`` in ``x``;
* the grid is refined (``h`` halved) until the error measured against the exact
  function at three points inside every interval is below ``check_tol``
  (``1e-10`` by default), which keeps the relative error under ``1e-9``
  everywhere in the body (tests/test_qtable.py checks a million draws);
* outside the body (``|z|`` beyond ``z_max``, a share of draws below
  ``1.3e-15`` for ``z_max = 8``, or where ``x`` would underflow) draws go
  through the exact function, so the tails are exact.

Evaluation is a handful of vectorised NumPy passes (index, four gathers from a
table that fits in the L1/L2 cache, Horner's rule, ``exp``): tens of times
cheaper than the special function. The table depends only on the function and
its parameters, so it is deterministic: both engines, every worker and every
run read the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["QuantileTable", "build_table"]

LogQuantile = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]  # z -> (log x, d log x / dz)


@dataclass(frozen=True)
class QuantileTable:
    """Piecewise cubic Hermite interpolant of ``log x(z)`` on ``[lo, lo + n h]``, exact outside."""

    lo: float
    inv_h: float
    hi: float
    coef: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # Horner coefficients per interval, in t
    exact: LogQuantile
    max_error: float  # largest |log x error| seen at the check points
    tail: Callable[[np.ndarray], np.ndarray] | None = None  # exact x(z), used outside the table

    def _body(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The interpolant at ``z`` (garbage outside the table) and the mask of draws outside, if any."""
        t = z - self.lo
        t *= self.inv_h
        i = t.astype(np.intp)  # truncation: the floor inside the table; outside it, fixed by the caller
        np.clip(i, 0, len(self.coef[0]) - 1, out=i)
        t -= i  # position inside the interval, in [0, 1]
        c0, c1, c2, c3 = self.coef
        y = c3.take(i)
        y *= t
        y += c2.take(i)
        y *= t
        y += c1.take(i)
        y *= t
        y += c0.take(i)
        out = None
        if z.size and (z.min() < self.lo or z.max() > self.hi):
            out = (z < self.lo) | (z > self.hi)
        return y, out

    def log_x(self, z: np.ndarray) -> np.ndarray:
        """``log x(z)`` for an array ``z`` (float64, same shape)."""
        z = np.asarray(z, dtype=np.float64)
        y, out = self._body(z)
        if out is not None:
            y[out] = self.exact(z[out])[0]
        return y

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """``x(z)``: the transform itself (outside the table: ``tail(z)``, else ``exp`` of the exact log)."""
        z = np.asarray(z, dtype=np.float64)
        y, out = self._body(z)
        x = np.exp(y, out=y)
        if out is not None:
            x[out] = self.tail(z[out]) if self.tail is not None else np.exp(self.exact(z[out])[0])
        return x


def build_table(
    exact: LogQuantile,
    tail: Callable[[np.ndarray], np.ndarray] | None = None,
    z_max: float = 8.0,
    check_tol: float = 1e-10,
    h0: float = 1 / 16,
    h_min: float = 1 / 1024,
    y_min: float = -650.0,
) -> QuantileTable | None:
    """Tabulate ``exact`` over ``[-z_max, z_max]`` (less where ``log x < y_min``); ``None`` if it will not converge.

    ``exact(z)`` returns ``(log x, d log x / dz)``; ``tail(z)``, if given, the exact
    ``x`` itself, for draws outside the table. The grid step starts at ``h0``
    and halves until the check points meet ``check_tol``; below ``h_min`` the
    function is deemed not smooth enough and the caller keeps the exact path.
    """
    lo, hi = -z_max, z_max
    with np.errstate(all="ignore"):
        # Shrink the range away from where x underflows (log x not finite or tiny): exact there.
        probe = np.linspace(lo, hi, 161)
        yp = exact(probe)[0]
        ok = np.isfinite(yp) & (yp > y_min)
        if not ok.any():
            return None
        lo, hi = probe[ok.argmax()], probe[len(ok) - 1 - ok[::-1].argmax()]
        h = h0
        while h >= h_min:
            n = int(np.ceil((hi - lo) / h))
            knots = lo + h * np.arange(n + 1)
            y, d = exact(knots)
            if np.isfinite(y).all() and np.isfinite(d).all():
                y0, y1, m0, m1 = y[:-1], y[1:], h * d[:-1], h * d[1:]
                coef = (y0, m0, 3 * (y1 - y0) - 2 * m0 - m1, 2 * (y0 - y1) + m0 + m1)
                table = QuantileTable(lo, 1 / h, lo + n * h, tuple(np.ascontiguousarray(c) for c in coef), exact, 0.0)
                checks = (knots[:-1, None] + h * np.array([0.25, 0.5, 0.75])).ravel()
                err = float(np.max(np.abs(table.log_x(checks) - exact(checks)[0])))
                if err <= check_tol:
                    return QuantileTable(table.lo, table.inv_h, table.hi, table.coef, exact, err, tail)
            h /= 2
    return None
