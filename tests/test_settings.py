from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from recap.core.planning.policy import Thresholds
from recap.errors import ConfigError, InvalidInput
from recap.llm.offline import OFFLINE_MODEL
from recap.settings import (
    DEFAULT_MODEL,
    effective,
    env_name,
    get_settings,
    load_settings,
    validate_overrides,
)
from recap.worker.jobs.resources import build_resources, reset_process_state

pytestmark = pytest.mark.unit


def test_defaults_match_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from recap.core.planning.adaptive import BULK_TOKENS

    for name in [n for n in os.environ if n.startswith("RECAP_")]:
        monkeypatch.delenv(name)  # the test environment's own values, too
    s = load_settings()
    assert (s.trigger_messages, s.trigger_tokens, s.batch_size, s.keep_recent,
            s.max_summary_tokens, s.context_budget_tokens, s.llm_timeout_s) == (
        30, 15000, 20, 10, 1024, 32000, 30.0)
    assert (s.max_retries, s.task_time_limit_s, s.lease_s) == (5, 300, 360)
    assert s.model == DEFAULT_MODEL
    assert s.prompt_caching is True
    assert s.condense_to == 0.0 and s.thresholds().condense_to == 0.0  # cache-aware folding off
    # The policy decides: the adaptive policy (the default) sends pasted blocks as
    # excerpts; the fixed rule's thresholds above stay its settings.
    assert s.policy == "adaptive" and s.thresholds().adaptive
    assert s.summarize_bulk_tokens == -1 and s.bulk_excerpt_tokens() == BULK_TOKENS


def test_bulk_excerpts_follow_the_policy_unless_set() -> None:
    from recap.core.planning.adaptive import BULK_TOKENS
    from recap.settings import Settings

    def of(**values: object) -> Settings:
        return Settings.model_validate(values)

    assert of(policy="adaptive").bulk_excerpt_tokens() == BULK_TOKENS
    assert of(policy="threshold").bulk_excerpt_tokens() == 0
    for policy in ("adaptive", "threshold"):
        assert of(policy=policy, summarize_bulk_tokens=0).bulk_excerpt_tokens() == 0
        assert of(policy=policy, summarize_bulk_tokens=400).bulk_excerpt_tokens() == 400


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
    ("RECAP_CONDENSE_TO", "0.8"),  # at the capacity trigger: a fold could never reach it
    ("RECAP_CONDENSE_TO", "-0.1"),
    ("RECAP_SUMMARIZE_BULK_TOKENS", "-2"),
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
    monkeypatch.setenv("RECAP_POLICY", "threshold")  # RECAP_BATCH_SIZE is the fixed rule's
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
    # Without a key Claude is still the choice: the offline stand-in is never a fallback.
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set.*RECAP_SUMMARIZER"):
        build_resources(load_settings())
    monkeypatch.setenv("RECAP_SUMMARIZER", "offline")
    with pytest.raises(ConfigError, match="RECAP_ALLOW_OFFLINE_SUMMARIZER"):
        build_resources(load_settings())
    monkeypatch.setenv("RECAP_ALLOW_OFFLINE_SUMMARIZER", "true")
    res = build_resources(load_settings())
    assert res.summarizer.model == OFFLINE_MODEL
    assert res.client is None  # offline: no SDK client, no network


def test_process_settings_are_cached_until_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    first = get_settings()
    monkeypatch.setenv("RECAP_POLICY", "threshold")  # RECAP_BATCH_SIZE is the fixed rule's
    monkeypatch.setenv("RECAP_BATCH_SIZE", "7")
    assert get_settings() is first  # read once per process
    reset_process_state()
    try:
        assert get_settings().batch_size == 7
    finally:
        monkeypatch.undo()
        reset_process_state()
    assert get_settings().batch_size == first.batch_size


def test_thresholds_come_from_the_settings() -> None:
    s = load_settings(policy="threshold", trigger_messages=12, trigger_tokens=345,
                      batch_size=6, keep_recent=3, context_budget_tokens=5000)
    assert s.thresholds() == Thresholds(trigger_messages=12, trigger_tokens=345, batch_size=6,
                                        keep_recent=3, context_budget_tokens=5000,
                                        max_batch_tokens=s.job_token_budget(),
                                        memory_limit=s.memory_budget_tokens,
                                        prices=s.prices_of())
    # The reply model's and the summarizer's rows of the price table.
    assert (s.thresholds().prices.reply_model, s.thresholds().prices.summarizer_model) == (
        s.reply_model, s.model)
    assert load_settings(policy="threshold", condense_to=0.3).thresholds().condense_to == 0.3
    assert load_settings(policy="adaptive").thresholds().adaptive


