"""``agentsim prices``: browse the price catalog (``agentsim profiles``, the speed-profile library, is
:mod:`agentsim.cli.profiles`).

* ``agentsim prices [WORDS...]`` lists catalog models whose ``provider/model`` id
  or name contains every word, with their prices as of ``--date`` (default: today,
  UTC), long-context tiers and the price variants (contexts) they sell.
* ``agentsim prices show PROVIDER/MODEL`` shows one model in full: its prices on
  the date next to every variant, its price history and each variant's start date.

``--json`` prints only JSON on stdout. Prices are USD per million tokens
(``requests_kcount``: USD per 1000 requests), as genai-prices names them.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentsim.cli.common import BadInput, app, err_console, handle_errors

if TYPE_CHECKING:
    from rich.table import Table

# rich and agentsim.pricing.rates (genai-prices) are imported by the commands that use them, not at start-up

KIND_LABELS = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cache read",
    "cache_write_mtok": "cache write 5m",
    "cache_write_1h_mtok": "cache write 1h",
    "output_reasoning_mtok": "reasoning",
    "requests_kcount": "per 1000 requests",
}
SEARCH_COLUMNS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok")


def _parse_date(value: str | None) -> dt.date:
    from agentsim.pricing.rates import today

    if value is None:
        return today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise BadInput(f"--date '{value}' is not a date: write it as YYYY-MM-DD, e.g. --date 2026-03-01") from None


def _num(x: float) -> str:
    return f"{x:g}"


def _cell(value) -> str:
    """A price cell: ``5`` or, with long-context tiers, ``5 | 10 >200k``."""
    if value is None:
        return "–"
    if isinstance(value, dict):
        tiers = " | ".join(f"{_num(t['price'])} >{_k(t['start'])}" for t in value["tiers"])
        return f"{_num(value['base'])} | {tiers}"
    return _num(value)


def _k(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"


def _variant_label(v: dict) -> str:
    text = v["context"] + (f" ({v['from']})" if v["from"] else "")
    if v.get("status", "").startswith("not offered"):
        text += f" (ended {v['ends_per_notes']['date']}, per the catalog's notes)"
    return text


def _echo_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


@app.command()
@handle_errors
def prices(
    words: Annotated[
        list[str] | None,
        typer.Argument(help="Words every listed model must contain; or: show PROVIDER/MODEL.", show_default=False),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print only JSON.")] = False,
    date: Annotated[str | None, typer.Option(help="Prices as of this date (YYYY-MM-DD; default: today, UTC).")] = None,
    limit: Annotated[int, typer.Option(min=0, help="List at most this many models (0: all).")] = 40,
    wide: Annotated[bool, typer.Option("--wide", help="One wide table even if wider than the terminal.")] = False,
) -> None:
    """Catalog prices (genai-prices): search models, or `prices show PROVIDER/MODEL` for one in full."""
    on = _parse_date(date)
    words = list(words or [])
    if words and words[0] == "show":
        if len(words) != 2:
            raise BadInput(
                "`agentsim prices show` takes one catalog name, e.g. `agentsim prices show anthropic/claude-opus-4-8`"
            )
        _show(words[1], on, json_out, wide)
        return
    _search(" ".join(words), on, json_out, limit, wide)


def _search(query: str, on: dt.date, json_out: bool, limit: int, wide: bool = False) -> None:
    from rich.table import Table

    from agentsim.cli.tables import print_table, table_console
    from agentsim.pricing.rates import describe_catalog_model, search_catalog

    hits = search_catalog(query)
    shown = hits if limit == 0 else hits[:limit]
    docs = [describe_catalog_model(p, m, on) for p, m in shown]
    if json_out:
        _echo_json({"query": query, "as_of": on.isoformat(), "matches": len(hits), "models": docs})
        return
    if not hits:
        err_console.print(
            f"no catalog model matches '{query}': try fewer or shorter words, e.g. `agentsim prices opus`", markup=False
        )
        return
    console = table_console()
    t = Table(title=f"genai-prices catalog, as of {on.isoformat()}: USD per million tokens", title_justify="left")
    t.add_column("provider/model", no_wrap=True)
    for k in SEARCH_COLUMNS:
        t.add_column(KIND_LABELS[k], justify="right")
    t.add_column("price variants (context)")
    for d in docs:
        p = d["prices"]
        t.add_row(
            d["ref"],
            *[_cell(p.get(k)) for k in SEARCH_COLUMNS],
            ", ".join(_variant_label(v) for v in d["variants"]) or "–",
        )
    print_table(t, wide=wide, compact=True, console=console)
    if len(hits) > len(shown):
        err_console.print(f"{len(hits) - len(shown)} more match; add words or use --limit 0", markup=False)


def _show(ref: str, on: dt.date, json_out: bool, wide: bool = False) -> None:
    """``prices show``: one catalog model, its facts and its price tables (or its JSON document)."""
    from agentsim.cli.tables import print_table, table_console
    from agentsim.pricing.rates import PriceError, describe_catalog_model, find_catalog_model

    try:
        provider, model = find_catalog_model(ref)
    except PriceError as exc:
        raise BadInput(f"{exc.message} ({exc.hint})") from None
    d = describe_catalog_model(provider, model, on)
    if json_out:
        _echo_json(d)
        return
    console = table_console()
    _print_facts(console, d)
    print_table(_prices_table(d), wide=wide, pages=True, console=console)
    if len(d["history"]) > 1:
        print_table(_history_table(d), wide=wide, pages=True, console=console)
    if d["variants"]:
        print_table(_variants_table(d), wide=wide, console=console)
    other = d["prices"].get("not_simulated")
    if other:
        console.print(
            "not simulated (agentsim bills text tokens and requests): "
            + ", ".join(f"{k} {_cell(x)}" for k, x in other.items()),
            markup=False,
            highlight=False,
        )


def _print_facts(console, d: dict) -> None:
    """The model's name, description, context window, price comments and whether it is deprecated."""
    console.print(f"{d['ref']}" + (f" — {d['name']}" if d["name"] else ""), markup=False, highlight=False)
    for label, key in (
        ("description", "description"),
        ("context window", "context_window"),
        ("price comments", "price_comments"),
    ):
        if d[key]:
            value = f"{d[key]:,} tokens" if key == "context_window" else d[key]
            console.print(f"{label}: {value}", markup=False, highlight=False)
    if d["deprecated"]:
        console.print("deprecated by the provider", markup=False)


