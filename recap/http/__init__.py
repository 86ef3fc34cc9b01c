"""Recap as a service: the HTTP API that ``recap serve`` runs (FastAPI on uvicorn).

Every endpoint is the twin of a Python call (recap.api, recap.sessions,
recap.ops) with the same guarantees: nothing lost, nothing applied twice, a
clear error for bad input. The pieces:

- :mod:`recap.http.app`: the app factory (``create_app``) and ``build_api``;
- :mod:`recap.http.guard`: Host rules, bearer keys and their tenants, the body
  limit and HEAD, before any parsing;
- :mod:`recap.http.hosts`: which Host and Origin names are answered (DNS rebinding);
- :mod:`recap.http.ids`: ids as one percent-encoded path segment ("/" included);
- :mod:`recap.http.fast`: the reply path's three POSTs, served without FastAPI's
  per-request machinery (the same models, functions and answers);
- :mod:`recap.http.offload`: one hop to a worker thread per request;
- :mod:`recap.http.errors`: every error as ``{"error": {"type", "message"}}``;
- :mod:`recap.http.idempotency`: ``Idempotency-Key`` answers, kept in the database;
- :mod:`recap.http.ready`: what ``/readyz`` checks;
- :mod:`recap.http.schemas`: request and response bodies;
- :mod:`recap.http.routes`: one module per resource.

Each /v1 route awaits its sync Recap call in a worker thread (one hop per
request, answer serialized there too); ``/readyz`` and ``/metrics`` are plain
functions FastAPI runs in its thread pool: the event loop never waits for the
database or the broker.
"""
