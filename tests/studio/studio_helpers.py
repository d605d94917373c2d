"""The studio's application in process (no socket), reached as its page reaches it: with its per-launch token."""

from __future__ import annotations

from fastapi.testclient import TestClient

from agentmap.studio import StudioConfig, create_studio_app


def studio_client(config: StudioConfig) -> TestClient:
    """A test client of the studio of `config`, sending its token (`config.token`) on every request."""
    return TestClient(create_studio_app(config), headers={"X-AgentMap-Token": config.token})
