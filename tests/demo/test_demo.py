"""`recap demo` runs the real pipeline with no services and no configuration.

The end-to-end tests run the command as a subprocess in a clean environment (only
PATH, HOME and TIKTOKEN_CACHE_DIR): no DATABASE_URL, no broker, no API key. The
scripted conversation is a data file, read here directly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from recap.demo.report import OFFLINE_BANNER
from recap.llm.offline import OFFLINE_MODEL
from recap.settings import DEFAULT_MODEL
from tests.env import API_KEY, FAKE, ROOT, TEST_ENV

# The installed console script next to this interpreter, as a user runs it, and the module.
RECAP_DEMO = [str(Path(sys.executable).with_name("recap")), "demo"]
MODULE_DEMO = [sys.executable, "-m", "recap.demo"]
CONVERSATION = ROOT / "recap" / "demo" / "conversation.json"


def script(n: int) -> list[tuple[str, str]]:
    """The first ``n`` messages of the demo conversation, from the data file."""
    return [(m["role"], m["content"])
            for m in json.loads(CONVERSATION.read_text(encoding="utf-8"))[:n]]


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": os.environ.get("HOME", str(cwd)),
             "TIKTOKEN_CACHE_DIR": TEST_ENV["TIKTOKEN_CACHE_DIR"], **env}
    return subprocess.run(command, cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=240)


def db_state(path: Path) -> tuple[dict[str, int], list[tuple[str, int, str | None]]]:
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        session = conn.execute(text(
            "SELECT message_count, summarized_message_count, summary_version FROM chat_sessions"
        )).mappings().one()
        runs = conn.execute(text("SELECT status, messages_condensed, model FROM summary_runs "
                                 "ORDER BY id")).all()
    engine.dispose()
    return dict(session), [tuple(r) for r in runs]


def test_demo_runs_offline_with_no_configuration(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite3"
    result = run([*RECAP_DEMO, "--db", str(db)], tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    out, err = result.stdout.splitlines(), result.stderr.splitlines()
    # Said once, in the header at the top, not on every line (nor again on stderr).
    assert out[1] == OFFLINE_BANNER, result.stdout[:2000]
    assert result.stdout.count("OFFLINE SUMMARIZER") == 1
    assert "ANTHROPIC_API_KEY" in "\n".join(out[:5])  # and how to get Claude instead
    # The summarizer's own warning (RECAP_SUMMARIZER=offline: ... not Claude) is not repeated.
    assert "not Claude" not in result.stderr and "OFFLINE" not in result.stderr
    assert re.search(r"applied: condensed \d+ messages", result.stdout)
    assert "a summary was applied" in result.stdout
    assert "<SUMMARY_OF_PRIOR_CONTEXT>" in result.stdout  # the assembled context is shown
    assert any("fed 80/80 messages" in line for line in err)
    assert "inspect with: sqlite3" in result.stdout  # a --db file is kept

    # Before/after: every message against what Recap sends, counted the same way.
    messages = re.search(r"messages in the context +(\d+) +(\d+) \+ a summary of (\d+)",
                         result.stdout)
    tokens = re.search(r"tokens \(of the 32,000 budget\) +([\d,]+) \((\d+)%\) +([\d,]+) "
                       r"\((\d+)%\)", result.stdout)
    assert messages and tokens, result.stdout[:3000]
    fed, kept, condensed = map(int, messages.groups())
    without, with_recap = (int(tokens.group(i).replace(",", "")) for i in (1, 3))
    assert fed == 80 and kept + condensed == 80
    assert with_recap < without
    assert re.search(rf"context for the next Claude call: {with_recap} tokens", result.stdout)
    assert re.search(r"session demo-\w+: title [\"'].+[\"']$", result.stdout, re.M)  # titled

    # The worker really ran the pipeline: the audit rows and counters agree.
    assert (tmp_path / "demo-broker.sqlite3").is_file()
    session, runs = db_state(db)
    applied = [r for r in runs if r[0] == "applied"]
    assert applied and all(model == OFFLINE_MODEL for _, _, model in applied)
    condensed = sum(n for _, n, _ in applied)
    assert session["summarized_message_count"] == condensed
    assert session["message_count"] + condensed == 80
    assert session["summary_version"] == len(applied)
    assert {status for status, _, _ in runs} <= {"applied", "skipped"}


def test_demo_module_keeps_its_temporary_directory_only_when_asked(tmp_path: Path) -> None:
    cwd, temp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    result = run([*MODULE_DEMO, "--messages", "6", "--keep"], cwd, TMPDIR=str(temp))

    assert result.returncode == 0, result.stderr[-3000:]
    assert "no summary was applied" in result.stdout
    assert "nothing to condense yet" in result.stdout
    match = re.search(r"recap demo: data (\S+)", result.stdout)
    assert match, result.stdout
    data = Path(match.group(1))
    assert data.is_file() and data.parent.parent == temp  # says where, and it is there
    assert f"inspect with: sqlite3 {data}" in result.stdout
    assert list(cwd.iterdir()) == []  # nothing written where it was started
    session, runs = db_state(data)
    assert (session["message_count"], runs) == (6, [])


def test_recap_demo_removes_its_temporary_directory(tmp_path: Path) -> None:
    cwd, temp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    result = run([*RECAP_DEMO, "--messages", "6"], cwd, TMPDIR=str(temp))

    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"recap demo: data (\S+) \(removed at the end; --keep keeps it\)",
                      result.stdout)
    assert match, result.stdout
    assert f"removed {Path(match.group(1)).parent} (--keep keeps it)" in result.stdout
    assert list(temp.iterdir()) == [] and list(cwd.iterdir()) == []


def test_a_failed_demo_removes_its_temporary_directory_too(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = run([*RECAP_DEMO, "--messages", "6"], tmp_path, TMPDIR=str(temp),
                 RECAP_ENV="production")  # refused: offline in production

    assert result.returncode == 1
    assert list(temp.iterdir()) == []


def test_demo_uses_claude_when_a_key_is_set(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite3"
    result = run([*RECAP_DEMO, "--db", str(db)], tmp_path,
                 ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=FAKE.url)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "OFFLINE" not in result.stdout + result.stderr
    assert f"summarizer: {DEFAULT_MODEL} (Claude)" in result.stdout
    _, runs = db_state(db)
    applied = [r for r in runs if r[0] == "applied"]
    assert applied and all(model == DEFAULT_MODEL for _, _, model in applied)
    assert len(FAKE.requests) >= len(applied)


@pytest.mark.parametrize("entry", [RECAP_DEMO, MODULE_DEMO], ids=["recap", "module"])
def test_demo_refuses_offline_in_production(tmp_path: Path, entry: list[str]) -> None:
    # The demo ignores these URLs and uses its own files.
    result = run([*entry, "--db", str(tmp_path / "demo.sqlite3")], tmp_path,
                 RECAP_ENV="production", DATABASE_URL="sqlite:///elsewhere.sqlite3",
                 CELERY_BROKER_URL="sqla+sqlite:///elsewhere-broker.sqlite3")

    assert result.returncode == 1
    assert "offline extractive summarizer is not Claude" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "elsewhere.sqlite3").exists()


@pytest.mark.parametrize("entry", [RECAP_DEMO, MODULE_DEMO], ids=["recap", "module"])
def test_demo_refuses_more_messages_than_the_script_holds(tmp_path: Path,
                                                          entry: list[str]) -> None:
    total = len(script(10**6))
    result = run([*entry, "--messages", str(total + 1), "--db", str(tmp_path / "d.sqlite3")],
                 tmp_path)

    assert result.returncode == 1
    assert f"--messages must be between 1 and {total}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "d.sqlite3").exists()


def test_db_option_names_the_data_file_or_its_directory(tmp_path: Path) -> None:
    from recap.demo.run import file_paths
    from recap.errors import ConfigError

    assert file_paths(str(tmp_path / "x.db")) == (tmp_path / "x.db", tmp_path / "x-broker.db")
    assert file_paths(str(tmp_path)) == (tmp_path / "recap.sqlite3",
                                         tmp_path / "recap-broker.sqlite3")
    with pytest.raises(ConfigError, match="does not exist"):
        file_paths(str(tmp_path / "missing" / "x.db"))


def test_the_offline_summarizer_is_an_explicit_choice_of_the_demo(tmp_path: Path) -> None:
    from recap.demo.run import demo_environment

    data, broker = tmp_path / "d.sqlite3", tmp_path / "b.sqlite3"
    no_key: dict[str, str] = {"ANTHROPIC_API_KEY": " ", "DATABASE_URL": "postgresql://x/y"}
    demo_environment(data, broker, no_key)
    assert no_key == {"ANTHROPIC_API_KEY": " ", "DATABASE_URL": f"sqlite:///{data}",
                      "CELERY_BROKER_URL": f"sqla+sqlite:///{broker}",
                      "RECAP_SUMMARIZER": "offline"}

    with_key = {"ANTHROPIC_API_KEY": API_KEY}
    demo_environment(data, broker, with_key)
    assert "RECAP_SUMMARIZER" not in with_key

    chosen = {"RECAP_SUMMARIZER": "claude"}  # the user's choice stands (and fails clearly)
    demo_environment(data, broker, chosen)
    assert chosen["RECAP_SUMMARIZER"] == "claude"


def test_a_worker_that_never_finishes_is_a_worker_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from recap.demo import run as demo
    from recap.demo.report import Out
    from recap.errors import ConfigError, WorkerTimeout

    monkeypatch.setattr(demo, "WAIT_S", 0.0)
    monkeypatch.setattr(demo, "session_state", lambda session_id: (False, []))
    with pytest.raises(WorkerTimeout, match="did not finish a job") as raised:
        demo.Feeder("demo-x", Out()).wait_idle()
    assert not isinstance(raised.value, ConfigError)


def test_the_conversation_file_is_the_scripted_incident_then_daily_follow_ups() -> None:
    messages = script(10**6)

    assert len(messages) == 1000  # the longest run anything uses (bench tokens, scenarios)
    assert [role for role, _ in messages] == ["user", "assistant"] * 500
    assert all(content.strip() for _, content in messages)
    assert messages[0][1].startswith("Hi, I'm Maya Okafor, SRE at Larkspur Analytics.")
    assert "```" in messages[0][1]  # pasted logs make messages as long as real ones
    assert messages[80][1].startswith("Daily check-in for ")
    assert CONVERSATION.stat().st_size < 2_000_000


def test_the_package_loader_reads_the_same_file() -> None:
    from recap.demo.conversation import available, load

    assert available() == len(script(10**6))
    assert load(80) == script(80)
    assert load(0) == []
    with pytest.raises(ValueError, match=f"has {available()} messages; asked for"):
        load(available() + 1)
