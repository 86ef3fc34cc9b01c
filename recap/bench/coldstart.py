"""Benchmark: the first reply of a fresh process, with and without ``recap.warm_up()``.

Everything the reply path uses loads on first use, so a process's first
``add_message``, ``after_reply`` and ``build_context`` pay for it; the first
``after_reply`` that queues a job loads Celery, kombu and the broker's transport.
``recap.warm_up()`` at start-up pays all of it before any user waits. Each fresh
process (``python -m recap.bench.coldstart --child MODE``) times one session's calls
(the first in the process), then another's (later calls), with titles on so the
first exchange queues a job; medians over the processes are printed, with the
time ``warm_up`` itself took. No targets: the figures are what a user's first
reply costs.

Run it with ``recap bench --only coldstart [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from recap.bench.harness import env as benv
from recap.bench.harness.stats import report, table

# The calls timed, in the order one session makes them.
CALLS = ("add_message (user turn)", "after_reply (no job)", "build_context",
         "after_reply (queues a title job)")
MODES = ("without warm-up", "with warm-up")


def child(mode: str) -> dict[str, float]:
    """In a fresh process: milliseconds per call of a first session, then of a later one."""
    started = time.perf_counter()
    import recap

    out = {"import recap": _ms(started)}
    if mode == "warm":
        started = time.perf_counter()
        recap.warm_up()
        out["warm_up"] = _ms(started)
    for which in ("first", "later"):
        for name, call in _session_calls(f"coldstart-{which}-{uuid.uuid4().hex[:8]}"):
            started = time.perf_counter()
            call()
            if name:
                out[f"{which} {name}"] = _ms(started)
    return out


def _session_calls(sid: str) -> list[tuple[str, Callable[[], object]]]:
    """One session's calls in order, named as CALLS ("": made, not timed)."""
    import recap

    return [(CALLS[0], lambda: recap.add_message(sid, "user", "Book the Lisbon hotel.")),
            (CALLS[1], lambda: recap.after_reply(sid)),
            (CALLS[2], lambda: recap.build_context(sid, system_prompt=benv.SYSTEM_PROMPT)),
            ("", lambda: recap.add_message(sid, "assistant", "Booked for March 14th.")),
            (CALLS[3], lambda: recap.after_reply(sid))]


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def fresh(mode: str) -> dict[str, float]:
    """:func:`child` in a new interpreter, in the benchmark's environment."""
    env = benv.current()
    assert env is not None
    done = subprocess.run([sys.executable, "-m", "recap.bench.coldstart", "--child", mode],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env.base_env(), "RECAP_TITLES_ENABLED": "true"})
    if done.returncode != 0:
        raise RuntimeError(f"recap.bench.coldstart --child {mode} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(quick: bool = False) -> str:
    benv.setup()
    processes = 3 if quick else 7
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for _ in range(processes):  # alternated, so load on the machine hits both alike
        runs[MODES[0]].append(fresh("cold"))
        runs[MODES[1]].append(fresh("warm"))

    def median(mode: str, key: str) -> str:
        values = [r[key] for r in runs[mode] if key in r]
        return f"{statistics.median(values):.1f}" if values else "-"

    rows = [[call, *(median(m, f"{w} {call}") for m in MODES for w in ("first", "later"))]
            for call in CALLS]
    rows.append(["import recap", median(MODES[0], "import recap"), "",
                 median(MODES[1], "import recap"), ""])
    rows.append(["recap.warm_up() (at start-up)", "", "", median(MODES[1], "warm_up"), ""])
    return report(
        f"coldstart: the first reply of a fresh process, ms (median of {processes} "
        "processes each; later: the same calls on a second session)",
        table(["call", "no warm-up: first", "no warm-up: later", "warm_up(): first",
               "warm_up(): later"], rows))


def main() -> None:
    """One measured process (``--child cold|warm``): its figures as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("cold", "warm"), required=True)
    args = parser.parse_args()
    print(json.dumps(child(args.child)), flush=True)


if __name__ == "__main__":
    main()
