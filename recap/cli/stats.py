"""``recap stats [--json] [--top N] [--session SESSION_ID]``: sessions, summaries,
titles, failures, latency and API usage, then the N largest sessions (default 5)
with why each is not summarized yet and what will trigger it.

Token counts are tiktoken estimates unless labelled "API" (what the Messages
API billed): summarize jobs (the summary and memory-mining calls) and title
jobs are counted apart. "token estimate / API count" compares the two per model
over its latest summarize runs (recap.ops.stats.estimate_ratios). ``--json``
adds the sessions as ``largest_sessions``. The last lines say what the replies'
requests and Recap's summarizing cost next to full history with prompt caching
(recap.core.spend, priced by the price table at the reply model's and the
summarizer's prices, its basis stated; a loss is named as one); ``--session
SESSION_ID`` shows one session's; ``--losses`` lists the sessions at a loss, in
``--tenant NAME`` only if given. The retention guard's lines count the
condensed messages' specifics by salience (recap.core.retention.salience): those the user
stated, those referred to again, those the assistant used right after a tool
returned them, the rest it kept, and those a tool returned that nothing used,
left in the archive.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from recap.cli.base import Subparsers, command, emit_json, whole_number
from recap.cli.outlook import describe
from recap.errors import InvalidInput

STATS_LABELS = {
    "sessions": "sessions",
    "active_messages": "active messages",
    "active_tokens": "active tokens (est.)",
    "summary_tokens": "summary tokens (est.)",
    "summaries_applied": "summaries applied",
    "messages_condensed": "messages condensed",
    "context_tokens_removed": "context tokens the summaries keep out (est.; a size, not money)",
    "failed_runs": "failed runs",
    "dead_runs": "dead runs",
    "latency_p50_ms": "summarize latency p50 (ms)",
    "latency_p95_ms": "summarize latency p95 (ms)",
    "api_input_tokens": "API input tokens (summaries, memories)",
    "api_output_tokens": "API output tokens (summaries, memories)",
    "sessions_titled": "sessions with a title",
    "title_runs": "title calls",
    "title_failures": "title calls failed",
    "title_input_tokens": "API input tokens (titles)",
    "title_output_tokens": "API output tokens (titles)",
    "retention_rate": "specifics kept by summaries (retention)",
    "repair_rate": "guarded runs needing a repair call",
    "repair_success_rate": "repair calls that helped",
    "repair_input_tokens": "API input tokens (repair calls)",
    "repair_output_tokens": "API output tokens (repair calls)",
    "repairs_skipped": "repairs skipped (not helping the model)",
    "frozen_answers": "summary answers refused as frozen or empty",
    "resends": "batches sent again after an unusable answer",
    "resend_input_tokens": "API input tokens (batches sent again)",
    "extractive_folds": "folds kept extractively (no usable answer)",
    "specifics_stated": "specifics kept: stated by the user",
    "specifics_referred": "specifics kept: referred to again",
    "specifics_used": "specifics kept: used right after a tool",
    "specifics_rest": "specifics kept: the rest",
    "specifics_archived": "specifics left in the archive (nothing used them)",
    "specifics_in_details": "specifics Recap put in details",
    "specifics_to_memories": "specifics Recap put in memories",
    "messages_held_back": "messages held back in the window",
    "sessions_needing_escalation": "sessions needing escalation",
    "sessions_leased": "sessions with a live lease",
    "sessions_pending": "sessions with a job pending",
    "sessions_blocked": "sessions dead-lettered (cooling down)",
    "sessions_backing_off": "sessions the sweeper backs off (nothing to condense)",
}
PERCENT = {"retention_rate", "repair_rate", "repair_success_rate"}


def register(sub: Subparsers) -> None:
    p = command(sub, "stats", "Show sessions, summaries, titles, failures, latency and API "
                "usage, and why the largest sessions are not summarized yet.", run)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--session", metavar="SESSION_ID",
                   help="only what this session's replies cost next to full history with "
                        "caching")
    p.add_argument("--losses", action="store_true",
                   help="only the sessions where Recap costs more than full history with "
                        "caching, largest loss first")
    p.add_argument("--tenant", metavar="NAME",
                   help="with --losses: only this tenant's sessions (ids NAME/...)")
    p.add_argument("--limit", type=_positive, default=50, metavar="N",
                   help="with --losses: at most N sessions (default 50)")
    p.add_argument("--top", type=_count, default=5, metavar="N",
                   help="the N sessions with the most active tokens, with why each is not "
                        "summarized yet and what will trigger it (default 5; 0: none)")


def _count(text: str) -> int:
    return whole_number(text, 0)


def _positive(text: str) -> int:
    return whole_number(text, 1)


def run(args: argparse.Namespace) -> int:
    from recap.db import transaction, utcnow
    from recap.ops import stats
    from recap.ops.outlook import largest
    from recap.settings import get_settings

    if args.session is not None:
        return _session_spend(args.session, as_json=args.json)
    if args.losses:
        return _losses(tenant_name=args.tenant, limit=args.limit, as_json=args.json)
    if args.tenant is not None:
        raise InvalidInput("--tenant goes with --losses")
    settings = get_settings()
    now = utcnow()
    with transaction() as db:
        data = asdict(stats.collect_stats(db=db, settings=settings, now=now))
        top = largest(db=db, settings=settings, now=now, limit=args.top) if args.top else []
    rule = fold_rule(settings.policy, trigger_messages=settings.trigger_messages,
                     trigger_tokens=settings.trigger_tokens, batch_size=settings.batch_size,
                     keep_recent=settings.keep_recent)
    if args.json:
        emit_json({**data, "policy": settings.policy, "fold_rule": rule,
                   "largest_sessions": [o.as_dict() for o in top]})
        return 0
    print(f"policy: {settings.policy} (RECAP_POLICY): {rule}\n")
    print(format_stats(data))
    if top:
        which = "the largest session" if len(top) == 1 else f"the {len(top)} largest sessions"
        print(f"\n{which} (by active tokens), and what triggers the next summary:")
        for o in top:
            print("\n".join(describe(o)))
    return 0


def _session_spend(session_id: str, *, as_json: bool) -> int:
    from recap.sessions.view import session

    spent = session(session_id).spend.model_dump(mode="json")
    if as_json:
        emit_json({"session_id": session_id, "spend": spent})
        return 0
    print(f"session {session_id}: what its replies cost next to full history with caching "
          f"(since {spent['since']})")
    print("\n".join(format_spend(spent)))
    return 0


def _losses(*, tenant_name: str | None, limit: int, as_json: bool) -> int:
    from recap.core.tenant import tenant
    from recap.db import transaction
    from recap.ops.stats import losses
    from recap.settings import get_settings

    with tenant(tenant_name), transaction() as db:
        found = losses(db=db, settings=get_settings(), limit=limit)
    if as_json:
        emit_json({"tenant": tenant_name, "sessions": [
            {"session_id": loss.session_id, "spend": loss.spend.as_dict()} for loss in found]})
        return 0
    where = f" in tenant {tenant_name}" if tenant_name else ""
    if not found:
        print(f"no session{where} costs more than full history with caching")
        return 0
    print(f"sessions{where} where Recap costs more than full history with caching, "
          "largest loss first:")
    for loss in found:
        d = loss.spend.as_dict()
        share = "" if d["saved_share"] is None else f" ({d['saved_share']:+.1%})"
        print(f"{loss.session_id}  {d['saved_tokens']:+d}{share} (${d['saved_usd']:+.4f}) "
              f"over {d['replies']} replies")
    print(f"(saved tokens {found[0].spend.as_dict()['price_basis']})")
    return 0


def fold_rule(policy: str, *, trigger_messages: int, trigger_tokens: int, batch_size: int,
              keep_recent: int) -> str:
    """What decides a session's next fold under ``policy`` (sessions' overrides
    aside: ``recap configure`` shows them)."""
    capacity = ("any session folds once it fills 80% of RECAP_CONTEXT_BUDGET_TOKENS")
    if policy == "adaptive":
        return ("each session folds when its context passes its own high-water mark "
                "(from its growth per reply and its summary's size) and condenses to its own "
                "low-water mark; the fixed rule's RECAP_TRIGGER_MESSAGES, RECAP_TRIGGER_TOKENS, "
                "RECAP_BATCH_SIZE and RECAP_CONDENSE_TO do not apply (setting one is refused: "
                f"RECAP_POLICY=threshold uses them); {capacity}")
    return (f"a session folds when it has more than {trigger_messages} active messages "
            f"and its oldest {batch_size} outside the newest {keep_recent} hold more than "
            f"{trigger_tokens} tokens; {capacity}")


def format_stats(data: dict[str, Any]) -> str:
    """The human form of ``recap stats``."""
    width = max(map(len, STATS_LABELS.values()))
    lines = []
    for key, label in STATS_LABELS.items():
        value = data[key]
        if value is None:
            value = "n/a"
        elif key in PERCENT:
            value = f"{value:.1%}"
        lines.append(f"{label:<{width}}  {value}")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["runs_by_status"].items()))
    lines.append(f"{'runs by status':<{width}}  {statuses or 'none'}")
    ratios = ", ".join(f"{model} {ratio:.2f}"
                       for model, ratio in data.get("token_estimate_ratio", {}).items())
    lines.append(f"{'token estimate / API count':<{width}}  {ratios or 'n/a'}")
    for reason, count in data.get("blocked_reasons", {}).items():
        lines.append(f"{'why blocked':<{width}}  {count} session(s): {reason}")
    lines.append("\nwhat the replies cost next to full history with caching (all sessions; "
                 "an estimate, docs/operations/savings.md):")
    lines += format_spend(data["spend"], width=width)
    lines.append(f"{'sessions at a loss':<{width}}  {data['sessions_at_loss']}")
    return "\n".join(lines)


def format_spend(spent: dict[str, Any], *, width: int = 0) -> list[str]:
    """The lines of a :class:`recap.core.spend.Spend` (``as_dict``): the token sums,
    the priced costs and the signed difference, a loss named as one."""
    share = "" if spent["saved_share"] is None else f" ({spent['saved_share']:+.1%})"
    rows = (
        ("replies accounted", spent["replies"]),
        ("Recap input: cache read / written / uncached",
         f"{spent['recap_cache_read_tokens']} / {spent['recap_cache_write_tokens']} / "
         f"{spent['recap_uncached_tokens']}"),
        ("Recap summarizing: input / output",
         f"{spent['summarize_input_tokens']} / {spent['summarize_output_tokens']}"),
        ("full history input: cache read / written / uncached",
         f"{spent['full_cache_read_tokens']} / {spent['full_cache_write_tokens']} / "
         f"{spent['full_uncached_tokens']}"),
        ("cost: Recap / full", f"{spent['recap_cost_tokens']} / "
                               f"{spent['full_cost_tokens']}"),
        ("saved tokens", f"{spent['saved_tokens']:+d}{share} {spent['verdict']} "
                         f"(${spent['saved_usd']:+.4f})"),
        ("priced", spent["price_basis"]),
    )
    width = max(width, *(len(label) for label, _ in rows))
    return [f"{label:<{width}}  {value}" for label, value in rows]
