"""Every ``recap ...`` command that README.md, docs/**/*.md and the ``--help`` texts show
(tests/docs/commands.py finds them and expands each synopsis) is valid under the
default settings: parsed by the real parser (``recap worker`` and ``beat`` by
Celery's own), a session's ``KEY=VALUE`` checked by the validators ``recap
configure`` uses, a migration's revision against the migrations. Those safe to run
then run against the test database and the Messages API stand-in, on a session
of their own, and must succeed; the others say why not (:data:`NOT_RUN`)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from recap.cli import build_parser, main, parse_args
from recap.cli.celery_run import COMMANDS as CELERY_COMMANDS
from recap.config.base import DEFAULT_MODEL
from recap.errors import InvalidInput
from recap.migrate import head_revisions, known_revisions
from recap.settings import Settings, check_policy_fit, load_settings, validate_overrides
from tests.docs.commands import Example, command_names, doc_examples, help_examples
from tests.env import FAKE

PARSER = build_parser()
NAMES = command_names(PARSER)
EXAMPLES = doc_examples(NAMES) + help_examples(PARSER, NAMES)

# Quoted output that starts like a command: not something a reader types.
NOT_COMMANDS = {"check at worker start: ...": "the worker's log line of its start-up check"}

# Commands that are checked but not run here, and why.
NOT_RUN = {
    "worker": "a long-running Celery worker (tests/deploy/test_install.py starts one)",
    "beat": "a long-running Celery beat (tests/jobs/test_beat*.py)",
    "serve": "a long-running HTTP server (tests/http, tests/deploy/test_install.py)",
    "metrics": "a long-running exporter (tests/cli/test_metrics_cli.py)",
    "demo": "a run of its own, minutes long (tests/demo)",
    "eval": "a run of its own, minutes long (tests/evals)",
    "bench": "a benchmark run of its own (tests/test_bench_*.py)",
    "ingest": "reads JSON lines from a file or stdin (tests/cli/test_cli.py)",
    "db downgrade": "drops the tables every other test uses (tests/deploy/test_beside_an_app.py)",
}

# Commands that read what a summary leaves: its versions and its archive.
NEEDS_A_SUMMARY = ("history", "resummarize")

# A value for `KEY=...` in a synopsis: the default's own, or a valid one.
SAMPLE_VALUES = {"model": DEFAULT_MODEL, "prompt": "es", "keep_recent": "6",
                 "max_summary_tokens": "1024", "context_budget_tokens": "32000",
                 "policy": "adaptive"}
TEXT = "The order ships on Tuesday."


def fill(argv: tuple[str, ...], *, session: str, message: int, folder: Path) -> list[str]:
    """``argv`` with its placeholders replaced by sample values."""
    samples = {"ID": session, "SESSION_ID": session, "SESSION": session, "MSG": str(message),
               "N": "1", "DIR": str(folder), "TEXT": TEXT, "KIND": "user", "URL": FAKE.url,
               "JSON": json.dumps([{"type": "text", "text": TEXT}]), "NAME": "stand-in",
               "NAMES": "recap.example.com", "REVISION": head_revisions()[0]}
    out: list[str] = []
    for word in argv:
        if word.lower() == "key=value":  # any KEY=VALUE: the command with none
            continue
        if word == "...":
            if out and out[-1].startswith("--"):
                out.append(TEXT)  # an option's value
            continue  # "and more of the same"
        key, eq, value = word.partition("=")
        if eq and value == "...":
            word = f"{key}={SAMPLE_VALUES[key]}"
        word = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", word)  # ${RECAP_QUEUE:-recap}
        out.append(samples.get(word, word))
    return out


def parse(argv: list[str]) -> Any:
    """The namespace the real parser makes of ``argv``; fails with its message."""
    if argv[0] in CELERY_COMMANDS:
        return celery_parse(argv)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            return parse_args(PARSER, argv)
        except SystemExit:
            pytest.fail(f"recap {' '.join(argv)}: {stderr.getvalue().strip()}")


def celery_parse(argv: list[str]) -> dict[str, Any]:
    from celery.bin.base import CLIContext
    from celery.bin.beat import beat
    from celery.bin.worker import worker

    from recap.worker.celery_app import app

    command = {"worker": worker, "beat": beat}[argv[0]]
    obj = CLIContext(app=app, no_color=True, workdir=None, quiet=True)
    try:
        return dict(command.make_context(argv[0], argv[1:], obj=obj).params)
    except click.ClickException as exc:
        pytest.fail(f"recap {' '.join(argv)}: {exc.format_message()}")


def validate(args: Any, *, defaults: Settings) -> None:
    """What the command's own validators say of its arguments, under ``defaults``."""
    command = getattr(args, "command", None)
    if command == "configure" and args.settings:
        pairs = dict(pair.split("=", 1) for pair in args.settings)
        check_policy_fit(pairs, base=defaults)
        validate_overrides(pairs, base=defaults)
    if command == "db" and args.db_action in ("upgrade", "downgrade"):
        assert args.revision in {"head", "base", *known_revisions()}, args.revision
    if command == "eval" and args.base_url:
        assert args.base_url.startswith(("http://", "https://")) and args.model


