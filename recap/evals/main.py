"""``recap eval``: plant facts in a long conversation, run it through Recap and its
peers, and print how many planted specifics each keeps after every fold.

- ``--quick``: 200 messages with 12 planted facts, against a local stand-in of
  the Messages API (recap.testing, made lossy: it drops a share of the
  specifics from every summary, fact list and repair answer it writes). Runs
  offline in well under a minute. Its figures measure Recap's mechanism (the
  retention guard, memories, the context), not a model.
- otherwise: the configured summarizer (Claude with ANTHROPIC_API_KEY; the peers
  then call Claude too), on the demo conversation or ``--conversation FILE``
  with ``--expect FILE``.
- ``--qa``: also asks each planted question with the system's final context
  alone and counts correct answers (with the stand-in, a "reader" that answers
  with the best-matching line of the context: again a mechanism, not a model).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recap.demo.report import Out
from recap.errors import ConfigError
from recap.evals.facts import Message, Planted, plant, read_conversation, read_expectations, weave
from recap.evals.probes import DEFAULT_PROBES, plan_probes
from recap.evals.run import Ask, Series, run_peer, run_recap
from recap.evals.where import PLACES

if TYPE_CHECKING:
    from recap.settings import Settings

FAKE_KEY = "sk-ant-eval-stand-in"


def inputs(args: argparse.Namespace) -> tuple[list[Message], list[Planted], str]:
    """(conversation, facts, a line saying what they are)."""
    from recap.demo.conversation import available, load

    if args.conversation:
        if not args.expect:
            raise ConfigError("--conversation needs --expect FILE (the specifics to look for)")
        conv = read_conversation(_lines(args.conversation), source=args.conversation)
        facts = read_expectations(_lines(args.expect), source=args.expect)
        return conv, facts, f"{len(facts)} expected specifics in {args.conversation} " \
                            f"({len(conv)} messages)"
    count, n = args.messages, args.facts
    if not 2 <= count <= available():
        raise ConfigError(f"--messages must be between 2 and {available()}, got {count}")
    facts = plant(n, seed=args.seed)
    return weave(load(count), facts), facts, (
        f"{n} facts (names, numbers, dates, preferences) planted in {count} messages of the "
        "demo's SRE chat")


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None


def main(args: argparse.Namespace, out: Out | None = None) -> int:
    """Run the evaluation ``args`` describe (see recap/cli/eval.py, which fills in
    the defaults: messages, facts, loss) and print the table; 1 if Recap failed."""
    out = out or Out()
    messages, facts, what = inputs(args)
    with ExitStack() as stack:
        base_url: str | None
        if args.quick:
            base_url, ask, label, overrides = stack.enter_context(_stand_in(args))
        elif getattr(args, "base_url", None):
            base_url, ask, label, overrides = _server(args)
        else:
            base_url, ask, label, overrides = _configured(args)
        out.line(f"recap eval: {what}")
        out.line(f"model: {label}")
        probes = plan_probes(messages, facts, getattr(args, "probes", DEFAULT_PROBES))
        rows = [run_recap(messages, facts, ask=ask, progress=out.progress, overrides=overrides,
                          stand_in=args.quick, probes=probes)]
        if not args.no_peers:
            rows += _peers(messages, facts, base_url=base_url, ask=ask, out=out,
                           have_key=args.quick or bool(getattr(args, "base_url", None))
                           or _has_key())
    print_table(rows, out, qa=args.qa, stand_in=args.quick)
    return 0 if all(r.error is None for r in rows[:1]) else 1


@contextmanager
def _stand_in(args: argparse.Namespace
              ) -> Iterator[tuple[str, Ask | None, str, dict[str, Any]]]:
    """The lossy stand-in server, and the settings pointing Recap at it (handed to
    run_recap; the process environment is never written)."""
    from recap.evals.standin import EvalFake
    from recap.settings import load_settings

    fake = EvalFake()
    fake.lose_specifics(args.loss, seed=args.seed)
    fake.start()
    overrides: dict[str, Any] = {"anthropic_api_key": FAKE_KEY,
                                 "anthropic_base_url": fake.url, "summarizer": "claude"}
    try:
        yield fake.url, _asker(load_settings(**overrides)) if args.qa else None, (
            f"local stand-in of the Messages API, dropping {args.loss:.0%} of the "
            "specifics from each answer (figures measure the mechanism, not a model)"), overrides
    finally:
        fake.stop()


# Local servers (llama.cpp, vLLM) take any key; the SDK only needs one to be set.
PLACEHOLDER_KEY = "sk-local-no-key"


def _server(args: argparse.Namespace) -> tuple[str, Ask | None, str, dict[str, Any]]:
    """The settings pointing Recap (and the peers) at ``--base-url``/``--model``."""
    import os

    from recap.settings import load_settings

    key = args.api_key or os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_KEY
    overrides: dict[str, Any] = {"anthropic_api_key": key, "anthropic_base_url": args.base_url,
                                 "model": args.model, "summarizer": "claude"}
    return args.base_url, _asker(load_settings(**overrides)) if args.qa else None, (
        f"{args.model} at {args.base_url} (any server speaking the Messages API)"), overrides


def _has_key() -> bool:
    from recap.settings import get_settings

    return get_settings().anthropic_api_key is not None


def _configured(args: argparse.Namespace
                ) -> tuple[str | None, Ask | None, str, dict[str, Any]]:
    from recap.settings import get_settings

    settings = get_settings()
    if settings.anthropic_api_key is None:
        return None, None, ("no ANTHROPIC_API_KEY: Recap uses the offline extractive "
                            "summarizer and the peers are skipped (use --quick for the "
                            "stand-in)"), {}
    return (settings.anthropic_base_url, _asker(settings) if args.qa else None,
            settings.model, {})


def _asker(settings: Settings) -> Ask:
    """The model ``settings`` name answering one request (system, messages)."""
    import anthropic

    key = settings.anthropic_api_key
    assert key is not None
    client = anthropic.Anthropic(api_key=key.get_secret_value(),
                                 base_url=settings.anthropic_base_url, max_retries=2)

    def ask(request: dict[str, Any]) -> str:
        answer = client.messages.create(model=settings.model, max_tokens=200, **request)
        return "".join(getattr(b, "text", "") for b in answer.content)

    return ask


def _peers(messages: Sequence[Message], facts: Sequence[Planted], *, base_url: str | None,
           ask: Ask | None, out: Out, have_key: bool) -> list[Series]:
    from recap.evals.peers import PEERS

    rows: list[Series] = []
    for runner in PEERS:
        name = runner.__name__.removeprefix("run_")
        if not have_key:
            rows.append(Series(name, len(facts), error="skipped: needs ANTHROPIC_API_KEY"))
            continue
        rows.append(run_peer(name, runner, messages, facts, base_url=base_url, ask=ask,
                             progress=out.progress))
    return rows


def print_table(rows: Sequence[Series], out: Out, *, qa: bool, stand_in: bool = False) -> None:
    out.line()
    head = f"{'system':<40} {'folds':>5} {'shown min':>9} {'shown end':>9} " \
           f"{'stored':>7} {'repairs':>8} {'in tokens':>10} {'out tokens':>10}" \
           + (f" {'QA':>7}" if qa else "")
    out.line(head)
    out.line("-" * len(head))
    for r in rows:
        if r.error:
            out.line(f"{r.name[:40]:<40} {r.error}")
            continue
        qa_cell = (f" {r.qa_correct}/{r.qa_asked}" if r.qa_correct is not None else " -")
        out.line(f"{r.name[:40]:<40} {r.folds:>5} {_of(r.worst, r.total):>9} "
                 f"{_of(r.final, r.total):>9} {_of(r.stored, r.total):>7} "
                 f"{r.repairs:>8} {r.input_tokens:>10,} "
                 f"{r.output_tokens:>10,}" + (f"{qa_cell:>8}" if qa else ""))
    out.line()
    out.line("shown: planted specifics in the context the model gets (min over the folds, "
             "at the end); stored: anywhere the system keeps them (Recap: summary, all "
             "memories, window)")
    out.line("in/out tokens: what each system sent to and received from the model for its "
             "own summaries and memories (not the chat replies; failed jobs included), all "
             "systems on the same conversation: lower in tokens is less to pay for the same work"
             + ("; counted by the stand-in as the API would, so they compare the systems' "
                "mechanisms, not a Claude bill" if stand_in else ""))
    for r in rows:
        if not r.error and r.audit is not None:
            out.line(recap_detail(r))
    for r in rows:
        if not r.error and r.after_fold:
            out.line(f"{r.name}: shown after each fold: "
                     + " ".join(str(k) for k in r.after_fold) + f" (of {r.total}); stored: "
                     + " ".join(str(k) for k in r.stored_after_fold))


def recap_detail(r: Series) -> str:
    """Where Recap kept the stored specifics, frozen answers, repairs and time per fold."""
    import statistics

    assert r.audit is not None
    where = " / ".join(f"{r.where.get(p, 0)} {p}" for p in PLACES)
    seconds = (f"{statistics.median(r.fold_seconds):.1f} s per fold (median)"
               if r.fold_seconds else "no fold")
    a = r.audit
    dead = ("; jobs dead-lettered (nothing of them applied) after message "
            + ", ".join(str(i) for i in r.dead_after) if r.dead_after else "")
    return (f"{r.name}: stored {_of(r.stored, r.total)}: {where}{probes_detail(r)}; "
            f"summary answers refused as frozen or empty: {a.frozen_answers}; batches sent "
            f"again {a.resends} ({a.resend_input_tokens:,} input tokens); folds kept "
            f"extractively {a.extractive_folds}; repair calls {a.repairs_called} "
            f"(helped {a.repairs_helped}, skipped {a.repairs_skipped}); {seconds}{dead}")


def probes_detail(r: Series) -> str:
    """"; answerable at reference k/n (...)" when probes were asked (recap.evals.probes)."""
    if not r.probes:
        return ""
    import statistics

    sizes = r.request_tokens
    size = (f"; Recap's request at the probes: {statistics.median(sizes):,.0f} tokens "
            f"(median), {max(sizes):,} at most" if sizes else "")
    missed = (" (not in it: " + ", ".join(f"{kind} {specific!r}" for kind, specific in r.missed)
              + ")" if r.missed else "")
    return (f"; answerable at reference {r.answerable}/{r.probes}{missed} (full history cut "
            f"to the last {r.window_tokens:,} tokens, or to Recap's request when larger: "
            f"{r.window_answerable}/{r.probes}){size}")


def _of(n: int | None, total: int) -> str:
    return "-" if n is None else f"{n}/{total}"
