"""How many messages a job's requests carry (recap.core.prompts.summarize.turns_within):
the leading messages whose chunks fit the requests, a message cut into pieces
only when all its pieces do."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recap.core.prompts.summarize import Turn, chunk_turns, turns_within


def words(text: str) -> int:
    """One token a word, so the chunk sizes are easy to follow."""
    return len(text.split())


def split_words(text: str, n: int) -> list[str]:
    parts = text.split()
    return [" ".join(parts[i:i + n]) for i in range(0, len(parts), n)]


def turns_of(sizes: list[int]) -> list[Turn]:
    return [Turn(i, "user" if i % 2 else "assistant", " ".join(["w"] * size))
            for i, size in enumerate(sizes, start=1)]


def within(turns: list[Turn], chunks: int, room: int) -> int:
    return turns_within(turns, max_chunks=chunks, max_tokens=room, count=words,
                        split=split_words)


@pytest.mark.unit
def test_the_requests_carry_the_messages_their_chunks_hold() -> None:
    turns = turns_of([3] * 10)  # 15 tokens each with the wrapper: two a chunk of 30
    assert within(turns, 2, 30) == 4
    assert within(turns, 5, 30) == 10
    assert within(turns, 9, 30) == 10  # fewer chunks than requests: all of them


@pytest.mark.unit
def test_a_message_cut_into_pieces_is_carried_only_whole() -> None:
    turns = turns_of([3, 100, 3])  # the second is cut into pieces of 18 words
    assert within(turns, 2, 30) == 1
    pieces = len(chunk_turns(turns, max_tokens=30, count=words, split=split_words))
    assert within(turns, pieces, 30) == 3
    assert within(turns, pieces - 1, 30) == 2  # the last message waits


@pytest.mark.unit
def test_no_request_carries_nothing() -> None:
    assert within(turns_of([3, 3]), 0, 30) == 0
    assert within([], 3, 30) == 0


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 80), max_size=25), chunks=st.integers(1, 8),
       room=st.integers(13, 120))
def test_the_messages_carried_are_the_most_that_fit(sizes: list[int], chunks: int,
                                                    room: int) -> None:
    turns = turns_of(sizes)
    k = within(turns, chunks, room)
    assert len(chunk_turns(turns[:k], max_tokens=room, count=words,
                           split=split_words)) <= chunks
    if k < len(turns):
        assert len(chunk_turns(turns[:k + 1], max_tokens=room, count=words,
                               split=split_words)) > chunks
