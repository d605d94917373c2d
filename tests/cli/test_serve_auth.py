"""`agentmap serve --auth`: where the auth file is named (the option, agentmap.yaml's `serve.auth`, a langgraph.json's
`auth.path`), and an auth file that cannot serve refused at start (bad-config, exit 2, naming the file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import GRAPHS, agentmap

pytest.importorskip("langgraph_sdk")

AUTH = """
from langgraph_sdk import Auth

auth = Auth()


@auth.authenticate
async def who(authorization: str | None):
    if authorization != "Bearer t0ken":
        raise Auth.exceptions.HTTPException(status_code=401, detail="who are you?")
    return "ada"
"""


@pytest.mark.parametrize(
    ("text", "named", "said"),
    [
        (None, "auth.py:auth", "the auth file auth.py does not exist"),
        ("def (\n", "auth.py:auth", "the auth file auth.py failed to load: SyntaxError at line 1"),
        ("import not_a_module_anywhere\n", "auth.py:auth", "ModuleNotFoundError"),
        (AUTH, "auth.py:my_auth", "auth.py has no 'my_auth'"),
        ("auth = 42\n", "auth.py:auth", "auth.py: auth is a int, not a langgraph_sdk.Auth"),
        ("from langgraph_sdk import Auth\nauth = Auth()\n", "auth.py:auth", "has no @auth.authenticate handler"),
        (
            AUTH.replace("(authorization: str | None)", "(token)"),
            "auth.py:auth",
            "its authenticate handler who needs 'token', which LangGraph does not pass",
        ),
        (AUTH, "auth.py", "--auth 'auth.py' names no object"),
    ],
)
def test_an_auth_file_that_cannot_serve_is_refused_at_start(
    tmp_path: Path, text: str | None, named: str, said: str
) -> None:
    if text is not None:
        (tmp_path / "auth.py").write_text(text, encoding="utf-8")
    result = agentmap("serve", GRAPHS / "hello_world.csv", "--auth", named, "--port", "0", cwd=tmp_path)
    assert result.code == 2, result.err
    assert "error[bad-config]" in result.err and said in result.err, result.err
    assert "Traceback" not in result.err


def test_a_langgraph_json_without_auth_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {}}), encoding="utf-8")
    result = agentmap("serve", GRAPHS / "hello_world.csv", "--auth", "langgraph.json", cwd=tmp_path)
    assert result.code == 2 and "langgraph.json has no auth.path" in result.err, result.err


def _served(config: Any) -> int:
    """The status of a request without the token and one with it, to a server of `config`."""
    from agentmap.server import background

    with background(config) as url:
        assert httpx.post(f"{url}/threads/search", json={}).status_code == 401
        found = httpx.post(f"{url}/threads/search", json={}, headers={"Authorization": "Bearer t0ken"})
        return found.status_code


def test_the_auth_file_comes_from_langgraph_json_or_agentmap_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "auth.py").write_text(AUTH, encoding="utf-8")
    (project / "langgraph.json").write_text(json.dumps({"auth": {"path": "./src/auth.py:auth"}}), encoding="utf-8")
    (project / "agentmap.yaml").write_text("serve:\n  auth: src/auth.py:auth\n  quota: runs=5/min\n", encoding="utf-8")
    seen: list[Any] = []
    monkeypatch.setattr("agentmap._cli_api.serve", lambda config, **_: seen.append(config))  # what the CLI calls
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    graph = GRAPHS / "hello_world.csv"
    assert agentmap("serve", graph, "--auth", project / "langgraph.json", cwd=elsewhere).code == 0
    assert agentmap("serve", graph, "--config", project / "agentmap.yaml", cwd=elsewhere).code == 0
    from_json, from_yaml = seen
    assert from_yaml.auth == f"{project / 'src' / 'auth.py'}:auth"  # relative to the config file, not the cwd
    assert from_yaml.quota is not None and from_yaml.quota.runs == 5
    for config in (from_json, from_yaml):
        assert _served(config) == 200
