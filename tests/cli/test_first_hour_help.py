"""The first hour (continued): the help texts, ``recap memories``, ``| head``
without a traceback, and ``recap tokenizer export`` for offline machines.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recap import db
from recap.models import Memory
from tests.cli.common import (
    no_title_runs,  # noqa: F401
    run,
)
from tests.env import TEST_ENV
from tests.helpers import seed

pytestmark = pytest.mark.system

RECAP = str(Path(sys.executable).with_name("recap"))


SHARED_CACHE = Path(TEST_ENV["TIKTOKEN_CACHE_DIR"])


CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # ../shared/tiktoken-cache/README.md


# -- help texts, memories, a closed pipe ---------------------------------------------------

def test_configure_help_lists_every_valid_key(capsys: pytest.CaptureFixture[str]) -> None:
    from recap.cli.configure import KEYS
    from recap.settings import TUNABLE

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
            s.add(Memory(session_id="mem", scope="s:mem", fact=fact, category=category,
                         importance=importance,
                         fact_hash=hashlib.sha256(fact.encode()).hexdigest(),
                         first_message_id=1, last_message_id=5))
    code, out, _ = run(capsys, "memories", "mem")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "mem: 2 memories, most important first"
    assert lines[1].startswith("columns: [IMPORTANCE 1-5, 5 = most important] CATEGORY")
    # Stored without a source row (before provenance was recorded): legacy.
    assert lines[2] == "[4] preference legacy     The user prefers dark mode.  (messages 1-5)"
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
    from recap.cli.tokenizer import ENCODING_SHA256, cache_name

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
        [sys.executable, "-c", "from recap.llm.tokens import count_tokens; "
         "print(count_tokens('hello world'))"],
        env=_env(target), capture_output=True, text=True, timeout=120)
    assert (check.returncode, check.stdout) == (0, "2\n"), check.stderr


def test_a_checkout_finds_the_offline_encodings_beside_it_by_itself() -> None:
    # README's `recap demo` on a machine that cannot download: no TIKTOKEN_CACHE_DIR,
    # no network, and the checkout's neighbouring shared/tiktoken-cache folder serves.
    from recap.paths import checkout_tiktoken_cache

    if checkout_tiktoken_cache() is None:
        pytest.skip("no shared/tiktoken-cache folder beside this checkout")
    env = {k: v for k, v in _env(SHARED_CACHE).items() if k != "TIKTOKEN_CACHE_DIR"}
    check = subprocess.run(
        [sys.executable, "-c", "import os; from recap.cli import _offline_encodings; "
         "_offline_encodings(); from recap.llm.tokens import count_tokens; "
         "print(count_tokens('hello world'), os.environ['TIKTOKEN_CACHE_DIR'])"],
        env=env, capture_output=True, text=True, timeout=120)
    assert (check.returncode, check.stdout) == (0, f"2 {checkout_tiktoken_cache()}\n"), check.stderr


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
