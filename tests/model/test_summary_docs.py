"""docs/metrics.md defines every metric the code reports, with the code's own words."""

from __future__ import annotations

from pathlib import Path

from explorer.model.analysis.metrics import METRIC_NAMES, markdown_table
from explorer.model.analysis.recommendations import RULES

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"


def test_generated_metric_table_matches_the_code():
    text = DOC.read_text()
    begin = "<!-- BEGIN GENERATED METRICS (explorer.model.analysis.metrics.markdown_table) -->\n"
    inside = text.split(begin, 1)[1].split("\n<!-- END GENERATED METRICS -->", 1)[0]
    assert inside == markdown_table(), "regenerate the table in docs/metrics.md from markdown_table()"
    for name in METRIC_NAMES:
        assert f"`{name}`" in text


def test_every_recommendation_rule_is_documented():
    text = DOC.read_text()
    for rule in RULES:
        assert f"`{rule}`" in text


def test_generated_step_metric_table_matches_the_code():
    from explorer.model.analysis.step import markdown_table as step_table

    text = DOC.read_text()
    begin = "<!-- BEGIN GENERATED STEP METRICS (explorer.model.analysis.step.markdown_table) -->\n"
    inside = text.split(begin, 1)[1].split("\n<!-- END GENERATED STEP METRICS -->", 1)[0]
    assert inside == step_table(), "regenerate the step table in docs/metrics.md from explorer.model.analysis.step.markdown_table()"
