"""Recap's benchmarks (``recap bench``): your PostgreSQL and Redis, a stand-in of Claude.

Each run creates a private database (``recap_bench_<hex>`` through ``RECAP_BENCH_PG``)
and a private queue (on ``RECAP_BENCH_REDIS``), starts the Messages API stand-in of
recap.evals.standin, and drops them at the end. Every figure comes from real
PostgreSQL, Redis and Celery workers; only Claude is replaced. Benchmarks print
Markdown tables with their targets beside them and never assert.

One module per benchmark, named as ``--only`` names it (``hook``, ``throughput``,
``cost`` ...: recap.bench.main.NAMES), each with ``run(quick=...) -> str``; the
harness (environment, workers, seeding, statistics, the bench extra's packages)
is recap.bench.harness. docs/benchmarks/ gives the figures and what they mean.
"""
