"""Normalised forms (pure): a reference in the user's own words has the keys of the
line written another way."""

from __future__ import annotations

import pytest

from recap.core.context.forms import (
    asked_keys,
    date_keys,
    line_keys,
    spellings,
    stem,
    token_key,
)
from recap.core.context.lookback import STOP_WORDS, weight

pytestmark = pytest.mark.unit


def keys(asked: str) -> set[str]:
    return set(asked_keys(asked, weight=weight, skip=STOP_WORDS))


@pytest.mark.parametrize("written", ["the 14th", "Nov 14", "November 14th", "14 Nov",
                                     "14 of November", "14/11", "11/14/2026",
                                     "2026-11-14"])
def test_a_date_however_written_has_its_day_and_month_day(written: str) -> None:
    found = {k for k, _, _ in date_keys(written)}
    assert "d:14" in found
    if written != "the 14th":
        assert "md:11-14" in found
    assert "d:14" in line_keys("| 2026-11-14 | APAC | refunds | 1,200 |")


def test_an_ambiguous_day_and_month_is_read_both_ways() -> None:
    found = {k for k, _, _ in date_keys("05/06")}
    assert {"md:6-5", "md:5-6"} <= found


@pytest.mark.parametrize("written", ["1.2k", "1,200", "1200", "$1,200", "1200.00"])
def test_a_number_with_its_unit_or_grouping_is_one_key(written: str) -> None:
    assert "n:1200" in keys(f"about {written} refunds")
    assert "n:1200" in line_keys(f"refunds: {written}")


@pytest.mark.parametrize("written", ["E-4471", "e4471", "E_4471", "e-4471"])
def test_an_identifier_with_other_separators_or_case_is_one_key(written: str) -> None:
    assert token_key(written) == "i:e4471"
    assert "i:e4471" in line_keys(f"ERROR {written} raised at loader.py:212")


def test_paths_and_versions_keep_their_separators_and_their_parts_are_keys() -> None:
    assert token_key("src/ledger/loader.py:212") == "src/ledger/loader.py:212"
    assert token_key("v1.2.3") == "v1.2.3"
    assert {"w:loader", "n:212"} <= line_keys("at src/ledger/loader.py:212")


@pytest.mark.parametrize(("a", "b"), [("raised", "raises"), ("raise", "raised"),
                                      ("pinned", "pin"), ("pins", "pinning"),
                                      ("refunds", "refund"), ("passed", "pass")])
def test_simple_word_forms_fold_together(a: str, b: str) -> None:
    assert stem(a) == stem(b)


def test_a_question_keeps_no_stop_words_and_weighs_by_shape() -> None:
    found = asked_keys("Where was E-4471 raised on the 14th?", weight=weight, skip=STOP_WORDS)
    assert set(found) == {"i:e4471", "w:rais", "d:14"}
    assert found["i:e4471"] > found["d:14"] > found["w:rais"]


def test_a_cue_is_looked_up_in_its_other_spelling_and_word_forms() -> None:
    assert spellings("e-4471") == ("e4471", "")
    assert spellings("e4471") == ("e-4471", "")
    assert spellings("raised") == ("", "rais")
    assert spellings("src/app.py") == ("", "")
    assert spellings("a3f9c2d") == ("", "")
