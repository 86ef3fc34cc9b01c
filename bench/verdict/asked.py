"""Later turns that refer back, for the workloads generated without them (demo,
short, agent, multi), so answerable at reference is measured on every workload.

Each generator is pure: given a workload's messages and a seeded rng, it finds
specifics that sit in earlier messages (request ids, pod names, table rows, order
numbers, times, config values) and inserts a few user turns in the later half that
ask for one of them back, each with the assistant's short answer after it. Each
such turn is a reference (:class:`bench.verdict.shapes.Probe`) whose ``answer`` is
the specific, word for word as the earlier message has it, and never in the
question itself. About half the turns name an identifier that sits next to the
specific ("request 5a83d07c68a7130b in the ingress log: which upstream?"); the
others describe it in the user's own words, without it (a date written another
way, a row described by what is in it, "the slowest request in the on-call notes").
A question is only asked where its cue picks out one message of the conversation
and its answer occurs in no other, so it has one right answer. Few turns are
added (about one reply in ten at most), so each workload keeps its cost shape.

- :func:`demo_asks`: the SRE chat's ingress logs, pod listings and dated metrics
  tables;
- :func:`chat_asks`: short turns (short, and each session of multi): what the
  user asked about and what the assistant said back;
- :func:`agent_asks`: the agent's documents: a request's line, the slowest
  request, the first 429, what a task ended with;
- :func:`multi_asks`: inside each session about its own earlier messages, and a
  few in a later session about an earlier one (full history and the peers see one
  session at a time; Recap's recall is scoped to the session, its user-scoped
  memories carry what the user stated).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bench.verdict.referring import reply_indices
from bench.verdict.shapes import Message, Probe, Workload
from recap.bench.harness.pricing import flat

SHARE = 10  # at most one added turn per this many replies
MOST = 12  # added turns per session at most
LEAST = 2  # and at least
GAP = 4  # messages between a specific and the turn asking it back, at least


@dataclass(frozen=True)
class Ask:
    """A question one earlier message answers: ``at`` (its index; -1: an earlier
    session), the ``answer`` there, the user's ``turn``, and whether the turn names
    an identifier (``named``) or describes the specific in the user's own words."""

    at: int
    answer: str
    turn: str
    named: bool


def _texts(messages: Sequence[Message]) -> list[str]:
    return [flat(c) for _, c in messages]


def _single(needle: str, texts: Sequence[str]) -> bool:
    """Whether ``needle`` occurs in exactly one distinct line of ``texts`` (a
    document read twice repeats its lines, not the answer)."""
    lines = {line for t in texts if needle in t for line in t.splitlines() if needle in line}
    return len(lines) == 1


def fair(asks: Sequence[Ask], texts: Sequence[str]) -> list[Ask]:
    """The asks with one right answer: the answer on one line of the conversation,
    in its message, not in the question."""
    return [a for a in asks if a.answer not in a.turn and _single(a.answer, texts)
            and (a.at < 0 or a.answer in texts[a.at])]


