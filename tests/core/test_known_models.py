"""recap.core.known_models: which model names Recap knows (any snapshot or cloud id
of them), and the nearest known one to a name it does not. Pure."""

from __future__ import annotations

import pytest

from recap.core.known_models import (
    KNOWN_MODELS,
    base_name,
    is_known,
    nearest_known,
    unknown_model_warning,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("given", "base"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
    ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
    ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
    ("arn:aws:bedrock:eu-west-1:1:inference-profile/eu.anthropic.claude-opus-4-1-v1:0",
     "claude-opus-4-1"),
    ("  Claude-Haiku-5-5 ", "claude-haiku-5-5"),
])
def test_a_snapshot_or_cloud_id_is_its_model(given: str, base: str) -> None:
    assert base_name(given) == base
    assert is_known(given)


def test_the_default_model_is_known() -> None:
    from recap.config.base import DEFAULT_MODEL

    assert is_known(DEFAULT_MODEL)
    assert len(set(KNOWN_MODELS)) == len(KNOWN_MODELS)


@pytest.mark.parametrize(("typed", "meant"), [
    ("claude-sonet-5-5", "claude-sonnet-5-5"),
    ("claude-haiku-55", "claude-haiku-5-5"),
    ("claude-opus-4.5", "claude-opus-4-5"),
    ("sonnet-4-5", "claude-sonnet-4-5"),
])
def test_a_misspelt_model_names_the_nearest(typed: str, meant: str) -> None:
    assert nearest_known(typed) == meant
    warning = unknown_model_warning(typed)
    assert warning is not None and f"{typed!r}" in warning and f"did you mean {meant!r}" in warning


def test_a_name_like_no_model_lists_the_known_ones() -> None:
    assert nearest_known("gpt-4o") is None
    warning = unknown_model_warning("gpt-4o")
    assert warning is not None and "known models: claude-sonnet-5-5" in warning
    assert unknown_model_warning("claude-sonnet-5-5") is None
