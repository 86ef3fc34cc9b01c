"""An agent's recall: the archived original of a cleared tool output or a
condensed message, or the archive's passages matching a query (recap.recall)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from recap.api.recall import recall
from recap.http.offload import in_thread, json_response
from recap.http.schemas import RecalledOut, RecallIn, RecallOut

router = APIRouter(prefix="/v1", tags=["recall"])


@router.post("/sessions/{session_id:id}/recall", response_model=RecallOut,
             summary="The archived original of a message (message_id, or the tool result "
                     "answering tool_use_id), or the passages of the archive that match "
                     "query; of this session only")
async def post_recall(session_id: str, body: RecallIn) -> Response:
    return await in_thread(lambda: json_response(RecallOut(session_id=session_id, recalled=[
        RecalledOut.model_validate(r) for r in recall(
            session_id, message_id=body.message_id, tool_use_id=body.tool_use_id,
            query=body.query, max_tokens=body.max_tokens)])))
