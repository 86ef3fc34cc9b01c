"""**Held out**: a travel desk's agent session, written apart from the other
workloads and from any retention or recall code. It is in the verdict, but nobody
tunes a policy against it: its figures say whether what was tuned elsewhere
carries over to another kind of agent, with other tools and other wording.

A travel coordinator asks an agent to arrange colleagues' trips. The agent works
with six tools: ``flight_search`` (offers as JSON: flight numbers, ISO times with
offsets, fare bases, prices in the fare's currency), ``fare_rules`` (the airline's
rules as prose), ``hotel_rates`` (a rate table), ``calendar`` (a person's day, times
as "9:30 AM"), ``mailbox`` (an email, prose) and ``book`` (a booking's JSON: record
locator, ticket number, total). Results run from about 100 tokens to about 6,000.
Some of them carry a detail the coordinator asks about later, in their own words:
the record locator of someone's booking, the ticket issued on a locator, what a
fare basis charges for a change, a room's nightly rate, the cheapest fare of a
search, when a flight lands, when a meeting starts, a hotel's confirmation code.
Each such later turn is a reference (:class:`bench.verdict.shapes.Probe`). Each new
task the coordinator types comes after a pause (an empty cache); the calls within
a task come seconds apart.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from bench.verdict.referring import reply_indices, weave_user
from bench.verdict.shapes import Message, Probe, Workload
from recap.evals.facts import Planted

_PEOPLE = ("Henrik Aalto", "Ana Ribeiro", "Chidi Okonkwo", "Mei Lin", "Jonas Weber",
           "Priya Raman", "Lea Marchetti", "Tomas Novak", "Sara Haddad", "Owen Price")
# city, airport, currency, how that currency writes an amount
_CITIES = (("Oslo", "OSL", "NOK"), ("Zurich", "ZRH", "CHF"), ("London", "LHR", "GBP"),
           ("Tokyo", "HND", "JPY"), ("New York", "JFK", "USD"), ("Lisbon", "LIS", "EUR"),
           ("Stockholm", "ARN", "SEK"), ("Madrid", "MAD", "EUR"))
_CARRIERS = ("LH", "SK", "LX", "BA", "TP", "NH", "UA", "IB", "AY")
_HOTELS = ("Hotel Nordlys", "Seehof Residence", "The Ashby", "Sakura Bay Inn",
           "Hudson Lofts", "Casa do Rio", "Strand Kontor", "Gran Via Suites")
_ROOMS = ("standard double", "superior king", "studio", "junior suite", "twin")
_EVENTS = ("quarterly review", "vendor workshop", "board prep", "customer dinner",
           "hiring panel", "offsite planning")
_TASKS = ("{p} needs to be in {c} on the {d}th for two days. Find flights and a hotel.",
          "Can you rebook {p}'s {c} trip? The meeting moved.",
          "Check {p}'s calendar before we lock anything in for {c}.",
          "Get {p} the cheapest refundable option to {c}, leaving the {d}th.",
          "The {c} hotel wrote back about {p}'s stay, have a look.",
          "Hold a seat for {p} to {c} and send me the fare rules.")
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_RULES = ("stopovers", "minimum stay", "children", "combinations", "endorsements")
_RULINGS = ("not permitted", "permitted at no charge", "see general rules")
_SLOTS = ("1:1", "standup", "focus time", "travel hold", "lunch", "review")
_WHERE = ("Room 2A", "Room 4B", "video", "offsite")


def money(rng: random.Random, currency: str, low: int, high: int) -> str:
    """An amount as that currency is usually written (no decimals for yen, spaces
    for Nordic thousands, a symbol for pounds)."""
    value = rng.randint(low * 100, high * 100) / 100
    if currency == "JPY":
        return f"¥{int(value * 150):,}"
    if currency == "GBP":
        return f"£{value:,.2f}"
    if currency in ("NOK", "SEK"):
        whole = f"{int(value * 10):,}".replace(",", " ")
        return f"{currency} {whole},{rng.randint(0, 99):02d}"
    return f"{currency} {value:,.2f}"


def _locator(rng: random.Random) -> str:
    return "".join(rng.choice(_LETTERS + "23456789") for _ in range(6))


def _fare_basis(rng: random.Random) -> str:
    return (rng.choice("YBMHQKLVT") + rng.choice(_LETTERS) + rng.choice(("LX", "RT", "OW", "NR"))
            + rng.choice("0123456789") + rng.choice(("AU", "EU", "NA", "")))


def _when(rng: random.Random, day: int) -> tuple[str, str]:
    """A departure and an arrival, ISO with offsets."""
    h, m = rng.randint(5, 21), rng.choice((0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55))
    dur = rng.randint(70, 720)
    a = h * 60 + m + dur
    return (f"2026-12-{day:02d}T{h:02d}:{m:02d}+01:00",
            f"2026-12-{day + a // 1440:02d}T{a // 60 % 24:02d}:{a % 60:02d}+00:00")


def flight_offers(rng: random.Random, city: tuple[str, str, str], day: int, tokens: int,
                  needle: dict[str, str] | None) -> str:
    """A search's offers; ``needle`` the cheapest one (its price below all others)
    or the one whose arrival is asked (its flight number named)."""
    offers = []
    for _ in range(max(1, tokens // 130)):
        dep, arr = _when(rng, day)
        offers.append({"offer_id": f"OF-{rng.randint(10**6, 10**7 - 1)}",
                       "flight": f"{rng.choice(_CARRIERS)}{rng.randint(100, 4999)}",
                       "from": "MUC", "to": city[1], "departs": dep, "arrives": arr,
                       "fare_basis": _fare_basis(rng), "cabin": rng.choice(("M", "W", "Y")),
                       "price": money(rng, city[2], 260, 1900),
                       "seats_left": rng.randint(1, 9)})
    if needle:
        given = dict(offers[len(offers) // 2], **needle)
        offers[len(offers) // 2] = given
    return json.dumps({"search": {"to": city[1], "date": f"2026-12-{day:02d}"},
                       "offers": offers}, indent=1, ensure_ascii=False)


def fare_rules(rng: random.Random, basis: str, currency: str, tokens: int,
               fee: str | None) -> str:
    """The rules of a fare basis, as prose; ``fee`` what a date change costs."""
    fee = fee or money(rng, currency, 40, 200)
    paras = [f"FARE RULES {basis} - ECONOMY. Advance purchase: ticket within "
             f"{rng.randint(1, 3)} days of reservation.",
             f"CHANGES: date changes are permitted before departure for a charge of {fee} "
             "per ticket, plus any difference in fare.",
             f"CANCELLATIONS: the fare is {rng.choice(('non-refundable', 'refundable'))}; "
             "taxes and airport charges are refunded on request."]
    while len(paras) * 45 < tokens:
        paras.append(f"Rule {rng.randint(2, 35)}: {rng.choice(_RULES)} - {rng.choice(_RULINGS)}"
                     f" on services of {rng.choice(_CARRIERS)}; valid for travel completed by "
                     f"{rng.randint(1, 28)} {rng.choice(('JAN', 'FEB', 'MAR', 'APR'))} 27. "
                     f"Surcharge {money(rng, currency, 10, 90)} applies on "
                     f"{rng.choice(('weekend', 'peak', 'holiday'))} dates.")
    return "\n\n".join(paras)


def hotel_rates(rng: random.Random, city: tuple[str, str, str], hotels: Sequence[str],
                tokens: int, needle: tuple[str, str, str] | None) -> str:
    """A rate table; ``needle`` (hotel, room, rate) one of its rows."""
    rows = []
    for _ in range(max(2, tokens // 28)):
        rows.append(f"| {rng.choice(hotels)} | {rng.choice(_ROOMS)} | "
                    f"{money(rng, city[2], 90, 480)} | {rng.choice(('flex', 'saver', 'member'))}"
                    f" | {rng.randint(1, 7)} | {rng.choice(('breakfast', 'room only'))} |")
    if needle:
        rows.insert(rng.randint(0, len(rows)), f"| {needle[0]} | {needle[1]} | {needle[2]} | "
                                               f"flex | {rng.randint(1, 7)} | breakfast |")
    return "\n".join([f"Rates for {city[0]}, per night, taxes included",
                      "| hotel | room | nightly | plan | left | board |",
                      "|---|---|---|---|---|---|", *rows])


def _clock(h: int, m: int) -> str:
    return f"{(h - 1) % 12 + 1}:{m:02d} {'AM' if h < 12 else 'PM'}"


def calendar_day(rng: random.Random, person: str, day: int, tokens: int,
                 needle: tuple[str, str, str] | None) -> str:
    """A person's day; ``needle`` (event, its start, minutes after midnight) one of
    the entries."""
    entries = []
    for _ in range(max(2, tokens // 22)):
        h, m = rng.randint(7, 18), rng.choice((0, 15, 30, 45))
        entries.append((h * 60 + m, f"{_clock(h, m)} – {_clock(h + 1, m)}  "
                                    f"{rng.choice(_SLOTS)} ({rng.choice(_WHERE)})"))
    if needle:
        entries.append((int(needle[2]), f"{needle[1]}  {needle[0]} (Room 7C, with guests, "
                                        "about two hours)"))
    entries.sort()
    return "\n".join([f"Calendar of {person}, Tuesday {day} December 2026",
                      *(e for _, e in entries)])


def email(rng: random.Random, hotel: str, person: str, tokens: int, code: str | None) -> str:
    """A hotel's email about a stay; ``code`` its confirmation code."""
    code = code or f"{rng.choice(_LETTERS)}{rng.choice(_LETTERS)}{rng.randint(1000, 9999)}"
    body = [f"From: reservations@{hotel.lower().replace(' ', '')}.example",
            f"Subject: Your stay, {person}",
            f"Dear guest, thank you for choosing {hotel}. We are pleased to confirm your "
            f"reservation under confirmation code {code}."]
    while len(body) * 40 < tokens:
        body.append(rng.choice((
            "Check-in is from 3 PM; early arrival is subject to availability.",
            "Breakfast is served in the garden room from 6:30 until 10:30 daily.",
            "Please note that the city tax is collected at the property on departure.",
            "Our spa is open to hotel guests; treatments can be booked at the front desk.",
            "Parking is available nearby at a reduced daily rate for our guests.")))
    return "\n".join(body)


