"""A complete chat endpoint on Recap's asyncio API (``pip install 'recap[examples]'``).

    POST /chat/{session_id}   {"text": "..."}   ->   {"reply": "...", "context_tokens": N}

Each turn stores the user's message, builds the context (the session's rolling
summary and memories in the system prompt, then the recent window), asks Claude,
stores the reply and calls the hook, which queues a summarize job when the
session has grown enough. Nothing here waits for a summary: Recap's worker
(``celery -A worker worker``) condenses the session in the background, and the
next turn's context is shorter.

Run it (PostgreSQL with ``alembic upgrade head`` applied, the broker and a
worker running)::

    export DATABASE_URL=postgresql+psycopg://... CELERY_BROKER_URL=redis://...
    export ANTHROPIC_API_KEY=...        # ANTHROPIC_BASE_URL too, for a proxy
    uvicorn examples.fastapi_chat:app
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anthropic
from fastapi import FastAPI, HTTPException, Request
from pydantic import BaseModel

from worker.api import aio
from worker.errors import InvalidInput

SYSTEM_PROMPT = "You are a helpful travel assistant. Answer briefly."
# A current Sonnet from the installed SDK's model list; CHAT_MODEL overrides it.
MODEL = os.environ.get("CHAT_MODEL", "claude-sonnet-5-5")
MAX_TOKENS = int(os.environ.get("CHAT_MAX_TOKENS", "1024"))


class ChatIn(BaseModel):
    text: str


class ChatOut(BaseModel):
    reply: str
    context_tokens: int


def create_app(client: anthropic.AsyncAnthropic | None = None) -> FastAPI:
    """The app; the Claude client defaults to one configured from the environment
    (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.claude = client or anthropic.AsyncAnthropic()
        yield
        await app.state.claude.close()
        await aio.close()  # pending publishes, then Recap's engine on this loop

    app = FastAPI(title="Chat on Recap", lifespan=lifespan)

    @app.post("/chat/{session_id}")
    async def chat(session_id: str, message: ChatIn, request: Request) -> ChatOut:
        claude: anthropic.AsyncAnthropic = request.app.state.claude
        try:
            await aio.add_message(session_id, "user", message.text)
        except InvalidInput as exc:  # names the problem; nothing was stored
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        ctx = await aio.build_context(session_id, system_prompt=SYSTEM_PROMPT)
        try:
            answer = await claude.messages.create(model=MODEL, max_tokens=MAX_TOKENS,
                                                  **aio.as_request(ctx))
        except anthropic.APIError as exc:
            # The user's message is stored: a retry of this turn sends it again
            # as part of the context.
            raise HTTPException(status_code=502, detail="the model is unavailable") from exc
        reply = "".join(block.text for block in answer.content if block.type == "text")
        if reply.strip():
            await aio.add_message(session_id, "assistant", reply)
        await aio.after_reply(session_id)  # maybe queue a summary; never raises
        return ChatOut(reply=reply, context_tokens=ctx["tokens"])

    return app


app = create_app()
