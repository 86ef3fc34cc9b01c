"""How ``recap context``, ``recap stats`` and ``recap sessions`` put a session's
outlook (recap.ops.outlook): why it is not summarized yet and what will
trigger it. Not a command: the commands share these lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recap.ops.outlook import SessionOutlook

_JOB = {"queued": "a summarize job is queued",
        "running": "a summarize job is running now",
        "dead-lettered": "dead-lettered after a failure, cooling down (recap failures; "
                         "recap retry to try again now)"}


def name(o: SessionOutlook) -> str:
    """``id "Title"`` (or ``id (untitled)``)."""
    return f"{o.session_id} " + (f'"{o.title}"' if o.title else "(untitled)")


def headline(o: SessionOutlook) -> str:
    summary = (f"a {o.summary_tokens}-token summary (version {o.summary_version})"
               if o.summary_version else "no summary yet")
    return (f"{name(o)}: {o.messages} messages, {o.active_tokens} tokens + {summary} = "
            f"{o.usage:.0%} of the {o.budget}-token budget")


def status(o: SessionOutlook) -> list[str]:
    """The outlook as short lines: why (not) now, what triggers it, how to force it."""
    lines = []
    if o.job:
        lines.append(_JOB[o.job])
    if o.state == "due":
        lines.append(f"due now: {o.why}")
        if not o.job:
            lines.append("the hook queues it after the next assistant reply, or the periodic "
                         "sweep (RECAP_SWEEP_INTERVAL_S); recap summarize queues it now")
        return lines
    lines.append(f"not summarized yet: {o.why}")
    lines.append(f"next summary: {o.trigger}")
    if o.forced_messages:
        lines.append(f"now: recap summarize {o.session_id} --force condenses the "
                     f"{o.forced_messages} oldest messages ({o.forced_tokens} tokens)")
    return lines


def describe(o: SessionOutlook) -> list[str]:
    return [headline(o), *(f"  {line}" for line in status(o))]
