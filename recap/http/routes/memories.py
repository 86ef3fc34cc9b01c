"""Memories with their provenance: list what a session's context can show, and
delete what a session or a user stated as one kind of source (a tool result, a
document, the guard's fallback...)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from starlette.responses import Response

from recap.http.offload import in_thread, json_response
from recap.http.schemas import MemoriesDeleted, MemoriesOut, MemoryOut
from recap.sessions.forget import forget_memories
from recap.sessions.overrides import memories

router = APIRouter(prefix="/v1", tags=["memories"])

Source = Annotated[str, Query(description="the kind of source to delete: user, assistant, "
                                          "tool, document, unverified, guard or legacy "
                                          "(user also deletes the unverified paraphrases "
                                          "of what the user said)")]


@router.get("/sessions/{session_id:id}/memories", response_model=MemoriesOut,
            summary="The live memories the session's context can show, with their sources")
async def get_memories(session_id: str) -> Response:
    return await in_thread(lambda: json_response(
        MemoriesOut(memories=[MemoryOut.model_validate(m) for m in memories(session_id)])))


@router.delete("/sessions/{session_id:id}/memories", response_model=MemoriesDeleted,
               summary="Delete what the session stated as one kind of source "
                       "(recap.forget_memories); a memory another source backs stays")
async def delete_session_memories(session_id: str, source: Source) -> Response:
    return await in_thread(lambda: json_response(
        MemoriesDeleted(deleted=forget_memories(session_id=session_id, source=source))))


@router.delete("/users/{user_id:id}/memories", response_model=MemoriesDeleted,
               summary="Delete what every session of the user stated as one kind of source")
async def delete_user_memories(user_id: str, source: Source) -> Response:
    return await in_thread(lambda: json_response(
        MemoriesDeleted(deleted=forget_memories(user_id=user_id, source=source))))