def booking(rng: random.Random, person: str, city: tuple[str, str, str],
            fields: dict[str, str]) -> str:
    """A booking's JSON: record locator, ticket, segments, total."""
    dep, arr = _when(rng, rng.randint(3, 20))
    return json.dumps({"status": "HK", "passenger": person, "destination": city[0],
                       "pnr": fields.get("pnr", _locator(rng)),
                       "ticket": fields.get("ticket", f"{rng.randint(100, 999)}-"
                                                      f"{rng.randint(10**9, 10**10 - 1)}"),
                       "segments": [{"flight": f"{rng.choice(_CARRIERS)}{rng.randint(100, 4999)}",
                                     "departs": dep, "arrives": arr}],
                       "total": money(rng, city[2], 300, 2400)}, indent=1, ensure_ascii=False)


def _plan(rng: random.Random, kind: str, person: str, city: tuple[str, str, str],
          hotel: str, used: set[tuple[str, ...]]) -> tuple[str, dict[str, str], str]:
    """(the later question, never with the answer; what the carrier result needs;
    the answer) for one reference of ``kind``; ``used`` holds the cues already
    asked, so no two questions fit the same result."""
    if kind == "pnr":
        pnr = _locator(rng)
        return (f"What's the record locator on {person.split()[0]}'s {city[0]} booking?",
                {"pnr": pnr}, pnr)
    if kind == "ticket":
        pnr, ticket = _locator(rng), f"{rng.randint(100, 999)}-{rng.randint(10**9, 10**10 - 1)}"
        return (f"Booking {pnr}: which ticket number did the airline issue on it?",
                {"pnr": pnr, "ticket": ticket}, ticket)
    if kind == "fee":
        basis, fee = _fare_basis(rng) + "X", money(rng, city[2], 41, 199)
        return (f"For fare basis {basis}, what did the rules say a date change costs?",
                {"basis": basis, "fee": fee}, fee)
    if kind == "rate":
        room = rng.choice([r for r in _ROOMS if ("rate", hotel, r) not in used])
        used.add(("rate", hotel, room))
        rate = money(rng, city[2], 90, 480)
        return (f"How much a night was the {room} at {hotel}, in their currency?",
                {"room": room, "rate": rate}, rate)
    if kind == "cheapest":
        used.add(("cheapest", city[0]))
        price = money(rng, city[2], 120, 240)  # below every other offer's 260
        return (f"On that {city[0]} flight search, what did the cheapest fare come to?",
                {"price": price}, price)
    if kind == "lands":
        flight = f"{rng.choice(_CARRIERS)}{rng.randint(5000, 9899)}"
        _, arr = _when(rng, rng.randint(3, 20))
        return (f"When does {flight} land, exactly as the search had it?",
                {"flight": flight, "arrives": arr}, arr)
    if kind == "meeting":
        event = rng.choice([e for e in _EVENTS if ("meeting", person, e) not in used])
        used.add(("meeting", person, event))
        h, m = rng.randint(8, 17), rng.choice((5, 20, 35, 50))
        return (f"What time does {person.split()[0]}'s {event} start that Tuesday?",
                {"event": event, "start": _clock(h, m), "at": str(h * 60 + m)}, _clock(h, m))
    code = f"{rng.choice(_LETTERS)}{rng.choice(_LETTERS)}-{rng.randint(10000, 99999)}"
    return (f"The confirmation code in {hotel}'s email for {person.split()[0]}, what was it?",
            {"code": code}, code)


