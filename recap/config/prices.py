"""The price table's override (RECAP_PRICES): other prices, or another provider's
models, as JSON or a JSON file, validated once at start with errors that name the
model and the field. recap.core.planning.prices holds the published table."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from recap.core.planning.prices import TABLE, Rates, lookup

log = logging.getLogger("recap.prices")

# The fields of one model's row; the cache writes default to the published ratios.
REQUIRED = ("input", "output", "cache_read")
OPTIONAL = {"cache_write_5m": 1.25, "cache_write_1h": 2.0}
# The highest price a row may name, USD per million tokens: far above any model's,
# so a price given per token or per thousand by mistake is refused, not used.
MAX_PRICE = 10_000.0
# The longest RECAP_PRICES (JSON or a path): hundreds of rows.
MAX_CHARS = 100_000


class PriceList(BaseModel):
    """Prices.

    What the models charge, for the priced choices (fold, clear) and the savings
    view: the published table (recap/core/planning/prices.py), with rows of your own
    over it. RECAP_REPLY_MODEL and RECAP_MODEL pick the rows (Summarization policy).
    """

    # JSON, or the path of a JSON file: {"model-id": {"input": 3, "output": 15,
    # "cache_read": 0.3, "cache_write_5m": 3.75, "cache_write_1h": 6}, ...}.
    prices: str = Field("", max_length=MAX_CHARS, description=(
        "Price rows (USD per million tokens) that replace or add to the published table: "
        "JSON or a JSON file's path (docs/operations/prices.md)."))

    @field_validator("prices")
    @classmethod
    def _parses(cls, value: str) -> str:
        parse_prices(value)
        return value

    def price_table(self) -> dict[str, Rates]:
        """The published table with RECAP_PRICES's rows over it."""
        return {**TABLE, **parse_prices(self.prices)}


def parse_prices(text: str) -> dict[str, Rates]:
    """RECAP_PRICES's rows. Raises ValueError naming what is wrong."""
    text = text.strip()
    if not text:
        return {}
    if not text.startswith("{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ValueError(f"RECAP_PRICES: not JSON and not a readable file: {text!r} "
                             f"({exc.strerror or exc})") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"RECAP_PRICES: not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError("RECAP_PRICES: must be a JSON object of model ids to price rows")
    return {str(model): _row(str(model), row) for model, row in raw.items()}


def _row(model: str, row: Any) -> Rates:
    if not model.strip():
        raise ValueError("RECAP_PRICES: a model id is blank")
    if not isinstance(row, dict):
        raise ValueError(f"RECAP_PRICES: {model}: must be an object with "
                         f"{', '.join(REQUIRED)}")
    unknown = set(row) - set(REQUIRED) - set(OPTIONAL)
    if unknown:
        raise ValueError(f"RECAP_PRICES: {model}: unknown field(s) {', '.join(sorted(unknown))}"
                         f" (fields: {', '.join((*REQUIRED, *OPTIONAL))})")
    missing = [f for f in REQUIRED if f not in row]
    if missing:
        raise ValueError(f"RECAP_PRICES: {model}: missing {', '.join(missing)}")
    values = {f: _price(model, f, row[f]) for f in row}
    for field, ratio in OPTIONAL.items():
        values.setdefault(field, values["input"] * ratio)
    if values["input"] <= 0:
        raise ValueError(f"RECAP_PRICES: {model}: input must be above 0 (every figure is "
                         "relative to it)")
    return Rates(**values)


def _price(model: str, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or not 0 <= value <= MAX_PRICE:
        raise ValueError(f"RECAP_PRICES: {model}: {field} must be a number of USD per "
                         f"million tokens from 0 to {MAX_PRICE:g}, got {value!r}")
    return float(value)


_warned: set[str] = set()


def warn_unknown(model: str, table: dict[str, Rates]) -> None:
    """Log once per process that ``model`` has no row of its own, naming the row it
    is priced by."""
    found = lookup(model, table)
    if found.exact or model in _warned:
        return
    _warned.add(model)
    log.warning("no price for model %r: priced as %s (set RECAP_PRICES to give its own)",
                model, found.row)
