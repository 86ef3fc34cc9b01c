"""Issue 15, "The first hour": what a new user meets in the ``recap`` commands.

Why a session is not summarized yet (``recap context``/``stats``/``sessions``),
``recap summarize --force``, titles made visible (ingest, stats, failures,
sessions), the help texts, ``| head`` without a traceback, and
``recap tokenizer export`` for offline machines.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from models import ChatSession, Memory, TitleRun
from tests.env import FAKE, TEST_ENV
from tests.fake_anthropic import error, ok
from tests.helpers import LOW, message_ids, runs, seed, statuses, wait_for
from worker import db
from worker.cli import main
from worker.errors import PermanentLLMError
from worker.jobs.resources import get_resources
from worker.jobs.titles import title_session

RECAP = str(Path(sys.executable).with_name("recap"))
SHARED_CACHE = Path(TEST_ENV["TIKTOKEN_CACHE_DIR"])
CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # ../shared/tiktoken-cache/README.md


@pytest.fixture(autouse=True)
def no_title_runs() -> Iterator[None]:
    """title_runs is not among the tables the shared fixture empties: start and end empty."""
    with db.transaction() as s:
        s.execute(delete(TitleRun))
    yield
    with db.transaction() as s:
        s.execute(delete(TitleRun))


@pytest.fixture
def low(settings_env: Callable[..., None]) -> None:
    """LOW: trigger at >10 messages and a >100-token batch of 5, keeping the newest 4."""
    settings_env(**LOW)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def set_title(session_id: str, title: str) -> None:
    with db.transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == session_id).values(title=title))


# -- why not summarized yet, and --force ---------------------------------------------

def test_context_keeps_stdout_json_and_explains_on_stderr(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("few", 8)
    set_title("few", "Lisbon offsite")
    code, out, err = run(capsys, "context", "few")
    assert code == 0, err
    assert len(json.loads(out)["messages"]) == 8  # stdout is only the context
    lines = err.splitlines()
    assert lines[0].startswith('few "Lisbon offsite": 8 messages, ')
    assert lines[0].endswith("of the 32000-token budget")
    assert lines[1] == "  not summarized yet: 8 messages, not over 10"
    assert lines[2].startswith("  next summary: over 10 messages (3 more) with a candidate "
                               "batch over 100 tokens")
    assert "or the context reaching 80% of the 32000-token budget" in lines[2]
    assert lines[3] == ("  now: recap summarize few --force condenses the 4 oldest messages "
                        f"({_tokens('few', 4)} tokens)")

    code, out, err = run(capsys, "context", "few", "--quiet")
    assert (code, err) == (0, "") and json.loads(out)


def _tokens(session_id: str, n: int) -> int:
    from models import ChatMessage

    with db.transaction() as s:
        return sum(s.scalars(select(ChatMessage.token_count)
                             .where(ChatMessage.session_id == session_id)
                             .order_by(ChatMessage.id).limit(n)))


def test_summarize_force_condenses_the_candidate_batch_recorded_as_forced(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    ids = seed("few", 8)
    code, out, _ = run(capsys, "summarize", "few", "--now")  # no rule fires: skipped
    assert code == 0 and json.loads(out)["status"] == "skipped"
    assert runs("few")[-1].reason.startswith("below thresholds: 8 messages")  # type: ignore[union-attr]

    code, out, err = run(capsys, "summarize", "few", "--force")
    assert code == 0, err
    outcome = json.loads(out)
    assert outcome["status"] == "applied" and outcome["messages_condensed"] == 4
    assert outcome["reason"].startswith("forced: below thresholds: 8 messages")
    assert message_ids("few") == ids[4:]  # the 4 outside the keep window went
    assert statuses("few") == ["skipped", "applied"]
    assert runs("few")[-1].reason == outcome["reason"]  # type: ignore[union-attr]

    # What is left is all keep window: forcing again condenses nothing, and says why.
    code, out, _ = run(capsys, "summarize", "few", "--force")
    skipped = json.loads(out)
    assert skipped["status"] == "skipped"
    assert "nothing outside the keep window can be condensed" in skipped["reason"]


def test_a_due_session_is_not_forced_and_says_so(
        low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("due", 12)
    _, _, err = run(capsys, "context", "due")
    assert "  due now: normal: 12 messages > 10" in err
    assert "the hook queues it after the next assistant reply" in err
    code, out, _ = run(capsys, "summarize", "due", "--force")
    assert code == 0 and json.loads(out)["reason"].startswith("normal:")  # the rule, not forced


def test_sixty_short_messages_on_the_defaults_wait_for_capacity(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's first hour: default thresholds, 60 ordinary messages, nothing happens."""
    seed("chat", 60, words=12)
    code, out, err = run(capsys, "stats")
    assert code == 0, err
    assert "the largest session (by active tokens), and what triggers the next summary:" in out
    assert "chat (untitled): 60 messages, " in out
    assert "normal rule cannot fire before the next summary" in out
    assert re.search(r"next summary: the context reaching 80% of the 32000-token budget "
                     r"\(\d+ more tokens\)", out)
    assert "now: recap summarize chat --force condenses the 20 oldest messages" in out

    code, out, _ = run(capsys, "stats", "--json")
    (top,) = json.loads(out)["largest_sessions"]
    assert (top["session_id"], top["state"], top["forced_messages"]) == \
        ("chat", "normal-blocked", 20)

    code, out, _ = run(capsys, "summarize", "chat", "--force")
    assert json.loads(out)["messages_condensed"] == 20
    assert runs("chat")[-1].reason.startswith("forced: below thresholds: 60 messages")  # type: ignore[union-attr]


