"""Exact (sympy) checks of Claim 1 / Claim 3: $\\tilde T=Q(2\\pi/t)\\,T$ has $\\tilde T^t=T^t$.

For symbolic $\\theta$ the entries of $Q(\\theta)=M^{-1}R(\\theta)^{-1}M$ are linear in $c=\\cos\\theta$,
$s=\\sin\\theta$ with coefficients in $\\mathbb Q(\\sqrt3)$; identities in $\\theta$ are checked as polynomial
identities in $(a, c, s)$ modulo $c^2+s^2=1$. For $\\theta=2\\pi/t$, every quantity lies in the cyclotomic
field $\\mathbb Q(\\zeta_N)$, $N=\\mathrm{lcm}(t,12)$: with $z=\\zeta_N$, $\\cos\\theta=(z^{N/t}+z^{-N/t})/2$,
$\\sin\\theta=(z^{N/t}-z^{-N/t})/(2i)$, $i=z^{N/4}$, $\\sqrt3=z^{N/12}+z^{-N/12}$, and an expression vanishes
iff its polynomial in $z$ is divisible by the (irreducible) cyclotomic polynomial $\\Phi_N$. $T^t$ and
$\\tilde T^t$ are computed in $\\mathbb Q(a)[z]/\\Phi_N$.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import gcd, lcm

import numpy as np

__all__ = ["claim1_symbolic_identities", "claim1_power_identity", "Claim1Identities"]


@dataclass(frozen=True)
class Claim1Identities:
    """Identities of the Claim 3 construction, each True iff it holds exactly (symbolic $a$, $\\theta$)."""

    commutes: bool  # Q T = T Q  (eq. 2.48)
    row_sums_one: bool  # T~ 1 = 1
    column_sums_one: bool  # 1^T T~ = 1^T
    det_preserved: bool  # det T~ = det T = 3a^2 - 3a + 1
    circulant_closed_form: bool  # at a = 1/2: first row [(1+cos(t+pi/3))/3, (1-cos t)/3, (1+sin(t+pi/6))/3]
    q_orthogonal: bool  # Q^T Q = I
    thesis_matrix_without_T_nonnegative_t2: bool  # l.1029's "T~ := M^-1 R^-1 M" at t = 2 (it is not)

    def all_hold(self) -> bool:
        return (
            self.commutes
            and self.row_sums_one
            and self.column_sums_one
            and self.det_preserved
            and self.circulant_closed_form
            and self.q_orthogonal
        )


@lru_cache(maxsize=1)
def _construction():
    import sympy as sp

    a, c, s = sp.symbols("a c s", real=True)
    r3 = sp.sqrt(3)
    M = sp.Matrix([[1, -sp.Rational(1, 2), -sp.Rational(1, 2)], [0, -r3 / 2, r3 / 2], [1 / sp.sqrt(2)] * 3])
    Rinv = sp.Matrix([[c, s, 0], [-s, c, 0], [0, 0, 1]])  # R(theta)^{-1} = R(theta)^T
    Q = (M.inv() * Rinv * M).applyfunc(sp.expand)
    P = sp.Matrix([[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    T = a * sp.eye(3) + (1 - a) * P
    return sp, a, c, s, Q, T


def _zero_mod_circle(sp, expr, c, s) -> bool:
    """expr(c, s) == 0 on the unit circle c^2 + s^2 = 1 (reduce s^2 -> 1 - c^2)."""
    e = sp.expand(expr)
    e = sp.expand(e.subs(s**2, 1 - c**2)) if e.has(s) else e
    poly = sp.Poly(sp.expand(e), s)
    return all(sp.simplify(sp.expand(coef.subs(s**2, 1 - c**2))) == 0 for coef in poly.all_coeffs())


@lru_cache(maxsize=1)
def claim1_symbolic_identities() -> Claim1Identities:
    """Exact identities of the construction for symbolic $a$ and $\\theta$ (computed once per process: the
    result is immutable)."""
    sp, a, c, s, Q, T = _construction()
    Tt = (Q * T).applyfunc(sp.expand)
    ones = sp.Matrix([1, 1, 1])
    commutes = all(sp.simplify(e) == 0 for e in (Q * T - T * Q))
    rows = all(sp.simplify(e - 1) == 0 for e in Tt * ones)
    cols = all(sp.simplify(e - 1) == 0 for e in ones.T * Tt)
    det_ok = _zero_mod_circle(sp, Tt.det() - (3 * a**2 - 3 * a + 1), c, s) and sp.expand(
        T.det()
    ) == sp.expand(3 * a**2 - 3 * a + 1)
    orth = all(_zero_mod_circle(sp, e, c, s) for e in (Q.T * Q - sp.eye(3)))
    # closed form at a = 1/2 (cos(t + pi/3) = c/2 - sqrt3 s/2, sin(t + pi/6) = sqrt3 s/2 + c/2)
    r3 = sp.sqrt(3)
    first = [(1 + c / 2 - r3 * s / 2) / 3, (1 - c) / 3, (1 + r3 * s / 2 + c / 2) / 3]
    half = Tt.subs(a, sp.Rational(1, 2))
    circ = sp.Matrix(3, 3, lambda i, j: first[(j - i) % 3])
    closed = all(sp.simplify(e) == 0 for e in (half - circ))
    # l.1029 claims M^{-1} R(2 pi / t)^{-1} M (without T) is non-negative; at t = 2 it has entries -1/3
    q2 = Q.subs({c: -1, s: 0})
    without_T = bool(min(q2) >= 0)
    return Claim1Identities(commutes, rows, cols, det_ok, closed, orth, without_T)


@lru_cache(maxsize=2)
def _entry_terms(symbolic_a: bool) -> tuple:
    r"""The entries of $\tilde T=QT$ and $T$ (at $a=1/2$ unless ``symbolic_a``) as the terms of polynomials in
    $c, s, \sqrt3$ (the same for every $t$)."""
    sp, a, c, s, Q, T = _construction()
    if not symbolic_a:
        T = T.subs(a, sp.Rational(1, 2))
    return tuple(
        [[sp.Poly(sp.expand(e), c, s, sp.sqrt(3)).terms() for e in row] for row in X.tolist()]
        for X in (Q * T, T)
    )


@lru_cache(maxsize=64)
def claim1_power_identity(t: int, symbolic_a: bool = False, angle_q: int | None = None) -> dict:
    """Exactly compare $\\tilde T^t$ and $T^t$ for $\\tilde T=Q(2\\pi/q)T$, $q=$ ``angle_q`` (default $t$), in
    $\\mathbb Q(\\zeta_N)$, at $a=1/2$ or for symbolic $a$.

    Returns ``{"t", "N", "equal": T~^t == T^t, "differs": T~ != T}``. At $t=1$, $Q=I$ so ``differs`` is False
    (the thesis's "any positive integer t" in Claim 3 is a typo for $t\\ge2$)."""
    import sympy as sp

    if int(t) != t or t < 1:
        raise ValueError(f"t must be a positive integer, got {t}")
    q = int(t) if angle_q is None else int(angle_q)
    if q < 1:
        raise ValueError(f"angle_q must be a positive integer, got {angle_q}")
    _, a, c, s, _, _ = _construction()
    N = lcm(q, 12)
    z = sp.symbols("z")
    phi_N = sp.Poly(sp.cyclotomic_poly(N, z), z)

    def inv(p: int):
        return z ** ((-p) % N)

    w = N // q
    i_unit = z ** (N // 4)
    subs = {
        c: (z**w + inv(w)) / 2,
        # sin = (z^w - z^-w) / (2i) = -i (z^w - z^-w) / 2, and i^-1 = -i = z^(3N/4)
        s: -i_unit * (z**w - inv(w)) / 2,
        sp.sqrt(3): z ** (N // 12) + inv(N // 12),
    }
    domain = sp.QQ.frac_field(a) if symbolic_a else sp.QQ

    modulus_poly = sp.Poly(phi_N, z, domain=domain)
    gens = (c, s, sp.sqrt(3))
    images = [sp.Poly(sp.expand(subs[g]), z, domain=domain).rem(modulus_poly) for g in gens]
    powers: dict = {}

    def image_power(g: int, n: int):
        if (g, n) not in powers:
            base = sp.Poly(1, z, domain=domain) if n == 0 else image_power(g, n - 1) * images[g]
            powers[g, n] = base.rem(modulus_poly)
        return powers[g, n]

    def to_poly(terms):
        # an entry as the terms of a polynomial in c, s, sqrt(3) (coefficients in Q or Q(a)): substitute their
        # images in Q(zeta_N) monomial by monomial, each power of an image reduced modulo Phi_N once
        out = sp.Poly(0, z, domain=domain)
        for exps, coef in terms:
            mono = sp.Poly(coef, z, domain=domain)
            for g, n in enumerate(exps):
                if n:
                    mono = mono * image_power(g, n)
            out = out + mono
        return out.rem(modulus_poly)

    def matmul(X, Y):
        return [
            [
                sum((X[i][m] * Y[m][j] for m in range(3)), sp.Poly(0, z, domain=domain)).rem(
                    sp.Poly(phi_N, z, domain=domain)
                )
                for j in range(3)
            ]
            for i in range(3)
        ]

    def power(X, n: int):
        # exponentiation by squaring: ~2 log2(n) products in Q(zeta_N) instead of n - 1
        result = None
        while n:
            if n & 1:
                result = X if result is None else matmul(result, X)
            n >>= 1
            if n:
                X = matmul(X, X)
        return result

    Tt, Tp = ([[to_poly(e) for e in row] for row in X] for X in _entry_terms(symbolic_a))
    differs = any(not (Tt[i][j] - Tp[i][j]).is_zero for i in range(3) for j in range(3))
    if not symbolic_a:  # the same products in exact integer arithmetic (numerators over a common denominator)
        modulus = [int(c) for c in reversed(phi_N.all_coeffs())]
        A, B = (_IntCyclotomicMatrix.from_polys(X, modulus).power(int(t)) for X in (Tt, Tp))
        return {"t": int(t), "N": N, "equal": A == B, "differs": differs}
    A, B = power(Tt, int(t)), power(Tp, int(t))
    equal = all((A[i][j] - B[i][j]).is_zero for i in range(3) for j in range(3))
    return {"t": int(t), "N": N, "equal": equal, "differs": differs}


class _IntCyclotomicMatrix:
    """A square matrix over $\\mathbb Q(\\zeta_N)$ as integer coefficient vectors (ascending powers of $z$,
    reduced modulo the monic integer polynomial $\\Phi_N$) over one common positive denominator, kept in lowest
    terms, so that two matrices are equal iff their representations are."""

    def __init__(self, entries, denominator: int, modulus: list[int]):
        self.modulus = modulus
        g = denominator
        for row in entries:
            for e in row:
                for c in e:
                    g = gcd(g, int(c))
        g = g or 1
        self.entries = [[np.array([int(c) // g for c in e], dtype=object) for e in row] for row in entries]
        self.denominator = denominator // g

    @classmethod
    def from_polys(cls, polys, modulus: list[int]) -> _IntCyclotomicMatrix:
        n = len(modulus) - 1
        rows = [[[*reversed(p.all_coeffs())] for p in row] for row in polys]
        den = 1
        for row in rows:
            for e in row:
                for c in e:
                    den = lcm(den, int(c.q))
        ints = [[[int(c.p) * (den // int(c.q)) for c in e] + [0] * (n - len(e)) for e in row] for row in rows]
        return cls(ints, den, modulus)

    def _reduce(self, v):
        v = list(v)
        n = len(self.modulus) - 1
        for i in range(len(v) - 1, n - 1, -1):
            c = v[i]
            if c:
                for j in range(n + 1):
                    v[i - n + j] -= c * self.modulus[j]
        return (v + [0] * n)[:n]

    def __matmul__(self, other: _IntCyclotomicMatrix) -> _IntCyclotomicMatrix:
        k = len(self.entries)
        out = [
            [
                self._reduce(sum(np.convolve(self.entries[i][m], other.entries[m][j]) for m in range(k)))
                for j in range(k)
            ]
            for i in range(k)
        ]
        return _IntCyclotomicMatrix(out, self.denominator * other.denominator, self.modulus)

    def power(self, n: int) -> _IntCyclotomicMatrix:
        result, X = None, self
        while n:
            if n & 1:
                result = X if result is None else result @ X
            n >>= 1
            if n:
                X = X @ X
        return result

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, _IntCyclotomicMatrix)
            and self.denominator == other.denominator
            and all(
                list(a) == list(b)
                for ra, rb in zip(self.entries, other.entries, strict=True)
                for a, b in zip(ra, rb, strict=True)
            )
        )

    __hash__ = None  # type: ignore[assignment]
