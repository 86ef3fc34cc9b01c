"""`recap eval`: offline against the lossy stand-in, as a user runs it (a subprocess in a
clean environment: no database, no broker, no API key). Figures from the stand-in
measure the mechanism, not a model, so the tests assert what the mechanism guarantees:
every planted fact stays stored in Recap, the peers are run on the same conversation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from recap.testing import FakeAnthropic, Route
from tests.env import TEST_ENV

pytestmark = pytest.mark.system

RECAP = str(Path(sys.executable).with_name("recap"))


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
             "HOME": os.environ.get("HOME", str(cwd)),
             "TIKTOKEN_CACHE_DIR": TEST_ENV["TIKTOKEN_CACHE_DIR"]}
    return subprocess.run([RECAP, "eval", *args], cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=240)


def run_behind(route: Route, *, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`recap eval` (80 messages, 4 facts, Recap only) against the stand-in served on
    a port, ``route`` answering first (recap.testing.FakeAnthropic.route)."""
    server = FakeAnthropic().start()
    server.route(route)
    try:
        return run("--base-url", server.url, "--model", "local-model", "--messages", "80",
                   "--facts", "4", "--no-peers", cwd=cwd)
    finally:
        server.stop()


def row(stdout: str, name: str) -> list[str]:
    return next(line for line in stdout.splitlines() if line.startswith(name)).split()


def test_quick_runs_offline_and_prints_the_side_by_side_table(tmp_path: Path) -> None:
    done = run("--quick", "--qa", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "figures measure the mechanism, not a model" in out
    recap = row(out, "Recap (stand-in)")  # never a Claude model's name on the stand-in
    assert "12/12" in recap  # stored: the guard and the memories keep every planted fact
    assert "claude-" not in out.split("model:", 1)[1].splitlines()[0]
    assert "in/out tokens: what each system sent to and received from the model" in out
    assert "compare the systems' mechanisms, not a Claude bill" in out
    assert row(out, "LangMem summarize_messages")[0] == "LangMem"
    assert row(out, "LangChain SummarizationMiddleware")[0] == "LangChain"
    assert "shown after each fold:" in out
    assert list(tmp_path.iterdir()) == []  # its temporary database is gone


def test_a_users_own_conversation_and_expectations(tmp_path: Path) -> None:
    conv, expect = tmp_path / "c.jsonl", tmp_path / "e.jsonl"
    lines = [{"role": "user" if i % 2 == 0 else "assistant",
              "content": f"Message {i} about invoice INV-{1000 + i} and the rollout plan. "
                         + "More words to make it long enough to fold. " * 20}
             for i in range(60)]
    conv.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    expect.write_text(json.dumps({"expected": "INV-1002", "question": "Which invoice?"}),
                      encoding="utf-8")
    done = run("--quick", "--no-peers", "--conversation", str(conv), "--expect", str(expect),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 expected specifics in" in done.stdout
    assert "1/1" in row(done.stdout, "Recap (")


def test_bad_input_files_are_named(tmp_path: Path) -> None:
    conv = tmp_path / "c.jsonl"
    conv.write_text('{"role": "user"}\n', encoding="utf-8")
    done = run("--quick", "--conversation", str(conv), "--expect", str(conv), cwd=tmp_path)
    assert done.returncode == 1
    assert f"{conv}:1: expected" in done.stderr
    done = run("--quick", "--conversation", str(conv), cwd=tmp_path)
    assert done.returncode == 1 and "--conversation needs --expect FILE" in done.stderr
    done = run("--quick", "--loss", "1.5", cwd=tmp_path)
    assert done.returncode == 1 and "--loss must be in [0, 1)" in done.stderr


def test_base_url_evaluates_the_model_behind_any_messages_api_server(tmp_path: Path) -> None:
    # A Messages API server started on its own (the stand-in, as a user would start
    # llama.cpp): recap eval reaches it by --base-url and --model only, with no key.
    server = FakeAnthropic().start()
    try:
        done = run("--base-url", server.url, "--model", "local-model", "--messages", "80",
                   "--facts", "4", "--no-peers", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"model: local-model at {server.url}" in done.stdout
        assert row(done.stdout, "Recap (local-model)")[2].isdigit()  # folds
        assert server.requests and {r["model"] for r in server.requests} == {"local-model"}
    finally:
        server.stop()


def test_a_weak_model_behind_the_base_url_still_gets_every_fold_applied(
        tmp_path: Path) -> None:
    # The stand-in misbehaving like a small model (docs/EVALUATION.md): looping facts,
    # an echoed schema, junk replacements. The run ends without an error, folds, and
    # counts the answers it refused.
    from recap.testing import Weak, weak_model

    server = FakeAnthropic().start()
    server.route(weak_model(Weak(echo_schema=True, loop_facts=True, junk_replaces=True)))
    try:
        done = run("--base-url", server.url, "--model", "weak-stand-in", "--messages", "80",
                   "--facts", "4", "--no-peers", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        cells = row(done.stdout, "Recap (weak-stand-in)")
        assert cells[2].isdigit() and int(cells[2]) > 0, cells  # folds applied
        assert "summary answers refused as frozen or empty" in done.stdout
    finally:
        server.stop()


def test_a_failure_a_worker_would_retry_is_asked_again_not_the_end_of_the_run(
        tmp_path: Path) -> None:
    # The first summary call fails as an overloaded server's does: the job fails,
    # and recap eval runs it again as a worker would instead of reporting the run
    # as failed.
    from recap.testing import Reply, Request, error, recap_kind

    failed: list[str] = []

    def once(request: Request) -> Reply | None:
        if recap_kind(request.body) == "summary" and not failed:
            failed.append(request.prompt)
            return error(529)
        return None

    done = run_behind(once, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert failed
    cells = row(done.stdout, "Recap (local-model)")
    assert cells[2].isdigit() and int(cells[2]) > 0, done.stdout[-2000:]


def test_a_model_that_never_answers_usably_is_folded_extractively_and_reported(
        tmp_path: Path) -> None:
    # Every summary answer runs to max_tokens: no way of asking gives a usable
    # summary, so each fold is kept extractively (labelled, nothing lost) instead of
    # leaving the session to grow. The run reports it: every planted fact is still
    # stored, and no job was dead-lettered.
    from recap.testing import Reply, Request, ok, recap_kind

    summaries: list[str] = []

    def runaway(request: Request) -> Reply | None:
        if recap_kind(request.body) == "summary":
            summaries.append(request.prompt)
            return ok("", stop_reason="max_tokens")
        return None

    done = run_behind(runaway, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert summaries
    cells = row(done.stdout, "Recap (local-model)")
    assert int(cells[2]) > 0 and cells[5] == "4/4", done.stdout[-2000:]
    assert int(cells[7].replace(",", "")) > 0  # the unusable calls' tokens are counted
    assert f"folds kept extractively {cells[2]};" in done.stdout, done.stdout[-2000:]
    assert "dead-lettered" not in done.stdout


def test_base_url_needs_a_model_and_an_http_url(tmp_path: Path) -> None:
    done = run("--base-url", "http://127.0.0.1:9", cwd=tmp_path)
    assert done.returncode != 0 and "--base-url and --model go together" in done.stderr
    done = run("--base-url", "localhost:8080", "--model", "m", cwd=tmp_path)
    assert done.returncode != 0 and "must be an http:// or https:// URL" in done.stderr
