"""The YAML agentsim writes for people: an object that appears twice is written twice, never as an anchor."""

import yaml

from agentsim.model import yaml_text


def test_a_repeated_object_is_written_out_at_each_place():
    shared = {"median": 12.0, "p90": 40.0}  # one object in two places, as a fitted scenario's distributions can be
    doc = {"think": shared, "tool": {"latency": shared}, "steps": [shared, shared]}
    plain = yaml.safe_dump(doc, sort_keys=False)
    assert "&id001" in plain  # PyYAML's own dumper anchors it: the case this module exists for
    text = yaml_text.dump(doc, sort_keys=False)
    assert "&" not in text and "*" not in text
    assert yaml.safe_load(text) == doc
    assert text.count("median: 12.0") == 4
