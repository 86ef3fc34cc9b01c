"""Recap as a service: the HTTP API that ``recap serve`` runs (FastAPI on uvicorn).

Every endpoint is the twin of a Python call (worker.api, worker.sessions,
worker.ops) with the same guarantees: nothing lost, nothing applied twice, a
clear error for bad input. The pieces:

- :mod:`worker.http.app`: the app factory (``create_app``) and ``build_api``;
- :mod:`worker.http.guard`: bearer keys and the body limit, before any parsing;
- :mod:`worker.http.errors`: every error as ``{"error": {"type", "message"}}``;
- :mod:`worker.http.idempotency`: ``Idempotency-Key`` answers, kept in the database;
- :mod:`worker.http.ready`: what ``/readyz`` checks;
- :mod:`worker.http.schemas`: request and response bodies;
- :mod:`worker.http.routes`: one module per resource.

Routes are plain functions, which FastAPI runs in its thread pool: the event
loop never waits for the database or the broker.
"""
