"""Benchmark of the PCFG samplers, in the same run: the vectorised sampler (the whole batch rewritten at once per
step) against a plain recursive sampler (one sentence at a time, depth-first), on a cfg3-style layered grammar
(sentences of ~250 tokens) and on paper 000's grammar (<= 32 tokens); also the inside algorithm's time per sentence.

Usage: ``python benchmarks/bench_pcfg.py [--quick] [--out results.json]``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from timing import timed

from theorylab.languages.pcfg_grammars import cfg3_style, flat_grammar


def _timed(fn):
    seconds, out = timed(fn)
    return out, seconds


def bench_sampler(name: str, grammar, n_vec: int, n_rec: int) -> dict:
    batch, t_vec = _timed(lambda: grammar.sample(np.random.default_rng(0), n_vec))
    rng = np.random.default_rng(1)
    rec, t_rec = _timed(lambda: [grammar.sample_recursive(rng) for _ in range(n_rec)])
    tokens_vec = int(batch.lengths.sum()) / t_vec
    tokens_rec = sum(len(t) for t, _ in rec) / t_rec
    return {
        "grammar": name,
        "vectorised_sentences": n_vec,
        "vectorised_tokens_per_s": tokens_vec,
        "recursive_sentences": n_rec,
        "recursive_tokens_per_s": tokens_rec,
        "speedup": tokens_vec / tokens_rec,
        "mean_length": float(batch.lengths.mean()),
    }


def bench_inside(grammar, n: int) -> dict:
    s = grammar.sample(np.random.default_rng(2), n)
    _, t = _timed(lambda: [grammar.log_prob(s.sentence(k)) for k in range(n)])
    return {"sentences": n, "mean_length": float(s.lengths.mean()), "inside_s_per_sentence": t / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--out", default=None, help="write the results as JSON")
    args = parser.parse_args()
    scale = 1 if args.quick else 10
    cfg = cfg3_style("cfg3b", np.random.default_rng(0))
    flat = flat_grammar(np.random.default_rng(0))
    results = {
        "sampler": [
            bench_sampler("cfg3b-style", cfg, 500 * scale, 50 * scale),
            bench_sampler("paper-000", flat, 5000 * scale, 500 * scale),
        ],
        "inside_paper_000": bench_inside(flat, 5 * scale),
    }
    print(json.dumps(results, indent=2))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