def _kind_rows(t: Table, columns: list[dict]) -> None:
    """One row per price kind that any of ``columns`` (price mappings, one per column) sets."""
    from agentsim.pricing.rates import PRICE_KINDS

    for k in PRICE_KINDS:
        cells = [c.get(k) for c in columns]
        if any(c is not None for c in cells):
            t.add_row(KIND_LABELS[k], *[_cell(c) for c in cells])


def _prices_table(d: dict) -> Table:
    """The prices on the day asked: standard, then each price variant active that day."""
    from rich.table import Table

    active = [v for v in d["variants"] if v["active"]]
    t = Table(title=f"prices as of {d['as_of']} (USD per million tokens)", title_justify="left")
    t.add_column("")
    t.add_column("standard", justify="right")
    for v in active:
        t.add_column(v["context"], justify="right")
    _kind_rows(t, [d["prices"]] + [v["resolved"] for v in active])
    return t


def _history_table(d: dict) -> Table:
    """The standard prices over time, one column per change."""
    from rich.table import Table

    h = Table(title="price history (standard prices)", title_justify="left")
    h.add_column("")
    for entry in d["history"]:
        h.add_column(entry["from"] or "first", justify="right")
    _kind_rows(h, [e["prices"] for e in d["history"]])
    return h


def _variants_table(d: dict) -> Table:
    """The price variants (contexts such as a speed tier): from when, their status that day, what they set."""
    from rich.table import Table

    v_t = Table(title="price variants: use as price: {catalog: ..., context: {...}}", title_justify="left")
    v_t.add_column("context")
    v_t.add_column("from")
    v_t.add_column(f"on {d['as_of']}")
    v_t.add_column("prices it sets")
    for v in d["variants"]:
        sets = ", ".join(f"{KIND_LABELS.get(k, k)} {_cell(x)}" for k, x in v["prices"].items() if k != "not_simulated")
        v_t.add_row(v["context"], v["from"] or "always", v["status"], sets)
    return v_t