def choose(messages: Sequence[Message], asks: Sequence[Ask], rng: random.Random, *,
           slots: Sequence[int], count: int, used: set[str]) -> list[tuple[int, Ask]]:
    """Up to ``count`` (slot, ask): the slots (indices of messages a user turn may
    precede) spread over the later half of ``messages``, one per equal stretch;
    named and own-words asks alternate where both are left; an answer is asked once
    (``used`` gathers them)."""
    later = [s for s in slots if s >= len(messages) // 2]
    chosen: list[tuple[int, Ask]] = []
    named = rng.random() < 0.5
    for b in range(count if later else 0):
        # One stretch each; with fewer slots than asks, a slot takes two.
        lo = len(later) * b // count
        slot = rng.choice(later[lo:max(lo + 1, len(later) * (b + 1) // count)])
        fit = [a for a in asks if a.at + GAP <= slot and a.answer not in used]
        pick = [a for a in fit if a.named == named] or fit
        if pick:
            ask = rng.choice(pick)
            used.add(ask.answer)
            chosen.append((slot, ask))
            named = not named
    return chosen


def apply(messages: Sequence[Message], chosen: Sequence[tuple[int, Ask]]
          ) -> tuple[list[Message], list[tuple[int, str]]]:
    """``messages`` with each ask's user turn, and the assistant's answer after it,
    inserted before its slot; and (index of the turn in the new list, answer)."""
    out: list[Message] = []
    marks: list[tuple[int, str]] = []
    at = 0
    for slot, ask in sorted(chosen, key=lambda c: c[0]):
        out += messages[at:slot]
        at = slot
        marks.append((len(out), ask.answer))
        out += [("user", ask.turn), ("assistant", f"That was {ask.answer}.")]
    return out + list(messages[at:]), marks


def ask_back(messages: Sequence[Message], asks: Sequence[Ask], rng: random.Random, *,
          slots: Sequence[int]) -> tuple[list[Message], list[tuple[int, str]]]:
    """``messages`` with :func:`budget` of ``asks`` inserted at ``slots``."""
    return apply(messages, choose(messages, asks, rng, slots=slots, count=budget(messages),
                                  used=set()))


def chat_slots(messages: Sequence[Message]) -> list[int]:
    """Where a chat may take another exchange: before each user turn, and at the end."""
    return [i for i, (role, _) in enumerate(messages) if role == "user" and i > 0] + [
        len(messages)]


def budget(messages: Sequence[Message]) -> int:
    """How many turns to add: about one reply in :data:`SHARE`, within bounds."""
    replies = sum(1 for role, _ in messages if role == "user")
    return max(LEAST, min(MOST, round(replies / SHARE)))


def probes_of(sessions: Sequence[Sequence[Message]],
              marks: Sequence[Sequence[tuple[int, str]]]) -> tuple[Probe, ...]:
    """The probes of ``marks`` ((message index, answer) per session) at their replies,
    counted over all sessions."""
    flat_msgs = [m for s in sessions for m in s]
    replies = reply_indices(flat_msgs)
    out, base = [], 0
    for msgs, marked in zip(sessions, marks, strict=True):
        out += [Probe(replies[base + i], answer, str(msgs[i][1])) for i, answer in marked]
        base += len(msgs)
    return tuple(out)


# --- demo: the SRE chat -----------------------------------------------------------

_INGRESS = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):\S+ \S+ \"([A-Z]+) (\S+) "
                      r"HTTP/1\.1\" (\d{3}) \d+ upstream_response_time=\S+ "
                      r"request_id=([0-9a-f]+) upstream_addr=(\S+)$")
_POD = re.compile(r"^(billing-api-[0-9a-z]+-[0-9a-z]+) +(\d/\d) +(\w+) +(\d+ \(\d+m ago\)) "
                  r"+(\d+m)$")
_DATED = re.compile(r"^(?:Daily check-in for|Metrics for) \w+day (\d{1,2}) ([A-Z][a-z]+)"
                    r"(?: (\d{4}))?")
_ROW = re.compile(r"^(\d{2}):00 +\|.*\|.*$")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_HOURS = ("midnight", "one in the morning", "two in the morning", "three in the morning",
          "four in the morning", "five in the morning", "six in the morning",
          "seven in the morning", "eight in the morning", "nine in the morning",
          "ten in the morning", "eleven in the morning", "noon", "one in the afternoon",
          "two in the afternoon", "three in the afternoon", "four in the afternoon",
          "five in the afternoon", "six in the evening", "seven in the evening",
          "eight in the evening", "nine in the evening", "ten at night", "eleven at night")


def _nth(day: int) -> str:
    tail = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{tail}"


def other_date(day: int, month: int, year: int | None, rng: random.Random) -> str:
    """A date as a person might write it, never as the log or header has it."""
    name = _MONTHS[month - 1]
    forms = [f"{name} {_nth(day)}", f"the {_nth(day)} of {name}", f"{day:02d}/{month:02d}"]
    if year:
        forms.append(f"{year}-{month:02d}-{day:02d}")
    return rng.choice(forms)


def _once(keys: Sequence[object]) -> set[object]:
    seen: dict[object, int] = {}
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
    return {k for k, n in seen.items() if n == 1}


def demo_asks(messages: Sequence[Message], rng: random.Random) -> list[Ask]:
    """What the SRE chat can be asked back: an ingress log line (by its request id:
    the upstream; in the user's words, method, path, status and about when: the
    request id), a pod of a listing (by name: its restarts; by its status, restarts
    and age: its name), a row of a dated metrics table (the date written another
    way, the hour in words)."""
    texts = _texts(messages)
    logs, pods, rows = [], [], []
    for i, text in enumerate(texts):
        dated = _DATED.match(text)
        for line in text.splitlines():
            if m := _INGRESS.match(line):
                logs.append((i, m))
            elif p := _POD.match(line):
                pods.append((i, p))
            elif dated and (r := _ROW.match(line)):
                rows.append((i, dated, int(r.group(1)), line.strip()))
    asks = []
    when = _once([(m[6], m[7], m[8], m[1], m[2], m[3], m[4], m[5]) for _, m in logs])
    for i, m in logs:
        asks.append(Ask(i, m[10], f"In the ingress log I pasted, request {m[9]}: which "
                                  "upstream address did it go to?", True))
        if (m[6], m[7], m[8], m[1], m[2], m[3], m[4], m[5]) in when:
            day = other_date(int(m[3]), int(m[2]), int(m[1]), rng)
            asks.append(Ask(i, m[9], f"The {m[6]} to {m[7]} that got a {m[8]} at {m[4]}:{m[5]}"
                                     f" on {day}: what was its request id?", False))
    unique_pods = _once([(p[3], p[4], p[5]) for _, p in pods])
    for i, p in pods:
        asks.append(Ask(i, p[4], f"From the kubectl output, pod {p[1]}: how many restarts "
                                 "did it show?", True))
        if (p[3], p[4], p[5]) in unique_pods:
            asks.append(Ask(i, p[1], f"Which pod was it that showed {p[3]} with {p[4]} "
                                     f"restarts at {p[5]} old?", False))
    for i, dated, hour, line in rows:
        year = int(dated[3]) if dated[3] else None
        day = other_date(int(dated[1]), _MONTHS.index(dated[2]) + 1, year, rng)
        asks.append(Ask(i, line, f"What did the metrics look like at {_HOURS[hour]} on "
                                 f"{day}? Give me that row again.", False))
    return fair(asks, texts)


# --- chats of short turns: short, and each session of multi ----------------------

_SPEC = r"(#\d+|\d+\.50 EUR|at \d{2}:\d{2}|/srv/app/\w+\.yml)"
_MENTION = re.compile(r"(the \w+) " + _SPEC)
_SAID = re.compile(r"(Done, |Checked: |Noted |I found |Yes, )(the \w+) " + _SPEC
                   + r"( is updated| looks fine|; anything else| in the last report"
                   r"| is scheduled)")
_VERBS = {" is updated": "was updated", " looks fine": "looked fine",
          "; anything else": "you noted", " in the last report": "you found in the last report",
          " is scheduled": "was scheduled"}


def _kind(spec: str) -> str:
    return ("number" if spec.startswith("#") else "amount" if spec.endswith("EUR")
            else "time" if spec.startswith("at ") else "file")


def _bare(spec: str) -> str:
    return spec[3:] if spec.startswith("at ") else spec


def chat_asks(messages: Sequence[Message], *, before: str = "") -> list[Ask]:
    """What a chat of short turns can be asked back: by a number, time or amount
    said once, what it was about; by a number one turn mentioned, the time or number
    the next turn gave (named); in the user's words, the time or number of the thing
    the assistant said was updated, scheduled, found (own words). ``before``: a
    phrase opening each question (an earlier session)."""
    texts = [str(c) for _, c in messages]

    def ask(question: str) -> str:
        return before + question[0].lower() + question[1:] if before else question

    said = [(i, m) for i, t in enumerate(texts) for m in _SAID.finditer(t)]
    cues = _once([(m[2], _kind(m[3]), m[4]) for _, m in said])
    asks = []
    for i, m in said:
        if (m[2], _kind(m[3]), m[4]) in cues and _kind(m[3]) in ("number", "time"):
            asks.append(Ask(i, _bare(m[3]), ask(f"What {_kind(m[3])} was it for {m[2]}, the one "
                                                 f"you said {_VERBS[m[4]]}?"), False))
    for i, text in enumerate(texts):
        for m in _MENTION.finditer(text):
            if _single(m[2], texts):
                asks.append(Ask(i, f"{m[1]} {m[2]}", ask(f"What was {_bare(m[2])} about again, "
                                                         "which one was it?"), True))
    for i in range(len(texts) - 1):
        named = [m[2] for m in _MENTION.finditer(texts[i]) if _kind(m[2]) == "number"]
        answers = [m[2] for m in _MENTION.finditer(texts[i + 1])
                   if _kind(m[2]) in ("number", "time")]
        if len(named) != 1 or len(answers) != 1:
            continue
        who = "I" if messages[i][0] == "user" else "you"
        asks.append(Ask(i + 1, _bare(answers[0]),
                        ask(f"When {who} brought up {named[0]}, the reply right after "
                            f"mentioned a {_kind(answers[0])}: which one?"), True))
    return asks


def chat_with_asks(messages: Sequence[Message], rng: random.Random
                   ) -> tuple[list[Message], list[tuple[int, str]]]:
    """A chat of short turns with its asks inserted, and (index, answer) of each."""
    return ask_back(messages, fair(chat_asks(messages), _texts(messages)), rng,
                 slots=chat_slots(messages))


# --- agent: documents read by tools ------------------------------------------------

_DOC_LINE = re.compile(r"^(\d{2}:\d{2}:\d{2}) (\w+)=(\d+) (host=db-\d+) (req=r\d+) "
                       r"status=(\d+) latency_ms=(\d+)$")
_DONE = re.compile(r"^Done with task (\d+): the files agree except for (\w+ on db-\d+)\.$")
_ABOUT = {"deploy/values.yaml": "the deploy values", "docs/runbook.md": "the runbook",
          "src/billing/ledger.py": "the ledger module",
          "logs/api-2026-11-20.log": "the API log from the 20th",
          "schema/migrations.sql": "the migrations file", "ops/oncall.md": "the on-call notes",
          "src/api/routes.py": "the routes file",
          "reports/latency-q3.csv": "the Q3 latency report"}


def agent_asks(messages: Sequence[Message]) -> list[Ask]:
    """What the agent's session can be asked back: by a request id and the file, the
    key and host on its line (named); in the user's words, the slowest request of a
    file, its first 429, what a task ended with (own words)."""
    texts = _texts(messages)
    asks, seen = [], set()
    for i, (role, content) in enumerate(messages):
        text = texts[i]
        if role == "assistant" and (d := _DONE.match(text)):
            asks.append(Ask(i, d[2], f"At the end of task {d[1]} you said the files "
                                     "disagreed on one setting: which one, on which host?",
                            False))
        head = text.split("\n", 1)[0]
        if role != "user" or isinstance(content, str) or not head.startswith("# "):
            continue
        path = head[2:]
        if path in seen:
            continue  # the first read: a re-read is the same text
        seen.add(path)
        lines = [m for line in text.splitlines() if (m := _DOC_LINE.match(line))]
        for m in lines[:: max(1, len(lines) // 8)]:
            asks.append(Ask(i, f"{m[2]}={m[3]} {m[4]}", f"In {path}, the line for request "
                                                         f"{m[5][4:]}: what was {m[2]} on it, "
                                                         "and which host?", True))
        slowest = max(lines, key=lambda m: int(m[7]), default=None)
        if slowest and sum(1 for m in lines if m[7] == slowest[7]) == 1:
            asks.append(Ask(i, slowest[5][4:], f"Which request was the slowest in "
                                               f"{_ABOUT.get(path, path)}?", False))
        first = next((m for m in lines if m[6] == "429"), None)
        if first:
            asks.append(Ask(i, first[5][4:], f"In {_ABOUT.get(path, path)}, which request "
                                             "got the first 429?", False))
    return fair(asks, texts)


def agent_slots(messages: Sequence[Message]) -> list[int]:
    """Between tasks: before each task the user types after the first, and at the end
    (never between a tool call and its result)."""
    return [i for i, (role, c) in enumerate(messages) if role == "user" and isinstance(c, str)
            and i > 0] + [len(messages)]


def agent_with_asks(messages: Sequence[Message], rng: random.Random
                    ) -> tuple[list[Message], list[tuple[int, str]]]:
    """The agent's session with its asks inserted between tasks."""
    return ask_back(messages, agent_asks(messages), rng, slots=agent_slots(messages))


def demo_with_asks(messages: Sequence[Message], rng: random.Random
                   ) -> tuple[list[Message], list[tuple[int, str]]]:
    """The SRE chat with its asks inserted."""
    return ask_back(messages, demo_asks(messages, rng), rng, slots=chat_slots(messages))


# --- multi: sessions weeks apart ----------------------------------------------------

AGO = "From our chat a few weeks ago, "
ACROSS = 2  # asks per later session about an earlier one


def multi_asks(sessions: Sequence[Sequence[Message]], rng: random.Random
               ) -> list[tuple[list[Message], list[tuple[int, str]]]]:
    """Each session with asks about its own earlier messages, and from the second
    session on, :data:`ACROSS` more about an earlier session's."""
    everything = [t for s in sessions for t in _texts(s)]
    out = []
    used: set[str] = set()  # an answer is asked once over all sessions
    for k, msgs in enumerate(sessions):
        # Fair over every session: an answer given once in the whole history.
        own = [a for a in fair(chat_asks(msgs), _texts(msgs)) if _single(a.answer, everything)]
        earlier = fair([Ask(-1, a.answer, a.turn, a.named)
                         for s in sessions[:k] for a in chat_asks(s, before=AGO)], everything)
        slots = chat_slots(msgs)
        chosen = choose(msgs, own, rng, slots=slots, count=budget(msgs), used=used)
        taken = {slot for slot, _ in chosen}
        chosen += choose(msgs, earlier, rng, slots=[s for s in slots if s not in taken],
                         count=ACROSS, used=used)
        out.append(apply(msgs, chosen))
    return out


def with_asks(w: Workload, *, seed: int) -> Workload:
    """``w`` (demo, short, agent or multi) with its later turns that refer back."""
    from dataclasses import replace

    rng = random.Random(f"{seed}:asked:{w.name}")
    if w.name == "multi":
        parts = multi_asks([m for _, m in w.sessions], rng)
    else:
        make = {"demo": demo_with_asks, "short": chat_with_asks, "agent": agent_with_asks}
        parts = [make[w.name](w.sessions[0][1], rng)]
    sessions = tuple((sid, tuple(m)) for (sid, _), (m, _) in zip(w.sessions, parts, strict=True))
    probes = probes_of([m for _, m in sessions], [marks for _, marks in parts])
    return replace(w, sessions=sessions, probes=probes)
