"""docs/INTEGRATIONS.md's examples, run as written (extracted from the Markdown)
against the Messages API stand-in scripted as an assistant: the agent calls its
tool, reads the result and answers, and each example stores that turn (user, tool
call, tool result, answer) in Recap. The slow variant runs each in a fresh
virtualenv with only the wheel and its documented extra installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from recap.testing import FakeAnthropic, ok, tool_call
from tests.docs.blocks import ROOT, Block, blocks
from tests.integrations.common import drain, stored_total

pytestmark = [pytest.mark.system, pytest.mark.usefixtures("celery_worker_thread")]
DOC = ROOT / "docs" / "INTEGRATIONS.md"
# Heading -> (its extra, the session id the example uses).
EXAMPLES = {"LangChain": ("langchain", "docs-lc"),
            "OpenAI Agents SDK": ("openai-agents", "docs-oa"),
            "pydantic-ai": ("pydantic-ai", "docs-pa")}
ANSWER = "Answer: sunny in Lisbon."


def examples() -> dict[str, Block]:
    """The runnable python blocks, by the heading above them."""
    text = DOC.read_text(encoding="utf-8").splitlines()
    out = {}
    for block in blocks(DOC):
        if block.marker == "runs":
            heading = next(line for line in reversed(text[:block.line]) if line.startswith("## "))
            out[heading[3:].split(":")[0].strip()] = block
    return out


def script_the_assistant(fake: FakeAnthropic) -> None:
    fake.assistant(tool_call("weather", {"city": "Lisbon"}), ok(ANSWER))


@pytest.mark.parametrize("section", sorted(EXAMPLES))
def test_each_example_runs_and_stores_its_turn(section: str, fake_api: FakeAnthropic,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    block = examples()[section]
    assert len(block.code.splitlines()) <= 25
    script_the_assistant(fake_api)
    exec(compile(block.code, block.name, "exec"), {"__name__": "__main__"})
    drain()
    assert ANSWER in capsys.readouterr().out
    assert stored_total(EXAMPLES[section][1]) == 4  # user, tool call, tool result, answer
    assert len(fake_api.requests) >= 2  # the tool call, then the answer after its result


def test_every_example_is_tested() -> None:
    assert sorted(examples()) == sorted(EXAMPLES)


def build_wheel(tmp: Path) -> Path:
    """The wheel, built from a copy of exactly what it is made of."""
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("recap",):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                    str(dist), str(source)], check=True, capture_output=True, timeout=900)
    [wheel] = dist.glob("recap_worker-*.whl")
    assert zipfile.is_zipfile(wheel)
    return wheel


@pytest.mark.slow
@pytest.mark.parametrize("section", sorted(EXAMPLES))
def test_each_example_completes_in_a_fresh_venv_with_only_its_extra(
        section: str, fake_api: FakeAnthropic, tmp_path: Path) -> None:
    extra, session = EXAMPLES[section]
    wheel = build_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", f"{wheel}[{extra}]"],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    script = tmp_path / "example.py"
    script.write_text(examples()[section].code, encoding="utf-8")
    script_the_assistant(fake_api)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # no trace export to OpenAI from a test
    done = subprocess.run([python, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ANSWER in done.stdout
    drain()
    assert stored_total(session) == 4
