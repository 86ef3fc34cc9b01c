"""Recap as a service: the HTTP API that ``recap serve`` runs (FastAPI on uvicorn).

Every endpoint is the twin of a Python call (worker.api, worker.sessions,
worker.ops) with the same guarantees: nothing lost, nothing applied twice, a
clear error for bad input. The pieces:

- :mod:`worker.http.app`: the app factory (``create_app``) and ``build_api``;
- :mod:`worker.http.guard`: bearer keys and the body limit, before any parsing;
- :mod:`worker.http.fast`: the reply path's three POSTs, served without FastAPI's
  per-request machinery (the same models, functions and answers);
- :mod:`worker.http.offload`: one hop to a worker thread per request;
- :mod:`worker.http.errors`: every error as ``{"error": {"type", "message"}}``;
- :mod:`worker.http.idempotency`: ``Idempotency-Key`` answers, kept in the database;
- :mod:`worker.http.ready`: what ``/readyz`` checks;
- :mod:`worker.http.schemas`: request and response bodies;
- :mod:`worker.http.routes`: one module per resource.

Each /v1 route awaits its sync Recap call in a worker thread (one hop per
request, answer serialized there too); ``/readyz`` and ``/metrics`` are plain
functions FastAPI runs in its thread pool: the event loop never waits for the
database or the broker.
"""
