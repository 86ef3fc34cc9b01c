"""What operators read and do: statistics, the Prometheus snapshot, why a session
is not summarized yet (outlook), failures, retry and backfill (requeue)."""
