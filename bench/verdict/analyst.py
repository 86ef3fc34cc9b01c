"""**Held out**: a data analyst's agent session, written apart from the coding
workload (bench.verdict.referring) and from any retention policy. It is in the
verdict, but nobody tunes a policy against it: its figures say whether what was
tuned on the other workloads carries over to an agent with other tools.

A person gives the agent tasks about a product's numbers; the agent answers each
with a few calls of four tools: ``web_search`` (ranked hits with links),
``fetch_url`` (a changelog page's text), ``run_sql`` (result tables) and ``shell``
(process lists). Tool results vary in size from about 150 tokens to about
10,000. Some results carry a specific the person asks
about later, in their own words and without the answer: the figure a query gave
for one region and day, the link a search ranked first, the release a vendor's
page names as the fix, the process id a process list showed holding memory. Each
such later turn is a reference (:class:`bench.verdict.shapes.Probe`). Each new
task the person types comes after a pause (an empty cache); the calls within a
task come seconds apart.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from bench.verdict.referring import reply_indices, weave_user
from bench.verdict.shapes import Message, Probe, Workload
from recap.evals.facts import Planted

_REGIONS = ("EMEA", "APAC", "LATAM", "NA-East", "NA-West", "ANZ")
_METRICS = ("signups", "churned_accounts", "trial_conversions", "refunds", "net_revenue")
_TABLES = ("events.daily_signups", "billing.refunds", "crm.accounts", "web.sessions",
           "billing.invoices")
_HOSTS = ("etl-01", "etl-02", "warehouse-a", "api-edge-3", "reports-1")
_VENDORS = ("segmently", "paystream", "kinetiq", "datawell", "mailhop")
_TOPICS = ("the checkout outage", "EU VAT changes", "the SDK rate limits",
           "the warehouse connector bug", "cookie consent banners")
_DAYS = tuple(f"2026-11-{d:02d}" for d in range(9, 23))
_TASKS = ("Why did {m} dip in {r} last week? Dig in.",
          "Can you pull {m} by region for the last fortnight and flag anything odd?",
          "Our dashboard and finance disagree on {m}. Find out which one is off.",
          "Check whether the nightly ETL on {h} is healthy, it felt slow today.",
          "Look up what changed with {t} and whether it touches us.",
          "Put together the numbers for Monday's review: {m} in {r}, with context.")


def _size(rng: random.Random) -> int:
    """A tool result's size in tokens: small, medium or large."""
    low, high = rng.choices(((150, 600), (800, 3000), (4000, 12000)), (4, 4, 2))[0]
    return rng.randint(low, high)


