"""For orchestrators and Prometheus: /healthz, /readyz, /metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from recap.http.ready import broker_problem, database_problem
from recap.http.schemas import V1_ERRORS, Ready

router = APIRouter(tags=["operations"])
KEYED: dict[int | str, dict[str, Any]] = {401: V1_ERRORS[401]}


@router.get("/healthz", summary="The process is up (no key needed, no I/O)")
async def healthz() -> dict[str, bool]:
    return {"ok": True}


@router.get("/readyz", response_model=Ready,
            summary="The database is at the migration head and the broker is reachable",
            responses={**KEYED, 503: {"model": Ready, "description": "not ready, and why"}})
def readyz() -> JSONResponse:
    problems = [p for p in (database_problem(), broker_problem()) if p]
    return JSONResponse(Ready(ready=not problems, problems=problems).model_dump(),
                        status_code=503 if problems else 200)


@router.get("/metrics", summary="Prometheus metrics (the same series as recap metrics)",
            response_class=Response,
            responses={**KEYED, 200: {"content": {"text/plain": {}}}})
def metrics(request: Request) -> Response:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(request.app.state.registry),
                    media_type=CONTENT_TYPE_LATEST)
