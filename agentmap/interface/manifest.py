"""The manifest the evaluation runner writes beside its logs.

Log files have neutral names, and the evaluator must not read a log's metadata to score it, so the
manifest is what maps each log file to its scenario, its run number and the scenario's expectations.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from agentmap.errors import AgentMapError, ErrorCode, Location
from agentmap.interface.scenarios import Scenario

__all__ = ["MANIFEST_NAME", "Manifest", "ManifestEntry", "read_manifest", "write_manifest"]

MANIFEST_NAME = "manifest.json"
"""The manifest's file name in a logs folder."""


class ManifestEntry(BaseModel):
    """One run: which log file holds which scenario's run.

    Attributes:
        log: The log's file name, relative to the manifest's folder.
        scenario: The scenario's name.
        run: The 1-based run number (several runs per scenario give pass^k).
        fingerprint: The scenario's `fingerprint` when the run was scheduled.
    """

    model_config = ConfigDict(frozen=True)

    log: str
    scenario: str
    run: int = 1
    fingerprint: str = ""


class Manifest(BaseModel):
    """The runs in a logs folder and the scenarios they came from.

    Attributes:
        format: Always `agentmap-eval-manifest`.
        version: The manifest format version.
        scenarios_file: The scenarios CSV the runs came from, when known.
        runs: One entry per run.
        scenarios: The scenarios with their expectations, by name.
    """

    format: str = "agentmap-eval-manifest"
    version: int = 1
    scenarios_file: str | None = None
    runs: list[ManifestEntry] = Field(default_factory=list)
    scenarios: dict[str, Scenario] = Field(default_factory=dict)

    def by_log(self) -> dict[str, ManifestEntry]:
        """Return the entries keyed by log file name."""
        return {entry.log: entry for entry in self.runs}


def read_manifest(folder: str | os.PathLike[str]) -> Manifest | None:
    """Read the manifest in `folder`, or return None when there is none.

    Raises:
        AgentMapError: When the manifest exists but is not valid JSON of the expected shape.
    """
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except PydanticValidationError as exc:
        problem = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"] else e["msg"] for e in exc.errors()[:3]
        )
        raise AgentMapError(
            f"the evaluation manifest is damaged ({problem})",
            code=ErrorCode.BAD_MANIFEST,
            location=Location(file=str(path)),
            hint="Restore it, or run `agentmap eval run` again into a new --out folder: without it the logs "
            "here cannot be matched to their scenarios.",
        ) from None


def write_manifest(folder: str | os.PathLike[str], manifest: Manifest) -> Path:
    """Write `manifest` into `folder` atomically and return its path."""
    target = Path(folder) / MANIFEST_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".manifest", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(manifest.model_dump_json(indent=2))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