def test_stats_top_zero_and_sessions_list(low: None, capsys: pytest.CaptureFixture[str]) -> None:
    seed("big", 12, words=60)
    seed("small", 3)
    set_title("small", "Quick question")
    code, out, _ = run(capsys, "stats", "--top", "0")
    assert code == 0 and "largest sessions" not in out
    assert json.loads(run(capsys, "stats", "--json", "--top", "0")[1])["largest_sessions"] == []

    code, out, err = run(capsys, "sessions")
    assert code == 0, err
    header, first, second = out.splitlines()
    assert header.split() == ["SESSION", "MESSAGES", "TOKENS", "CONTEXT", "SUMMARY", "STATE",
                              "TITLE"]
    assert first.split()[:2] == ["big", "12"] and first.split()[5:] == ["due", "(untitled)"]
    assert second.split()[:2] == ["small", "3"] and second.endswith("few-messages  Quick question")
    items = json.loads(run(capsys, "sessions", "--json", "--limit", "1")[1])
    assert [(i["session_id"], i["title"], i["state"]) for i in items] == [("big", None, "due")]


def test_sessions_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "sessions") == (0, "no sessions with active messages\n", "")


# -- titles: queued, counted, failed, shown -------------------------------------------------

def exchange(session_id: str) -> list[str]:
    return [json.dumps({"session_id": session_id, "role": role, "content": text})
            for role, text in (("user", "Our nginx returns 502s after the deploy. Why?"),
                               ("assistant", "Probably the upstream timeout."))]


@pytest.mark.usefixtures("celery_worker_thread")
def test_ingest_counts_title_jobs_and_stats_shows_their_tokens(
        settings_env: Callable[..., None], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings_env(RECAP_TITLES_ENABLED="true")
    FAKE.script(ok("Nginx 502s after a deploy"), ok("Nginx 502s after a deploy"))
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(exchange("t1") + exchange("t2")) + "\n", encoding="utf-8")

    code, out, err = run(capsys, "ingest", str(path))

    assert code == 0, err
    assert out == "added 4, bad 0, summarize jobs queued 0, title jobs queued 2\n"
    wait_for(lambda: _count(TitleRun.status == "titled") == 2, what="both title runs")
    data = json.loads(run(capsys, "stats", "--json")[1])
    requests = [r for r in FAKE.requests if r["max_tokens"] < 100]  # the two title calls
    assert len(requests) == 2
    assert (data["sessions_titled"], data["title_runs"], data["title_failures"]) == (2, 2, 0)
    assert data["title_input_tokens"] > 0 and data["title_output_tokens"] > 0
    assert data["api_input_tokens"] == 0  # summary usage is counted apart
    _, text, _ = run(capsys, "stats")
    assert re.search(r"API input tokens \(titles\) +\d+", text)
    _, listing, _ = run(capsys, "sessions")
    assert listing.count("Nginx 502s after a deploy") == 2


def _count(condition: Any) -> int:
    with db.transaction() as s:
        return len(list(s.scalars(select(TitleRun.id).where(condition))))


def test_a_failed_title_call_is_in_failures_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    seed("untitled", 2)
    FAKE.always(error(401, "invalid x-api-key"))
    with pytest.raises(PermanentLLMError):
        title_session("untitled", res=get_resources())
    FAKE.always(None)

    code, out, err = run(capsys, "failures")
    assert code == 0, err
    assert "failed  title      session=untitled" in out
    assert "AuthenticationError 401" in out
    (item,) = json.loads(run(capsys, "failures", "--json")[1])
    assert (item["job"], item["status"], item["session_id"]) == ("title", "failed", "untitled")
    data = json.loads(run(capsys, "stats", "--json")[1])
    assert (data["title_runs"], data["title_failures"], data["sessions_titled"]) == (1, 1, 0)

    FAKE.script(ok("Named at last"))
    assert title_session("untitled", res=get_resources()) == "Named at last"
    _, _, err = run(capsys, "context", "untitled")
    assert err.startswith('untitled "Named at last": 2 messages')


# -- help texts, memories, a closed pipe ---------------------------------------------------