KINDS = ("pnr", "ticket", "fee", "rate", "cheapest", "lands", "meeting", "code")
_TOOL = {"pnr": "book", "ticket": "book", "fee": "fare_rules", "rate": "hotel_rates",
         "cheapest": "flight_search", "lands": "flight_search", "meeting": "calendar",
         "code": "mailbox"}
_TOOLS = ("flight_search", "fare_rules", "hotel_rates", "calendar", "mailbox", "book")


def _size(rng: random.Random, tool: str) -> int:
    """A result's size in tokens: searches and rules run long, the rest short."""
    if tool in ("flight_search", "fare_rules"):
        return rng.randint(600, 6000)
    return rng.randint(100, 1500)


def _result(rng: random.Random, tool: str, person: str, city: tuple[str, str, str],
            hotel: str, need: dict[str, str] | None) -> tuple[dict[str, str], str]:
    """(the call's input, its result)."""
    need = need or {}
    tokens, day = _size(rng, tool), rng.randint(3, 20)
    if tool == "flight_search":
        given = ({"price": need["price"]} if "price" in need else
                 {"flight": need["flight"], "arrives": need["arrives"]} if need else None)
        return ({"to": city[1], "date": f"2026-12-{day:02d}"},
                flight_offers(rng, city, day, tokens, given))
    if tool == "fare_rules":
        basis = need.get("basis", _fare_basis(rng))
        return {"fare_basis": basis}, fare_rules(rng, basis, city[2], tokens, need.get("fee"))
    if tool == "hotel_rates":
        row = (hotel, need["room"], need["rate"]) if need else None
        others = [f"{city[0]} {kind}" for kind in ("Central", "Airport Hotel", "Harbour Rooms")]
        return {"city": city[0]}, hotel_rates(rng, city, others, tokens, row)
    if tool == "calendar":
        slot = (need["event"], need["start"], need["at"]) if need else None
        return {"person": person, "date": f"2026-12-{day:02d}"}, calendar_day(
            rng, person, day, tokens, slot)
    if tool == "mailbox":
        return ({"query": f"{hotel} {person}"}, email(rng, hotel, person, tokens,
                                                      need.get("code")))
    return {"passenger": person, "to": city[1]}, booking(rng, person, city, need)


