"""`agentmap mcp`: the refusals before it speaks on stdio (the served tools: tests/protocols/test_mcp_stdio.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_helpers import agentmap, write


def test_a_missing_workflow_and_no_workflow(tmp_path: Path) -> None:
    missing = agentmap("mcp", "nope.csv", cwd=tmp_path)
    assert missing.code == 3 and "nope.csv does not exist" in missing.err
    nothing = agentmap("mcp", cwd=tmp_path)
    assert nothing.code == 2 and "no workflow to offer as MCP tools" in nothing.err
    empty = agentmap("mcp", str(tmp_path), cwd=tmp_path)
    assert empty.code == 3 and "error[no-workflow]" in empty.err
    assert missing.out == nothing.out == empty.out == ""  # stdout is the protocol's


def test_a_file_that_does_not_validate_is_refused(tmp_path: Path) -> None:
    flow = write(tmp_path / "flow.csv", "GraphName,Node,AgentType,Edge\nG,A,ecko,Nowhere\n")
    result = agentmap("mcp", flow, cwd=tmp_path)
    assert result.code == 4 and "unknown agent type 'ecko'" in result.err


def test_without_the_sdk_it_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flow = write(tmp_path / "flow.csv", "GraphName,Node,AgentType\nG,A,echo\n")
    monkeypatch.setitem(sys.modules, "mcp.server.stdio", None)  # as if `mcp` were not installed
    result = agentmap("mcp", flow, cwd=tmp_path)
    assert result.code == 2 and "error[missing-extra]" in result.err and "agentmap[mcp-server]" in result.err