def test_session_overrides_apply_on_top_and_name_bad_keys() -> None:
    base = load_settings()
    tuned = effective(base, {"batch_size": 3, "model": "claude-other"})
    assert (tuned.batch_size, tuned.model, tuned.keep_recent) == (3, "claude-other",
                                                                  base.keep_recent)
    assert effective(base, None) is base
    with pytest.raises(InvalidInput, match="unknown session setting.*colour"):
        validate_overrides({"colour": "blue"}, base=base)
    with pytest.raises(InvalidInput, match="batch_size"):
        validate_overrides({"batch_size": 0}, base=base)
    assert effective(base, {"condense_to": 0.25}).thresholds().condense_to == 0.25


def test_env_names() -> None:
    assert env_name("database_url") == "DATABASE_URL"
    assert env_name("anthropic_api_key") == "ANTHROPIC_API_KEY"
    assert env_name("batch_size") == "RECAP_BATCH_SIZE"


# -- settings refused at start, each naming the variable and its range ----------

SECONDS = "(valid: {} to 2592000)"


@pytest.mark.parametrize(("var", "value", "expected", "valid"), [
    ("RECAP_ENQUEUE_STALE_S", "1000000000000", "Input should be less than or equal to 2592000",
     SECONDS.format(1)),
    ("RECAP_ENQUEUE_STALE_S", "1e12", "RECAP_ENQUEUE_STALE_S: ", SECONDS.format(1)),
    ("RECAP_LEASE_S", "1000000000000", "Input should be less than or equal to 2592000",
     SECONDS.format(2)),
    ("RECAP_LEASE_S", "1e12", "RECAP_LEASE_S: ", SECONDS.format(2)),
    ("RECAP_DEAD_COOLDOWN_S", "1000000000000", "Input should be less than or equal to 2592000",
     SECONDS.format(0)),
    ("RECAP_DEAD_COOLDOWN_S", "1e12", "RECAP_DEAD_COOLDOWN_S: ", SECONDS.format(0)),
    ("RECAP_SWEEP_INTERVAL_S", "inf", "Input should be a finite number", "(valid: 1 to 86400)"),
    ("RECAP_SWEEP_INTERVAL_S", "1e-9", "Input should be greater than or equal to 1",
     "(valid: 1 to 86400)"),
    ("RECAP_QUEUE", "   ", "RECAP_QUEUE: String should have at least 1 character", ""),
    ("RECAP_MODEL", " \t ", "RECAP_MODEL: String should have at least 1 character", ""),
    ("RECAP_MODEL", "arn:aws:bedrock:" + "x" * 90, "String should have at most 100 characters",
     ""),
    ("RECAP_LLM_TIMEOUT_S", "30", "RECAP_LLM_TIMEOUT_S (30) must be below RECAP_LEASE_S (30)",
     ""),
    ("RECAP_TASK_SOFT_TIME_LIMIT_S", "25", "RECAP_TASK_SOFT_TIME_LIMIT_S (25) must be below "
     "RECAP_TASK_TIME_LIMIT_S (25)", ""),
    ("RECAP_KEEP_RECENT", "0", "Input should be greater than or equal to 1",
     "(valid: 1 to 1000000)"),
    ("RECAP_LLM_MAX_INPUT_TOKENS", "2000", "RECAP_LLM_MAX_INPUT_TOKENS (2000) must be at least "
     "twice RECAP_MAX_SUMMARY_TOKENS (1024)", ""),
])
def test_settings_that_would_fail_later_are_refused_at_start(
        monkeypatch: pytest.MonkeyPatch, var: str, value: str, expected: str,
        valid: str) -> None:
    assert int(os.environ["RECAP_LEASE_S"]) == 30  # the test environment's lease
    monkeypatch.delenv("RECAP_TRIGGER_MESSAGES", raising=False)  # the default, 30
    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert var in message and expected in message, message
    assert valid in message, message  # a bounded number's valid range is spelled out


@pytest.mark.parametrize("placeholder", ["{conversation:>9999}", "{conversation!r}",
                                         "{previous_summary:.5}"])
