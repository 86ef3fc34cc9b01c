"""The title call: one short Claude request after a session's first exchange."""

from __future__ import annotations

from dataclasses import dataclass

from recap.core.prompts.titles import (
    TITLE_MAX_TOKENS,
    TITLE_RETRY_MAX_TOKENS,
    TITLE_SYSTEM,
    clean_title,
    echoes_instruction,
    offline_title,
    title_prompt,
)
from recap.errors import PermanentLLMError, UnusableSummary
from recap.llm.client import ClientConfig, complete


@dataclass
class TitleResult:
    title: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


def generate_title(config: ClientConfig | None, first_user: str, first_assistant: str, *,
                   offline_model: str) -> TitleResult:
    """A title from Claude (``config``), or from the first words when offline (None).

    A title cut off mid-line or repeating the instruction is rejected and asked for
    once more with a larger cap (TITLE_RETRY_MAX_TOKENS); rejected again, the
    session keeps no title: PermanentLLMError (no retry of the same request).
    Raises Transient/PermanentLLMError (classified) on API failures, and
    UnusableSummary when the answer holds no usable title.
    """
    if config is None:  # the offline summarizer: no network, no model to ask
        return TitleResult(offline_title(first_user, first_assistant), offline_model)
    prompt = title_prompt(first_user, first_assistant, split=config.split)
    spent_in = spent_out = 0
    problem = ""
    for cap in (TITLE_MAX_TOKENS, TITLE_RETRY_MAX_TOKENS):
        answer = complete(config, max_tokens=cap, system=TITLE_SYSTEM, prompt=prompt,
                          operation="generate_title")
        spent_in, spent_out = spent_in + answer.input_tokens, spent_out + answer.output_tokens
        text = answer.text
        if answer.stop_reason == "max_tokens" and "\n" not in text:
            # Cut off mid-line: whatever we kept could end mid-word.
            problem = f"cut off at max_tokens={cap}"
            continue
        title = clean_title(text)
        if title is None:
            raise UnusableSummary("the model returned no usable title")
        if echoes_instruction(title):
            problem = "repeats the instruction"
            continue
        return TitleResult(title, config.model, spent_in, spent_out)
    raise PermanentLLMError(f"the title {problem} on the retry too; the session keeps "
                            "no title")
