"""The fake Messages API's default answers (recap.testing.recap picks one per call):
digests that keep specifics, the retention guard's repair answer, the forced
``record_summary`` tool's input, and the lossy mode that drops specifics."""

from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any


def digest_line(role: str, content: str) -> str:
    """One message's digest: its first 12 words, then up to 20 of the specifics
    (numbers, ids, paths...) they leave out, as a careful model keeps them."""
    from recap.core.specifics import absent, extract_specifics

    line = f"The {role} said: {' '.join(content.split()[:12])}"
    rest = sorted(absent(extract_specifics(content), [line]))[:20]
    return f"{line} ({'; '.join(rest)})" if rest else line


def default_repair(prompt: str, max_chars: int = 100_000) -> str:
    """The retention guard's repair call: the summary with each listed item added,
    as many as fit ``max_chars`` (as a model stays under max_tokens)."""
    summary = re.search(r"<summary>\n(.*?)\n</summary>", prompt, re.S)
    items = re.findall(r"^- (.+)$", prompt.split("<summary>", 1)[0], re.M)
    text = html.unescape(summary.group(1)) if summary else ""
    for item in items:
        if len(text) + len(item) + 1 > max_chars:
            break
        text += "\n" + item
    return text.strip()


def drop_specifics(text: str, fraction: float, *, seed: int, kind: str) -> str:
    """``text`` without a ``fraction`` of its specifics: each one is dropped or kept
    by a hash of (seed, kind, specific), so the same answer loses the same ones and
    a repair answer (another kind) loses others."""
    from recap.core.specifics import extract_specifics

    for specific in sorted(extract_specifics(text), key=len, reverse=True):
        digest = hashlib.sha256(f"{seed}:{kind}:{specific}".encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 < fraction:
            text = re.sub(re.escape(specific), "(…)", text, flags=re.I)
    return text


def tool_input(body: dict[str, Any], prompt: str, scripted: str | None, *, fraction: float,
               seed: int) -> dict[str, Any]:
    """The input of the tool a request forces (Recap's record_summary: summary and
    facts). A scripted text is the input if it is a JSON object, else the summary
    (with the FACT: lines as facts);
    otherwise the default summary (within the cap the tool's description states) and
    the FACT: lines as facts, each losing ``fraction`` of its specifics."""
    if scripted is not None:
        try:
            data = json.loads(scripted)
        except ValueError:
            data = None
        # A scripted plain text is the summary; the facts are still the FACT: lines,
        # as when mining was a call of its own that the test left unscripted.
        return data if isinstance(data, dict) else {
            "summary": scripted, "facts": default_facts(prompt)}
    described = json.dumps(body["tools"][0].get("input_schema", {}))
    cap = re.search(r"at most (\d+) tokens", described)
    summary = default_summary(prompt, 3 * int(cap.group(1) if cap else body["max_tokens"]))
    facts = default_facts(prompt)
    if fraction:
        summary = drop_specifics(summary, fraction, seed=seed, kind="summary")
        for f in facts:
            f["fact"] = drop_specifics(f["fact"], fraction, seed=seed, kind="facts")
    return {"summary": summary, "facts": facts}


def default_summary(prompt: str, max_chars: int = 100_000) -> str:
    """A deterministic summary: the previous one plus a digest of each new message,
    dropping its oldest lines to stay within ``max_chars`` (as a model stays under
    max_tokens)."""
    prev = re.search(r"<previous_summary>\n(.*?)\n</previous_summary>", prompt, re.S)
    previous = prev.group(1).strip() if prev else ""
    lines = [] if previous in ("", "(none yet)") else [previous]
    for role, content in re.findall(r'<message role="(\w+)">\n(.*?)\n</message>', prompt, re.S):
        lines.append(digest_line(role, content))
    text = "\n".join(lines) or "The conversation was empty."
    while len(text) > max_chars and "\n" in text:
        text = text.split("\n", 1)[1]
    return text


def default_facts(prompt: str) -> list[dict[str, Any]]:
    """Memory mining: every line starting with ``FACT:`` becomes one fact."""
    return [{"fact": line.split("FACT:", 1)[1].strip(), "category": "fact", "importance": 3}
            for line in prompt.splitlines() if line.strip().startswith("FACT:")]


def digest_messages(messages: list[dict[str, Any]], max_chars: int = 100_000) -> str:
    """Any other client's request: a digest of each of its messages' text, dropping the
    oldest lines to stay within ``max_chars``."""
    lines = []
    for m in messages:
        content = m.get("content")
        blocks = [content] if isinstance(content, str) else [
            str(b.get("text", "")) for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"]
        lines += [digest_line(str(m.get("role")), t) for t in blocks if t.strip()]
    text = "\n".join(lines) or "The conversation was empty."
    while len(text) > max_chars and "\n" in text:
        text = text.split("\n", 1)[1]
    return text
