"""The title call: one short Claude request after a session's first exchange."""

from __future__ import annotations

from dataclasses import dataclass

from worker.core.titles import (
    TITLE_MAX_TOKENS,
    TITLE_SYSTEM,
    clean_title,
    offline_title,
    title_prompt,
)
from worker.errors import UnusableSummary
from worker.llm.client import ClientConfig, complete


@dataclass
class TitleResult:
    title: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


def generate_title(config: ClientConfig | None, first_user: str, first_assistant: str, *,
                   offline_model: str) -> TitleResult:
    """A title from Claude (``config``), or from the first words when offline (None).

    Raises Transient/PermanentLLMError (classified) on API failures, and
    UnusableSummary when the answer holds no usable title.
    """
    if config is None:  # the offline summarizer: no network, no model to ask
        return TitleResult(offline_title(first_user, first_assistant), offline_model)
    answer = complete(config, max_tokens=TITLE_MAX_TOKENS, system=TITLE_SYSTEM,
                      prompt=title_prompt(first_user, first_assistant, split=config.split),
                      operation="generate_title")
    text = answer.text
    if answer.stop_reason == "max_tokens" and "\n" not in text:
        # Cut off mid-line: whatever we kept could end mid-word.
        raise UnusableSummary(f"title cut off at max_tokens={TITLE_MAX_TOKENS}")
    title = clean_title(text)
    if title is None:
        raise UnusableSummary("the model returned no usable title")
    return TitleResult(title, config.model, answer.input_tokens, answer.output_tokens)
