"""``theorylab trained``: the full-size trained checks in order of value within a time budget, recorded in the run
store; ``--dry-run`` prints the plan with estimated seconds, ``--rehearse`` runs every full-size configuration at
full model size for 2 steps on the CPU (the CUDA code paths forced on) with a meta-device memory estimate."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from theorylab.trained.catalog import CATALOG, FullCheck, Training, host_seconds_of, trainings_of
from theorylab.trained.checkpoints import ENV as CHECKPOINT_ENV
from theorylab.trained.cost import estimate_check, host_sample_seconds, profile_for

DEFAULT_STORE = "artifacts/runs.sqlite"


def _ordered(only: list[str] | None = None) -> list[FullCheck]:
    checks = sorted(CATALOG, key=lambda c: c.value)
    if only:
        unknown = set(only) - {c.name for c in checks}
        if unknown:
            raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(c.name for c in checks)}")
        checks = [c for c in checks if c.name in only]
    return checks


def host_samples(only=None, codes=("after",)) -> dict[str, dict[str, tuple[float, float]]]:
    """Per check and training: seconds this host takes to sample one step's batches (serially), with the per-seed
    loop and with the task's vectorised sampler (the same when it has none)."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for c in _ordered(only):
        row = out.setdefault(c.name, {})
        for code in codes:
            for t in trainings_of(c, code):
                if t.label not in row:
                    loop = host_sample_seconds(t, vectorised=False)
                    vec = host_sample_seconds(t) if hasattr(t.task, "sample_batches") else loop
                    row[t.label] = (loop, vec)
    return out


def plan(device: str, budget_s: float | None, code: str = "after", scale_factor: float = 1.0,
         only=None, host: dict | None = None) -> list[dict]:  # fmt: skip
    """One row per check in order of value: estimated seconds on ``device`` (x ``scale_factor``, the ratio of a
    measured to an estimated step time) and whether it fits the remaining ``budget_s`` (greedy in value order)."""
    prof = profile_for(device)
    rows, left = [], budget_s
    for check in _ordered(only):
        trainings = trainings_of(check, code)
        hs = (host or {}).get(check.name)
        est = estimate_check(trainings, prof, code, host_seconds_of(check, code), hs)
        seconds = est["train_seconds"] * scale_factor + est["host_seconds"]
        fits = left is None or seconds <= left
        if fits and left is not None:
            left -= seconds
        rows.append({
            "check": check.name, "claims": list(check.claims), "seconds": seconds, "fits": fits,
            "flops": est["flops"], "memory_gb": est["memory_bytes"] / 1e9,
            "step_ms": [round(r["step_ms"] * scale_factor, 3) for r in est["trainings"]],
            "mfu": [round(r["mfu"] / scale_factor, 3) for r in est["trainings"]],
            "bound": [r["bound"] for r in est["trainings"]], "note": check.note,
        })  # fmt: skip
    return rows


def format_plan(rows: list[dict], device: str, code: str) -> str:
    prof = profile_for(device)
    lines = [f"plan for {prof.name} (peak {prof.peak_flops / 1e12:.0f} TFLOP/s bf16), harness {code!r}:"]
    lines.append(f"{'check':26s} {'est. s':>9s} {'fits':>5s} {'mem GB':>7s} {'MFU':>6s}  step ms / bound")
    for r in rows:
        mfu = max(r["mfu"], default=0.0)
        steps = ", ".join(f"{s:g}/{b}" for s, b in zip(r["step_ms"][:3], r["bound"][:3], strict=True))
        more = " ..." if len(r["step_ms"]) > 3 else ""
        lines.append(
            f"{r['check']:26s} {r['seconds']:9.0f} {'yes' if r['fits'] else 'no':>5s} {r['memory_gb']:7.1f} "
            f"{mfu:6.2f}  {steps}{more}"
        )
    total = sum(r["seconds"] for r in rows)
    lines.append(f"total {total:.0f} s ({total / 60:.1f} min), {sum(r['flops'] for r in rows):.3g} FLOPs")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ rehearsal


REHEARSAL_T = 128  # tokens per rehearsal sequence: 19M-parameter steps at T = 512 cost ~35 CPU-seconds each


def _tiny(training: Training) -> tuple[object, int]:
    """The training at full model size for 2 steps with a tiny batch: 1 sequence of at most ``REHEARSAL_T`` tokens
    per seed, 2 seeds at most, one evaluation batch. (The full length is checked against the positions the model
    has, in :func:`_static_problems`, and enters the memory estimate.)"""
    b = training.budget
    small = dataclasses.replace(
        b,
        steps=2,
        batch_size=1,
        seq_len=min(b.seq_len, REHEARSAL_T),
        eval_every=0,
        eval_batches=min(b.eval_batches, 1),
        warmup=min(b.warmup, 1),
        log_every=1,
        checkpoint_every=0,
        fixed_dataset=None if b.fixed_dataset is None else 2,
    )
    return small, min(training.n_seeds, 2)


