"""``recap.configure_session``: overrides merge into the stored ones (None removes
one; ``replace=True`` replaces them all; None clears them), validated as a whole;
an id never stored raises SessionNotFound unless ``create=True``; an unknown model
is stored with an UnknownModelWarning naming the nearest known one."""

from __future__ import annotations

import warnings

import pytest

import recap
from recap.api.ingest import add_message
from recap.errors import InvalidInput, SessionNotFound, UnknownModelWarning
from tests.helpers import session_row


def test_overrides_merge_and_replace() -> None:
    add_message("ov-merge", "user", "hello")
    assert recap.configure_session("ov-merge", {"keep_recent": 6}) == {"keep_recent": 6}
    assert recap.configure_session("ov-merge", {"prompt": "es"}) == {"keep_recent": 6,
                                                                      "prompt": "es"}
    assert recap.configure_session("ov-merge", {"keep_recent": None}) == {"prompt": "es"}
    assert recap.configure_session("ov-merge", {}) == {"prompt": "es"}  # nothing to change
    assert recap.configure_session("ov-merge") == {"prompt": "es"}
    assert recap.configure_session("ov-merge", {"keep_recent": 3}, replace=True) == {
        "keep_recent": 3}
    assert recap.configure_session("ov-merge", {"keep_recent": None}) is None
    assert recap.configure_session("ov-merge", {"prompt": "es"}) == {"prompt": "es"}
    assert recap.configure_session("ov-merge", None) is None  # clears them all
    row = session_row("ov-merge")
    assert row is not None and row.overrides is None


def test_a_refused_merge_keeps_what_was_stored() -> None:
    add_message("ov-fit", "user", "hello")
    recap.configure_session("ov-fit", {"policy": "threshold", "trigger_tokens": 4000})
    with pytest.raises(InvalidInput, match="trigger_tokens is not read by the adaptive"):
        recap.configure_session("ov-fit", {"policy": "adaptive"})
    with pytest.raises(InvalidInput, match="batch_size"):
        recap.configure_session("ov-fit", {"batch_size": 0})
    row = session_row("ov-fit")
    assert row is not None and row.overrides == {"policy": "threshold", "trigger_tokens": 4000}


def test_an_unknown_session_is_refused_unless_created() -> None:
    with pytest.raises(SessionNotFound, match="no chat session with id 'ID'"):
        recap.configure_session("ID", {"keep_recent": 6})
    with pytest.raises(SessionNotFound, match="'ID'"):
        recap.configure_session("ID", user_id="someone")
    assert session_row("ID") is None
    assert recap.configure_session("new-one", {"keep_recent": 6}, create=True) == {
        "keep_recent": 6}
    row = session_row("new-one")
    assert row is not None and row.overrides == {"keep_recent": 6}


def test_an_unknown_model_warns_naming_the_nearest() -> None:
    add_message("ov-model", "user", "hello")
    with pytest.warns(UnknownModelWarning, match="did you mean 'claude-haiku-5-5'"):
        assert recap.configure_session("ov-model", {"model": "claude-haiku-55"}) == {
            "model": "claude-haiku-55"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recap.configure_session("ov-model", {"model": "claude-haiku-5-5"})
