"""Request and response bodies (they are also what docs/openapi.json describes).

Requests refuse unknown fields, so a misspelt one is named in a 422 instead of
being ignored. Values are checked again by the Python API behind each route
(recap.api.validate), whose InvalidInput message names the problem.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from recap.core.context.assemble import Parts
from recap.core.validate import MAX_ROW_ID


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Request):
    """One message, as ``recap.add_message`` takes it."""

    role: str = Field(description="user, assistant, system or tool")
    content: str | list[dict[str, Any]] = Field(
        description="a string, or a Messages API content array (text, tool_use, "
                    "tool_result, thinking, image, document...)")
    pinned: StrictBool = Field(False, description="never condensed into the summary")
    user_id: str | None = Field(None, description="the app's user; set once per session")


class MessagesIn(_Request):
    """One message (``role``, ``content``...) or several (``messages``), never both."""

    role: str | None = Field(None, description="user, assistant, system or tool")
    content: str | list[dict[str, Any]] | None = Field(
        None, description="a string, or a Messages API content array")
    pinned: StrictBool = False
    user_id: str | None = None
    messages: list[MessageIn] | None = Field(
        None, description="several messages, stored in one transaction: all or none")


class StoredMessage(BaseModel):
    id: int
    token_count: int


class Stored(BaseModel):
    """What POST .../messages stored, in the order given."""

    session_id: str
    messages: list[StoredMessage]


class Replied(BaseModel):
    """What the after_reply hook queued (it never fails for a broker outage: the
    sweeper catches up)."""

    queued: bool = Field(description="a summarize job was queued")
    title_queued: bool = Field(description="a title job was queued")


class ContextIn(_Request):
    system_prompt: str = Field(description="the app's own system prompt (may be empty)")
    prompt_caching: StrictBool | None = Field(
        None, description="cache_control breakpoints; default RECAP_PROMPT_CACHING")


class ContextOut(BaseModel):
    """``build_context``'s answer, and ``request``: only the Messages API fields
    (``as_request``), ready to send with a model and max_tokens."""

    system: str | list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tokens: int
    budget: int
    parts: Parts = Field(description="what Recap put in the context: the summary (and its "
                                     "version), its details section, how many memories "
                                     "and recalled archive lines, and how many of the "
                                     "window's oldest messages were left out of this "
                                     "request to make room for what the newest turn asks")
    request: dict[str, Any]


class SummaryOut(BaseModel):
    session_id: str
    version: int
    text: str
    tokens: int
    covers_through: int | None
    created_at: str


class RewindIn(_Request):
    after_message_id: int = Field(ge=0, le=MAX_ROW_ID,
                                  description="keep messages up to this id (0: none)")


class RewindOut(BaseModel):
    session_id: str
    after_message_id: int
    deleted: int
    restored: int
    memories_deleted: int
    summary_version: int
    restored_version: int | None


class EditIn(_Request):
    content: str | list[dict[str, Any]]


class EditOut(BaseModel):
    session_id: str
    message_id: int
    token_count: int


class SettingsOut(BaseModel):
    session_id: str
    overrides: dict[str, Any] | None = Field(description="the overrides stored (null: none)")
    warnings: list[str] = Field(default_factory=list, description=(
        "what was stored but looks wrong, e.g. a model that is not a Claude model "
        "Recap knows (naming the nearest known one)"))


class Forgotten(BaseModel):
    deleted: dict[str, int] = Field(description="rows deleted per table")


class MemorySourceOut(BaseModel):
    session_id: str
    kind: str = Field(description="who stated it: user, assistant, tool, document, "
                                  "unverified, guard or legacy")
    first_message_id: int | None = None
    last_message_id: int | None = None
    run_id: int | None = None


class MemoryOut(BaseModel):
    """One fact, listed once: rows stating the same sentence (the retention guard
    keeps one per specific in it) are one entry, ``ids`` all of them."""

    id: int
    fact: str
    kind: str = Field(description="who stated it, the strongest of its sources: user, tool, "
                                  "document, assistant, unverified, guard or legacy")
    ids: list[int] = Field(description="every stored row of this fact")
    category: str
    importance: int
    session_id: str | None = Field(None, description="its oldest source's session")
    first_message_id: int | None = None
    last_message_id: int | None = None
    created_at: str | None = None
    sources: list[MemorySourceOut] = Field(description="every batch that stated it")


class MemoriesOut(BaseModel):
    memories: list[MemoryOut]


class MemoriesDeleted(BaseModel):
    deleted: int = Field(description="memories deleted (one still backed by another "
                                     "source stays)")


class RecallIn(_Request):
    """What ``recap.recall`` takes: one message (``message_id`` or ``tool_use_id``,
    ``query`` ranking its lines when it is long), or ``query`` alone."""

    message_id: int | None = Field(None, ge=1, le=MAX_ROW_ID, description=(
        "an archived message's id, as a recall label shows it"))
    tool_use_id: str | None = Field(None, description=(
        "the tool_use id whose result was cleared (its stub's tool_result)"))
    query: str | None = Field(None, description=(
        "words, names, numbers or identifiers to find in the archive"))
    max_tokens: int = Field(4000, ge=1, le=100_000, description=(
        "tokens the answer may hold: the original whole when it fits, else its passage"))


class RecalledOut(BaseModel):
    message_id: int
    channel: str = Field(description="as the recall block labels it: user, tool result, "
                                     "document, assistant, quoted or pasted by the user...")
    created_at: datetime | None
    call: str | None = Field(description="the tool call a tool result answers")
    text: str = Field(description="the original, or its passage ('…' for lines left out)")
    whole: bool


class RecallOut(BaseModel):
    session_id: str
    recalled: list[RecalledOut]


class ErrorDetail(BaseModel):
    type: str = Field(description="e.g. invalid_input, not_found, session_busy, "
                                  "payload_too_large, database_unavailable")
    message: str = Field(description="what went wrong, naming the field or setting")


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": {"type", "message"}}``."""

    error: ErrorDetail


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


# The errors any /v1 route may answer (documented once, for docs/openapi.json).
V1_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _error("the body is not JSON, a header is malformed, or the Host is not one "
                "the server answers to"),
    401: _error("no key, or not one of RECAP_API_KEYS"),
    403: _error("the Origin is refused, or a tenant's key asked for every tenant's data"),
    404: _error("no such session or user (or one outside the key's tenant)"),
    413: _error("the body is over RECAP_API_MAX_BODY_BYTES (refused before parsing)"),
    415: _error("a body sent without Content-Type: application/json (the message says "
                "which header came)"),
    422: _error("invalid input: the message names the field; nothing was stored"),
    503: _error("the database or the broker is unavailable; retry after Retry-After"),
}
BUSY: dict[int | str, dict[str, Any]] = {409: _error(
    "a job holds the session's lease; nothing changed, retry after Retry-After seconds")}


class Ready(BaseModel):
    ready: bool
    problems: list[str]
