"""When a session is summarized and how big things get: the settings one session
may also override (chat_sessions.overrides, ``recap configure``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from recap.config.base import (
    DEFAULT_MODEL,
    MAX_TOKENS,
    MODEL_MAX_CHARS,
    Name,
    given_here,
    must_be_below,
)
from recap.core.planning.prices import DEFAULT_REPLY_MODEL, TTL

# The most messages a trigger or the keep window may count: far above any session a
# person holds, and small enough that every count derived from it stays exact.
MAX_MESSAGES = 1_000_000


class Tuning(BaseModel):
    """Summarization policy.

    When a job is queued, how much it condenses and with which model. A deployment
    sets these with RECAP_* variables; one session may override them (`recap
    configure`), validated with the same limits. recap/core/planning/policy.py combines them.
    """

    # "adaptive": each session's own high-water mark, fold depth, keep window and
    # memories block, from its counters and the prompt cache's prices
    # (recap/core/planning/adaptive.py); "threshold": the fixed rule of the four settings below.
    policy: Literal["adaptive", "threshold"] = Field("adaptive", description=(
        "When and how deep to fold: adaptive (per session) or threshold (fixed rule)."))
    trigger_messages: int = Field(30, ge=1, le=MAX_MESSAGES, description=(
        "Summarize when active messages exceed this and their batch exceeds the tokens."))
    trigger_tokens: int = Field(15000, ge=1, le=MAX_TOKENS, description=(
        "Token half of the trigger: the candidate batch must hold more tokens than this."))
    batch_size: int = Field(20, ge=1, le=10000, description=(
        "Most messages one job condenses."))
    # At least 1: the newest message is never condensed, so an assistant turn is
    # never summarized before the tool results that answer it have arrived.
    keep_recent: int = Field(10, ge=1, le=MAX_MESSAGES, description=(
        "Newest messages always kept verbatim (threshold: below trigger_messages; adaptive: "
        "its window's cap)."))
    max_summary_tokens: int = Field(1024, ge=64, le=16384, description=(
        "Cap on the summary's length (the answer's max_tokens)."))
    context_budget_tokens: int = Field(32000, ge=1000, le=MAX_TOKENS, description=(
        "The chat app's context budget: above 80% a job runs regardless of the trigger."))
    # Cache-aware folding: a fold condenses until summary + the rest fit this share
    # of the budget (recap/core/planning/policy.py), so the summary (the start of every
    # prompt, hence Claude's prompt cache) changes less often. Below the 80% at
    # which the capacity rule fires.
    condense_to: float = Field(0.0, ge=0.0, le=0.75, description=(
        "Condense until the context fits this share of the budget; 0: the batch only."))
    model: Name = Field(DEFAULT_MODEL, max_length=MODEL_MAX_CHARS, description=(
        "Claude model that writes summaries and titles (a cheap fast tier fits)."))
    # The model the app replies with: the prompt Recap builds is read and written to
    # the cache at its prices (recap/core/planning/prices.py), so every priced choice
    # (fold, clear) and the savings view use it.
    reply_model: Name = Field(DEFAULT_REPLY_MODEL, max_length=MODEL_MAX_CHARS, description=(
        "The model your app replies with (what the built context is priced at)."))
    # The lifetime the app's cache_control asks for: a 1-hour write costs 2x input.
    cache_ttl: TTL = Field("5m", description=(
        "The app's prompt-cache lifetime: 5m (writes 1.25x input) or 1h (2x)."))
    prompt: Literal["default", "es"] = Field("default", description=(
        "Built-in summarization prompt (RECAP_PROMPT_FILE replaces it)."))

    @model_validator(mode="after")
    def _summary_fits_budget(self, info: ValidationInfo) -> Tuning:
        # Each error leads with the setting that was set: the one to change.
        given = given_here(self, info)
        if self.max_summary_tokens >= self.context_budget_tokens:
            raise ValueError(must_be_below("max_summary_tokens", "context_budget_tokens",
                                           model=self, given=given))
        # The fixed rule's trigger only: the adaptive policy reads no trigger_messages
        # (its keep window is its own, at most keep_recent).
        if self.policy == "threshold" and self.keep_recent >= self.trigger_messages:
            raise ValueError(must_be_below(
                "keep_recent", "trigger_messages", model=self, given=given,
                why="otherwise the hook queues a job on every reply that can only be "
                    "skipped"))
        return self


TUNABLE = tuple(Tuning.model_fields)
