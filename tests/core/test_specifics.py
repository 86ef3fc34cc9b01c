"""What counts as a specific, and when one is present: tables in several languages."""

from __future__ import annotations

import pytest

from recap.core.specifics import absent, contains, extract_specifics

pytestmark = pytest.mark.unit

CASES = [
    # English
    ("Meet me at 14:30 on 2026-03-15; it costs $45.99 (v1.2.3).",
     {"14:30", "2026-03-15", "$45.99", "v1.2.3"}),
    ("Mail Ana@Example.COM or open https://Example.com/a?b=1.",
     {"ana@example.com", "https://example.com/a?b=1"}),
    ("Run `pip install -e .` then edit src/app/main.py and ~/notes.txt.",
     {"pip install -e .", "src/app/main.py", "~/notes.txt"}),
    ("Error E1234 in build #88, retry_after=30.", {"E1234", "#88", "30"}),
    ("Nothing specific here, just words and/or opinions.", set()),
    # Spanish
    ("El vuelo IB3456 sale el 15/03/2026 a las 9:45; cuesta 1.250,50 €.",
     {"IB3456", "15/03/2026", "9:45", "1.250,50 €"}),
    ("¿Puedes escribir a soporte@tienda.es antes del 3 de mayo?",
     {"soporte@tienda.es", "3 de mayo"}),
    # German
    ("Der Termin ist am 3. März um 10 Uhr, Ticket #4711, Datei /etc/nginx/nginx.conf.",
     {"3", "10", "#4711", "/etc/nginx/nginx.conf"}),
    ("Die Miete beträgt 1.280 € ab dem 01.04.2026.", {"1.280 €", "01.04.2026"}),
    # Dates, times and amounts with their words or units: one specific each
    ("I fly on 3 March 2025 at 9:30 am and paid $89.99 plus 40 euros.",
     {"3 March 2025", "9:30 am", "$89.99", "40 euros"}),
    ("Moved to March 3rd, 2025; the box weighs 12 kg and the file is 5 GB.",
     {"March 3rd, 2025", "12 kg", "5 GB"}),
    ("El 3 de marzo de 2025 pagué 89,99 € y USD 40; el envío tarda 3 días.",
     {"3 de marzo de 2025", "89,99 €", "USD 40", "3 días"}),
    ("Starting in March 2025, at 9 pm.", {"March 2025", "9 pm"}),
    # Markup tags (Recap's own delimiters echoed back) are no specifics
    ('Echo </previous_summary> <message role="user"> and ticket #88 </message>', {"#88"}),
    # Japanese (no spaces): CJK text cuts pieces, number units stay on their number
    ("2026年3月15日に東京で会いましょう。", {"2026年3月15日"}),
    ("価格は3,500円です。", {"3,500円"}),
    ("会議は午後3時30分から、部屋は405号室です。", {"3時30分", "405号"}),
    ("去年の話です。", set()),
    ("全角の３，５００円", {"3,500円"}),  # NFKC: full-width digits and comma
]

BULK_CASES = [
    # fenced: only its first line, plus what the prose mentions
    ("The ingress returned 502 since 09:41:\n```\n2024-03-14T09:41:07Z 10.0.9.1 502 3491\n"
     "2024-03-14T09:41:08Z 10.0.9.2 504 175\n```\nSee 175 above.",
     {"502", "09:41", "2024-03-14T09:41:07Z", "10.0.9.1", "3491", "175"}),
    # an unfenced log: a run of two or more log lines is bulk
    ("Logs:\n2024-01-01 10:00:01 ERROR pool 20 exhausted\n2024-01-01 10:00:02 INFO retry 1\n"
     "2024-01-01 10:00:03 INFO retry 2",
     {"2024-01-01", "10:00:01", "20"}),
    # a stack trace: the frames are bulk; the error line after them is prose
    ('Traceback (most recent call last):\n  File "app/db.py", line 88, in connect\n'
     "    pool.get(timeout=30)\nTimeoutError: waited 30.5s for conn 7",
     {"app/db.py", "88", "30.5s", "7"}),
    # a table: its header line only
    ("| hour | p99 |\n| 00:00 | 220 |\n| 01:00 | 247 |\nPeak p99 was 247.", {"p99", "247"}),
    # one log-looking line alone is prose
    ("2024-03-14 was the day we shipped 3 fixes.", {"2024-03-14", "3"}),
    # an unclosed fence runs to the end
    ("Config:\n```yaml\n# deploy/values-prod.yaml\nreplicas: 6\n", {"deploy/values-prod.yaml"}),
]


@pytest.mark.parametrize(("text", "expected"), CASES + BULK_CASES)
def test_extract_specifics(text: str, expected: set[str]) -> None:
    assert extract_specifics(text) == frozenset(expected)


def test_extraction_is_deterministic_and_idempotent_on_its_output() -> None:
    text = CASES[0][0] + "\n" + CASES[9][0]
    first = extract_specifics(text)
    assert extract_specifics(text) == first
    for s in first:
        assert contains(text, s), s


@pytest.mark.parametrize(("text", "specific", "present"), [
    ("it costs 3500 yen", "3,500", True),  # thousands commas do not matter
    ("it costs 3,500 yen", "3500", True),
    ("it costs 3.500 euros", "3500", False),  # a dot may be a decimal point
    ("150 items", "15", False),  # does not run on into more digits
    ("deployed on 2026-03-15", "15", True),
    ("see V1.2.3", "v1.2.3", True),  # case does not matter
    ("v1.2.30 is out", "v1.2.3", False),
    ("2026年3月15日に", "2026年3月15日", True),
    ("3,500円です", "3,500円", True),
    ("mail ANA@example.com", "ana@example.com", True),
    ("run pip  install -e .", "pip install -e .", True),  # white space collapsed
    ("nothing", "42", False),
])
def test_contains(text: str, specific: str, present: bool) -> None:
    assert contains(text, specific) is present


def test_absent_checks_every_text() -> None:
    assert absent({"42", "v2", "3,500"}, ["answer 42", "price 3500"]) == {"v2"}