def test_configure_help_lists_every_valid_key(capsys: pytest.CaptureFixture[str]) -> None:
    from worker.cli.configure import KEYS
    from worker.settings import TUNABLE

    assert list(KEYS) == list(TUNABLE)
    code, out, _ = run(capsys, "configure", "--help")
    assert code == 0 and "valid keys" in out
    for key in TUNABLE:
        assert re.search(rf"^  {key} +\S", out, re.M), key


def _help(capsys: pytest.CaptureFixture[str], *command: str) -> str:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    return " ".join(out.split())  # argparse wraps lines


def test_ingest_help_says_the_hook_runs_after_assistant_messages(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "ingest")
    assert "The reply hook (after_reply) runs after each assistant message" in text
    assert "title jobs queued N" in text


def test_memories_explains_its_columns(capsys: pytest.CaptureFixture[str]) -> None:
    seed("mem", 2)
    with db.transaction() as s:
        for fact, category, importance in (("The user prefers dark mode.", "preference", 4),
                                           ("The user lives in Lisbon.", "personal", 2)):
            s.add(Memory(session_id="mem", fact=fact, category=category, importance=importance,
                         fact_hash=hashlib.sha256(fact.encode()).hexdigest(),
                         first_message_id=1, last_message_id=5))
    code, out, _ = run(capsys, "memories", "mem")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "mem: 2 memories, most important first"
    assert lines[1].startswith("columns: [IMPORTANCE 1-5, 5 = most important] CATEGORY")
    assert lines[2] == "[4] preference The user prefers dark mode.  (messages 1-5)"
    assert "IMPORTANCE is" not in out and "[IMPORTANCE" in _help(capsys, "memories")
    seed("none", 1)
    assert "no memories yet" in run(capsys, "memories", "none")[1]


def test_stats_json_into_a_closed_pipe_prints_no_traceback(low: None) -> None:
    seed("s", 3)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written, like `| head` after exiting
    try:
        done = subprocess.run([RECAP, "stats", "--json"], stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=60, env={**os.environ, **TEST_ENV})
    finally:
        os.close(write)
    assert done.stderr == ""  # neither a traceback nor "Exception ignored ... BrokenPipeError"
    assert done.returncode == 141


# -- tiktoken offline ---------------------------------------------------------------------------

OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_GYM_CACHE_DIR",)}
    return {**env, **OFFLINE, "TIKTOKEN_CACHE_DIR": str(cache)}


def test_the_cache_file_is_named_by_the_sha1_of_the_download_url() -> None:
    from worker.cli.tokenizer import ENCODING_SHA256, cache_name

    assert cache_name() == CL100K_FILE
    assert hashlib.sha256((SHARED_CACHE / CL100K_FILE).read_bytes()).hexdigest() == \
        ENCODING_SHA256


def test_tokenizer_export_copies_the_cache_file_that_then_loads_offline(tmp_path: Path) -> None:
    source, target = tmp_path / "cache", tmp_path / "out" / "tiktoken"
    source.mkdir()
    shutil.copy(SHARED_CACHE / CL100K_FILE, source / CL100K_FILE)

    done = subprocess.run([RECAP, "tokenizer", "export", str(target)], env=_env(source),
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export TIKTOKEN_CACHE_DIR={target}\n"
    assert f"copied cl100k_base (1,681,126 bytes) to {target / CL100K_FILE}" in done.stderr
    assert "DATABASE_URL" not in done.stderr  # no database involved
    assert [p.name for p in target.iterdir()] == [CL100K_FILE]
    # The copy alone, with no network: tiktoken loads it (it checks the sha256 too).
    check = subprocess.run(
        [sys.executable, "-c", "from worker.llm.tokens import count_tokens; "
         "print(count_tokens('hello world'))"],
        env=_env(target), capture_output=True, text=True, timeout=120)
    assert (check.returncode, check.stdout) == (0, "2\n"), check.stderr


def test_tokenizer_export_without_the_encoding_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([RECAP, "tokenizer", "export", str(tmp_path / "out")],
                          env=_env(empty), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.startswith("recap: error: cannot load the tiktoken encoding 'cl100k_base'")
    assert "recap tokenizer export DIR" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


# -- the image can run `recap bench` --------------------------------------------------------

def test_the_image_holds_what_recap_bench_imports() -> None:
    """No Docker engine here: the Dockerfile is read. `recap bench` looks for bench/ next to
    the imported `worker` package, so the image imports it from /app (PYTHONPATH)."""
    import ast

    from tests.env import ROOT

    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^WORKDIR /app$", text, re.M)
    assert re.search(r"^\s*PYTHONPATH=/app \\$", text, re.M)
    copied = {src.rstrip("/") for line in re.findall(r"^COPY (.+)$", text, re.M)
              for src in line.split()[:-1]}
    local = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    imported = set()
    for path in (ROOT / "bench").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
    needed = (imported & local) | {"bench", "alembic.ini", "migrations"}
    assert {"bench", "tests", "worker", "models"} <= needed
    assert needed <= copied, needed - copied
