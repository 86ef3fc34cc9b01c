"""Validation of what the chat app passes in; InvalidInput names the problem.

The checks live in the reply core (:mod:`recap.api.core`); this module names them
for the callers outside the reply path.
"""

from __future__ import annotations

from recap.api.core import check_message, check_user_id, prepare_message
from recap.core.content.message import MAX_CONTENT_CHARS, Message
from recap.core.validate import check_session_id

__all__ = ["MAX_CONTENT_CHARS", "Message", "check_message", "check_session_id",
           "check_user_id", "prepare_message"]
