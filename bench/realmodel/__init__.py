"""Benchmark: what Recap keeps with a real model (``python -m bench --only realmodel``).

Each configured GGUF model is served by ``python -m bench.realmodel.server`` (a
Messages API over llama-cpp-python) and the planted-facts evaluation (``recap
eval``: 120 messages of the demo's chat, 40 planted specifics, the summarize job a
worker runs) is run against it under each policy and summary mode, several times;
the table gives medians. Skipped, with its reason, when no model is configured:

- ``RECAP_BENCH_MODELS``: ``name=path.gguf`` items, comma-separated.
- ``RECAP_BENCH_LLAMA_PYTHON``: a Python with llama-cpp-python (default: this one).
- ``RECAP_BENCH_MESSAGES`` and ``RECAP_BENCH_FACTS``: the conversation's length and
  its planted specifics (default 120 and 40; 60 and 12 with --quick).
- ``RECAP_BENCH_RUNS`` (default 3; 1 with --quick), ``RECAP_BENCH_POLICIES``
  (default ``threshold,adaptive``), ``RECAP_BENCH_MODES`` (default ``tool,plain``),
  ``RECAP_BENCH_CTX`` (the server's context window, default 8192),
  ``RECAP_BENCH_THREADS`` (its threads generating, default 1),
  ``RECAP_BENCH_THREADS_BATCH`` (reading prompts, default every core),
  ``RECAP_BENCH_CACHE_MB`` (its prompt cache, default 1024).

Real models are slow on a CPU (a 1.5B model folds in about a minute on two free
cores), so this never runs in CI; docs/EVALUATION.md has the figures and steps.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from recap.bench.harness.env import free_port
from recap.bench.harness.stats import report, table

ROOT = Path(__file__).resolve().parent.parent.parent
MESSAGES, FACTS = 120, 40
QUICK_MESSAGES, QUICK_FACTS = 60, 12
START_TIMEOUT_S = 600
# A CPU model needs minutes per call: time limits that never cut a fold short, in
# the chain the settings check (call < lease, soft limit < hard limit).
SLOW = {"task_time_limit_s": 7200, "task_soft_time_limit_s": 6000, "lease_s": 8000,
        "llm_timeout_s": 600, "visibility_timeout_s": 20000}
HEADERS = ("model", "policy", "mode", "runs", "folds", "kept of total",
           "where: prose / details / memories / window", "frozen answers",
           "repairs (helped)", "answerable at reference (full history, same window)",
           "s per fold", "stored per run", "jobs dead-lettered per run (after message)")


def configured() -> tuple[list[tuple[str, Path]], str | None]:
    """(name, path) of each configured model, or the reason to skip."""
    raw = os.environ.get("RECAP_BENCH_MODELS", "").strip()
    if not raw:
        return [], ("RECAP_BENCH_MODELS is not set (name=path.gguf items, comma-separated; "
                    "see docs/EVALUATION.md)")
    models: list[tuple[str, Path]] = []
    for item in raw.split(","):
        name, sep, path = item.strip().partition("=")
        if not sep or not name or not path:
            return [], f"RECAP_BENCH_MODELS: {item!r} is not name=path.gguf"
        if not Path(path).is_file():
            return [], f"RECAP_BENCH_MODELS: no model file at {path}"
        models.append((name, Path(path)))
    python = llama_python()
    probe = subprocess.run([python, "-c", "import llama_cpp"], capture_output=True, text=True)
    if probe.returncode != 0:
        return [], (f"{python} cannot import llama_cpp (pip install llama-cpp-python, or "
                    "set RECAP_BENCH_LLAMA_PYTHON)")
    return models, None


def llama_python() -> str:
    return os.environ.get("RECAP_BENCH_LLAMA_PYTHON") or sys.executable


@contextlib.contextmanager
def served(name: str, path: Path) -> Iterator[str]:
    """The model at ``path`` served on a free port; yields its base URL."""
    port = free_port()
    ctx = os.environ.get("RECAP_BENCH_CTX", "8192")
    proc = subprocess.Popen([llama_python(), "-m", "bench.realmodel.server", "--model",
                             str(path), "--name", name, "--port", str(port), "--ctx", ctx,
                             *server_options()], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the model server for {name} exited ({proc.returncode})")
            try:
                urllib.request.urlopen(url + "/health", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the model server for {name} did not start") from None
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def server_options() -> list[str]:
    """The server's threads and prompt cache, as RECAP_BENCH_* set them."""
    options = [("--threads", "RECAP_BENCH_THREADS"),
               ("--threads-batch", "RECAP_BENCH_THREADS_BATCH"),
               ("--cache-mb", "RECAP_BENCH_CACHE_MB")]
    return [part for flag, env in options if os.environ.get(env)
            for part in (flag, os.environ[env])]


