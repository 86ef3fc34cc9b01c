"""``celery worker`` under yappi's CPU clock, to see where a job's CPU goes.

py-spy samples wall time: in a worker most threads wait on sockets (PostgreSQL,
the Claude stand-in, Redis), and its samples say little about CPU. yappi with
``clock_type="cpu"`` charges each function only the CPU time of the thread
running it, across every thread. The profile (pstats format), from the worker's
"ready" to its shutdown, is written to RECAP_BENCH_PROFILE. yappi (the bench extra)
slows Python code down, so compare shares and before/after, not absolute
milliseconds. Usage::

    RECAP_BENCH_PROFILE=/tmp/w.pstat \
        python -m recap.bench.harness.profiled_worker -A recap worker -P threads -c 32

``recap.bench.throughput.measure(..., profile=FILE)`` starts the worker this way.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    from celery.signals import worker_ready, worker_shutdown

    from recap.bench.harness.extras import need

    yappi = need("yappi")
    out = os.environ["RECAP_BENCH_PROFILE"]
    yappi.set_clock_type("cpu")

    @worker_ready.connect(weak=False)
    def _forget_start_up(**_: object) -> None:
        yappi.clear_stats()  # imports and set-up are not per-job costs

    @worker_shutdown.connect(weak=False)
    def _save(**_: object) -> None:
        yappi.stop()
        yappi.get_func_stats().save(out, type="pstat")

    yappi.start(builtins=False, profile_threads=True)
    from celery.__main__ import main as celery_main

    sys.argv = ["celery", *sys.argv[1:]]
    celery_main()


if __name__ == "__main__":
    main()