def reference(argv: list[str]) -> bool:
    """A bare command name in prose (``recap configure``): a name, not a call."""
    return len(argv) == 1 and argv[0] in NAMES


@pytest.fixture(scope="module")
def defaults() -> Iterator[Settings]:
    """The settings with no RECAP_* variable set (the default policy and limits)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.upper().startswith("RECAP_")]:
            patch.delenv(name)
        yield load_settings()


def test_the_docs_and_the_help_show_commands() -> None:
    found = {e.where.split(":")[0] for e in EXAMPLES}
    assert {"README.md", "`recap configure --help`"} <= found
    assert any(where.startswith("docs/operations/") for where in found)
    assert any(e.text.startswith("configure SESSION_ID policy=threshold") for e in EXAMPLES)


def distinct(examples: list[Example]) -> list[Example]:
    """One example per command text, naming every place that shows it."""
    places: dict[str, list[Example]] = {}
    for example in examples:
        places.setdefault(example.text, []).append(example)
    return [Example(", ".join(e.where for e in same), text, same[0].variants)
            for text, same in places.items()]


@pytest.mark.usefixtures("celery_worker_thread")
@pytest.mark.parametrize("example", distinct([e for e in EXAMPLES if e.text not in NOT_COMMANDS]),
                         ids=lambda e: f"recap {e.text}")
def test_each_command_the_docs_show_is_valid_and_runs(
        example: Example, defaults: Settings, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from recap import add_message

    session = "docs-commands"
    ids = [add_message(session, role, f"{role} line {i}: the order ships on day {i}.",
                       user_id=session)
           for i, role in enumerate(("user", "assistant") * 6)]
    if example.text.startswith(NEEDS_A_SUMMARY):  # a summary version and an archive
        assert main(["summarize", session, "--force"]) == 0, capsys.readouterr()
    for argv in example.variants:
        filled = fill(argv, session=session, message=ids[2], folder=tmp_path / "dir")
        try:
            args = parse(filled)
        except pytest.fail.Exception as exc:
            if reference(filled):
                continue
            pytest.fail(f"{example.where}: {exc}")
        try:
            validate(args, defaults=defaults)
        except (InvalidInput, AssertionError) as exc:
            pytest.fail(f"{example.where}: recap {' '.join(filled)}: {exc}")
        if not_run(filled):
            continue
        code = main(filled)
        out, err = capsys.readouterr()
        assert code == 0, (f"recap {' '.join(filled)} ({example.where}) exited {code}:\n"
                           f"{out[-2000:]}\n{err}")


def not_run(argv: list[str]) -> str | None:
    return NOT_RUN.get(" ".join(argv[:2])) or NOT_RUN.get(argv[0])
