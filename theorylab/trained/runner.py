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

from theorylab.trained.calibration import Calibration, training_shape
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


def plan(device: str, budget_s: float | None, code: str = "after", only=None, host: dict | None = None,
         measured: Calibration | None = None) -> list[dict]:  # fmt: skip
    """One row per check in order of value: estimated seconds on ``device`` and whether it fits the remaining
    ``budget_s`` (greedy in value order). With ``measured`` (:mod:`theorylab.trained.calibration`; the ``after``
    harness only), a check's seconds come from its measurements on that device where there are any: ``source`` says
    "measured", "partly measured" or "model"."""
    from theorylab.trained.cost import stack_size

    prof = profile_for(device)
    rows, left = [], budget_s
    use = measured if measured and code == "after" else None
    for check in _ordered(only):
        trainings = trainings_of(check, code)
        hs = (host or {}).get(check.name)
        host_s = host_seconds_of(check, code)
        est = estimate_check(trainings, prof, code, host_s, hs)
        seconds, source = est["seconds"], "model"
        step_ms = [r["step_ms"] for r in est["trainings"]]
        mfu = [r["mfu"] for r in est["trainings"]]
        bound = [r["bound"] for r in est["trainings"]]
        if use is not None:
            shapes = [training_shape(t) for t in trainings]
            stacks = {sh: stack_size(t, code) for sh, t in zip(shapes, trainings, strict=True)}
            n_measured, train_s = 0, 0.0
            for i, (sh, r) in enumerate(zip(shapes, est["trainings"], strict=True)):
                ms = use.step_ms(sh, r["stack"])
                if ms is None:
                    train_s += r["seconds"]
                    continue
                n_measured += 1
                train_s += r["groups"] * r["steps"] * ms / 1e3 + r["eval_seconds"]
                step_ms[i], bound[i] = ms, "measured"
                mfu[i] = r["flops"] / (r["groups"] * r["steps"]) / (ms / 1e3) / prof.peak_flops
            whole = use.check_seconds(check.name, stacks)
            if whole is not None:
                seconds, source = whole, "measured"
            elif n_measured:
                seconds = train_s + est["host_seconds"]
                source = "measured" if n_measured == len(trainings) else "partly measured"
        fits = left is None or seconds <= left
        if fits and left is not None:
            left -= seconds
        rows.append({
            "check": check.name, "claims": list(check.claims), "seconds": seconds, "fits": fits, "source": source,
            "flops": est["flops"], "memory_gb": est["memory_bytes"] / 1e9,
            "step_ms": [round(x, 3) for x in step_ms], "mfu": [round(x, 3) for x in mfu],
            "bound": bound, "note": check.note,
        })  # fmt: skip
    return rows


def format_plan(rows: list[dict], device: str, code: str, measured: Calibration | None = None) -> str:
    prof = profile_for(device)
    lines = [f"plan for {prof.name} (peak {prof.peak_flops / 1e12:.0f} TFLOP/s bf16), harness {code!r}:"]
    if measured and code == "after":
        lines.append(f"measured on this device: {', '.join(sorted(measured.sources)) or 'this window'}")
    lines.append(
        f"{'check':26s} {'est. s':>9s} {'fits':>5s} {'source':>15s} {'mem GB':>7s} {'MFU':>6s}  step ms / bound"
    )
    for r in rows:
        mfu = max(r["mfu"], default=0.0)
        steps = ", ".join(f"{s:g}/{b}" for s, b in zip(r["step_ms"][:3], r["bound"][:3], strict=True))
        more = " ..." if len(r["step_ms"]) > 3 else ""
        lines.append(
            f"{r['check']:26s} {r['seconds']:9.0f} {'yes' if r['fits'] else 'no':>5s} {r['source']:>15s} "
            f"{r['memory_gb']:7.1f} {mfu:6.2f}  {steps}{more}"
        )
    total = sum(r["seconds"] for r in rows)
    by = {
        s: sum(r["seconds"] for r in rows if r["source"] == s)
        for s in ("measured", "partly measured", "model")
    }
    lines.append(f"total {total:.0f} s ({total / 60:.1f} min), {sum(r['flops'] for r in rows):.3g} FLOPs; "
                 + ", ".join(f"{s} {v / 60:.1f} min" for s, v in by.items() if v))  # fmt: skip
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


THROUGHPUT_STEPS = 30  # as the baseline benchmark: 3 timing warm-up steps, then 27 marginal ones (~0.5 s)


def measure_throughput(device: str, steps: int = THROUGHPUT_STEPS) -> dict:
    """Marginal step time of one stack of the 19M flip-flop baseline (T = 512; one seed: the CUDA rule trains its
    seeds one after another) on ``device``, against the cost model's estimate. It calibrates the 19M trainings of
    the plan (R1, R4, R6, prop3), not the others (their shapes differ: :mod:`theorylab.trained.calibration`)."""
    from theorylab.nn.train import train
    from theorylab.trained.catalog import _r1
    from theorylab.trained.cost import estimate_training, stack_size

    t = _r1()[0]
    k = stack_size(t)
    budget = dataclasses.replace(t.budget, steps=steps, eval_every=0, eval_batches=0)
    one = dataclasses.replace(t, budget=budget, n_seeds=k)
    res = train(t.task, t.config, budget, seeds=tuple(range(k)), device=device, progress=False)
    est = estimate_training(one, profile_for(_device_name(device)), "after")
    measured = res.throughput["marginal_step_ms"]
    return {"measured_step_ms": measured, "estimated_step_ms": est["step_ms"], "mfu": res.throughput["mfu"],
            "stack": k, "shape": training_shape(t)}  # fmt: skip


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
    metrics = {"claims": claims, "trainings": trains, "tail": proc.stdout[-2000:] + proc.stderr[-1000:],
               "device_name": _device_name(device)}  # fmt: skip
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
    """Measure the 19M baseline's step (CUDA), plan from the measurements of this device (run store, packaged
    measurements, this window's), run what fits in order of value, record each result; 1 if any failed."""
    from theorylab.runs import RunStore
    from theorylab.trained.calibration import load

    start = time.perf_counter()
    name = _device_name(device) if device.startswith("cuda") else "cuda"
    measured = load(name, store_path)
    if device.startswith("cuda") and scale == "full":
        tp = measure_throughput(device)
        measured.add_step(tp["shape"], tp["stack"], tp["measured_step_ms"])
        out(f"throughput: 19M baseline step {tp['measured_step_ms']:.1f} ms per stack of {tp['stack']} "
            f"(model {tp['estimated_step_ms']:.1f} ms, MFU {tp['mfu']}); it calibrates the 19M trainings only")  # fmt: skip
    rows = {r["check"]: r for r in plan(name, None, only=only, measured=measured)}
    failed = 0
    with RunStore(store_path) as store:
        for check in _ordered(only):
            left = None if budget_s is None else budget_s - (time.perf_counter() - start)
            cost = rows[check.name]["seconds"] if scale == "full" else 0.0
            if left is not None and cost > left:
                out(
                    f"later   {check.name:26s} needs ~{cost:.0f}s ({rows[check.name]['source']}), {left:.0f}s left"
                )
                continue
            res = run_check(check, scale, device, store, resume, out=out)
            failed += res.get("verdict") in ("failed", "error")
    return 1 if failed else 0
