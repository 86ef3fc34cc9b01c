"""A complete chat endpoint on Recap's asyncio API (``pip install -e '.[examples]'``).

    POST /chat/{session_id}   {"text": "..."}   ->   {"reply": "...", "context_tokens": N}

Each turn builds the context (the session's rolling summary and memories in the
system prompt, then the recent window) with the new question appended, asks
Claude, then stores the question and the reply together and calls the hook,
which queues a summarize job when the session has grown enough. A turn that
fails stores nothing, so the session stays as it was and a retry is clean.
Nothing here waits for a summary: Recap's worker (``celery -A recap worker``)
condenses the session in the background, and the next turn's context is shorter.

Run it (PostgreSQL, the broker and a worker running)::

    export DATABASE_URL=postgresql+psycopg://... CELERY_BROKER_URL=redis://...
    recap db upgrade
    export ANTHROPIC_API_KEY=...        # ANTHROPIC_BASE_URL too, for a proxy
    uvicorn examples.fastapi_chat:app

Without a key, every turn answers 503 with the reason. To try it keyless, start
the Messages API stand-in (``python -m recap.testing``, deterministic answers,
not Claude, on 127.0.0.1:8765) and export ``ANTHROPIC_BASE_URL`` pointing at it
and any ``ANTHROPIC_API_KEY``, for the app and the worker (README shows it).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anthropic
from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel

from recap import aio
from recap.api.validate import check_message, check_session_id
from recap.errors import InvalidInput, SessionNotFound

SYSTEM_PROMPT = "You are a helpful travel assistant. Answer briefly."
# A current Sonnet from the installed SDK's model list; CHAT_MODEL overrides it.
MODEL = os.environ.get("CHAT_MODEL", "claude-sonnet-5-5")
MAX_TOKENS = int(os.environ.get("CHAT_MAX_TOKENS", "1024"))
NO_KEY = ("ANTHROPIC_API_KEY is not set, so this app cannot ask Claude; set it, or run "
          "keyless against the stand-in: python -m recap.testing, then "
          "ANTHROPIC_BASE_URL=http://127.0.0.1:8765 and any ANTHROPIC_API_KEY")


class ChatIn(BaseModel):
    text: str


class ChatOut(BaseModel):
    reply: str
    context_tokens: int


def create_app(client: anthropic.AsyncAnthropic | None = None) -> FastAPI:
    """The app; the Claude client defaults to one configured from the environment
    (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), or none without a key (503s)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        keyed = os.environ.get("ANTHROPIC_API_KEY", "").strip()
        app.state.claude = client or (anthropic.AsyncAnthropic() if keyed else None)
        await aio.warm_up()  # Recap's one-time loading now, not on the first reply
        yield
        if app.state.claude is not None:
            await app.state.claude.close()
        await aio.close()  # pending publishes, then Recap's engine on this loop

    app = FastAPI(title="Chat on Recap", lifespan=lifespan)

    @app.post("/chat/{session_id}")
    async def chat(session_id: str, message: ChatIn, request: Request) -> ChatOut:
        try:  # what add_message would refuse, before anything is sent or stored
            check_session_id(session_id)
            check_message("user", message.text, False)
        except InvalidInput as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        claude: anthropic.AsyncAnthropic | None = request.app.state.claude
        if claude is None:
            raise HTTPException(status_code=503, detail=NO_KEY)
        try:
            ctx = await aio.build_context(session_id, system_prompt=SYSTEM_PROMPT)
            request_fields = aio.as_request(ctx, user_message=message.text)
            tokens = ctx["tokens"]
        except SessionNotFound:  # the session's first turn
            request_fields = {"system": SYSTEM_PROMPT,
                              "messages": [{"role": "user", "content": message.text}]}
            tokens = 0
        try:
            answer = await claude.messages.create(model=MODEL, max_tokens=MAX_TOKENS,
                                                  **request_fields)
        except anthropic.APIError as exc:
            # Nothing was stored: the session is as it was, and a retry is clean.
            raise HTTPException(status_code=502, detail="the model is unavailable") from exc
        reply = "".join(block.text for block in answer.content if block.type == "text")
        if not reply.strip():
            raise HTTPException(status_code=502, detail="the model answered no text")
        async with aio.transaction() as db:  # the question and its answer, or neither
            await aio.add_message(session_id, "user", message.text, db=db)
            await aio.add_message(session_id, "assistant", reply, db=db)
        await aio.after_reply(session_id)  # maybe queue a summary; never raises
        return ChatOut(reply=reply, context_tokens=tokens)

    return app


app = create_app()
