"""The public test double's answer order, driven through the real SDK as a user's
test drives it: routes, then the script, then ``always``, then the default answer;
Recap's own calls are named by what Recap sends, not by the conversation."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest

from recap.core.prompts.summarize import SYSTEM_PROMPT
from recap.core.prompts.titles import TITLE_SYSTEM
from recap.core.retention.repairs import repair_prompt
from recap.testing import FakeAnthropic, Reply, Request, error, ok, recap_kind

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic(routes=[lambda r: ok("standing") if r.mentions("STANDING")
                                   else None]).start()
    yield server
    server.stop()


@pytest.fixture
def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    fake.reset()
    return anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


def ask(client: anthropic.Anthropic, text: str, *, system: str = "Be brief.") -> str:
    msg = client.messages.create(model="m", max_tokens=100, system=system,
                                 messages=[{"role": "user", "content": text}])
    return "".join(b.text for b in msg.content if b.type == "text")


def test_routes_then_script_then_always_then_default(fake: FakeAnthropic,
                                                     client: anthropic.Anthropic) -> None:
    seen: list[str] = []

    @fake.route
    def routed(request: Request) -> Reply | None:
        seen.append(request.prompt)
        return ok("routed") if request.mentions("ROUTE-ME") else None

    fake.script(ok("scripted"))
    fake.always(ok("always"))
    assert ask(client, "please ROUTE-ME now") == "routed"
    assert ask(client, "STANDING order") == "standing"  # the test's route passed it on
    assert ask(client, "first") == "scripted"
    assert ask(client, "second") == "always"
    fake.always(None)
    assert ask(client, "a b c") == "The user said: a b c"
    assert seen == ["please ROUTE-ME now", "STANDING order", "first", "second", "a b c"]


def test_reset_drops_the_tests_routes_and_keeps_the_standing_ones(
        fake: FakeAnthropic, client: anthropic.Anthropic) -> None:
    fake.route(lambda r: ok("gone"))
    fake.reset()
    assert ask(client, "x STANDING") == "standing"
    assert ask(client, "hello") == "The user said: hello"


def test_a_route_can_fail_a_call(fake: FakeAnthropic, client: anthropic.Anthropic) -> None:
    fake.route(lambda r: error(529, "Overloaded") if r.mentions("poison-42") else None)
    with pytest.raises(anthropic.APIStatusError) as caught:
        ask(client, "session poison-42")
    assert caught.value.status_code == 529
    assert ask(client, "session ok") == "The user said: session ok"


def test_a_forced_tool_is_answered_with_its_input(fake: FakeAnthropic,
                                                  client: anthropic.Anthropic) -> None:
    routed: list[str | None] = []

    def record(request: Request) -> None:
        routed.append(request.tool)

    fake.route(record)
    msg = client.messages.create(
        model="m", max_tokens=100, system="s",
        tools=[{"name": "record_note", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "record_note"},
        messages=[{"role": "user", "content": "FACT: the user is vegetarian"}])
    [block] = msg.content
    assert block.type == "tool_use" and block.name == "record_note"
    facts = [{"fact": "the user is vegetarian", "category": "fact", "importance": 3}]
    assert isinstance(block.input, dict) and block.input["facts"] == facts
    assert msg.stop_reason == "tool_use" and routed == ["record_note"]


def test_recap_kind_names_recaps_calls_by_system_prompt_and_template() -> None:
    def body(system: str, text: str) -> dict[str, object]:
        return {"model": "m", "max_tokens": 8, "system": system,
                "messages": [{"role": "user", "content": text}]}

    repair = repair_prompt("The user flies on May 3.", ["- gate B12 (the user said: gate B12)"])
    assert recap_kind(body(SYSTEM_PROMPT, repair)) == "repair"
    assert recap_kind(body(SYSTEM_PROMPT, "<previous_summary>...")) == "summary"
    assert recap_kind(body(TITLE_SYSTEM, "omits these specifics")) == "title"
    # The conversation's wording never names a call: a user quoting Recap's repair
    # prompt to another client is just another request.
    assert recap_kind(body("Be brief.", repair)) is None


def test_the_repair_default_adds_the_listed_items(fake: FakeAnthropic,
                                                  client: anthropic.Anthropic) -> None:
    prompt = repair_prompt("The user flies on May 3.", ["gate B12 (the user said: gate B12)"])
    answer = ask(client, prompt, system=SYSTEM_PROMPT)
    assert answer == "The user flies on May 3.\ngate B12 (the user said: gate B12)"
    assert fake.requests[-1]["system"] == SYSTEM_PROMPT


def test_answers_pair_each_answered_request_with_what_it_got(
        fake: FakeAnthropic, client: anthropic.Anthropic) -> None:
    fake.script(ok("first answer"), error(529), ok("second"))
    assert ask(client, "one") == "first answer"
    with pytest.raises(anthropic.APIStatusError):
        ask(client, "two")
    assert ask(client, "three") == "second"
    # Three requests, two answers: an error is not an answer (nothing is billed).
    assert len(fake.requests) == 3
    assert [(b["messages"][0]["content"], m["content"][0]["text"])
            for b, m in fake.answers] == [("one", "first answer"), ("three", "second")]
    assert all(m["usage"]["output_tokens"] >= 1 for _, m in fake.answers)
    fake.reset()
    assert fake.answers == []
