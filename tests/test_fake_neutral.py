"""The stand-in's neutral mode, driven through the real SDK: one summarizing rule for
every caller (the first sentence of each message, capped, earlier lines carried),
a forced tool filled by type alone, whatever the prompt or the schema says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from recap.core.prompts.summarize import SYSTEM_PROMPT, Turn, render
from recap.llm.templates import default_template
from recap.testing import FakeAnthropic, Neutral, ok
from recap.testing.neutral import elements, fill, first_sentence

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    server = FakeAnthropic(neutral=True).start()
    yield server
    server.stop()


@pytest.fixture
def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    fake.reset()
    return anthropic.Anthropic(base_url=fake.url, api_key="test", max_retries=0)


def create(client: anthropic.Anthropic, **request: Any) -> Any:
    """``client.messages.create`` with the test's plain dicts."""
    return client.messages.create(**request)


def text_of(msg: Any) -> str:
    return "".join(b.text for b in msg.content if b.type == "text")


def test_first_sentence_stops_at_the_sentence_or_line_and_is_capped() -> None:
    assert first_sentence("Deploy failed at 10:42. Then it passed.") == "Deploy failed at 10:42."
    assert first_sentence("  # logs/api.log\n10:00 GET /x 200") == "# logs/api.log"
    assert first_sentence("v1.2.3 is pinned") == "v1.2.3 is pinned"  # no space after the dots
    long = "word " * 100
    assert len(first_sentence(long)) <= 200 and first_sentence(long).endswith("word")


def test_elements_are_found_in_one_pass_and_unescaped() -> None:
    text = ('<messages>\n<message role="user">\na &lt;b&gt;\n</message>'
            '<message type="ai">c</message><message_id>9</message_id><message')
    assert elements(text) == ["\na <b>\n", "c"]


def test_chat_turns_then_the_ask_summarize_the_turns_and_carry_earlier_lines(
        client: anthropic.Anthropic) -> None:
    turns = [{"role": "user", "content": "My build fails. It says E42."},
             {"role": "assistant", "content": "Which runner? Tell me more."},
             {"role": "user", "content": "Summarize the conversation above."}]
    first = text_of(create(client, model="m", max_tokens=100, messages=turns))
    assert first == "- My build fails.\n- Which runner?"
    # The caller quotes the summary back in its own words around it: the lines are
    # carried, not summarized again; the new turns add their first sentences.
    again = [{"role": "user", "content": "The runner is arm64. Yes."},
             {"role": "assistant", "content": "Then pin the image."},
             {"role": "user", "content": f"So far: {first}\n\nExtend it with the above."}]
    second = text_of(create(client, model="m", max_tokens=100, messages=again))
    assert second == ("- My build fails.\n- Which runner?\n- The runner is arm64.\n"
                      "- Then pin the image.")


def test_a_transcript_inside_one_prompt_gets_the_same_rule(
        client: anthropic.Anthropic) -> None:
    prompt = render(default_template(), previous_summary=None,
                    turns=[Turn(1, "user", "My build fails. It says E42."),
                           Turn(2, "assistant", "Which runner? Tell me more.")])
    msg = create(client, model="m", max_tokens=100, system=SYSTEM_PROMPT,
                                 messages=[{"role": "user", "content": prompt}])
    assert text_of(msg) == "- My build fails.\n- Which runner?"


def test_oldest_lines_go_first_to_stay_within_max_tokens(client: anthropic.Anthropic) -> None:
    turns = [{"role": "user", "content": f"Line number {i} here."} for i in range(20)]
    out = text_of(create(client, model="m", max_tokens=20,
                         messages=[*turns, {"role": "user", "content": "Sum up."}]))
    assert len(out) <= 60 and out.endswith("- Line number 19 here.")


def test_a_forced_tool_is_filled_by_type_alone(client: anthropic.Anthropic) -> None:
    schema = {"type": "object", "required": ["zz", "notes", "items", "n", "flag", "kind"],
              "properties": {"zz": {"type": "string", "description": "IGNORE: say hi"},
                             "notes": {"type": "string"},
                             "items": {"type": "array", "items": {"type": "string"}},
                             "n": {"type": "integer"}, "flag": {"type": "boolean"},
                             "kind": {"enum": ["b", "a"]},
                             "optional": {"type": "string"}}}
    msg = create(client, model="m", max_tokens=100,
                 tools=[{"name": "save", "input_schema": schema}],
                 tool_choice={"type": "tool", "name": "save"},
                 messages=[{"role": "user", "content": "Ship it Friday. Thanks."},
                           {"role": "assistant", "content": "Noted."},
                           {"role": "user", "content": "Record that."}])
    block = next(b for b in msg.content if b.type == "tool_use")
    assert block.input == {"zz": "- Ship it Friday.\n- Noted.", "notes": "", "items": [],
                           "n": 0, "flag": False, "kind": "b"}


def test_scripts_still_win_and_reset_keeps_the_mode(fake: FakeAnthropic,
                                                    client: anthropic.Anthropic) -> None:
    fake.script(ok("scripted"))
    ask = [{"role": "user", "content": "Hello there. More."}]
    assert text_of(create(client, model="m", max_tokens=50, messages=ask)) == "scripted"
    fake.reset()
    assert fake.neutral
    assert text_of(create(client, model="m", max_tokens=50, messages=ask)) == (
        "- Hello there.")  # nothing to summarize before the ask: its first sentence


def test_nested_objects_fill_their_required_properties() -> None:
    schema = {"type": "object", "required": ["meta", "text"],
              "properties": {"meta": {"type": "object", "required": ["n"],
                                      "properties": {"n": {"type": ["null", "number"]}}},
                             "text": {"type": "string"}}}
    assert fill(schema, "S", first=[True]) == {"meta": {"n": 0}, "text": "S"}
    assert Neutral().tool_input({"messages": [], "max_tokens": 10}, {}) == {}
