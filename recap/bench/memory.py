"""Benchmark 8: peak RSS of a worker process during the long conversation run.

The worker is a real ``celery -A recap worker -P threads -c 4`` child process;
a thread samples its RSS (and any children's) every 50 ms with psutil (the bench
extra).
"""

from __future__ import annotations

from recap.bench.harness import env as benv
from recap.bench.harness.extras import need
from recap.bench.harness.stats import report, table


def run(quick: bool = False) -> str:
    from recap.bench.harness.convo import conversation_run
    from recap.bench.tokens import messages_for

    need("psutil")  # before the run: a shared run without it has no RSS figures
    benv.setup()
    n = messages_for(quick)
    r = conversation_run(n)
    mib = 1024 * 1024
    return report(f"memory: worker RSS during the {n}-message run",
                  table(["RSS after start (MiB)", "peak RSS (MiB)", "jobs applied",
                         "run seconds"],
                        [[f"{r.rss_start / mib:.0f}", f"{r.rss_peak / mib:.0f}", len(r.runs),
                          f"{r.seconds:.0f}"]]))
