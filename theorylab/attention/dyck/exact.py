r"""Exact arithmetic for sums of exponentials $\sum_i c_i e^{x_i}$ with rational $c_i, x_i$.

Attention scores of a model with float weights are exact dyadic rationals, and so are the pre-LayerNorm slot
values of the Dyck constructions up to the factors $e^{x}$. Grouping terms by exponent makes cancellation
exact: by the Lindemann-Weierstrass theorem, $e^{x_1},\dots,e^{x_n}$ for distinct rationals $x_i$ are linearly
independent over the rationals, so an :class:`ExpSum` is zero iff all its grouped coefficients are zero. The
sign of a nonzero sum is found with interval-checked high-precision evaluation (mpmath, precision raised until
the value clears its error).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath
import numpy as np

from theorylab._fmt import plain

__all__ = ["ExpSum", "to_fraction", "dyadic_integers"]


def to_fraction(x) -> Fraction:
    """The exact rational value of an int, Fraction or finite float (floats are dyadic rationals)."""
    if isinstance(x, Fraction):
        return x
    try:
        return Fraction(x)
    except (OverflowError, ValueError) as err:
        raise ValueError(f"cannot represent {plain(x)} exactly as a rational (NaN or inf?)") from err


def dyadic_integers(a) -> tuple[list[list[int]], int]:
    """A finite float matrix as integers over one power of two: ``a[i][j] == N[i][j] / 2**s`` exactly, returned
    as ``(N, s)`` (Python ints, so sums of products stay exact and avoid a :class:`Fraction` per operation)."""
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2 or not np.isfinite(arr).all():
        raise ValueError(f"expected a finite float matrix, got shape {arr.shape}")
    ratios = [[x.as_integer_ratio() for x in row] for row in arr.tolist()]
    s = max((d.bit_length() - 1 for row in ratios for _, d in row), default=0)  # denominators are 2**j
    return [[n << (s - d.bit_length() + 1) for n, d in row] for row in ratios], s


@dataclass(frozen=True)
class ExpSum:
    r"""$\sum_x c_x e^{x}$ as a mapping exponent -> nonzero coefficient (both :class:`Fraction`)."""

    terms: Mapping[Fraction, Fraction] = field(default_factory=dict)

    @staticmethod
    def of(pairs: Iterable[tuple[object, object]]) -> ExpSum:
        """Build from ``(coefficient, exponent)`` pairs, grouping equal exponents exactly."""
        out: dict[Fraction, Fraction] = {}
        for c, x in pairs:
            c, x = to_fraction(c), to_fraction(x)
            out[x] = out.get(x, Fraction(0)) + c
        return ExpSum({x: c for x, c in out.items() if c != 0})

    def __add__(self, other: ExpSum) -> ExpSum:
        return ExpSum.of(
            [*((c, x) for x, c in self.terms.items()), *((c, x) for x, c in other.terms.items())]
        )

    def __neg__(self) -> ExpSum:
        return ExpSum({x: -c for x, c in self.terms.items()})

    def __sub__(self, other: ExpSum) -> ExpSum:
        return self + (-other)

    def scale(self, factor) -> ExpSum:
        """Multiply by a rational ``factor``."""
        f = to_fraction(factor)
        return ExpSum({x: c * f for x, c in self.terms.items()}) if f else ExpSum()

    def is_zero(self) -> bool:
        return not self.terms

    def value(self, dps: int = 50) -> mpmath.mpf:
        """Numerical value with ``dps`` decimal digits of working precision."""
        with mpmath.workdps(dps):
            return mpmath.fsum(
                mpmath.mpf(c.numerator) / c.denominator * mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
                for x, c in self.terms.items()
            )

    def sign(self) -> int:
        """Exact sign in {-1, 0, 1}."""
        if not self.terms:
            return 0
        dps = 30
        while dps <= 20000:
            with mpmath.workdps(dps):
                parts = [
                    mpmath.mpf(c.numerator)
                    / c.denominator
                    * mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
                    for x, c in self.terms.items()
                ]
                total = mpmath.fsum(parts)
                bound = mpmath.fsum(abs(p) for p in parts) * len(parts) * mpmath.mpf(10) ** (-(dps - 5))
                if abs(total) > bound:
                    return 1 if total > 0 else -1
            dps *= 2
        raise ArithmeticError("could not resolve the sign of a nonzero exponential sum")  # pragma: no cover

    def __lt__(self, other: ExpSum) -> bool:
        return (self - other).sign() < 0

    def __gt__(self, other: ExpSum) -> bool:
        return (self - other).sign() > 0
