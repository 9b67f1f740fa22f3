"""YAML that agentsim writes for people to read and edit: no anchors or aliases (``&id001``/``*id001``).

PyYAML writes an object that appears twice in a document once, with an anchor, and refers to it after: valid
YAML, but a fitted scenario or a report's resolved scenario reads as a puzzle, and editing the first place
silently edits the second. Every such object is written out where it appears.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["dump"]


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(data: Any, **options: Any) -> str:
    """``yaml.safe_dump(data, **options)`` without anchors or aliases."""
    return yaml.dump(data, Dumper=_PlainDumper, **options)