def overrides(url: str, model: str, *, policy: str, mode: str) -> dict[str, Any]:
    ctx = int(os.environ.get("RECAP_BENCH_CTX", "8192"))
    return {"anthropic_api_key": "sk-local-no-key", "anthropic_base_url": url, "model": model,
            "summarizer": "claude", "policy": policy, "summary_mode": mode,
            # Recap counts with tiktoken, the model with its own tokenizer: a margin.
            "llm_max_input_tokens": int(ctx * 0.7), **SLOW}


def row(name: str, policy: str, mode: str, runs: Sequence[Any]) -> list[object]:
    """One table row: medians over ``runs`` (recap.evals.run.Series)."""
    from recap.evals.where import PLACES

    ok = [r for r in runs if r.error is None]
    if not ok:
        return [name, policy, mode, len(runs), "-", runs[0].error, "", "", "", "", "", "", ""]

    def med(values: Sequence[float]) -> str:
        return f"{statistics.median(values):g}"

    where = " / ".join(med([r.where.get(p, 0) for r in ok]) for p in PLACES)
    seconds = [statistics.median(r.fold_seconds) for r in ok if r.fold_seconds]
    return [name, policy, mode, len(ok) if len(ok) == len(runs) else f"{len(ok)} of {len(runs)}",
            med([r.folds for r in ok]), f"{med([r.stored or 0 for r in ok])} of {ok[0].total}",
            where, med([r.audit.frozen_answers for r in ok]),
            f"{med([r.audit.repairs_called for r in ok])} "
            f"({med([r.audit.repairs_helped for r in ok])})",
            f"{med([r.answerable for r in ok])} of {ok[0].probes} "
            f"({med([r.window_answerable for r in ok])})" if ok[0].probes else "-",
            f"{statistics.median(seconds):.0f}" if seconds else "-",
            " ".join(str(r.stored) for r in ok),
            " ".join(f"{len(r.dead_after)} ({', '.join(map(str, r.dead_after)) or '-'})"
                     for r in ok)]


def positive(name: str, default: int) -> int:
    """The whole number the environment variable ``name`` sets (``default`` when it is
    unset or empty); ValueError naming it when it is not a positive whole number."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name}={raw!r} is not a positive whole number")
    return int(raw)


def run(quick: bool = False) -> str:
    models, skip = configured()
    if skip:
        return report("Real models (planted facts)", f"skipped: {skip}")
    from recap.demo.conversation import load
    from recap.evals.facts import plant, weave
    from recap.evals.probes import DEFAULT_PROBES, plan_probes
    from recap.evals.run import run_recap

    n, k = (QUICK_MESSAGES, QUICK_FACTS) if quick else (MESSAGES, FACTS)
    try:
        n = positive("RECAP_BENCH_MESSAGES", n)
        k = positive("RECAP_BENCH_FACTS", k)
    except ValueError as exc:
        return report("Real models (planted facts)", f"skipped: {exc}")
    runs = int(os.environ.get("RECAP_BENCH_RUNS") or (1 if quick else 3))
    policies = os.environ.get("RECAP_BENCH_POLICIES", "threshold,adaptive").split(",")
    modes = os.environ.get("RECAP_BENCH_MODES", "tool,plain").split(",")
    facts = plant(k, seed=7)
    messages = weave(load(n), facts)
    probes = plan_probes(messages, facts, DEFAULT_PROBES)
    rows: list[list[object]] = []
    for name, path in models:
        with served(name, path) as url:
            for policy in policies:
                for mode in modes:
                    series = []
                    for i in range(runs):
                        started = time.monotonic()
                        s = run_recap(messages, facts, overrides=overrides(
                            url, name, policy=policy.strip(), mode=mode.strip()),
                            progress=lambda line: print(line, flush=True), probes=probes)
                        print(f"{name} {policy} {mode} run {i + 1}: stored {s.stored}, "
                              f"folds {s.folds}, where {s.where}, audit {s.audit}, "
                              f"s per fold {s.fold_seconds}, dead-lettered after {s.dead_after}, "
                              f"in context after each fold {s.after_fold}, "
                              f"stored after each fold {s.stored_after_fold}, answerable at "
                              f"reference {s.answerable}/{s.probes} (full history "
                              f"{s.window_answerable}), error {s.error}, "
                              f"{time.monotonic() - started:.0f}s", flush=True)
                        series.append(s)
                    rows.append(row(name, policy.strip(), mode.strip(), series))
    body = (f"{n} messages of the demo's chat, {k} planted specifics (seed 7); medians of "
            f"the runs. where: the place that holds each stored specific first. answerable "
            f"at reference: later user turns asking for a planted specific whose reply's "
            f"request carries it (in brackets: the full history cut to the same window).\n\n"
            + table(HEADERS, rows))
    return report("Real models (planted facts)", body)