def travel_desk(results: int, asks: int, facts: Sequence[Planted], *, seed: int) -> Workload:
    """**Held out** (see the module docstring): ``results`` tool results over tasks of
    2-5 calls; ``asks`` of them (in the first 70%) carry a detail asked about later,
    half a few calls on, half long after."""
    rng = random.Random(f"{seed}:travel")
    carriers = sorted(rng.sample(range(max(asks, int(results * 0.7))), asks))
    # Each reference is about its own traveller and place, so its question has one answer.
    pairs = rng.sample([(p, c) for p in range(len(_PEOPLE)) for c in range(len(_CITIES))], asks)
    planned: dict[int, tuple[str, str, tuple[str, str, str], str, dict[str, str] | None,
                             str]] = {}
    used: set[tuple[str, ...]] = set()
    for k, at in enumerate(carriers):
        person, city = _PEOPLE[pairs[k][0]], _CITIES[pairs[k][1]]
        kind = KINDS[k % len(KINDS)] if k < len(KINDS) else rng.choice(KINDS)
        if kind == "cheapest" and ("cheapest", city[0]) in used:
            kind = "lands"  # one cheapest fare asked per city
        question, wanted, answer = _plan(rng, kind, person, city, _HOTELS[pairs[k][1]],
                                         used)
        planned[at] = (kind, person, city, question, wanted, answer)
    due: dict[int, list[tuple[str, str]]] = {}
    for k, at in enumerate(carriers):
        later = at + (rng.randint(2, 5) if k % 2 else rng.randint(results // 3, results))
        due.setdefault(min(results - 1, later), []).append((planned[at][3], planned[at][5]))
    taken = set(pairs)
    free = [(p, c) for p in range(len(_PEOPLE)) for c in range(len(_CITIES)) if (p, c) not in taken]
    out: list[Message] = []
    typed, pending = [], []
    r = 0
    while r < results:
        p, c = rng.choice(free)
        typed.append(len(out))
        out.append(("user", rng.choice(_TASKS).format(p=_PEOPLE[p].split()[0], c=_CITIES[c][0],
                                                      d=rng.randint(3, 20))))
        for _ in range(min(rng.randint(2, 5), results - r)):
            if r in planned:
                kind, person, city, _, need, _ = planned[r]
                tool, hotel = _TOOL[kind], _HOTELS[_CITIES.index(city)]
            else:
                # A decoy: a traveller and place no reference is about.
                person, city, need = _PEOPLE[p], _CITIES[c], None
                tool, hotel = rng.choice(_TOOLS), _HOTELS[c]
            given, text = _result(rng, tool, person, city, hotel, need)
            tool_id = f"toolu_tr{r:04d}"
            out.append(("assistant", [{"type": "tool_use", "id": tool_id, "name": tool,
                                       "input": given}]))
            out.append(("user", [{"type": "tool_result", "tool_use_id": tool_id,
                                  "content": text}]))
            for question, answer in due.pop(r, []):
                out.append(("assistant", "One moment, still pulling the options together."))
                pending.append((len(out), answer))
                out.append(("user", question))
            r += 1
        out.append(("assistant", f"Done: {_PEOPLE[p].split()[0]}'s {_CITIES[c][0]} trip is "
                                 "sorted as far as the tools allow; details above."))
    woven = weave_user(out, facts)
    replies = reply_indices(woven)
    probes = tuple(Probe(replies[i], answer, str(woven[i][1])) for i, answer in pending)
    return Workload("travel", (("w-travel", tuple(woven)),), tuple(facts), probes=probes,
                    paused=tuple(replies[i] for i in typed))
