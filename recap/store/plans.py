"""What the plan (recap.core.planning.policy) reads of a session and writes back to it.

:func:`message_infos` is the plan's input (the active messages, no content);
:func:`plan_flags` are the session columns a plan sets besides the pending
marker. Every writer of a plan (the claim, the apply, a resummarize) uses both, so
the hook and the sweeper read the same flags whoever wrote them.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import bindparam, select

from recap.core.content.render import parse_links
from recap.core.planning import policy
from recap.db import Db
from recap.models import messages_table as MESSAGES
from recap.settings import Settings

# Built once, with bound parameters: building a statement and its cache key on
# every job cost more CPU than running it.
_MESSAGE_INFOS = (select(MESSAGES.c.id, MESSAGES.c.role, MESSAGES.c.token_count,
                         MESSAGES.c.pinned, MESSAGES.c.tool_links)
                  .where(MESSAGES.c.session_id == bindparam("sid")).order_by(MESSAGES.c.id))


def message_infos(session_id: str, *, db: Db) -> list[policy.MessageInfo]:
    """What the policy needs of the active messages, oldest first (no content, no
    blocks: the tool ids come from the small ``tool_links`` column)."""
    return [policy.MessageInfo(i, role, tokens, pinned, *parse_links(links))
            for i, role, tokens, pinned, links in db.execute(_MESSAGE_INFOS,
                                                             {"sid": session_id})]


class PlanFlags(NamedTuple):
    """The session columns of a plan: whether the next job escalates, and the
    normal_blocked flag with the thresholds it holds under."""

    needs_escalation: bool
    normal_blocked: bool
    normal_blocked_under: str | None


def plan_flags(plan: policy.Plan, settings: Settings) -> PlanFlags:
    """The flag columns for ``plan`` made under ``settings``."""
    return PlanFlags(plan.needs_escalation, plan.normal_blocked,
                     settings.thresholds_key() if plan.normal_blocked else None)
