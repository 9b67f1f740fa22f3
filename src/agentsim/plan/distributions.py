"""Distribution specs turned into samplers driven by uniform random numbers.

Every random quantity in agentsim is drawn as ``sampler.transform(z)``: a
standard-normal draw ``z`` pushed through ``Q(Phi(z))``, the distribution's
quantile function at the normal CDF. Drawing through the quantile function,
rather than each family's own generator, is what makes *common random numbers*
work across variants: when a variant moves a call from one model to another,
the call keeps its ``z`` and only the transform changes, so the two variants'
differences are not noise. Normal draws as the base (rather than uniforms) make
the common families cheap: a normal is ``mean + sd z``, a lognormal
``exp(mu + sigma z)``. Every transcendental function runs inside one vectorised
NumPy call, so the DES and the fast path read the same numbers bit for bit.

Gamma and exponential have no cheap quantile function (``gammaincinv`` costs
hundreds of nanoseconds a draw): in the body of the normal (``|z| <= 8``) they
go through a :mod:`~agentsim.plan.qtable` quantile table, a cubic Hermite
interpolant of ``log x(z)`` built once per shape and checked against SciPy to a
relative error below ``1e-9``; beyond it, SciPy's exact quantile. A choice
compares ``z`` with its cut points moved to the normal scale (``ndtri`` of the
cumulative probabilities), so it needs no normal CDF per draw.

Each sampler knows its exact ``mean`` (closed form, or a quadrature of the
clipped quantile function when ``min``/``max`` clip it), which the theory tests
use as the reference.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from agentsim.model.distributions import (
    ChoiceDist,
    ConstantDist,
    Dist,
    EmpiricalDist,
    ExponentialDist,
    GammaDist,
    LognormalDist,
    NormalDist,
    UniformDist,
)
from agentsim.model.safe_text import is_plain_name, key_text, scrub

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Z90", "DistError", "Sampler", "practical_max", "sampler", "uniform"]

Z90 = 1.2815515655446004  # standard normal 90th percentile
# Phi^-1(1 - 1e-12), the practical maximum's quantile (the same bits as scipy.special.ndtri), without SciPy
Z_TOP = statistics.NormalDist().inv_cdf(1 - 1e-12)
_CLOSED_FORM = ("normal", "lognormal")  # families whose draw is arithmetic of z (see Sampler._closed_form)


class DistError(ValueError):
    """A distribution that cannot be built (e.g. an empirical file that is missing)."""

    def __init__(self, message: str, hint: str = "", subpath: tuple = ()):
        super().__init__(message)
        self.message, self.hint, self.subpath = message, hint, subpath


@dataclass(frozen=True)
class Sampler:
    """Quantile function of one distribution, with optional clipping."""

    family: str
    params: dict = field(default_factory=dict)
    lo: float | None = None  # clip bounds
    hi: float | None = None
    values: np.ndarray | None = None  # choice / empirical support
    cum: np.ndarray | None = None  # choice cumulative probabilities (without the final 1)

    # ------------------------------------------------------------------ drawing
    def transform(self, z: np.ndarray) -> np.ndarray:
        """Map standard-normal draws ``z`` to draws of this distribution (float64, same shape).

        ``x = Q(Phi(z))`` with ``Q`` the quantile function: normal and lognormal are a
        multiply-add (and ``exp``) away from ``z``; other families go through the normal
        CDF, using its upper tail where that keeps precision.
        """
        import numpy as np  # here, not at the top: compiling and validating a scenario need not import NumPy

        z = np.asarray(z, dtype=np.float64)
        f, p = self.family, self.params
        if f == "constant":
            x = np.full(z.shape, p["value"])
        elif f in _CLOSED_FORM:
            x = self._closed_form(z, np.exp)
        elif f == "uniform":
            from scipy import special  # SciPy where a family needs it: validating a scenario mostly does not

            x = p["low"] + (p["high"] - p["low"]) * special.ndtr(z)
        elif f == "exponential":  # -mean * log(1 - u): a gamma of shape 1
            x = _gamma_quantile(1.0, z)
            x *= p["mean"]
        elif f == "gamma":
            x = _gamma_quantile(p["shape"], z)
            x *= p["scale"]
        elif f == "choice":
            x = self.values[_choice_index(self.cum, z)]
        elif f == "empirical":
            from scipy import special

            n = len(self.values)
            x = self.values[np.minimum((special.ndtr(z) * n).astype(np.int64), n - 1)]
        else:  # pragma: no cover - guarded by the scenario schema
            raise AssertionError(f)
        if self.lo is not None or self.hi is not None:
            x = np.clip(x, self.lo, self.hi)
        return x

    def _closed_form(self, z, exp):
        """Normal and lognormal: a multiply-add of ``z`` (and ``exp``), for an array or a float alike."""
        p = self.params
        if self.family == "normal":
            return p["mean"] + p["sd"] * z
        return exp(p["mu"] + p["sigma"] * z)

    def quantile(self, z: float) -> float:
        """The value of a draw at one normal ``z``, as a float: what the checks and warnings compare with
        their limits (the compiler's practical maximum, the plausibility median).

        Constant, normal and lognormal are computed in plain floats (``math.exp``), so that compiling and
        validating a scenario that uses only them imports no NumPy; ``math.exp`` and NumPy's may differ in
        the last bit, which no check or message sees. The other families go through :meth:`transform`.
        """
        f = self.family
        if f == "constant":
            x = self.params["value"]
        elif f in _CLOSED_FORM:
            x = self._closed_form(z, math.exp)
        else:
            return float(self.transform([z])[0])
        if self.lo is not None:  # np.clip's order: the lower bound, then the upper
            x = max(x, self.lo)
        if self.hi is not None:
            x = min(x, self.hi)
        return float(x)

    def ppf(self, u: np.ndarray) -> np.ndarray:
        """The quantile function at uniforms ``u`` in (0, 1)."""
        import numpy as np
        from scipy import special

        return self.transform(special.ndtri(np.asarray(u, dtype=np.float64)))

    @property
    def is_constant(self) -> bool:
        return self.family == "constant" or (self.lo is not None and self.lo == self.hi)

    @property
    def constant_value(self) -> float:
        if self.lo is not None and self.lo == self.hi:
            return float(self.lo)
        if self.lo is None and self.hi is None:  # nothing to clip (NumPy's clip of a scalar costs microseconds)
            return float(self.params["value"])
        import numpy as np

        return float(np.clip(self.params["value"], self.lo, self.hi))

    # ------------------------------------------------------------------ moments and support
    @property
    def support(self) -> tuple[float, float]:
        """Smallest and largest value a draw can take (after clipping)."""
        f, p = self.family, self.params
        if f == "constant":
            a = b = p["value"]
        elif f == "uniform":
            a, b = p["low"], p["high"]
        elif f == "normal":
            a, b = (-math.inf, math.inf) if p["sd"] > 0 else (p["mean"], p["mean"])
        elif f in ("lognormal", "gamma", "exponential"):
            a, b = 0.0, math.inf
        else:
            a, b = float(self.values.min()), float(self.values.max())
        if self.lo is not None:
            a, b = max(a, self.lo), max(b, self.lo)
        if self.hi is not None:
            a, b = min(a, self.hi), min(b, self.hi)
        return a, b

    @property
    def strictly_positive(self) -> bool:
        a, _ = self.support
        if a > 0:
            return True
        # lognormal, gamma and exponential are positive unless clipped at/below zero
        return a == 0 and self.family in ("lognormal", "gamma", "exponential") and (self.lo is None or self.lo > 0)

    @property
    def mean(self) -> float:
        """Exact mean of the (clipped) distribution."""
        f, p = self.family, self.params
        clipped = self.lo is not None or self.hi is not None
        if f in ("choice", "empirical"):
            import numpy as np

            vals = np.clip(self.values, self.lo, self.hi) if clipped else self.values
            if f == "choice":
                probs = np.diff(np.concatenate([[0.0], self.cum, [1.0]]))
                return float(np.dot(probs, vals))
            return float(np.mean(vals))
        if f == "constant":
            return self.constant_value
        if not clipped:
            if f == "uniform":
                return (p["low"] + p["high"]) / 2
            if f == "normal":
                return p["mean"]
            if f == "lognormal":
                return math.exp(p["mu"] + p["sigma"] ** 2 / 2)
            if f == "gamma":
                return p["shape"] * p["scale"]
            if f == "exponential":
                return p["mean"]
        # E[clip(X)] = integral over u of clip(ppf(u)): integrate the quantile function.
        import numpy as np
        from scipy import integrate

        value, _ = integrate.quad(
            lambda u: float(self.ppf(np.array([u]))[0]), 0.0, 1.0, limit=400, epsabs=1e-12, epsrel=1e-11
        )
        return value


# --------------------------------------------------------------------------- fast quantiles


def gamma_log_quantile(k: float, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(log x, d log x / dz)`` of the unit-scale gamma(k) quantile at ``Phi(z)``.

    ``x`` comes from SciPy (the upper-tail inverse for ``z > 0``, which keeps its
    precision there); the derivative is ``phi(z) / (f(x) x)`` with ``f`` the gamma
    density, i.e. ``exp(-z^2/2 - log(2 pi)/2 + lgamma(k) - k log x + x)``.
    """
    import numpy as np
    from scipy import special

    z = np.asarray(z, dtype=np.float64)
    x = _gamma_exact(k, z)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        y = np.log(x)
        dy = np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) + special.gammaln(k) - k * y + x)
    return y, dy


