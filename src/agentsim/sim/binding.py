"""Which account's which limit binds: the limit that refused the most requests, or kept them waiting longest.

A workload's accounts count, per limit (``concurrency``, ``rpm``, ``input_tpm``, ``output_tpm``), the
refusals (HTTP 429) it took part in -- a refusal counts under every limit that was short at that
instant -- and the seconds calls waited in line for it (``policy: queue``). The *binding* limit is the one
with the most refusals; where nothing was refused, the one calls waited for longest; where calls neither
were refused nor waited, none binds (``None``). Ties go to the account declared first, then to the limit
listed first. The share is the binding limit's refusals over all the accounts' refusals (or its waiting
over all waiting), so a user can see whether one limit or several refuse.
"""

from __future__ import annotations

from typing import Any

__all__ = ["binding"]


def binding(accounts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The binding ``{account, limit, by, refused, waited_s, share, utilisation}`` of a variant's accounts
    (``summary.json``'s ``limits.accounts``), or None when no call was refused or waited."""
    for by, key in (("refused", "refused_by"), ("waited", "waited_s")):
        cells = [(name, limit, float(n)) for name, a in accounts.items() for limit, n in (a.get(key) or {}).items()]
        total = sum(n for _, _, n in cells)
        if total <= 0:
            continue
        name, limit, top = max(cells, key=lambda c: c[2])  # (max keeps the first of equals)
        acc = accounts[name]
        part = acc.get(limit) or {}
        return {
            "account": name,
            "limit": limit,
            "by": by,
            "refused": int(acc["refused_by"].get(limit, 0)) if acc.get("refused_by") else 0,
            "waited_s": float(acc["waited_s"].get(limit, 0.0)) if acc.get("waited_s") else 0.0,
            "share": top / total,
            "utilisation": part.get("utilisation"),
        }
    return None