def test_a_prompt_file_with_a_format_spec_is_refused_at_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, placeholder: str) -> None:
    name = placeholder.strip("{}").split(":")[0].split("!")[0]
    other = "conversation" if name == "previous_summary" else "previous_summary"
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(f"Summary so far: {{{other}}}\nNew: {placeholder}\n")
    monkeypatch.setenv("RECAP_PROMPT_FILE", str(prompt))
    with pytest.raises(ConfigError, match="RECAP_PROMPT_FILE") as info:
        build_resources(load_settings())
    assert placeholder in str(info.value) and "format spec or conversion" in str(info.value)


def test_a_session_keep_recent_of_zero_is_refused() -> None:
    # The newest message is never condensed: an assistant turn never leaves
    # before the tool results that answer it have arrived.
    with pytest.raises(InvalidInput, match="keep_recent"):
        validate_overrides({"keep_recent": 0}, base=load_settings())
    assert validate_overrides({"keep_recent": 1}, base=load_settings()) == {"keep_recent": 1}


# -- no silent lossy fallback ----------------------------------------------------

@pytest.mark.parametrize("key", [None, ""])
@pytest.mark.parametrize("env", ["development", "test"])
def test_no_api_key_is_refused_unless_offline_is_chosen(
        monkeypatch: pytest.MonkeyPatch, key: str | None, env: str) -> None:
    monkeypatch.setenv("RECAP_ENV", env)
    monkeypatch.delenv("RECAP_SUMMARIZER", raising=False)
    if key is None:
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY") as info:
        build_resources(load_settings())
    assert "RECAP_SUMMARIZER=offline" in str(info.value)
    monkeypatch.setenv("RECAP_SUMMARIZER", "offline")  # the explicit choice
    assert build_resources(load_settings()).summarizer.model == OFFLINE_MODEL


def _procfile_line(name: str) -> str:
    from tests.env import ROOT

    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} line in the Procfile")


@pytest.mark.parametrize("key", [None, ""])
def test_the_procfile_worker_line_requires_the_api_key(tmp_path: Path, key: str | None) -> None:
    """Run the worker line through a POSIX shell, with a stand-in ``recap`` that
    records how it was called, as a Procfile runner would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    called = tmp_path / "called"
    stub = bin_dir / "recap"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$ANTHROPIC_API_KEY" "$*" > {called}\n')
    stub.chmod(0o755)
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    env = base if key is None else {**base, "ANTHROPIC_API_KEY": key}
    line = _procfile_line("worker")
    refused = subprocess.run(["sh", "-c", line], env=env, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode != 0 and "ANTHROPIC_API_KEY" in refused.stderr
    assert not called.exists()  # celery never ran
    started = subprocess.run(["sh", "-c", line], env={**base, "ANTHROPIC_API_KEY": "sk-ant-x"},
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    key_seen, argv = called.read_text().splitlines()
    assert key_seen == "sk-ant-x" and argv.startswith("worker ")


def test_limits_under_which_a_job_condenses_less_than_the_smallest_adaptive_fold_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from recap.core.planning.adaptive import MIN_DEPTH

    monkeypatch.setenv("RECAP_POLICY", "adaptive")
    monkeypatch.setenv("RECAP_MAX_SUMMARY_TOKENS", "1024")
    # One call per job: the soft limit (20 s here) holds one call at its timeout.
    monkeypatch.setenv("RECAP_LLM_TIMEOUT_S", "10")
    monkeypatch.setenv("RECAP_LLM_MAX_INPUT_TOKENS", "4500")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    for name in ("RECAP_LLM_MAX_INPUT_TOKENS (4500)", "RECAP_MAX_SUMMARY_TOKENS (1024)",
                 "at most 928 tokens", f"RECAP_POLICY=adaptive ({MIN_DEPTH} tokens)",
                 f"at least {3 * 1024 + 500 + MIN_DEPTH}"):
        assert name in message, message
    monkeypatch.setenv("RECAP_LLM_MAX_INPUT_TOKENS", str(3 * 1024 + 500 + MIN_DEPTH))
    assert load_settings().job_token_budget() >= MIN_DEPTH  # the figure it names suffices
    monkeypatch.setenv("RECAP_LLM_MAX_INPUT_TOKENS", "4500")
    monkeypatch.setenv("RECAP_POLICY", "threshold")  # the fixed rule has no minimum fold
    assert load_settings().job_token_budget() == 928
