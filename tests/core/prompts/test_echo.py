"""Recap's own words echoed by a model are cut, and are never specifics."""

from __future__ import annotations

import pytest

from recap.core.prompts.echo import is_echo, sent_corpus, strip_echo
from recap.llm.structured import summary_tool, tool_texts

pytestmark = pytest.mark.unit

CORPUS = sent_corpus(tool_texts(summary_tool(1024)))


def test_the_schema_echo_is_cut_and_the_rest_stays() -> None:
    text = ("The user flies on 3 March 2025. The updated summary text, at most 1024 tokens.\n"
            "The updated summary text, at most 1024 tokens.\nThey paid $89.99.")
    assert strip_echo(text, CORPUS) == "The user flies on 3 March 2025.\nThey paid $89.99."


def test_short_or_own_sentences_are_not_echoes() -> None:
    assert not is_echo("The summary.", CORPUS)  # too short to tell
    assert not is_echo("The user wants a summary of at most 1024 tokens.", CORPUS)
    assert is_echo("**The updated summary text, at most 1024 tokens**", CORPUS)
