"""What a wrong setting says: a RECAP_* variable no setting reads is named with the
closest valid one; of settings that contradict, the error leads with the one that
was set (the one to change); a blank ANTHROPIC_BASE_URL is unset."""

from __future__ import annotations

import logging

import pytest

from recap.errors import ConfigError, InvalidInput
from recap.settings import load_settings, unknown_variables, validate_overrides


@pytest.mark.parametrize(("name", "hint"), [
    ("RECAP_BATCHSIZE", ": did you mean RECAP_BATCH_SIZE?"),
    ("RECAP_TRIGER_TOKENS", ": did you mean RECAP_TRIGGER_TOKENS?"),
    ("RECAP_ANTHROPIC_BASE_URL", ": did you mean ANTHROPIC_BASE_URL?"),
    ("recap_api_key", ": did you mean RECAP_API_KEYS?"),
    ("RECAP_MEMORY_BUDGET", ": did you mean RECAP_MEMORY_BUDGET_TOKENS?"),
    ("RECAP_COLOUR", "; docs/SETTINGS.md lists the settings"),
])
def test_an_unknown_recap_variable_names_the_closest_setting(name: str, hint: str) -> None:
    assert unknown_variables({name: "5"}) == [f"{name} is not a Recap setting and is "
                                              f"ignored{hint}"]


def test_settings_and_the_deployments_own_variables_are_not_warned_of() -> None:
    environ = {"RECAP_BATCH_SIZE": "5", "recap_keep_recent": "3", "DATABASE_URL": "x",
               "RECAP_WORKER_CONCURRENCY": "4", "RECAP_BEAT_DIR": "/srv/beat",
               "RECAP_API_HOST_PORT": "8000", "RECAP_TEST_PG": "x", "PATH": "/bin"}
    assert unknown_variables(environ) == []


def test_loading_the_settings_warns_once_per_unknown_variable(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("RECAP_BATCHSIZE", "10")
    with caplog.at_level(logging.WARNING, logger="recap.settings"):
        load_settings()
    assert [r.getMessage() for r in caplog.records if r.name == "recap.settings"] == [
        "RECAP_BATCHSIZE is not a Recap setting and is ignored: did you mean "
        "RECAP_BATCH_SIZE?"]


def first_error(**values: object) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(**values)
    return str(caught.value).removeprefix("invalid configuration: ")


def test_a_trigger_under_the_adaptive_policy_is_named_as_not_read() -> None:
    # The adaptive policy (the default) reads no trigger: the error is that it was
    # set, not that the default keep window is above it.
    message = first_error(trigger_messages=5)
    assert message.startswith("RECAP_TRIGGER_MESSAGES is not read by the adaptive policy "
                              "(RECAP_POLICY=adaptive, the default), so setting it is refused")


def test_of_two_settings_that_contradict_the_one_set_leads() -> None:
    hook = ": otherwise the hook queues a job on every reply that can only be skipped"
    assert first_error(policy="threshold", trigger_messages=5) == (
        "trigger_messages (RECAP_TRIGGER_MESSAGES, 5) must be above keep_recent "
        "(RECAP_KEEP_RECENT, 10)" + hook)
    assert first_error(policy="threshold", keep_recent=30) == (
        "keep_recent (RECAP_KEEP_RECENT, 30) must be below trigger_messages "
        "(RECAP_TRIGGER_MESSAGES, 30)" + hook)
    assert first_error(context_budget_tokens=1000) == (
        "context_budget_tokens (RECAP_CONTEXT_BUDGET_TOKENS, 1000) must be above "
        "max_summary_tokens (RECAP_MAX_SUMMARY_TOKENS, 1024)")
    assert first_error(max_summary_tokens=2000, context_budget_tokens=1500) == (
        "max_summary_tokens (RECAP_MAX_SUMMARY_TOKENS, 2000) must be below "
        "context_budget_tokens (RECAP_CONTEXT_BUDGET_TOKENS, 1500)")
    assert first_error(task_soft_time_limit_s=400, task_time_limit_s=300, lease_s=360) == (
        "RECAP_TASK_SOFT_TIME_LIMIT_S (400) must be below RECAP_TASK_TIME_LIMIT_S (300)")


def test_the_keep_window_is_free_of_the_trigger_under_the_adaptive_policy() -> None:
    # The adaptive policy keeps its own window, at most keep_recent, and no trigger:
    # a keep_recent above the fixed rule's trigger contradicts nothing there.
    assert load_settings(keep_recent=40).keep_recent == 40
    base = load_settings()
    assert validate_overrides({"keep_recent": 40}, base=base) == {"keep_recent": 40}
    with pytest.raises(InvalidInput, match=r"^invalid session settings: trigger_messages"
                                           r" \(RECAP_TRIGGER_MESSAGES, 5\) "
                                           r"must be above keep_recent"):
        validate_overrides({"policy": "threshold", "trigger_messages": 5}, base=base)


def test_a_blank_anthropic_base_url_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    from recap.worker.jobs.resources import build_resources

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")  # compose's ${ANTHROPIC_BASE_URL:-}
    monkeypatch.setenv("RECAP_SUMMARIZER", "claude")
    settings = load_settings()
    config = build_resources(settings).client
    assert config is not None
    client = config.client
    # The SDK, given no base_url, would read the blank variable and call "".
    assert str(client.base_url).rstrip("/") == "https://api.anthropic.com"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8765")
    assert first_error() == ("ANTHROPIC_BASE_URL: expected an http:// or https:// URL, or "
                             "leave it unset (got 'localhost:8765')")


def test_recap_stats_says_the_fixed_rules_settings_are_refused_not_ignored() -> None:
    from recap.cli.stats import fold_rule

    rule = fold_rule("adaptive", trigger_messages=30, trigger_tokens=15000, batch_size=20,
                     keep_recent=10)
    assert ("RECAP_BATCH_SIZE and RECAP_CONDENSE_TO do not apply (setting one is refused: "
            "RECAP_POLICY=threshold uses them)") in rule
    assert "ignored" not in rule and "not read" not in rule
