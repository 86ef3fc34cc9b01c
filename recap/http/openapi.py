"""The bearer key in the OpenAPI schema: a ``securitySchemes`` entry, and ``security``
on every operation that answers 401 (all but ``/healthz``), so a generated client
sends the key where the guard asks for it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

SCHEME = "bearerKey"
BEARER: dict[str, Any] = {
    "type": "http", "scheme": "bearer",
    "description": "A key of RECAP_API_KEYS: `Authorization: Bearer KEY`.",
}


def declare_bearer_key(api: FastAPI) -> None:
    """Make ``api.openapi()`` declare the bearer key (the guard checks it, not FastAPI)."""
    build = api.openapi

    def openapi() -> dict[str, Any]:
        schema = build()  # FastAPI caches it; the additions below are idempotent
        schema.setdefault("components", {}).setdefault("securitySchemes", {})[SCHEME] = BEARER
        for ops in schema["paths"].values():
            for op in ops.values():
                if "401" in op.get("responses", {}):
                    op["security"] = [{SCHEME: []}]
        return schema

    api.openapi = openapi  # type: ignore[method-assign]
