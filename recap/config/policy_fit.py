"""Settings the active policy would ignore are refused, never silently dropped.

Under the adaptive policy (RECAP_POLICY=adaptive, the default) each session's own
high-water mark decides when it folds and its low-water mark how deep
(recap.core.planning.adaptive): the fixed rule's trigger, batch size and condense share are
not read. Setting one of them explicitly (a RECAP_* variable, or a session override
over HTTP or ``recap configure``) under that policy is a mistake the user would not
see: each entry point refuses it with the policy's name and the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

# The fixed rule's settings the adaptive policy replaces with the session's own marks.
IGNORED_BY_ADAPTIVE = ("trigger_messages", "trigger_tokens", "batch_size", "condense_to")


def ignored_by(policy: str, explicit: Iterable[str]) -> list[str]:
    """The settings among ``explicit`` that ``policy`` ignores, in the order listed."""
    given = set(explicit)
    if policy != "adaptive":
        return []
    return [name for name in IGNORED_BY_ADAPTIVE if name in given]


def refusal(ignored: list[str], *, name: Callable[[str], str],
            policy_name: str) -> str:
    """The error for ``ignored`` settings: what the adaptive policy does instead, and
    the way out (the fixed rule, or leaving them unset). ``name`` spells a setting as
    the entry point knows it (RECAP_BATCH_SIZE, batch_size)."""
    names = ", ".join(name(n) for n in ignored)
    one = len(ignored) == 1
    return (f"{names} {'is' if one else 'are'} not read by the adaptive policy "
            f"({policy_name}=adaptive, the default), so setting {'it' if one else 'them'} "
            "is refused: it folds each session at its own high-water mark and condenses to "
            f"its own low-water mark. Set {policy_name}=threshold to use the fixed rule's "
            f"{'setting' if one else 'settings'}, or leave {'it' if one else 'them'} unset")
