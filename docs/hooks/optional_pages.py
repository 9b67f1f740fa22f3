"""MkDocs hook: add guide pages to the navigation when they exist.

Pages for features that land on their own branches (trade-off analysis, measurement and
calibration, session replay) join the "Guides" section as soon as their Markdown file is in
docs/, so the site builds strictly before and after they arrive.
"""

from __future__ import annotations

from pathlib import Path

OPTIONAL_GUIDES = [
    ("Trade-offs: sweeps, Pareto, break-even", "tradeoffs.md"),
    ("Measuring and calibrating speeds", "measure.md"),
    ("Replaying recorded sessions", "replay.md"),
]


def on_config(config, **kwargs):
    docs = Path(config["docs_dir"])
    for section in config["nav"] or []:
        if isinstance(section, dict) and "Guides" in section:
            guides = section["Guides"]
            listed = {next(iter(item.values())) for item in guides if isinstance(item, dict)}
            for title, page in OPTIONAL_GUIDES:
                if (docs / page).exists() and page not in listed:
                    guides.append({title: page})
    return config
