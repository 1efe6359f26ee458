"""Benchmark: exact Ising enumeration (vectorised vs a plain Python loop), FiniteChain.spectral_gap (eigh of the
symmetrised matrix vs power iteration) and FiniteChain.hitting_times (one linear solve vs value iteration), and,
if pgmpy is installed, exact marginals against pgmpy's variable elimination.

Usage: python benchmarks/bench_ising.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
from itertools import product

import numpy as np
from timing import best_of

from theorylab.ising import IsingModel, k_gibbs
from theorylab.markov import FiniteChain


def random_model(N: int, seed: int = 0, scale: float = 0.3) -> IsingModel:
    rng = np.random.default_rng(seed)
    J = rng.normal(scale=scale, size=(N, N))
    J = np.triu(J, 1)
    return IsingModel(rng.normal(scale=scale, size=N), J + J.T)


def loop_marginals(model: IsingModel) -> np.ndarray:
    """Peer: a plain loop over all states (energy, partition function, marginals)."""
    N, h, J = model.N, model.h, model.J
    Z, m = 0.0, np.zeros(N)
    for x in product((-1, 1), repeat=N):
        e = sum(h[i] * x[i] for i in range(N)) + sum(
            J[i, j] * x[i] * x[j] for i in range(N) for j in range(i + 1, N)
        )
        w = np.exp(e)
        Z += w
        m += w * (np.array(x) + 1) / 2
    return m / Z


def ours_marginals(N: int, seed: int = 0) -> np.ndarray:
    return random_model(N, seed).marginals()


def power_iteration_gap(P: np.ndarray, pi: np.ndarray, tol: float) -> float:
    """Peer: lambda_2 by power iteration on P deflated by the stationary projector (reversible P)."""
    s = np.sqrt(pi)
    S = s[:, None] * P / s[None, :]
    v = np.random.default_rng(0).standard_normal(P.shape[0])
    lam = 0.0
    for _ in range(100_000):
        v -= (v @ s) * s
        w = S @ v
        new = float(v @ w / (v @ v))
        v = w / np.linalg.norm(w)
        if abs(new - lam) < tol:
            break
        lam = new
    return 1 - new


def value_iteration_hitting(P: np.ndarray, target: np.ndarray, tol: float) -> np.ndarray:
    """Peer: h <- 1 + Q h until the update is below tol."""
    h = np.zeros(P.shape[0])
    for _ in range(1_000_000):
        new = np.where(target, 0.0, 1.0 + P @ h)
        if np.abs(new - h).max() < tol:
            return new
        h = new
    return h


def pgmpy_marginals(model: IsingModel):
    try:
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.inference import VariableElimination
        from pgmpy.models import MarkovNetwork
    except ImportError:
        return None
    N = model.N
    names = [f"x{i}" for i in range(N)]
    net = MarkovNetwork()
    net.add_nodes_from(names)
    factors = [DiscreteFactor([names[i]], [2], np.exp([-model.h[i], model.h[i]])) for i in range(N)]
    for i in range(N):
        for j in range(i + 1, N):
            if model.J[i, j]:
                net.add_edge(names[i], names[j])
                g = model.gamma * model.J[i, j]
                factors.append(
                    DiscreteFactor([names[i], names[j]], [2, 2], np.exp([[g, -g], [-g, g]]).ravel())
                )
    net.add_factors(*factors)
    ve = VariableElimination(net)
    return np.array([ve.query([n], show_progress=False).values[1] for n in names])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    n_big, n_loop, n_chain, repeat = (14, 9, 6, 1) if args.quick else (20, 13, 8, 3)
    results = {}

    t_big, _ = best_of(lambda: ours_marginals(n_big), repeat)
    t_ours, ours = best_of(lambda: ours_marginals(n_loop), 10)
    t_loop, loop = best_of(lambda: loop_marginals(random_model(n_loop)), 1)
    assert np.abs(ours - loop).max() < 1e-10
    results["enumeration"] = {
        "N_exact": n_big,
        "seconds_exact": t_big,
        "N_compare": n_loop,
        "seconds_theorylab": t_ours,
        "seconds_plain_loop": t_loop,
        "speedup": t_loop / t_ours,
    }
    print(f"exact marginals N={n_big} (2^{n_big} states): {t_big:.3f} s")
    print(
        f"N={n_loop}: theorylab {t_ours * 1e3:.2f} ms vs plain loop {t_loop * 1e3:.1f} ms: {t_loop / t_ours:.0f}x"
    )

    model = random_model(n_chain, seed=1, scale=0.6)  # a slowly mixing 1-Gibbs chain (small gap)
    chain = k_gibbs(model, 1)
    pi = model.probs()
    t_gap, gap = best_of(lambda: FiniteChain(chain.P, pi).spectral_gap(), 20)
    t_pow, gap_pow = best_of(lambda: power_iteration_gap(chain.P, pi, 1e-12), 5)
    results["spectral_gap"] = {
        "states": 2**n_chain,
        "seconds_eigh": t_gap,
        "seconds_power_iteration": t_pow,
        "ratio": t_pow / t_gap,
        "abs_difference": abs(gap - gap_pow),
    }
    print(
        f"spectral gap, {2**n_chain} states: eigh {t_gap * 1e3:.2f} ms vs power iteration {t_pow * 1e3:.1f} ms "
        f"({t_pow / t_gap:.1f}x), |difference| {abs(gap - gap_pow):.1e}"
    )

    target = (model.states() == 1).all(axis=1)
    t_hit, hit = best_of(lambda: chain.hitting_times(target), 20)
    t_vi, hit_vi = best_of(lambda: value_iteration_hitting(chain.P, target, 1e-10), 1)
    results["hitting_times"] = {
        "seconds_solve": t_hit,
        "seconds_value_iteration": t_vi,
        "ratio": t_vi / t_hit,
        "max_rel_difference": float(np.abs(hit - hit_vi).max() / hit.max()),
    }
    print(
        f"hitting times: solve {t_hit * 1e3:.2f} ms vs value iteration {t_vi * 1e3:.1f} ms ({t_vi / t_hit:.0f}x)"
    )

    small = random_model(8 if args.quick else 12, seed=2)
    t_pg, pg = best_of(lambda: pgmpy_marginals(small), 1)
    if pg is None:
        print("pgmpy not installed: marginal comparison skipped")
    else:
        t_me, me = best_of(small.marginals, repeat)
        results["pgmpy"] = {
            "seconds_theorylab": t_me,
            "seconds_pgmpy": t_pg,
            "max_abs_difference": float(np.abs(me - pg).max()),
        }
        print(
            f"marginals N={small.N}: theorylab {t_me * 1e3:.2f} ms vs pgmpy {t_pg * 1e3:.1f} ms; |diff| {np.abs(me - pg).max():.1e}"
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
