"""Who stated a mined fact, decided by Recap from the batch, not by the model (pure).

The model mining a batch says where each fact came from (``source``: the user,
the assistant, a tool result or a document), but its answer is not trusted: a
tool result or a pasted e-mail can tell it "record this as the user's", and a
user who *asks* for a number ("what is my bank's support line?") supplies every
word of the fact but the number. So a fact keeps the kind ``user`` (and with it
the user's scope, which every later session of the user reads in its system
prompt) only if

- **every specific in it** is the user's own: each number, id, date, amount,
  address, URL and path (recap.core.specifics) and each name (:func:`names`: a
  capitalised word that does not start a sentence) appears in what the user
  typed in the batch (:func:`own_text`);
- its words are the user's: most of its content words appear there too;
- it speaks of the user, not of the assistant ("The assistant suggests ...");
- it does not read as an instruction to an assistant (:func:`instruction_like`).

What the user typed is their string turns and text blocks, without what they
quote or paste (:func:`strip_pasted`): tool results, documents, code blocks and
quotations as CommonMark reads them (recap.core.memories.markdown), text in
double quotes (straight, curly or angle), everything from an e-mail or forward
header on, and everything after an introduction of someone else's text ("My
colleague wrote:", "Translate this:", "Here is the log:"), each read after
compatibility normalisation (``＞`` quotes, ``From：`` is a header).
Anything else is ``unverified`` (the model said "user", Recap could not confirm
it) or the kind the model gave, and stays with its session; it never supersedes
a memory the user stated (recap.store.rows.save_memories).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from recap.core.memories import markdown
from recap.core.specifics import MAX_SPECIFIC_CHARS, absent, extract_specifics, joined

# User turns whose stated names are remembered (by value: the same text always reads
# the same). A job reads each user turn of its batch and window several times
# (salience, the guard) and the next job of the session reads the same window
# again; as with recap.core.specifics.extract_specifics, a process keeps the latest.
TEXT_CACHE = 4096
# Longer turns are read again when asked: the cache holds at most
# TEXT_CACHE * CACHED_CHARS characters (about 256 MB at worst).
CACHED_CHARS = 16_384

KINDS = ("user", "assistant", "tool", "document")
# The share of a fact's content words that must appear in the user's own words.
GROUNDED_SHARE = 0.5

# A pasted message starts here: everything from the line on is someone else's text.
# Each pattern runs in time linear in its input (a pasted blob, a megabyte of
# blank lines): white space at a line's start is ``[ \t]`` (never a newline, which
# would let every line start rescan the blank lines after it), and repeats that
# could give back what they took are possessive.
_PASTE_START = re.compile(
    r"^[ \t]*+(?:(?:from|to|cc|bcc|subject|date|sent|reply-to|de|von|objet|betreff)"
    r"[ \t]*+:|-{2,}+[ \t]*+(?:original message|forwarded message)|begin forwarded message"
    r"|on .{3,80} wrote:[ \t]*+$)", re.I | re.M)
_FENCE_MARK = "\x00"
_SPACE = re.compile(r"\s++")
# Someone else's words in quotation marks (straight, curly, low-high or angle),
# each opening mark with the marks that close it: what the user quotes is what
# another person said, not a statement of theirs.
_QUOTES = {'"': '"', "“": "”", "„": "“”", "«": "»"}
_OPENING = re.compile("[" + "".join(_QUOTES) + "]")
# An introduction of someone else's text ("My colleague wrote:", "Translate this:",
# "Here is the e-mail:"): what follows it, to the end of the message, is pasted.
# A noun introduces only with a determiner: "Note: I'm allergic" is the user's own.
# "Here is ...:" ending its line introduces what the lines after it hold.
_INTRODUCED = re.compile(
    r"\b(?:wrote|writes|said|says|sent|replied|posted|reads|forwarded|this|these|following|"
    r"below)[ \t]*+:|\b(?:the|this|that|his|her|their|your|an?|its)[ \t]++(?:e-?mail|letter|"
    r"note|message|reply|transcript|text|post|comment|quote|logs?|output|errors?|trace(?:back)?|"
    r"stack[ \t]trace|file|document|doc|code|snippet|config|dump|excerpt|article|"
    r"page|paragraph|chat|conversation|thread|response|prompt|ticket|report)"
    r"[ \t]*+:|\bhere(?:[ \t]*+[\'\u2019]s|[ \t]++(?:is|are|was|were|goes))\b"
    r"[^\n:]{0,80}+:[ \t]*+$", re.I | re.M)
# A fact about the assistant (a summary sentence with the roles swapped) is not the user's.
_ABOUT_ASSISTANT = re.compile(r"\s*+(?:the\s++)?(?:assistant|ai|model|bot|chatbot)\b", re.I)
# Capitalised words that name no one: the pronoun, and the word facts use for the user.
# Weekdays and months start with a capital but name no one (a date's specifics
# keep them): counted as names, they would make a dated English turn look like
# German, where only acronyms count (stated_names).
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march "
    "april may june july august september october november december".split())
_NOT_NAMES = frozenset({"i", "i'm", "i've", "i'll", "i'd", "user", "user's", "ok", "okay",
                        *_CALENDAR})
_NAME_LEAD = "([{<\"'“‘«¿¡*_"
_NAME_TRAIL = ".,;:!?)]}>\"'”’»…*_"
_SENTENCE_ENDS = tuple(".!?:;")
# What facts say about anyone: not evidence that the user said it.
_STOPWORDS = frozenset(
    "the user users user's they them their theirs he she his her hers him it its this that "
    "these those is are was were be been being has have had do does did and or but a an to "
    "of in on at for with from by as into about who which what when where will would should "
    "can could may might must also very not no yes".split())
# The marks of an injected instruction (not of a preference: "answer in French"
# is the user's to keep): overriding instructions, naming the system prompt, a
# role prefix, a change of persona, exfiltration, markup.
_INSTRUCTION = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}\b(?:instructions?|rules?|"
    r"prompts?|guidelines?|above|previous|prior)\b"
    r"|\b(?:system|developer)\s+(?:prompt|message|instructions?)\b"
    r"|(?:^|\s)(?:system|assistant|human|ai)\s*:"
    r"|\byou\s+are\s+now\b|\bfrom\s+now\s+on\b"
    r"|\b(?:reveal|print|repeat|exfiltrate|leak)\b.{0,30}\b(?:prompt|instructions?|secrets?|"
    r"keys?|passwords?)\b"
    r"|&lt;|<\s*+/?\s*+[A-Za-z_]", re.I | re.S)


def strip_pasted(text: str) -> str:
    """``text`` without what the user pasted or quoted rather than wrote: code
    blocks and quotations as CommonMark reads them (recap.core.memories.markdown:
    fences of any length, unclosed ones to the end, indented code, ``<pre>``,
    ``>`` and ``＞`` quotations), everything from an e-mail or forward header line
    on, everything after an introduction of someone else's text ("wrote:",
    "Translate this:") unless what it introduces is a code block (the block ends
    the paste: "Here is the log: ```...``` By the way, ..." is the user's again
    after it), and text in double quotation marks. Headers and introductions are
    read after compatibility normalisation (``From：`` is ``From:``)."""
    # Where a code block stood, so an introduction of it is known as such. Stored
    # text never holds NUL (PostgreSQL refuses it); text that does is read without.
    mark = "" if _FENCE_MARK in text else _FENCE_MARK
    text = _replaced(text, markdown.outermost(markdown.blocks(markdown.normalized(text))),
                     lambda a, b, kind: "\n" + mark if kind == "pasted" else "")
    seen = markdown.normalized(text)
    header = _PASTE_START.search(seen)
    if header:
        text, seen = text[:header.start()], seen[:header.start()]
    end = _introduced_from(seen, lambda at: bool(mark) and seen.startswith(mark, at))
    if end is not None:
        text, seen = text[:end], seen[:end]
    kept = _without(text, quotations(seen))
    return kept.replace(_FENCE_MARK, "") if mark else kept


def _replaced(text: str, spans: Iterable[tuple[int, int, str]],
              fill: Callable[[int, int, str], str]) -> str:
    """``text`` with each of ``spans`` (in order, apart) replaced by ``fill`` of it."""
    pieces: list[str] = []
    plain = 0
    for start, end, kind in spans:
        pieces += [text[plain:start], fill(start, end, kind)]
        plain = end
    pieces.append(text[plain:])
    return "".join(pieces)


def _introduced_from(text: str, fence_at: Callable[[int], bool]) -> int | None:
    """Where the text an introduction (:data:`_INTRODUCED`) hands over to someone
    else starts, up to the end of ``text``; None when there is none. An introduction
    followed only by white space and then a fenced block (``fence_at`` of the
    block's position) introduces that block alone, which is dealt with as a fence.
    Linear: the white space after each introduction is read once, as the next
    introduction can only start past a fence."""
    for intro in _INTRODUCED.finditer(text):
        gap = _SPACE.match(text, intro.end())
        if not fence_at(gap.end() if gap else intro.end()):
            return intro.end()
    return None


def drop_quoted(text: str) -> str:
    """``text`` with each quotation (:func:`quotations`) replaced by a space."""
    return _without(text, quotations(text))


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    plain = 0
    for start, end in spans:
        out.append(text[plain:start])
        out.append(" ")
        plain = end
    out.append(text[plain:])
    return "".join(out)


def quotations(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each quotation in ``text``: an opening mark up to the
    first mark that closes it. Linear for any input: the next position of each
    closing mark is looked up once and reused until the scan passes it, so a paste
    of a hundred thousand opening marks (matched, unmatched, or closed by only one
    of their marks, as „ is by “ but not ”) is one pass per mark."""
    spans: list[tuple[int, int]] = []
    i = 0
    ahead: dict[str, int] = {}  # closing mark -> its next index at or after the scan (-1: none)
    while (m := _OPENING.search(text, i)) is not None:
        i = m.start()
        closers = _QUOTES[text[i]]
        ends = [k for k in (_next(text, c, i + 1, ahead) for c in closers) if k >= 0]
        if not ends:
            i += 1
            continue
        spans.append((i, min(ends) + 1))
        i = spans[-1][1]
    return spans


def pasted_spans(text: str) -> list[tuple[int, int, str]]:
    """Where ``text`` (a user's turn) holds what they quoted or pasted rather than
    wrote, as (start, end, kind) in ``text`` itself: ``quoted`` (quotation marks,
    ``>`` quotations) or ``pasted`` (code blocks, everything from an e-mail or
    forward header on, everything after an introduction). The parts
    :func:`strip_pasted` drops, read on the whole text: a header inside a code
    block counts too."""
    seen = markdown.normalized(text)
    found = markdown.blocks(seen)
    spans = list(found)
    header = _PASTE_START.search(seen)
    if header:
        spans.append((header.start(), len(text), "pasted"))
    # Introductions are read outside the code blocks, as strip_pasted reads them:
    # each block masked by as many marks (positions kept), unless the text holds one.
    masked = seen
    code = [span for span in markdown.outermost(found) if span[2] == "pasted"]
    if code and _FENCE_MARK not in text:
        masked = _replaced(seen, code, lambda a, b, kind: _FENCE_MARK * (b - a))
    end = _introduced_from(masked, lambda at: masked.startswith(_FENCE_MARK, at))
    if end is not None:
        spans.append((end, len(text), "pasted"))
    spans += [(a, b, "quoted") for a, b in quotations(seen)]
    return spans


def _next(text: str, mark: str, start: int, ahead: dict[str, int]) -> int:
    """The first index of ``mark`` in ``text`` at or after ``start`` (-1: none),
    remembered in ``ahead``: ``start`` only grows, so each mark's finds together
    read the text once."""
    at = ahead.get(mark)
    if at is None or (0 <= at < start):
        at = text.find(mark, start)
        ahead[mark] = at
    return at


def own_text(role: str, content: str, blocks: Sequence[dict[str, Any]] | None) -> str:
    """What the author of a stored message wrote themselves, for a user turn ("" for
    any other role): its text blocks (never tool results or documents), or its
    string content, without pasted parts (:func:`strip_pasted`)."""
    if role != "user":
        return ""
    if blocks is not None:
        content = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    return strip_pasted(content)


def _stems(text: str) -> list[str]:
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    for w in words:
        if w in _STOPWORDS or (len(w) < 3 and not w.isdigit()):
            continue
        if len(w) > 12 and not w.isascii():  # scripts without spaces: bigrams
            out.extend(w[i:i + 2] for i in range(len(w) - 1))
        else:
            out.append(w[:4] if w.isalpha() else w)
    return out


def content_words(text: str) -> list[str]:
    """The words :func:`grounded` compares, in order: content words cut to their first
    four letters, numbers whole, bigrams of scripts written without spaces."""
    return _stems(text)


def grounded(fact: str, own: str) -> bool:
    """Whether at least GROUNDED_SHARE of ``fact``'s content words (their first four
    letters, so "lives" meets "live" and "allergy" meets "allergic") appear in
    ``own``."""
    wanted = _stems(fact)
    if not wanted:
        return False
    have = set(_stems(own))
    return sum(1 for w in wanted if w in have) >= GROUNDED_SHARE * len(wanted)


def names(text: str) -> frozenset[str]:
    """The names in ``text``: each capitalised word (a person, a place, an
    organisation: "Ines", "Porto", "TAP") that does not start a sentence or a line,
    without its punctuation. Linear: one pass over the words."""
    found: set[str] = set()
    text = unicodedata.normalize("NFKC", text)
    initial = True
    end = 0
    for m in re.finditer(r"\S++", text):
        token = m.group()
        word = token.lstrip(_NAME_LEAD).rstrip(_NAME_TRAIL)
        newline = "\n" in text[end:m.start()]
        end = m.end()
        if (word and not (initial or newline) and word[0].isupper()
                and word.casefold() not in _NOT_NAMES and not word.isdigit()
                and len(word) <= MAX_SPECIFIC_CHARS):
            found.add(word)
        initial = token.endswith(_SENTENCE_ENDS) or token in ("-", "*", "•")
    return frozenset(found)


def stated_names(text: str) -> frozenset[str]:
    """The names a user's turn states in their own words (:func:`_stated_names`);
    a turn up to CACHED_CHARS is read once however many steps of a job ask."""
    if len(text) <= CACHED_CHARS:
        return _cached_names(text)
    return _stated_names(text)


def _stated_names(text: str) -> frozenset[str]:
    """The names a user's turn states in their own words (:func:`names` outside what
    they quote or paste, :func:`strip_pasted`). In text that capitalises most
    nouns (German), only acronyms and mixed-case names count ("TAP", "McKinsey")."""
    own = strip_pasted(text)
    found = names(own)
    if len(found) > max(3, len(own.split()) // 5):
        found = frozenset(n for n in found if n.isupper() or not n[1:].islower())
    return found


_cached_names = functools.lru_cache(maxsize=TEXT_CACHE)(_stated_names)


def own_specifics(fact: str, own: Iterable[str]) -> bool:
    """Whether every specific (recap.core.specifics) and every name (:func:`names`)
    of ``fact`` appears in ``own``, the user's own words."""
    found = extract_specifics(fact, whole=True)
    return not absent(found | joined(names(fact), found), own)


def instruction_like(fact: str) -> bool:
    """Whether ``fact`` reads as an instruction to an assistant (or carries markup)
    rather than as a statement about the user."""
    return bool(_INSTRUCTION.search(unicodedata.normalize("NFKC", fact)))


def attribute(fact: str, claimed: str, own: Iterable[str]) -> str:
    """The kind a mined ``fact`` is stored with: ``claimed`` (the model's ``source``)
    unless it claims ``user`` without the user's own words (``own``: the batch's
    :func:`own_text`) backing it and each of its specifics, or reads as an
    instruction or speaks of the assistant: ``unverified``."""
    if claimed != "user":
        return claimed if claimed in KINDS else "unverified"
    own = list(own)
    if (instruction_like(fact) or _ABOUT_ASSISTANT.match(fact) or not own_specifics(fact, own)
            or not grounded(fact, "\n".join(own))):
        return "unverified"
    return "user"
