"""SciPy's special functions, imported at their first use instead of at start-up.

``scipy.special`` costs about 0.2 s of CPU to import (its array-API layer walks NumPy, which loads
``numpy.f2py``): a command that never draws a stall, an interruption or a confidence interval (``validate``,
a one-run ``run``) should not pay it. These wrappers call the very same ufuncs, so results are bit for bit
those of ``scipy.special``.
"""

from __future__ import annotations

__all__ = ["ndtr", "stdtrit"]


def ndtr(x):
    """The standard normal CDF (``scipy.special.ndtr``)."""
    from scipy import special

    return special.ndtr(x)


def stdtrit(df, p):
    """The Student t quantile (``scipy.special.stdtrit``; ``stats.t.ppf`` bit for bit)."""
    from scipy import special

    return special.stdtrit(df, p)
