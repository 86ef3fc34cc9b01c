"""What an edit may do to the tool results Recap cleared to stubs (pure).

A cleared tool result (recap.worker.jobs.clear) reads as its stub in the window
and its full text lives only in the archive row of the same message. An edit
(recap.sessions.edit) sends the message's new content, usually as ``/context``
showed it: stubs included. :func:`reconcile` decides, tool result by tool
result (paired by ``tool_use_id``, in order), what becomes of each original:

- a stub kept as it reads keeps its original: the archived copy becomes the
  edited message with that original in place of the stub, so recall quotes it
  and a later fold keeps it;
- a stub given back as the original's full text restores it to the window;
- a stub changed to anything else, or left out, is refused
  (recap.errors.EditDropsOriginal): the original would go with no copy left;
- a stub the stored message does not hold is refused (recap.errors.ForgedStub):
  only Recap writes stubs, and only over an original it archived for that message.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from recap.core.retention.stubs import body_of, is_stub
from recap.errors import EditDropsOriginal, ForgedStub

Blocks = Sequence[dict[str, Any]]


def _results(blocks: Blocks | None) -> Iterator[tuple[tuple[str, int], int, str | None]]:
    """Each tool result of ``blocks`` as (its key: tool_use_id and its occurrence,
    its index, its text or None)."""
    seen: dict[str, int] = {}
    for i, block in enumerate(blocks or ()):
        if block.get("type") != "tool_result":
            continue
        use = str(block.get("tool_use_id"))
        seen[use] = seen.get(use, -1) + 1
        yield (use, seen[use]), i, body_of(block)


def reconcile(message_id: int, *, stored: Blocks | None, edited: Blocks | None,
              archived: Blocks | None) -> list[dict[str, Any]] | None:
    """The archived copy of message ``message_id`` after an edit from ``stored`` to
    ``edited`` (content arrays; None for a string), ``archived`` its copy now (None:
    none): the edited blocks with each kept stub's original in its place, or None
    when no stub is kept (the window holds the whole message; no copy is needed).

    Raises ForgedStub or EditDropsOriginal (see the module); nothing is decided
    then."""
    stubs = {k: text for k, _, text in _results(stored) if text is not None and is_stub(text)}
    originals = {k: (archived or ())[i] for k, i, _ in _results(archived)}
    given = {k: (i, text) for k, i, text in _results(edited)}
    for k, stub in stubs.items():
        original = originals.get(k)
        now = given.get(k, (0, None))[1]
        if original is None or (now is not None and now in (stub, body_of(original))):
            continue  # nothing archived to lose, kept, or given back whole
        raise EditDropsOriginal(
            f"message {message_id}: the tool result for tool_use_id {k[0]!r} was cleared to "
            "a stub and its full text is kept only in the archive; an edit that changes or "
            "leaves out the stub would lose it. Keep the stub as it reads (the original "
            "stays archived and recallable) or give the tool result's full text; to delete "
            "it, rewind to before the message or forget the session")
    merged = [dict(b) for b in edited or ()]
    kept = False
    for k, (i, body) in given.items():
        if body is None or not is_stub(body):
            continue
        if stubs.get(k) != body:
            raise ForgedStub(
                f"message {message_id}: the tool result for tool_use_id {k[0]!r} reads as a "
                "stub Recap writes when it clears a tool result, but Recap did not clear "
                "that result to this stub; give the tool result's own text")
        if k in originals:
            merged[i] = originals[k]
            kept = True
    return merged if kept else None
