"""A request body checked with the real SDK's request types (its ``...Param``
TypedDicts, validated by pydantic): the second opinion next to the fake API's
own checks (recap.testing)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter, ValidationError


@functools.cache
def _adapters(beta: bool = False) -> tuple[TypeAdapter[Any], TypeAdapter[Any]]:
    if beta:  # the beta types: MCP blocks and compaction
        from anthropic.types.beta import BetaMessageParam, BetaTextBlockParam

        return (TypeAdapter(list[BetaMessageParam]),
                TypeAdapter(str | list[BetaTextBlockParam]))
    from anthropic.types import MessageParam, TextBlockParam

    return TypeAdapter(list[MessageParam]), TypeAdapter(str | list[TextBlockParam])


def _force(value: Any) -> None:
    """Run pydantic's lazy validators: the SDK types declare ``Iterable`` fields,
    which validate item by item only when consumed."""
    if isinstance(value, dict):
        for v in value.values():
            _force(v)
    elif isinstance(value, list):
        for v in value:
            _force(v)
    elif isinstance(value, Iterator):
        for v in value:
            _force(v)


def sdk_problem(body: dict[str, Any], *, beta: bool = False) -> str | None:
    """Why the SDK's types (``beta``: its beta types) refuse ``body``'s messages or
    system; None when they accept."""
    messages, system = _adapters(beta)
    try:
        _force(messages.validate_python(body["messages"]))
        if "system" in body:
            _force(system.validate_python(body["system"]))
    except ValidationError as exc:
        return str(exc).splitlines()[0] + ": " + str(exc.errors()[0]["loc"])[:300]
    return None
