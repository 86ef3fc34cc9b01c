"""Workloads whose later turns refer back: what a conversation will ask for again.

Written as conversations look in real use, apart from any retention policy:
nothing here knows how Recap (or a peer) ranks what it keeps. Each workload lists
its **references** (:class:`bench.verdict.shapes.Probe`): a later user turn that asks
for a specific stated earlier, and that specific. The judge (bench.verdict.judge) asks,
at each such turn, whether the specific is in the request of that reply.

- :func:`sittings_chat`: one person's chat with an assistant over many sittings
  with gaps (a cold cache at each), short turns, peaking well under the 32k
  budget; the details of life and work stated in one sitting are asked for two or
  more sittings later;
- :func:`coding_transcript`: a coding agent's session: tasks, tool calls reading
  code, test and CI logs (500-8,000 tokens each, full of numbers, hashes and
  ids); a few logs carry an error code with where it was raised and the hash
  pinned with it, and later user turns name the code and ask for both;
- :func:`holdout_support`: **held out**: an operator's support thread over
  sittings, pasting configs and logs into the chat, asking back about values
  from earlier pastes and statements. It is in the verdict, but nobody tunes a
  policy against it: its figures say whether what was tuned on the others
  carries over.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.verdict.shapes import Message, Probe, Workload
from recap.evals.facts import Planted, weave

# --- the multi-sitting chat ------------------------------------------------------

_NAMES = ("Dario Ferri", "Ingrid Solberg", "Tomasz Nowak", "Amaia Etxeberria", "Kenji Mori",
          "Lucia Brandt", "Olu Adeyemi", "Marta Quintela", "Rafe Callender", "Suvi Lehto")
_CITIES = ("Porto", "Ljubljana", "Valencia", "Gdansk", "Tallinn", "Bologna", "Lyon", "Cork")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _money(rng: random.Random) -> str:
    return f"{rng.randint(1, 9)},{rng.randint(0, 999):03d} euros"


def _code(rng: random.Random, head: str) -> str:
    return f"{head}-{rng.randint(1000, 9999)}-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}"


# (statement, question, the specific asked for): {x} is drawn per use, {n} a name.
def _threads(rng: random.Random) -> list[tuple[str, str, str]]:
    """One life-and-work detail per call: what the user says, how they ask it back
    later (without the answer) and the answer."""
    n, city = rng.choice(_NAMES), rng.choice(_CITIES)
    kinds = [
        (f"The plumber, {n}, came by and quoted {{x}} for redoing the bathroom.",
         f"What did {n} quote for the bathroom again?", _money(rng)),
        (f"Booked the flight to {city}: it's {{x}}, leaving on the "
         f"{rng.randint(3, 28)}th.", f"Which flight number did I book to {city}?",
         f"{rng.choice(('TP', 'LH', 'FR', 'VY', 'LO'))}{rng.randint(100, 9899)}"),
        ("The Wi-Fi password at the cabin is {x}, in case I forget it.",
         "What was the Wi-Fi password at the cabin?",
         f"{rng.choice(('pine', 'fjord', 'moss', 'birch'))}{rng.randint(1000, 99999)}"),
        ("The insurance people gave me claim number {x} for the car.",
         "What's the claim number the insurance gave me for the car?", _code(rng, "CLM")),
        (f"The dentist moved me to {{x}} on {rng.choice(_WEEKDAYS)}, annoying.",
         "When is the dentist now, what time?",
         f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}"),
        ("At work we settled on a retention target of {x} for the next quarter.",
         "What retention target did we settle on at work?",
         f"{rng.randint(60, 97)}.{rng.randint(1, 9)}%"),
        (f"{n} from the landlord's office says the deposit reference is {{x}}.",
         "What's the deposit reference the landlord's office gave?", _code(rng, "DEP")),
        ("The garage wants the car in for service; I told them the mileage is {x} km.",
         "What mileage did I tell the garage?",
         f"{rng.randint(20, 190)},{rng.randint(0, 999):03d}"),
        (f"The quote from the coworking place in {city} came back at {{x}} a month.",
         f"How much a month was the coworking place in {city}?", _money(rng)),
        ("My kid's school bus is now route {x}, it leaves from the corner.",
         "Which bus route is my kid's school bus now?",
         f"{rng.randint(11, 98)}{rng.choice('ABC')}"),
        (f"Signed up for the {city} half marathon, bib number {{x}}.",
         f"What's my bib number for the {city} half marathon?", str(rng.randint(1000, 19999))),
        ("The new router's admin PIN is {x}, the sticker was on the bottom.",
         "What was the router's admin PIN?", str(rng.randint(100000, 999999))),
        (f"{n} at the bank said the mortgage fix ends in {{x}}.",
         "When does the mortgage fix end, according to the bank?",
         f"{rng.choice(('March', 'June', 'September', 'November'))} {rng.randint(2027, 2031)}"),
        ("The parcel tracking code for the standing desk is {x}.",
         "What's the tracking code for the standing desk?",
         f"JV{rng.randint(10**8, 10**9 - 1)}NL"),
    ]
    return kinds


_SMALL_USER = (
    "Morning. Long week ahead, mostly meetings and the renovation stuff.",
    "I read the article you suggested about sleep, it was actually useful.",
    "Can you help me write a short note to the neighbours about the noise next week?",
    "What's a good way to structure a one-on-one with someone new on the team?",
    "I keep putting off the tax paperwork. Any trick to just get started?",
    "Give me three dinner ideas that take under thirty minutes.",
    "The meeting went fine in the end, thanks for the prep.",
    "I'm thinking about learning Portuguese before the trip. Worth it for a week?",
    "Remind me how compound interest works, in two sentences.",
    "Ok, back after a few days. Where were we?",
    "How do I politely decline a meeting that has no agenda?",
    "The kids are off school next week, so I'll be around less.",
    "Draft a two-line thank-you for the team after the release.",
    "Is it normal that the boiler makes a clicking noise at night?",
)
_SMALL_ASSISTANT = (
    "Sounds like a full week. Happy to help you keep track of things as they come up.",
    "Glad it helped. The main point is to keep the wake-up time fixed, even at weekends.",
    "Here's a short, friendly note you can adapt: keep it specific about the dates.",
    "Start with their goals, then what gets in their way, then agree on one next step.",
    "Pick one form, set a timer for twenty minutes, and stop when it rings.",
    "A stir-fry, a frittata with whatever vegetables you have, or pasta with lemon and peas.",
    "Good to hear. If anything from it needs a follow-up, tell me and we'll plan it.",
    "A week of basics helps a lot with greetings, numbers and ordering food.",
    "Interest is added to the balance, and the next interest is computed on that larger sum.",
    "We were going through your list; tell me what's most pressing today.",
    "Ask for the goal of the meeting first; if there is none, offer a short written update.",
    "Noted, we can pick things up whenever you're back.",
    "Here's one: thank you all for the push this week, the release went out smoothly.",
    "Some clicking is the metal expanding as it heats; a constant knock is worth a check.",
)
_ACKS = ("Noted.", "Got it, I'll remember that.", "Thanks, noted for later.",
         "Okay, that's in the notes.", "Understood.")


def _chat_turn(rng: random.Random) -> list[Message]:
    k = rng.randrange(len(_SMALL_USER))  # an ask and its answer
    return [("user", _SMALL_USER[k]), ("assistant", _SMALL_ASSISTANT[k])]


def weave_user(messages: Sequence[Message], facts: Sequence[Planted]) -> list[Message]:
    """``messages`` with the facts woven into the user's own text turns (never into a
    tool result)."""
    typed = [i for i, (role, c) in enumerate(messages) if role == "user" and isinstance(c, str)]
    woven = weave([("user", str(messages[i][1])) for i in typed], facts)
    out = list(messages)
    for i, m in zip(typed, woven, strict=True):
        out[i] = m
    return out


def reply_indices(messages: Sequence[Message]) -> list[int]:
    """For each message, the reply (user-role message) count before it."""
    out, k = [], 0
    for role, _ in messages:
        out.append(k)
        k += role == "user"
    return out


def sittings_chat(sittings: int, asks: int, facts: Sequence[Planted], *, seed: int,
                  name: str = "sittings", small: tuple[int, int] = (8, 12)) -> Workload:
    """One session of ``sittings`` sittings; ``asks`` details stated in one sitting
    and asked for two or more sittings later (each sitting between ``small``
    exchanges of ordinary chat around them). The first reply of each sitting finds
    a cold cache (``Workload.cold``)."""
    rng = random.Random(f"{seed}:{name}")
    stated: dict[int, list[tuple[str, str, str]]] = {s: [] for s in range(sittings)}
    asked: dict[int, list[tuple[str, str, str]]] = {s: [] for s in range(sittings)}
    for k in range(asks):
        said_at = (k * max(1, sittings - 2)) // max(1, asks)
        later = min(sittings - 1, said_at + 2 + (rng.random() < 0.3))
        thread = rng.choice(_threads(rng))
        statement, question, answer = thread
        stated[said_at].append((statement.replace("{x}", answer), question, answer))
        asked[later].append((statement, question, answer))
    messages: list[Message] = []
    starts: list[int] = []
    pending: list[tuple[int, str]] = []  # (message index, answer) of each question
    for s in range(sittings):
        starts.append(len(messages))
        chat = [m for _ in range(rng.randint(*small)) for m in _chat_turn(rng)]
        # (the user's turn, the assistant's, the answer the turn asks for or None)
        slots: list[tuple[str, str, str | None]] = []
        for said, _, answer in stated[s]:
            ack = rng.choice(_ACKS) if rng.random() < 0.7 else f"Got it: {answer}."
            slots.append((said, ack, None))
        # Questions come after the sitting's statements: asked back, never ahead.
        rng.shuffle(slots)
        slots += [(question, f"It was {answer}.", answer) for _, question, answer in asked[s]]
        where = sorted(rng.randint(1, max(1, len(chat) // 2)) * 2 for _ in slots)
        out: list[Message] = []
        at = 0
        for cut, (user, assistant, wanted) in zip(where, slots, strict=True):
            out += chat[at:cut]
            at = max(at, cut)
            if wanted is not None:
                pending.append((len(messages) + len(out), wanted))
            out += [("user", user), ("assistant", assistant)]
        messages += out + chat[at:]
    woven = weave_user(messages, facts)
    replies = reply_indices(woven)
    probes = tuple(Probe(replies[i], answer, str(woven[i][1])) for i, answer in pending)
    cold = tuple(replies[i] for i in starts)
    return Workload(name, ((f"w-{name}", tuple(woven)),), tuple(facts), probes=probes,
                    cold=cold)


# --- the coding-agent transcript ---------------------------------------------------

_MODULES = ("src/ledger/reconcile.py", "src/ledger/posting.py", "src/api/handlers.py",
            "src/billing/invoice.py", "src/sync/worker.py", "src/auth/tokens.py",
            "src/store/pool.py", "src/report/export.py", "tests/test_reconcile.py",
            "tests/test_invoice.py")
_LOGS = ("pytest -x tests/", "ci/build.log", "logs/worker-2026-11-24.log",
         "ci/integration.log", "logs/api-2026-11-25.log")
_FUNCS = ("reconcile_batch", "post_entry", "apply_fees", "flush_pending", "issue_token",
          "checkout", "render_csv", "split_invoice", "retry_sync", "close_period")
_PACKAGES = ("ledger-core", "fastjson", "pgbridge", "ratelimit", "tzshim", "csvkit")
_HEX = "0123456789abcdef"


def _hex(rng: random.Random, n: int = 10) -> str:
    return "".join(rng.choice(_HEX) for _ in range(n))


def code_listing(path: str, tokens: int, rng: random.Random) -> str:
    """About ``tokens`` tokens of Python source: constants, functions, numbers."""
    lines = [f"# {path}", "from decimal import Decimal", "import logging", "",
             "log = logging.getLogger(__name__)"]
    size = 30
    n = 0
    while size < tokens:
        n += 1
        fn = rng.choice(_FUNCS)
        block = [
            f"{fn.upper()}_LIMIT_{n} = {rng.randint(2, 4096)}",
            f"TOLERANCE_{n} = Decimal(\"0.{rng.randint(1, 9999):04d}\")", "",
            f"def {fn}_{n}(rows, account_id={rng.randint(1000, 99999)}, retries="
            f"{rng.randint(1, 9)}):",
            f"    \"\"\"Step {n} of {fn}: batches of {rng.randint(16, 1024)} rows.\"\"\"",
            "    total = Decimal(0)",
            "    for i, row in enumerate(rows):",
            f"        if row.amount > {rng.randint(100, 250000)}:",
            f"            log.warning(\"row %s over limit %s\", row.id, {rng.randint(100, 9999)})",
            f"        total += row.amount * Decimal(\"{rng.randint(1, 99)}."
            f"{rng.randint(0, 99):02d}\")",
            f"    if abs(total) > TOLERANCE_{n} * {rng.randint(2, 500)}:",
            f"        raise ValueError(f\"drift {{total}} in batch {rng.randint(1, 900)}\")",
            "    return total", ""]
        lines += block
        size += 190
    return "\n".join(lines)


def log_listing(path: str, tokens: int, rng: random.Random,
                incident: tuple[str, str, str] | None) -> str:
    """About ``tokens`` tokens of test/CI/service log lines (timestamps, durations,
    ids, decoy hashes); ``incident`` (code, where, hash) is raised midway."""
    lines = [f"$ {path}" if path.startswith("pytest") else f"# {path}",
             f"run {rng.randint(10000, 99999)} on runner ci-{rng.choice(('arm64', 'x86'))}-"
             f"{rng.randint(1, 40):02d} at commit {_hex(rng, 7)}"]
    size = 40
    raise_at = tokens // 2
    while size < tokens:
        kind = rng.random()
        t = f"2026-11-{rng.randint(20, 27)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:" \
            f"{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        if kind < 0.45:
            line = (f"{t} PASSED tests/test_{rng.choice(_FUNCS)}.py::case_{rng.randint(1, 400)}"
                    f" [{rng.randint(0, 100)}%] {rng.randint(1, 4000)}ms")
        elif kind < 0.75:
            line = (f"{t} INFO worker={rng.randint(1, 64)} batch={rng.randint(1, 9000)} "
                    f"rows={rng.randint(1, 50000)} latency_ms={rng.randint(2, 3000)} "
                    f"req=r{rng.randint(10**5, 10**6 - 1)}")
        elif kind < 0.9:
            line = (f"{t} DEBUG resolved {rng.choice(_PACKAGES)}=={rng.randint(0, 9)}."
                    f"{rng.randint(0, 30)}.{rng.randint(0, 20)} sha {_hex(rng)}")
        else:
            line = (f"{t} WARN retry {rng.randint(1, 5)}/5 for {rng.choice(_FUNCS)} after "
                    f"{rng.randint(10, 9000)}ms (pool {rng.randint(1, 32)}/{rng.randint(32, 64)})")
        lines.append(line)
        size += 35  # tiktoken counts 30-40 tokens for such a line
        if incident and size >= raise_at:
            code, where, sha = incident
            lines += [f"{t} ERROR {code} raised at {where}: balance drift "
                      f"{rng.randint(1, 99)}.{rng.randint(0, 99):02d} in batch "
                      f"{rng.randint(1, 900)}",
                      f"{t} ERROR {code} context: lockfile pins "
                      f"{rng.choice(_PACKAGES)} at {sha}, retry budget {rng.randint(1, 9)}"]
            incident = None
    return "\n".join(lines)


def coding_transcript(results: int, refs: int, facts: Sequence[Planted], *,
                      seed: int, name: str = "coding") -> Workload:
    """A coding agent's session with ``results`` tool results (500-8,000 tokens of
    code and logs) and ``refs`` later user turns each naming an error code from an
    early log and asking where it was raised and which hash was pinned with it (two
    references each)."""
    rng = random.Random(f"{seed}:{name}")
    incidents = []
    for _ in range(refs):
        path = rng.choice(_MODULES[:8])
        incidents.append((f"{rng.choice(('LGR', 'BIL', 'SYN', 'API'))}-{rng.randint(1000, 9999)}",
                          f"{path}:{rng.randint(20, 900)}", _hex(rng, 12)))
    # Which results carry an incident (logs in the first 75% of the session), and
    # after which result the user asks back: half a few results later, half long
    # after (as a user comes back to an error once the rest is done).
    early = sorted(rng.sample(range(max(refs, int(results * 0.75))), refs))
    carrier = dict(zip(early, incidents, strict=True))
    later = sorted((min(results - 1, at + (rng.randint(3, 6) if k % 2 else
                                           rng.randint(results // 3, results))), k)
                   for k, at in enumerate(early))
    asks_after = [r for r, _ in later]
    incidents = [incidents[k] for _, k in later]
    tasks = ("Run the tests and tell me what fails.", "Look at {p} and explain what it does.",
             "Check the last CI run, something is flaky.", "Why is {p} slow on big batches?",
             "Compare the worker log with the API log for yesterday.",
             "Refactor the limit constants in {p}, keep behaviour the same.")
    out: list[Message] = []
    pending: list[tuple[int, str]] = []
    call = 0
    asked = 0
    typed = [0]  # the user's new tasks: each typed after a person's pause
    out.append(("user", "Hi! I'm picking up the ledger service this week. "
                        + rng.choice(tasks).format(p=rng.choice(_MODULES))))
    for r in range(results):
        incident = carrier.get(r)
        is_log = incident is not None or rng.random() < 0.5
        target = rng.choice(_LOGS) if is_log else rng.choice(_MODULES)
        call += 1
        tool_id = f"toolu_{call:04d}"
        tool, args = (("bash", {"command": target}) if target.startswith("pytest")
                      else ("read_file", {"path": target}))
        out.append(("assistant", [
            {"type": "text", "text": f"Let me look at {target}."},
            {"type": "tool_use", "id": tool_id, "name": tool, "input": args}]))
        tokens = rng.randint(600, 7200)  # tiktoken counts 500-8,000
        body = (log_listing(target, tokens, rng, incident) if is_log
                else code_listing(target, tokens, rng))
        out.append(("user", [{"type": "tool_result", "tool_use_id": tool_id, "content": body}]))
        if incident is not None and rng.random() < 0.5:
            out.append(("assistant", f"The run hit {incident[0]}; I'll keep going with the "
                                     "rest of the check."))
            out.append(("user", rng.choice(("ok", "Go on.", "Fine, continue."))))
        if rng.random() < 0.25:
            out.append(("assistant", rng.choice((
                "Nothing unusual in there beyond the usual retries.",
                "That file mostly holds limit constants and the batch loop.",
                "Tests are green except for the retries noted above."))))
            typed.append(len(out))
            out.append(("user", rng.choice(tasks).format(p=rng.choice(_MODULES))))
        while asked < refs and asks_after[asked] == r:
            code, where, sha = incidents[asked]
            question = (f"Going back to {code} from earlier: where was it raised, and "
                        "which hash was pinned with it?")
            out.append(("assistant", "Done with that step."))
            out.append(("user", question))
            pending += [(len(out) - 1, where), (len(out) - 1, sha)]
            out.append(("assistant", f"{code} was raised at {where}, with {sha} pinned."))
            out.append(("user", "Thanks. Carry on."))
            asked += 1
    out.append(("assistant", "All done: summary of the findings above."))
    woven = weave_user(out, facts)
    replies = reply_indices(woven)
    probes = tuple(Probe(replies[i], answer, str(woven[i][1])) for i, answer in pending)
    return Workload(name, ((f"w-{name}", tuple(woven)),), tuple(facts), probes=probes,
                    paused=tuple(replies[i] for i in typed))


# --- held out: an operator's support thread ------------------------------------------

_SERVICES = ("checkout-api", "search-indexer", "billing-cron", "media-proxy", "auth-gw")


def _paste(rng: random.Random, service: str, value: tuple[str, str] | None) -> str:
    """A pasted config or log (100-1,500 tokens); ``value`` (key, v) set in it."""
    lines = [f"# {service} ({rng.choice(('config', 'log excerpt', 'helm values'))})"]
    size = rng.randint(100, 1500)
    k = 0
    while k * 14 < size:
        k += 1
        lines.append(f"{rng.choice(('replicas', 'timeout_ms', 'pool', 'burst', 'ttl_s'))}"
                     f"_{k}: {rng.randint(1, 5000)}  # node-{rng.randint(1, 90)}")
        if value and k == 3:
            lines.append(f"{value[0]}: {value[1]}")
    return "\n".join(lines)


def holdout_support(sittings: int, asks: int, facts: Sequence[Planted], *,
                    seed: int) -> Workload:
    """**Held out**: in the verdict, never tuned against (see the module docstring).
    An operator's support thread of ``sittings`` sittings: pasted configs and logs,
    short questions, ``asks`` values asked for two or more sittings after the paste
    or statement that gave them."""
    rng = random.Random(f"{seed}:holdout")
    keys = ("max_body_kb", "shard_key", "canary_weight", "drain_timeout_s", "image_digest")
    plan: dict[int, list[tuple[str, str, str, str]]] = {s: [] for s in range(sittings)}
    later: dict[int, list[tuple[str, str]]] = {s: [] for s in range(sittings)}
    for k in range(asks):
        at = (k * max(1, sittings - 2)) // max(1, asks)
        service, key = rng.choice(_SERVICES), rng.choice(keys)
        value = (f"sha256:{_hex(rng, 16)}" if key == "image_digest"
                 else f"{rng.randint(2, 9000)}" if key != "shard_key"
                 else f"tenant_{rng.randint(10, 99)}")
        plan[at].append((service, key, value, rng.choice(("paste", "say"))))
        later[min(sittings - 1, at + 2 + (rng.random() < 0.4))].append(
            (f"For {service}, what was {key} set to in what I showed you before?", value))
    messages: list[Message] = []
    starts, pending = [], []
    for s in range(sittings):
        starts.append(len(messages))
        messages.append(("user", rng.choice((
            "Back on the incident review.", "Another day, another pager.",
            "Quick one before standup.", "Picking this up again."))))
        messages.append(("assistant", "Sure, go ahead."))
        for service, key, value, how in plan[s]:
            if how == "paste":
                messages.append(("user", "Here's what's deployed now:\n"
                                 + _paste(rng, service, (key, value))))
            else:
                messages.append(("user", f"FYI we changed {key} on {service} to {value} "
                                         "this morning."))
            messages.append(("assistant", rng.choice(("Thanks, that looks sane.",
                                                      "Noted; nothing odd in there."))))
        for _ in range(rng.randint(3, 6)):
            service = rng.choice(_SERVICES)
            messages.append(("user", rng.choice((
                f"Is a p99 of {rng.randint(100, 900)}ms bad for {service}?",
                f"{service} restarted {rng.randint(2, 9)} times overnight, normal?",
                f"Here's the latest from {service}:\n" + _paste(rng, service, None)))))
            messages.append(("assistant", rng.choice((
                "It depends on the load; compare with last week's baseline first.",
                "A few restarts after a deploy is common; more needs a look at the OOM kills.",
                "Nothing alarming in that excerpt."))))
        for question, value in later[s]:
            pending.append((len(messages), value))
            messages.append(("user", question))
            messages.append(("assistant", f"It was {value}."))
    woven = weave_user(messages, facts)
    replies = reply_indices(woven)
    probes = tuple(Probe(replies[i], value, str(woven[i][1])) for i, value in pending)
    return Workload("holdout", (("w-holdout", tuple(woven)),), tuple(facts), probes=probes,
                    cold=tuple(replies[i] for i in starts))

