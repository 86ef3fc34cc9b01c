"""Tenants: a namespace of ids. The ids of tenant ``acme`` are those that start
with ``acme/`` (``acme/42``, ``acme/projects/p1``), for sessions and users alike.

Inside :func:`tenant` (and for a request with a scoped key of ``recap serve``),
an id outside the tenant is one that does not exist: the checks every call makes
on its ids raise SessionNotFound or UserNotFound, with the message an unknown id
gets, before any statement runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from recap.errors import InvalidInput, SessionNotFound, UserNotFound

# Letters, digits, ".", "_" and "-": a tenant name is one path segment, never "/",
# nor the ":" and "," RECAP_API_KEYS separates with.
TENANT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")

_CURRENT: ContextVar[str | None] = ContextVar("recap_tenant", default=None)


def check_tenant(name: object) -> str:
    """Return ``name`` if it is a usable tenant name, else raise InvalidInput."""
    if not isinstance(name, str) or not TENANT_NAME.fullmatch(name) or set(name) == {"."}:
        raise InvalidInput(f"a tenant is 1 to 64 letters, digits, '.', '_' or '-' (not only "
                           f"dots), got {name!r}")
    return name


def current_tenant() -> str | None:
    """The tenant the calls of this context are scoped to (None: every id)."""
    return _CURRENT.get()


@contextmanager
def tenant(name: str | None) -> Iterator[None]:
    """Scope the calls made inside to the ids under ``name + "/"`` (None: no scope).

    Nesting cannot widen a scope: inside ``tenant("a")``, ``tenant("b")`` or
    ``tenant(None)`` raises InvalidInput.
    """
    if name is not None:
        check_tenant(name)
    outer = _CURRENT.get()
    if outer is not None and name != outer:
        raise InvalidInput(f"already scoped to tenant {outer!r}: a scope cannot be changed "
                           "or lifted inside it")
    token = _CURRENT.set(name)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def tenant_of(some_id: str) -> str | None:
    """The tenant namespace ``some_id`` is under: its first path segment (``acme`` of
    ``acme/42``), or None for an id without one. What the worker learns from one
    tenant's sessions (how the model folded them, how it counts their tokens) is
    kept and read per this namespace, so it never steers another tenant's folds."""
    head, slash, _ = some_id.partition("/")
    return head if slash else None


def in_scope(some_id: str) -> bool:
    """Whether ``some_id`` is reachable under the current scope."""
    name = _CURRENT.get()
    return name is None or some_id.startswith(name + "/")


def session_in_scope(session_id: str) -> None:
    """Raise SessionNotFound (as for an unknown id) if ``session_id`` is outside scope."""
    if not in_scope(session_id):
        raise SessionNotFound(f"no chat session with id {session_id!r}")


def user_in_scope(user_id: str) -> None:
    """Raise UserNotFound (as for an unknown id) if ``user_id`` is outside scope."""
    if not in_scope(user_id):
        raise UserNotFound(f"no user with id {user_id!r}")
