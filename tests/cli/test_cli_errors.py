"""An error's paragraph ends with the link to its code's section of csv_specs/errors.md."""

from __future__ import annotations

import json

from cli_helpers import agentmap


def test_the_error_paragraph_links_the_codes_section() -> None:
    result = agentmap("run", "graphs/helo_world.csv")
    assert result.code == 3
    assert result.err.startswith("error[file-not-found]")
    assert result.err.rstrip().endswith("  see: csv_specs/errors.md#file-not-found")
    assert "\n\n" not in result.err.strip()  # still one paragraph


def test_the_json_error_document_carries_the_link() -> None:
    result = agentmap("validate", "graphs/hello_world.csv::Nope", "--json")
    assert result.code == 3
    assert json.loads(result.out)["error"]["docs"] == "csv_specs/errors.md#graph-not-found"
