"""A whole session: read it, its summary history, rewind, edit, settings, forget."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query
from starlette.responses import Response

from recap.core.validate import MAX_ROW_ID, MAX_VERSION
from recap.errors import SessionNotFound, UserNotFound
from recap.http.offload import in_thread, json_response
from recap.http.schemas import (
    BUSY,
    V1_ERRORS,
    EditIn,
    EditOut,
    Forgotten,
    RewindIn,
    RewindOut,
    SettingsOut,
    SummaryOut,
)
from recap.sessions.edit import edit_message
from recap.sessions.forget import forget
from recap.sessions.history import summary_at
from recap.sessions.overrides import model_warning, store_overrides
from recap.sessions.rewind import rewind
from recap.sessions.view import SessionView, session

router = APIRouter(prefix="/v1", tags=["sessions"])

# A number outside these names nothing (the columns are 32- and 64-bit): 422.
Version = Annotated[int, Path(ge=1, le=MAX_VERSION, description="a summary version")]
MessageId = Annotated[int, Path(ge=1, le=MAX_ROW_ID, description="a message id")]
ERASED: dict[int | str, dict[str, Any]] = {404: {
    "model": V1_ERRORS[404]["model"],
    "description": "nothing is stored about it (never stored, forgotten already, or "
                   "outside the key's tenant)"}}


@router.get("/sessions/{session_id:id}", response_model=SessionView,
            summary="The session (recap.session): summary and version, last fold, counts, "
                    "memories by who stated them, title, settings")
async def get_session(session_id: str) -> Response:
    return await in_thread(lambda: json_response(session(session_id)))


@router.get("/sessions/{session_id:id}/summaries/{version}", response_model=SummaryOut,
            summary="The summary as of a version (recap.summary_at)")
async def get_summary(session_id: str, version: Version) -> Response:
    return await in_thread(lambda: json_response(_summary(session_id, version)))


def _summary(session_id: str, version: int) -> SummaryOut:
    v = summary_at(session_id, version)
    return SummaryOut(session_id=session_id, version=v.version, text=v.text, tokens=v.tokens,
                      covers_through=v.covers_through, created_at=v.created_at.isoformat())


@router.post("/sessions/{session_id:id}/rewind", response_model=RewindOut,
             summary="Delete every message after a point (recap.rewind)",
             responses=BUSY)
async def post_rewind(session_id: str, body: RewindIn) -> Response:
    return await in_thread(lambda: json_response(
        RewindOut(**asdict(rewind(session_id, body.after_message_id)))))


@router.patch("/sessions/{session_id:id}/messages/{message_id}", response_model=EditOut,
              summary="Replace an active message's content (recap.edit_message)",
              responses=BUSY)
async def patch_message(session_id: str, message_id: MessageId, body: EditIn) -> Response:
    return await in_thread(lambda: json_response(
        EditOut(**asdict(edit_message(session_id, message_id, body.content)))))


Overrides = Annotated[dict[str, Any], Body(
    examples=[{"trigger_messages": 40, "keep_recent": 12}])]
Create = Annotated[bool, Query(description="store the session if it does not exist yet "
                                           "(otherwise an unknown id is 404)")]
UNKNOWN: dict[int | str, dict[str, Any]] = {404: {
    "model": V1_ERRORS[404]["model"],
    "description": "no such session (a session is stored by its first message, or by "
                   "`?create=true` here)"}}


@router.put("/sessions/{session_id:id}/settings", response_model=SettingsOut,
            responses=UNKNOWN,
            summary="Replace the session's tuning overrides ({} clears them)")
async def put_settings(session_id: str, body: Overrides, create: Create = False) -> Response:
    """``recap.configure_session(..., replace=True)``: the keys given become the
    session's only overrides (recap.settings.Tuning fields, validated as a whole)."""
    return await in_thread(lambda: _settings(session_id, body, replace=True, create=create))


@router.patch("/sessions/{session_id:id}/settings", response_model=SettingsOut,
              responses=UNKNOWN,
              summary="Change some of the session's tuning overrides (null removes one)")
async def patch_settings(session_id: str, body: Overrides, create: Create = False) -> Response:
    """``recap.configure_session``: the keys given are merged into the stored
    overrides (a JSON merge patch: a key set to null removes that override, the
    others stay), and the result is validated as a whole."""
    return await in_thread(lambda: _settings(session_id, body, replace=False, create=create))


def _settings(session_id: str, body: dict[str, Any], *, replace: bool,
              create: bool) -> Response:
    warning = model_warning(body)
    stored = store_overrides(session_id, body, replace=replace, create=create)
    return json_response(SettingsOut(session_id=session_id, overrides=stored,
                                     warnings=[warning] if warning else []))


@router.delete("/sessions/{session_id:id}", response_model=Forgotten, responses=ERASED,
               summary="Forget the session: every row about it (recap.forget)")
async def delete_session(session_id: str) -> Response:
    return await in_thread(lambda: json_response(_forgotten(forget(session_id=session_id),
                                                            session_id=session_id)))


@router.delete("/users/{user_id:id}", response_model=Forgotten, responses=ERASED,
               summary="Forget the user: every session and memory of theirs (recap.forget)")
async def delete_user(user_id: str) -> Response:
    return await in_thread(lambda: json_response(_forgotten(forget(user_id=user_id),
                                                            user_id=user_id)))


def _forgotten(deleted: dict[str, int], *, session_id: str | None = None,
               user_id: str | None = None) -> Forgotten:
    """The answer of a DELETE; 404 when nothing was stored (as for any unknown id)."""
    if any(deleted.values()):
        return Forgotten(deleted=deleted)
    if session_id is not None:
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    raise UserNotFound(f"no user with id {user_id!r}")
