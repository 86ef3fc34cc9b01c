"""The reply path: store turns, the after_reply hook, and the next call's context."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Response
from fastapi.responses import JSONResponse
from sqlalchemy.orm import Session

from recap.api.context import as_request, build_context
from recap.api.ingest import add_message, prepare, reply_jobs
from recap.api.validate import check_session_id
from recap.core.tenant import current_tenant
from recap.db import transaction, utcnow
from recap.errors import InvalidInput, SessionNotFound
from recap.http import idempotency
from recap.http.offload import in_thread, json_response
from recap.http.schemas import (
    ContextIn,
    ContextOut,
    MessageIn,
    MessagesIn,
    Replied,
    Stored,
    StoredMessage,
)
from recap.llm.tokens import message_tokens
from recap.settings import get_settings

router = APIRouter(prefix="/v1/sessions/{session_id:id}", tags=["reply path"])

# Messages one request may store: a whole imported conversation, not an unbounded one.
MAX_BATCH = 1000
REPLAYED = "Idempotent-Replayed"


def _messages(body: MessagesIn) -> list[MessageIn]:
    single = body.role is not None or body.content is not None
    if body.messages is not None:
        if single or body.user_id is not None or body.pinned:
            raise InvalidInput("send either one message (role, content, ...) or messages, "
                               "not both")
        if not body.messages:
            raise InvalidInput("messages: must hold at least one message")
        if len(body.messages) > MAX_BATCH:
            raise InvalidInput(f"messages: at most {MAX_BATCH} per request, got "
                               f"{len(body.messages)}")
        return body.messages
    if body.role is None or body.content is None:
        missing = "role" if body.role is None else "content"
        raise InvalidInput(f"{missing}: required (or send messages: [...])")
    return [MessageIn(role=body.role, content=body.content, pinned=body.pinned,
                      user_id=body.user_id)]


def _counted(messages: list[MessageIn]) -> list[int]:
    """Each message's token count, as add_message will store it (the same function
    on the same text; it is memoized, so add_message's own count is a lookup).
    Checks every message before anything is written."""
    return [message_tokens(prepare(m.role, m.content, m.pinned)) for m in messages]


def _store(session_id: str, messages: list[MessageIn], *, db: Session | None) -> Stored:
    """Store ``messages`` in ``db``'s transaction, or (one message, no ``db``) in the
    single autocommitted statement add_message uses on its own."""
    counts = _counted(messages)
    ids = [add_message(session_id, m.role, m.content, pinned=m.pinned, user_id=m.user_id, db=db)
           for m in messages]
    return Stored(session_id=session_id,
                  messages=[StoredMessage(id=i, token_count=n) for i, n in zip(ids, counts,
                                                                                strict=True)])


@router.post("/messages", status_code=201, response_model=Stored,
             summary="Store one message or several (all or none)",
             responses={201: {"description": "stored; a retry with the same Idempotency-Key "
                                             "and body gets the first answer again, with "
                                             "Idempotent-Replayed: true, and stores nothing"}})
async def post_messages(session_id: str, body: MessagesIn,
                        idempotency_key: Annotated[str | None, Header()] = None) -> Response:
    """``recap.add_message``. With ``Idempotency-Key``, a retry with the same body
    gets the first answer (header ``Idempotent-Replayed: true``) and stores nothing;
    the same key with another body is 422."""
    return await in_thread(lambda: store(session_id, body, idempotency_key))


def store(session_id: str, body: MessagesIn, idempotency_key: str | None) -> Response:
    """POST messages' answer (201), or the first answer to its Idempotency-Key."""
    check_session_id(session_id)
    messages = _messages(body)
    if idempotency_key is None:
        if len(messages) == 1:
            return json_response(_store(session_id, messages, db=None), status_code=201)
        with transaction() as db:
            return json_response(_store(session_id, messages, db=db), status_code=201)
    key = idempotency.stored_key(idempotency.check_key(idempotency_key), current_tenant())
    fp = idempotency.fingerprint(session_id, body.model_dump(mode="json"))
    with transaction() as db:
        first = idempotency.claim(key, fp, session_id=session_id, db=db, now=utcnow(),
                                  ttl_s=get_settings().api_idempotency_ttl_s)
        if first is not None:  # the fingerprint matched, so the session is this one
            return JSONResponse({"session_id": session_id, **first.body},
                                status_code=first.status, headers={REPLAYED: "true"})
        stored = _store(session_id, messages, db=db)
        # Ids and counts only; the row goes when the session is forgotten.
        idempotency.record(key, idempotency.Reply(
            201, stored.model_dump(mode="json", exclude={"session_id"})), db=db)
    return json_response(stored, status_code=201)


@router.post("/replied", status_code=202, response_model=Replied,
             summary="The after_reply hook: maybe queue a summary")
async def post_replied(session_id: str) -> Response:
    """``recap.after_reply``: never fails because the broker or the database is down
    (the sweeper catches up); a bad session id is 422 and a session it finds no
    trace of is 404 (while the broker is failing it does not look, and answers 202)."""
    return await in_thread(lambda: replied(session_id))


def replied(session_id: str) -> Response:
    """POST replied's answer (202), or SessionNotFound (404)."""
    jobs = reply_jobs(session_id)
    if jobs.missing:  # the hook's read already looked: no extra query
        raise SessionNotFound(f"no chat session with id {session_id!r}")
    return json_response(Replied(queued=jobs.summarize, title_queued=jobs.title),
                         status_code=202)


@router.post("/context", response_model=ContextOut,
             summary="The system prompt and messages for the next Claude call")
async def post_context(session_id: str, body: ContextIn) -> Response:
    """``recap.build_context``; ``request`` is ``as_request`` of it: add ``model`` and
    ``max_tokens`` and send it to the Messages API as is."""
    return await in_thread(lambda: context(session_id, body))


def context(session_id: str, body: ContextIn) -> Response:
    """POST context's answer (200, not to be cached)."""
    ctx = build_context(session_id, system_prompt=body.system_prompt,
                        prompt_caching=body.prompt_caching)
    return json_response(ContextOut(system=ctx["system"], messages=ctx["messages"],
                                    tokens=ctx["tokens"], budget=ctx["budget"],
                                    parts=ctx["parts"], request=as_request(ctx)),
                         headers={"Cache-Control": "no-store"})
