"""``recap check``: one cheap call proves the model name and the key work, or says
which is wrong (a 401 key, a 404 model), through the real SDK and the stand-in;
every verdict names the server, and one that is not api.anthropic.com proves no key."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recap import cli
from recap.llm.probe import server
from recap.testing import FakeAnthropic, error
from tests.env import API_KEY


def check(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(["check"])
    out, err = capsys.readouterr()
    assert API_KEY not in out + err
    return code, out, err


@pytest.mark.unit
def test_a_working_model_and_key_pass_with_one_small_call(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys)
    # The stand-in answered: that proves the path to it, not an Anthropic key.
    assert code == 0 and out.startswith(f"ok: the Messages API at {fake_api.url} answered "
                                        "for model ")
    assert "points away from api.anthropic.com" in out and "key work" not in out
    assert len(fake_api.requests) == 1 and fake_api.requests[0]["max_tokens"] == 1


@pytest.mark.unit
def test_an_unknown_model_is_named_as_the_problem(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_MODEL="claude-typo-1")
    fake_api.script(error(404, "model: claude-typo-1"))
    code, _, err = check(capsys)
    assert code == 1
    assert err.startswith("recap: error: model: model 'claude-typo-1' was not found at "
                          f"{fake_api.url} ")
    assert "the key was accepted" in err and "RECAP_MODEL" in err


@pytest.mark.unit
@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_named_as_the_problem(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str], status: int) -> None:
    fake_api.script(error(status, "invalid x-api-key"))
    code, _, err = check(capsys)
    assert code == 1 and err.startswith("recap: error: key: the API key ")
    assert "model" not in err.split("(")[0]


@pytest.mark.unit
def test_an_outage_proves_nothing_and_says_so(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str]) -> None:
    fake_api.script(error(529, "Overloaded"))
    code, _, err = check(capsys)
    assert code == 1 and err.startswith("recap: error: unreachable: could not make the check "
                                        f"at {fake_api.url}: ")


@pytest.mark.unit
def test_offline_it_names_the_server_it_could_not_reach(
        capsys: pytest.CaptureFixture[str], settings_env: Callable[..., None]) -> None:
    settings_env(ANTHROPIC_BASE_URL="http://127.0.0.1:1")  # nothing listens on port 1
    code, _, err = check(capsys)
    assert code == 1
    assert err.startswith("recap: error: unreachable: could not reach http://127.0.0.1:1: ")


@pytest.mark.unit
def test_the_server_is_named_without_credentials() -> None:
    import anthropic

    official = anthropic.Anthropic(api_key="k", base_url="https://api.anthropic.com")
    assert server(official) == "https://api.anthropic.com"
    proxied = anthropic.Anthropic(api_key="k", base_url="https://u:secret@gw.example:8443/v1/")
    assert server(proxied) == "https://gw.example:8443/v1"


def test_offline_there_is_nothing_to_check(
        fake_api: FakeAnthropic, capsys: pytest.CaptureFixture[str],
        settings_env: Callable[..., None]) -> None:
    settings_env(RECAP_SUMMARIZER="offline")
    code, out, _ = check(capsys)
    assert code == 0 and "no Claude call to check" in out and fake_api.requests == []