def _static_problems(t: Training) -> list[str]:
    """What the full-size configuration gets wrong without training: a sequence longer than learned positions."""
    cfg = getattr(t.config, "config", t.config)
    T = t.budget.seq_len
    if getattr(cfg, "pos", None) == "learned" and T > cfg.max_len:
        return [f"seq_len {T} exceeds the {cfg.max_len} learned positions"]
    return []


def _train_tiny(t: Training, budget, n: int) -> dict:
    """Train ``t`` with the tiny ``budget`` on ``n`` seeds on the CPU, the CUDA code paths forced on (the second
    step through the static-buffer step that a CUDA graph captures)."""
    import warnings

    import numpy as np

    from theorylab.nn.models import attention_backend
    from theorylab.nn.train import train

    try:
        with warnings.catch_warnings(), attention_backend("sdpa"):
            warnings.filterwarnings(
                "ignore", message=".*batching rule.*"
            )  # vmap's CPU loop over SDPA: expected
            res = train(t.task, t.config, budget, seeds=tuple(range(n)), device="cpu", progress=False, fast=True,
                        graph=budget.optimizer == "adamw")  # the captured step's static-buffer path  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - reported, the rehearsal goes on
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    losses = np.asarray(res.final["train_loss"], dtype=float)
    return {"ok": bool(np.isfinite(losses).all()), "loss": losses.round(4).tolist()}


def _code_path(t: Training, budget) -> tuple:
    """What decides the code a rehearsal exercises: the task's class, the architecture (vocabulary sizes and
    regularisation strengths aside) and the budget's switches. Trainings with equal paths are rehearsed once."""
    cfg = t.config
    inner = getattr(cfg, "config", cfg)
    if dataclasses.is_dataclass(inner):
        inner = dataclasses.replace(inner, **{k: 1 for k in ("vocab_size", "n_outputs") if hasattr(inner, k)})
    switches = dataclasses.replace(
        budget, lr=1.0, weight_decay=float(budget.weight_decay > 0), warmup=int(budget.warmup > 0)
    )
    return type(t.task).__name__, type(cfg).__name__, repr(inner), switches


def rehearse(only=None, device: str = "cuda", out=print) -> list[dict]:
    """Every distinct full-size configuration trained for 2 steps on the CPU with the CUDA fast paths forced on
    (fused attention, fused optimiser, multi-tensor clipping, prefetching feed, the captured step's static
    buffers), plus the meta-device memory
    estimate at the real batch against ``device``'s memory. A row fails when training raises, a loss is not
    finite, or the memory estimate exceeds the device."""
    from theorylab.trained.cost import memory_estimate

    prof = profile_for(device)
    rows, seen = [], {}
    for check in _ordered(only):
        try:
            trainings = trainings_of(check)
        except Exception as exc:  # noqa: BLE001 - a broken catalog entry is a rehearsal failure, reported
            rows.append({"check": check.name, "training": "(catalog)", "ok": False, "error": repr(exc)})
            out(f"FAIL {check.name}: catalog: {exc!r}")
            continue
        for t in trainings:
            budget, n = _tiny(t)
            key = _code_path(t, budget)
            row = {"check": check.name, "training": t.label}
            t0 = time.perf_counter()
            if key in seen:  # same code path as a training rehearsed already: only its memory is estimated
                row["ok"], row["same_as"] = True, seen[key]
            else:
                seen[key] = f"{check.name}: {t.label}"
                row.update(_train_tiny(t, budget, n))
            problems = _static_problems(t)
            if problems:
                row["ok"], row["error"] = False, "; ".join(problems)
            mem = memory_estimate(t)
            row["memory_gb"] = mem / 1e9
            if mem > prof.memory_bytes:
                row["ok"], row["error"] = False, f"memory estimate {mem / 1e9:.1f} GB > {prof.name}"
            row["seconds"] = time.perf_counter() - t0
            rows.append(row)
            status = "ok  " if row["ok"] else "FAIL"
            note = (
                f"  {row['error']}"
                if "error" in row
                else (f"  (as {row['same_as']})" if "same_as" in row else "")
            )
            out(
                f"{status} {check.name:24s} {t.label:36s} {row['seconds']:6.1f}s mem {row['memory_gb']:6.2f} GB{note}"
            )
    return rows


# ------------------------------------------------------------------------------------------------ running


def measure_throughput(device: str, steps: int = 6) -> dict:
    """Step time of the 19M flip-flop baseline (8 seeds, T = 512) on ``device`` against the cost model's estimate:
    the ratio scales the plan. Only on CUDA (on the CPU the plan is not in device seconds)."""
    from theorylab.nn.train import train
    from theorylab.trained.catalog import _r1
    from theorylab.trained.cost import estimate_training

    t = _r1()[0]
    budget = dataclasses.replace(t.budget, steps=steps, eval_every=0, eval_batches=0)
    res = train(t.task, t.config, budget, seeds=tuple(range(t.n_seeds)), device=device, progress=False)
    est = estimate_training(dataclasses.replace(t, budget=budget), profile_for(_device_name(device)), "after")
    measured = res.throughput["marginal_step_ms"]
    return {"measured_step_ms": measured, "estimated_step_ms": est["step_ms"], "mfu": res.throughput["mfu"],
            "factor": measured / est["step_ms"]}  # fmt: skip


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        from theorylab._extras import require

        torch = require("torch", extra="trained")
        return torch.cuda.get_device_name(torch.device(device))
    return device


