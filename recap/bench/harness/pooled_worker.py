"""``celery worker`` with a bigger SQLAlchemy pool, to measure a proposed core setting.

recap/db.py builds engines with SQLAlchemy's default pool (5 + 10 overflow).
With more worker threads than that, threads queue for a connection and
overflow connections are opened and closed on every burst. This launcher
passes ``pool_size`` (RECAP_BENCH_POOL_SIZE) to ``make_engine`` and then runs
Celery's own command line, unchanged (``recap bench --only throughput`` starts its
DB-pool rows this way). Usage::

    RECAP_BENCH_POOL_SIZE=64 python -m recap.bench.harness.pooled_worker \
        -A recap worker -P threads -c 64
"""

from __future__ import annotations

import functools
import os
import sys


def main() -> None:
    from recap import db

    size = int(os.environ["RECAP_BENCH_POOL_SIZE"])
    db.make_engine = functools.partial(db.make_engine, pool_size=size,
                                       max_overflow=10)
    from celery.__main__ import main as celery_main

    sys.argv = ["celery", *sys.argv[1:]]
    celery_main()


if __name__ == "__main__":
    main()