def _gamma_exact(k: float, z: np.ndarray) -> np.ndarray:
    import numpy as np
    from scipy import special

    x = np.empty(z.shape)
    upper = z > 0
    x[upper] = special.gammainccinv(k, special.ndtr(-z[upper]))  # upper tail: keeps precision
    x[~upper] = special.gammaincinv(k, special.ndtr(z[~upper]))
    return x


@lru_cache(maxsize=256)
def gamma_table(k: float):
    """The quantile table of gamma(k), or ``None`` where it would not meet its accuracy (then: exact)."""
    from functools import partial

    from agentsim.plan.qtable import build_table

    return build_table(partial(gamma_log_quantile, k), tail=partial(_gamma_exact, k))


def _gamma_quantile(k: float, z: np.ndarray) -> np.ndarray:
    """Unit-scale gamma(k) draws at normal draws ``z`` (a fresh array)."""
    table = gamma_table(k)
    if table is not None:
        return table(z)
    return _gamma_exact(k, z)


@lru_cache(maxsize=256)
def _z_cuts(cum: tuple[float, ...]) -> np.ndarray:
    import numpy as np
    from scipy import special

    return special.ndtri(np.asarray(cum))


def _choice_index(cum: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Index of the choice drawn at ``z``: how many cumulative probabilities ``Phi(z)`` reaches."""
    import numpy as np

    cuts = _z_cuts(tuple(cum.tolist()))
    if len(cuts) > 8:
        return np.searchsorted(cuts, z, side="right")
    idx = np.zeros(z.shape, dtype=np.intp)
    for c in cuts:  # a few comparisons beat a binary search per draw
        idx += z >= c
    return idx


def uniform(z: np.ndarray, draw=None, by_variant: dict | None = None) -> np.ndarray:
    """Standard normals as uniforms on (0, 1): ``Phi(z)`` (a :class:`~agentsim.plan.nodes.Draw` transform)."""
    from scipy import special

    return special.ndtr(z)


def sampler(spec: Dist, base_dir: Path | None = None) -> Sampler:
    """Build the sampler of a parsed distribution spec (a number or a family mapping)."""
    if isinstance(spec, int | float):
        return Sampler("constant", {"value": float(spec)})
    lo, hi = spec.min, spec.max
    if isinstance(spec, ConstantDist):
        return Sampler("constant", {"value": spec.constant}, lo, hi)
    if isinstance(spec, UniformDist):
        return Sampler("uniform", {"low": spec.uniform.low, "high": spec.uniform.high}, lo, hi)
    if isinstance(spec, NormalDist):
        return Sampler("normal", {"mean": spec.normal.mean, "sd": spec.normal.sd}, lo, hi)
    if isinstance(spec, LognormalDist):
        q = spec.lognormal
        if q.median is not None:
            mu = math.log(q.median)
            sigma = (math.log(q.p90) - mu) / Z90
        else:
            sigma = math.sqrt(math.log1p((q.sd / q.mean) ** 2))
            mu = math.log(q.mean) - sigma**2 / 2
        return Sampler("lognormal", {"mu": mu, "sigma": sigma}, lo, hi)
    if isinstance(spec, GammaDist):
        g = spec.gamma
        return Sampler("gamma", {"shape": (g.mean / g.sd) ** 2, "scale": g.sd**2 / g.mean}, lo, hi)
    if isinstance(spec, ExponentialDist):
        return Sampler("exponential", {"mean": spec.exponential.mean}, lo, hi)
    if isinstance(spec, ChoiceDist | EmpiricalDist):
        import numpy as np  # choice and empirical hold their values in arrays
    if isinstance(spec, ChoiceDist):
        c = spec.choice
        values = np.asarray(c.values, dtype=np.float64)
        p = np.asarray(c.p if c.p is not None else [1.0 / len(values)] * len(values))
        cum = np.cumsum(p)[:-1]
        return Sampler("choice", {}, lo, hi, values=values, cum=cum)
    if isinstance(spec, EmpiricalDist):
        e = spec.empirical
        if e.values is not None:
            values = np.asarray(e.values, dtype=np.float64)
        else:
            values = _read_column(e.file, e.column, base_dir)
        return Sampler("empirical", {}, lo, hi, values=values)
    raise AssertionError(type(spec))  # pragma: no cover


def empirical_path(file: str, base_dir: Path | None) -> Path:
    """Where an ``empirical: {file: ...}`` file is: as written when absolute, else relative to ``base_dir`` (the
    scenario file's folder)."""
    path = Path(file)
    return base_dir / path if not path.is_absolute() and base_dir is not None else path


def _read_column(file: str, column: str, base_dir: Path | None) -> np.ndarray:
    import numpy as np
    import pandas as pd

    path = empirical_path(file, base_dir)
    sub = ("empirical", "file")
    if not path.exists():
        raise DistError(f"empirical file '{file}' does not exist", f"looked at {path}", sub)
    from agentsim.model.input_files import input_problem

    bad = input_problem(path, "empirical CSV")  # size, loops, pipes: before pandas reads it
    if bad is not None:
        raise DistError(f"empirical file '{file}': {bad[0]}", bad[1], sub)
    try:
        frame = pd.read_csv(path)
    except Exception as exc:  # pandas raises many parser errors (their quoted fragments are not repeated)
        raise DistError(f"cannot read '{file}' as CSV: {scrub(str(exc))}", "", sub) from None
    if column not in frame.columns:
        from agentsim.model.scenario import suggest

        raise DistError(
            f"'{file}' has no column {key_text(column)}",
            suggest(column, list(map(str, frame.columns))) or _columns_text(frame.columns),
            ("empirical", "column"),
        )
    values = pd.to_numeric(frame[column], errors="coerce").dropna().to_numpy(dtype=np.float64)
    if len(values) == 0:
        raise DistError(f"column '{column}' of '{file}' has no numbers", "", ("empirical", "column"))
    if not np.isfinite(values).all():  # pandas reads "inf" and "nan" as numbers
        raise DistError(
            f"column '{column}' of '{file}' holds a value that is not a finite number (inf or NaN)",
            "remove it, or leave the cell empty", ("empirical", "column"),
        )  # fmt: skip
    return values


def _columns_text(columns) -> str:
    """The CSV's column names an error may list: the plain names (a header line of a file that is no CSV is
    not repeated)."""
    names = [str(c) for c in columns]
    plain = [n for n in names if is_plain_name(n)]
    hidden = len(names) - len(plain)
    return (
        "columns: " + ", ".join(plain) + (f" ({hidden} more, not plain names)" if hidden else "")
        if plain
        else (
            f"the file's first line gives {len(names)} column name{'s' if len(names) != 1 else ''}, none a plain name: "
            "is it a CSV file with a header line?"
        )
    )


def practical_max(s: Sampler) -> float:
    """The largest value a draw takes in practice: the support's top, or the 1 - 1e-12 quantile if unbounded."""
    _, hi = s.support
    if math.isfinite(hi):
        return hi
    return s.quantile(Z_TOP)