def run_check(
    check: FullCheck, scale: str, device: str, store, resume: bool, extra_args=(), out=print
) -> dict:
    """Run the check's pytest nodes in a subprocess at ``scale`` on ``device`` and store the result."""
    from theorylab.runs import Run, code_version, run_key

    config = {"scale": scale, "device": device, "nodes": list(check.nodes)}
    version = code_version()
    key = run_key("check", check.name, config, None, version)
    if resume and store.is_done(key):
        out(f"skip {check.name}: in the store for this code and config")
        return {"check": check.name, "skipped": True}
    base = Run(
        "check", check.name, config, None, version, status="running", device=device, worker=str(os.getpid())
    )
    store.start(base)
    with tempfile.TemporaryDirectory() as tmp:
        claims_json, log = Path(tmp) / "claims.json", Path(tmp) / "train.jsonl"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "theorylab.pytest_plugin",
               "-p", "theorylab.trained.probe",
               *check.nodes, "--theorylab-tier", "trained", "--theorylab-scale", scale, "--theorylab-device", device,
               "--theorylab-claims-json", str(claims_json), *extra_args]  # fmt: skip
        if "xdist" in sys.modules or _has_xdist():
            cmd += ["-n", "0"]
        t0 = time.perf_counter()
        env = {**os.environ, "THEORYLAB_TRAIN_LOG": str(log)}
        if str(store.path) != ":memory:":  # trainings shared by checks (and windows) through checkpoints
            env.setdefault(CHECKPOINT_ENV, str(Path(store.path).parent / "checkpoints"))
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        claims = json.loads(claims_json.read_text())["claims"] if claims_json.exists() else {}
        trains = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    verdict = {0: "passed", 1: "failed", 5: "skipped"}.get(proc.returncode, "error")
    if verdict == "passed" and claims and all(_all_skipped(v) for v in claims.values()):
        verdict = "skipped"
    step_ms = [t["marginal_step_ms"] for t in trains if t.get("marginal_step_ms")]
    mfus = [t["mfu"] for t in trains if t.get("mfu") is not None]
    metrics = {"claims": claims, "trainings": trains, "tail": proc.stdout[-2000:] + proc.stderr[-1000:]}
    done = Run("check", check.name, config, None, version, status="done" if verdict != "error" else "failed",
               verdict=verdict, metrics=metrics, device=device, seconds=seconds,
               step_ms=max(step_ms) if step_ms else None, mfu=max(mfus) if mfus else None,
               started=time.time() - seconds, worker=str(os.getpid()))  # fmt: skip
    store.finish(done)
    out(
        f"{verdict:7s} {check.name:26s} {seconds:8.1f}s"
        + (f"  step {max(step_ms):.2f} ms" if step_ms else "")
    )
    return {"check": check.name, "verdict": verdict, "seconds": seconds}


def _has_xdist() -> bool:
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


def _all_skipped(claim: dict) -> bool:
    tests = claim.get("tests") or claim.get("checks") or []
    return bool(tests) and all(
        str(t.get("outcome", "")).startswith("skip") for t in tests if isinstance(t, dict)
    )


def run(scale: str, device: str, budget_s: float | None, store_path: str, resume: bool, only=None,
        out=print) -> int:  # fmt: skip
    """Measure throughput (CUDA), plan, run what fits in order of value, record each result; 1 if any failed."""
    from theorylab.runs import RunStore

    start = time.perf_counter()
    factor = 1.0
    if device.startswith("cuda") and scale == "full":
        tp = measure_throughput(device)
        factor = tp["factor"]
        out(f"throughput: 19M baseline step {tp['measured_step_ms']:.1f} ms (model {tp['estimated_step_ms']:.1f} ms, "
            f"MFU {tp['mfu']}), plan scaled by {factor:.2f}")  # fmt: skip
    rows = {r["check"]: r for r in plan(_device_name(device) if device.startswith("cuda") else "cuda", None,
                                        scale_factor=factor, only=only)}  # fmt: skip
    failed = 0
    with RunStore(store_path) as store:
        for check in _ordered(only):
            left = None if budget_s is None else budget_s - (time.perf_counter() - start)
            cost = rows[check.name]["seconds"] if scale == "full" else 0.0
            if left is not None and cost > left:
                out(f"later   {check.name:26s} needs ~{cost:.0f}s, {left:.0f}s left")
                continue
            res = run_check(check, scale, device, store, resume, out=out)
            failed += res.get("verdict") in ("failed", "error")
    return 1 if failed else 0
