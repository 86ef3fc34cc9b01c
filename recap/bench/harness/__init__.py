"""What the benchmarks share: the environment (env), Celery workers (workers), the
messages and bulk loading (seed), the long conversation run (convo), percentiles and
tables (stats), the bench extra's packages (extras), and two worker launchers
(pooled_worker, profiled_worker)."""
