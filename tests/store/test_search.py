"""What the recall index reads of a message too long to index whole
(recap.store.search): PostgreSQL turns it into a tsvector, whatever characters the
message is made of; a message up to MAX_INDEXED_CHARS is indexed as it is, and
turns into one too."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from recap.core.content.message import MAX_CONTENT_CHARS
from recap.db import transaction
from recap.store.search import MAX_INDEXED_CHARS, TERMS_BUDGET, needs_terms, search_terms

# Units the parser makes the most of per byte: one-letter hyphenated parts (each
# also a lexeme of its own), URLs (the URL, its host and its path), e-mail
# addresses, four-byte and combining characters, letters whose lower case is
# longer, letters the locale may not count as such (superscripts), digits, and
# plain distinct words, Latin and Cyrillic.
UNITS = {
    "hyphens": lambda i: "-".join(chr(0x4E00 + (i * 7 + k) % 20000) for k in range(9)),
    "ascii-hyphens": lambda i: f"a{i}-b-c{i}-d-e{i}",
    "urls": lambda i: f"http://h{i}.example.org/p{i}/q{i}?x={i}",
    "emails": lambda i: f"user{i}@host{i}.example.com",
    "astral": lambda i: chr(0x20000 + i % 40000) + chr(0x1F600 + i % 80) + "\u0301",
    "longer-lower": lambda i: "\u023a\u023e" * (1 + i % 5) + str(i),
    "digits": lambda i: str(10**12 + i),
    "superscripts": lambda i: "".join(chr(0x4E00 + (i * 5 + k) % 20000) + "\u00b2"
                                      for k in range(4)),
    "cyrillic": lambda i: "Ѳ" + "".join(chr(0x410 + (i >> (5 * k)) % 32) for k in range(4)),
    "words": lambda i: f"w{i:07d}",
}


def text_of(unit: str, chars: int) -> str:
    make, parts, size, i = UNITS[unit], [], 0, 0
    while size < chars:
        part = make(i)
        parts.append(part)
        size += len(part) + 1
        i += 1
    return " ".join(parts)[:chars]


def tsvector_bytes(text: str) -> int:
    """The size of PostgreSQL's tsvector of ``text`` (raises when it cannot hold it)."""
    with transaction() as s:
        size = s.scalar(select(func.pg_column_size(func.to_tsvector("simple", text))))
    assert size is not None
    return int(size)


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_the_longest_message_recap_accepts_turns_into_a_tsvector(unit: str) -> None:
    text = text_of(unit, MAX_CONTENT_CHARS)
    assert needs_terms(text)
    terms = search_terms(text)
    assert terms and len(terms) < len(text)
    assert tsvector_bytes(terms) > 0


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_a_message_short_enough_to_index_whole_turns_into_a_tsvector(unit: str) -> None:
    text = text_of(unit, MAX_INDEXED_CHARS)
    assert not needs_terms(text)
    assert tsvector_bytes(text) < 1_048_575 // 4


def test_distinct_words_are_kept_in_order_case_and_marks_aside() -> None:
    text = "Alpha (beta), alpha BETA gamma-delta. " + "x" * 5000 + " omega"
    assert search_terms(text) == "Alpha beta gamma-delta omega"


def test_words_past_the_budget_are_left_out_and_shorter_ones_still_fit() -> None:
    assert search_terms("abcdefgh é-é ab", budget=13 + 7) == "abcdefgh ab"
    words = " ".join(f"w{i:07d}" for i in range(TERMS_BUDGET // 13 + 500))
    kept = search_terms(words).split()
    assert kept[0] == "w0000000" and len(kept) == TERMS_BUDGET // 13


def test_a_long_run_without_spaces_is_read_as_its_letters_and_digits() -> None:
    blob = '{"order":"ORD-7731","items":[' + ",".join(f'"sku{i}"' for i in range(40)) + "]}"
    kept = search_terms(blob).split()
    assert kept[:3] == ["order", "ORD", "7731"] and "sku39" in kept
