"""The soak: real worker processes under injected API faults, SIGKILLs and Redis
restarts, then the invariant (``python -m tests.reliability.soak``; see __main__).

- run.py: ``run_soak`` (ingest, kill, restart, drain, check) and its config and result;
- faults.py: the misbehaving Messages API stand-in and the soak's own redis-server;
- guard.py: the retention guard's part (planted specifics, the guard's counts).
"""
