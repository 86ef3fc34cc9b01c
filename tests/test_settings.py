from __future__ import annotations

import pytest

from worker.errors import ConfigError
from worker.settings import DEFAULT_MODEL, load_settings


def test_defaults_match_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RECAP_MAX_RETRIES", "RECAP_LLM_TIMEOUT_S"):
        monkeypatch.delenv(name, raising=False)
    s = load_settings()
    assert (s.trigger_messages, s.trigger_tokens, s.batch_size, s.keep_recent,
            s.max_summary_tokens, s.context_budget_tokens, s.llm_timeout_s) == (
        30, 15000, 20, 10, 1024, 32000, 30.0)
    assert s.model == DEFAULT_MODEL


def test_default_model_is_in_the_installed_sdk_model_list() -> None:
    import typing

    from anthropic.types import Model

    literal = next(a for a in typing.get_args(Model) if typing.get_origin(a) is typing.Literal)
    assert DEFAULT_MODEL in typing.get_args(literal)
    assert "haiku" in DEFAULT_MODEL


@pytest.mark.parametrize(("var", "value"), [
    ("RECAP_TRIGGER_MESSAGES", "abc"),
    ("RECAP_BATCH_SIZE", "0"),
    ("RECAP_LLM_TIMEOUT_S", "-1"),
    ("RECAP_ENV", "staging"),
    ("RECAP_CONTEXT_BUDGET_TOKENS", "10"),
])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, var: str,
                                      value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()


def test_visibility_timeout_must_outlive_time_limit_and_retry_delay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_VISIBILITY_TIMEOUT_S", "20")
    with pytest.raises(ConfigError, match="RECAP_VISIBILITY_TIMEOUT_S"):
        load_settings()


def test_lease_must_outlive_hard_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_LEASE_S", "10")
    with pytest.raises(ConfigError, match="RECAP_LEASE_S"):
        load_settings()


def test_production_refuses_embedded_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_ENV", "production")
    monkeypatch.delenv("DATABASE_URL")
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        load_settings()


def test_api_key_never_echoed_in_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-123")
    monkeypatch.setenv("RECAP_BATCH_SIZE", "nope")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "SECRET" not in str(info.value)
    monkeypatch.setenv("RECAP_BATCH_SIZE", "5")
    assert "SECRET" not in repr(load_settings())


def test_offline_summarizer_refused_in_production(monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("RECAP_ENV", "production")
    with pytest.raises(ConfigError, match="RECAP_ALLOW_OFFLINE_SUMMARIZER"):
        build_summarizer(load_settings())
    monkeypatch.setenv("RECAP_ALLOW_OFFLINE_SUMMARIZER", "true")
    assert build_summarizer(load_settings()).model == "offline-extractive"
