"""Paths a workflow names stay under the allowed folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentmap.spec.paths import OutsideRootsError, confine


def test_relative_paths_resolve_against_the_workflow_folder(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    assert confine("prompts/a.md", tmp_path) == (tmp_path / "prompts" / "a.md").resolve()


@pytest.mark.parametrize("text", ["../secret.txt", "/etc/passwd", "prompts/../../x"])
def test_paths_leaving_the_folder_are_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(OutsideRootsError, match="outside the allowed folders"):
        confine(text, tmp_path / "flow")


def test_a_configured_root_widens_what_is_allowed(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    flow = tmp_path / "flow"
    assert confine("../shared/p.md", flow, [shared]) == (shared / "p.md").resolve()
    assert confine(str(shared / "p.md"), flow, ["../shared"]) == (shared / "p.md").resolve()


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    flow = tmp_path / "flow"
    flow.mkdir()
    (flow / "link").symlink_to(tmp_path)
    with pytest.raises(OutsideRootsError):
        confine("link/x.txt", flow)