def _lines(tokens: int, per: int, line: Callable[[], str]) -> list[str]:
    return [line() for _ in range(max(1, tokens // per))]


def sql_result(rng: random.Random, table: str, tokens: int,
               needle: dict[str, str] | None) -> str:
    """A query's result table; ``needle`` (region, day, metric, value) one row of it."""
    head = [f"-- {table}: {rng.randint(40, 900)} ms, read {rng.randint(2, 900)} MB",
            "| region | day | metric | value | delta_pct |", "|---|---|---|---|---|"]

    def row() -> str:
        return (f"| {rng.choice(_REGIONS)} | {rng.choice(_DAYS)} | {rng.choice(_METRICS)} | "
                f"{rng.randint(10, 99999)} | {rng.choice('+-')}{rng.randint(0, 40)}."
                f"{rng.randint(0, 9)} |")

    rows = _lines(tokens, 30, row)
    if needle:
        rows.insert(len(rows) // 2, f"| {needle['region']} | {needle['day']} | "
                                    f"{needle['metric']} | {needle['value']} | "
                                    f"-{rng.randint(5, 40)}.{rng.randint(0, 9)} |")
    return "\n".join(head + rows + [f"({len(rows)} rows)"])


def search_result(rng: random.Random, topic: str, tokens: int, needle: str | None) -> str:
    """Ranked hits for ``topic``; ``needle`` (a link) ranked first."""
    def hit() -> str:
        vendor = rng.choice(_VENDORS)
        return (f"{vendor}.example.com/blog/{rng.randint(100, 9999)} - "
                f"{topic.title()} notes, updated {rng.choice(_DAYS)}: "
                f"{rng.randint(2, 90)} comments")

    hits = _lines(tokens, 28, hit)
    if needle:
        hits.insert(0, f"{needle} - Status update on {topic}")
    return "\n".join(f"{k + 1}. {h}" for k, h in enumerate(hits))


def page_text(rng: random.Random, vendor: str, tokens: int, needle: str | None) -> str:
    """A vendor's changelog page; ``needle`` the release named as the fix."""
    def entry() -> str:
        return (f"Release {rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)} "
                f"({rng.choice(_DAYS)}): improved {rng.choice(_METRICS)} exports, "
                f"{rng.randint(2, 40)} fixes, p95 {rng.randint(20, 900)} ms.")

    body = _lines(tokens, 30, entry)
    if needle:
        body.insert(len(body) // 3, f"The duplicate-event issue is fixed in {needle}; "
                                    "upgrade connectors before the next sync.")
    return "\n".join([f"{vendor}.example.com/changelog", *body])


def shell_output(rng: random.Random, host: str, tokens: int, needle: str | None) -> str:
    """A process list on ``host``; ``needle`` (a pid) the process holding most memory."""
    def proc() -> str:
        return (f"{rng.randint(1000, 65000):>6} {rng.choice(('etl', 'app', 'root'))} "
                f"{rng.randint(0, 99)}.{rng.randint(0, 9)} {rng.randint(20, 900)}M "
                f"{rng.choice(('python worker.py', 'node api.js', 'cron', 'sshd', 'psql'))}")

    rows = _lines(tokens, 16, proc)
    if needle:
        rows.insert(rng.randint(0, len(rows)), f"{needle:>6} etl 98.7 "
                                               f"{rng.randint(20, 60)}G python backfill.py")
    return "\n".join([f"$ ssh {host} ps -eo pid,user,%cpu,rss,cmd", *rows])


KINDS = ("run_sql", "web_search", "fetch_url", "shell")


def _ask(rng: random.Random, kind: str) -> tuple[str, dict[str, str], str]:
    """(how the person asks for it back, never with the answer; what the tool result
    must carry; the answer) for one reference to a result of tool ``kind``."""
    if kind == "run_sql":
        region, day, metric = rng.choice(_REGIONS), rng.choice(_DAYS), rng.choice(_METRICS)
        value = f"{rng.randint(10, 99)}{rng.randint(100, 999)}.{rng.randint(10, 99)}"
        return (f"Remind me, that query you ran: what did it show for {metric} in {region} "
                f"on {day}?", {"region": region, "day": day, "metric": metric,
                               "value": value}, value)
    if kind == "web_search":
        link = f"status.{rng.choice(_VENDORS)}.example.com/incidents/{rng.randint(10**5, 10**6)}"
        return ("The search you did a while back, the top hit: can you give me that link "
                "again?", {"value": link}, link)
    if kind == "fetch_url":
        release = f"{rng.randint(2, 9)}.{rng.randint(41, 99)}.{rng.randint(21, 60)}"
        return ("On the changelog page you opened earlier, which release did they say fixes "
                "the duplicate events?", {"value": release}, release)
    pid = str(rng.randint(100000, 999999))
    return ("That process list from before, which pid was the one eating all the memory?",
            {"value": pid}, pid)


def _call(rng: random.Random, kind: str,
          needle: dict[str, str] | None) -> tuple[dict[str, str], str]:
    """(the tool call's input, its result) for one call of ``kind``."""
    tokens = _size(rng)
    value = needle["value"] if needle else None
    if kind == "run_sql":
        table = rng.choice(_TABLES)
        query = " ".join(("select region, day, metric, value from", table, "where day >=",
                          repr(_DAYS[0])))  # a transcript's text, never run
        return {"query": query}, sql_result(rng, table, tokens, needle)
    if kind == "web_search":
        topic = rng.choice(_TOPICS)
        return {"query": topic}, search_result(rng, topic, tokens, value)
    if kind == "fetch_url":
        vendor = rng.choice(_VENDORS)
        return ({"url": f"https://{vendor}.example.com/changelog"},
                page_text(rng, vendor, tokens, value))
    host = rng.choice(_HOSTS)
    return ({"cmd": f"ssh {host} ps -eo pid,user,%cpu,rss,cmd"},
            shell_output(rng, host, tokens, value))


def analyst_session(results: int, asks: int, facts: Sequence[Planted], *,
                    seed: int) -> Workload:
    """**Held out** (see the module docstring): ``results`` tool results over tasks of
    2-5 calls each; ``asks`` of them (in the first 70%) carry a specific the person
    asks back for later, half a few calls later, half long after."""
    rng = random.Random(f"{seed}:analyst")
    carriers = sorted(rng.sample(range(max(asks, int(results * 0.7))), asks))
    planned = {at: (kind, *_ask(rng, kind)) for at in carriers
               for kind in [rng.choice(KINDS)]}
    due: dict[int, list[tuple[str, str]]] = {}
    for k, at in enumerate(carriers):
        later = at + (rng.randint(2, 6) if k % 2 else rng.randint(results // 3, results))
        due.setdefault(min(results - 1, later), []).append((planned[at][1], planned[at][3]))
    out: list[Message] = []
    typed, pending = [], []
    r = 0
    while r < results:
        typed.append(len(out))
        out.append(("user", rng.choice(_TASKS).format(
            m=rng.choice(_METRICS), r=rng.choice(_REGIONS), h=rng.choice(_HOSTS),
            t=rng.choice(_TOPICS))))
        for _ in range(min(rng.randint(2, 5), results - r)):
            kind, _, needle, _ = planned.get(r, (rng.choice(KINDS), "", None, ""))
            given, text = _call(rng, kind, needle)
            tool_id = f"toolu_an{r:04d}"
            out.append(("assistant", [{"type": "tool_use", "id": tool_id, "name": kind,
                                       "input": given}]))
            out.append(("user", [{"type": "tool_result", "tool_use_id": tool_id,
                                  "content": text}]))
            for question, answer in due.pop(r, []):
                out.append(("assistant", "Still on it; one more check to go."))
                pending.append((len(out), answer))
                out.append(("user", question))
            r += 1
        out.append(("assistant", f"Here's what I found: {rng.choice(_METRICS)} in "
                                 f"{rng.choice(_REGIONS)} moved {rng.randint(2, 30)}% and the "
                                 "rest looks in line with the previous weeks."))
    woven = weave_user(out, facts)
    replies = reply_indices(woven)
    probes = tuple(Probe(replies[i], answer, str(woven[i][1])) for i, answer in pending)
    return Workload("analyst", (("w-analyst", tuple(woven)),), tuple(facts), probes=probes,
                    paused=tuple(replies[i] for i in typed))
