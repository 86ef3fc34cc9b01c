"""docs/INTEGRATIONS.md's examples, run as written with each framework's test
model in place of the line marked ``# your model``: at most 20 lines each, and
each stores its turn (user, tool call, tool result, answer) in Recap."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.integrations.common import drain, stored_total
from tests.integrations.lc_fakes import RecordingChatModel, script
from tests.integrations.test_openai_agents import ScriptedModel

pytestmark = pytest.mark.usefixtures("celery_worker_thread")
DOC = Path(__file__).resolve().parents[2] / "docs" / "INTEGRATIONS.md"


def examples() -> dict[str, str]:
    """The python blocks, by the heading above them."""
    text = DOC.read_text(encoding="utf-8")
    out = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        block = re.search(r"```python\n(.*?)```", section, flags=re.S)
        if block:
            out[section.split(":")[0].strip()] = block.group(1)
    return out


def _pydantic_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(p.part_kind == "tool-return" for p in last.parts):
        return ModelResponse(parts=[TextPart("Answer: sunny in Lisbon.")])
    return ModelResponse(parts=[ToolCallPart("weather", {"city": "Lisbon"}, "call_1")])


def _run(code: str, model: Any) -> None:
    lines = code.splitlines()
    marked = [i for i, line in enumerate(lines) if line.endswith("# your model")]
    assert len(marked) == 1, "each example marks its model line"
    lines[marked[0]] = "model = MODEL"
    exec(compile("\n".join(lines), str(DOC), "exec"), {"MODEL": model, "__name__": "example"})


@pytest.mark.parametrize(("section", "session", "model"), [
    ("LangChain", "docs-lc", lambda: RecordingChatModel(messages=iter(script(1)))),
    ("OpenAI Agents SDK", "docs-oa", ScriptedModel),
    ("pydantic-ai", "docs-pa", lambda: FunctionModel(_pydantic_model)),
])
def test_each_example_runs_and_stores_its_turn(section: str, session: str, model: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = examples()[section]
    assert len(code.splitlines()) <= 20
    _run(code, model())
    drain()
    assert "Answer" in capsys.readouterr().out
    assert stored_total(session) == 4  # user, tool call, tool result, answer


def test_every_example_is_tested() -> None:
    assert sorted(examples()) == ["LangChain", "OpenAI Agents SDK", "pydantic-ai"]
