"""What a job keeps besides the summary, what a reply carries, and how Claude is called."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator


class Retention(BaseModel):
    """Memories and retention.

    What is kept of the messages a job condenses: mined memories, the retention
    guard's details, the archive and the summary versions (docs/MEMORY.md).
    """

    extract_memories: bool = Field(True, description=(
        "Mine durable facts about the user in the same call that summarizes a batch."))
    # About 6% of the default 32,000 budget. Chosen per summary version, the block is
    # read from the prompt cache at 0.1x, and it carries the specifics the window no
    # longer holds: with 2,000 the defaults keep the most of every swept setting on
    # both benchmark conversations (recap/bench/cost.py; 1,000 kept less than a 16k budget
    # with 2,000). The block only shrinks when the context is above 94% of the budget.
    memory_budget_tokens: int = Field(2000, ge=0, le=100_000, description=(
        "Tokens of the <MEMORIES> block inside the budget (adaptive: up to 4x in a chat); "
        "0: off."))
    # "version": chosen once per summary version (relevance to the summary), so with
    # prompt caching the block sits in the cached prefix and costs 0.1x per reply;
    # "reply": ranked by the newest user turn on every reply, after the last
    # breakpoint at 1x. Chosen by measurement (recap/bench/cost.py).
    memories_per: Literal["version", "reply"] = Field("version", description=(
        "Choose the block's memories once per summary version (cached) or per reply."))
    # A question about an old fact still reaches it, at 1x per reply.
    memory_reply_tokens: int = Field(200, ge=0, le=100_000, description=(
        "With version: block tokens (at most half) for memories relevant to the newest turn."))
    # "tool" asks for the summary and the facts in one forced tool call (one call per
    # chunk); a model that answers it with the previous summary (small models do) is
    # asked again the plain way. "plain" starts there: the summary as plain text and
    # the facts in a second, smaller call.
    summary_mode: Literal["tool", "plain"] = Field("tool", description=(
        "Ask for summary and facts in one tool call (tool), or the summary as plain text "
        "and the facts apart (plain)."))
    # A frozen, empty or cut-off answer is asked again another way (or its chunk in
    # halves): each such resend sends the batch again. Three lets one chunk try all
    # three ways and one split; past it the job keeps the batch extractively
    # (recap.core.retention.extractive) rather than spend more on a model that fails.
    max_resends: int = Field(3, ge=0, le=20, description=(
        "Times one job may send its batch again after an unusable answer (another way, "
        "halves, facts alone); past it the batch is kept extractively. 0: never. None "
        "while the model's latest 3 folds were all kept extractively (a probe with these "
        "every 5th fold)."))
    # A quarter of the chunk, at least 1,024, at most this: a small model that fills
    # whatever room it is given needs far less.
    max_facts_tokens: int = Field(8192, ge=64, le=32_768, description=(
        "Cap of the answer room added for the facts of a summary call (and of a "
        "facts-only call); at most this, at least min(1024, this)."))
    retention_guard: bool = Field(True, description=(
        "No message is deleted before its specifics are in the summary or the memories."))
    details_share: float = Field(0.25, ge=0.05, le=1.0, description=(
        "Share of max_summary_tokens the guard's details section may take."))
    # The guard needs only a block's first line and what the prose mentions.
    summarize_bulk_tokens: int = Field(-1, ge=-1, le=100_000, description=(
        "Pasted blocks (logs, tables) above this many tokens go to the summarizer as an "
        "excerpt; 0: off; -1: the policy's (adaptive 80, threshold off)."))
    # What recall at reply time quotes from, and what resummarize rebuilds from.
    archive_summarized: bool = Field(True, description=(
        "Keep condensed messages in archived_messages; false: delete them only (then the "
        "guard keeps every specific and adaptive folds only near capacity)."))
    # A cleared result costs a later reply a recall, not a model call now.
    clear_tool_results: bool = Field(True, description=(
        "With the archive on, tool results that left the keep window and that nothing "
        "used become a short stub in the window, their full text in the archive."))
    # Off by default: a stub may only name a tool the app gave its model.
    recall_tool: str = Field("", max_length=64, pattern=r"^[A-Za-z0-9_-]*$", description=(
        "Name of the recall tool the app gives its model (the adapters' is recap_recall): "
        "stubs written from then on say to call it with the result's tool_use_id; "
        "empty: they say to name an identifier."))
    # A year: long enough for any conversation that resumes, bounded for storage and
    # privacy. The sweeper deletes expired rows in batches, oldest first.
    archive_retention_days: int = Field(365, ge=0, le=36_500, description=(
        "Days an archived message is kept, then the sweeper deletes it; 0: keep forever."))
    # About a tool result's worth of lines, after the last cache breakpoint at 1x.
    recall_tokens: int = Field(600, ge=0, le=20_000, description=(
        "Tokens of the <ARCHIVE_RECALL> block quoting archived lines the newest turn "
        "names; 0: off."))
    # Each is one summary's text, so all is cheap next to the archive.
    summary_versions_keep: int = Field(-1, ge=-1, le=1_000_000, description=(
        "Summary versions kept per session (recap history, rewind): -1 all, 0 none, N newest."))


class Replies(BaseModel):
    """Replies and titles.

    What build_context sends with each reply, and the title job.
    """

    # Replies then pay 0.1x for the history Claude has cached.
    prompt_caching: bool = Field(True, description=(
        "build_context marks the stable prefix and the last turn with cache breakpoints."))
    # 5 MiB, the API's own per-image limit; the Messages API caps a request at 32 MB.
    max_inline_base64_chars: int = Field(5 * 1024 * 1024, ge=1024, le=32 * 1024 * 1024,
                                         description=(
        "Inline base64 image/document data one message may carry; larger files by url."))
    titles_enabled: bool = Field(True, description=(
        "Queue a title job (one short Claude call) after a session's first exchange."))


class Calls(BaseModel):
    """Claude calls.

    Which summarizer runs and what one request may carry.
    """

    # Below the model's 200k window.
    llm_max_input_tokens: int = Field(150_000, ge=2000, le=1_000_000, description=(
        "Input tokens one request may carry; larger batches are summarized in chunks."))
    # Recap counts with tiktoken; a model's own tokenizer may count more.
    llm_calibrate_tokens: bool = Field(True, description=(
        "Learn the model's tokens per Recap's from the server's count_tokens, once per "
        "model and tenant, and size requests by it (no count_tokens, or an implausible "
        "count: Recap's own count)."))
    # The offline extractive stand-in loses most details of what it condenses, and
    # condensed rows are deleted, so using it must be an explicit choice.
    summarizer: Literal["claude", "offline"] = Field("claude", description=(
        "claude (refuses to start without a key) or offline (extractive, lossy); "
        "auto is read as claude."))
    # Else a wrong key or model would dead-letter every job silently.
    check_at_start: bool = Field(True, description=(
        "One cheap Claude call when a worker starts; a wrong key or model is logged once."))
    allow_offline_summarizer: bool = Field(False, description=(
        "Allow the offline summarizer when RECAP_ENV=production."))
    prompt_file: Path | None = Field(None, description=(
        "A summarization prompt of your own (replaces RECAP_PROMPT)."))

    @field_validator("summarizer", mode="before")
    @classmethod
    def _auto_is_claude(cls, value: Any) -> Any:
        # "auto" always meant Claude; it stays accepted so existing .env files work.
        return "claude" if isinstance(value, str) and value.strip() == "auto" else value
