"""Loading `--auth`: the `langgraph_sdk.Auth` object of a Python file (`auth.py:my_auth`), of a module
(`my_package.auth:auth`), or the one a `langgraph.json` names (its `auth.path`, relative to the JSON file).

The file is imported as LangGraph's server imports it (by its path, under a module name of its own). Whatever keeps it
from giving an `Auth` with an `authenticate` handler is `bad-config` (exit 2) at start, naming the file.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from langgraph_sdk import Auth

from agentmap.errors import ConfigError, ErrorCode
from agentmap.server._auth import Authorization, BadHandler

__all__ = ["AUTH_FORMS", "load_auth"]

AUTH_FORMS = "FILE.py:NAME (auth.py:my_auth), MODULE:NAME (my_package.auth:auth) or a langgraph.json with auth.path"
"""How `--auth` is written."""


def load_auth(spec: str) -> Authorization:
    """The `Authorization` of `spec` (see `AUTH_FORMS`; a relative path is read from the working folder).

    Raises:
        ConfigError: `bad-config` naming the file: the form, a missing file or name, an import that failed, an
            object that is no `Auth`, no `authenticate` handler, or one that needs a parameter LangGraph does not
            pass.
    """
    text = spec.strip()
    if text.lower().endswith(".json"):
        return _from_langgraph_json(Path(text))
    where, sep, name = text.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise _bad(f"--auth {text!r} names no object", f"write --auth as {AUTH_FORMS}")
    if "/" in where or "\\" in where or where.endswith(".py"):
        module = _import_file(Path(where), text)
    else:
        try:
            module = importlib.import_module(where)
        except Exception as exc:
            raise _bad(f"the auth module {where} could not be imported: {_why(exc)}", _IMPORT_HINT) from None
    return _authorization(module, name, where, text)


def _from_langgraph_json(path: Path) -> Authorization:
    if not path.is_file():
        raise _bad(f"{path} does not exist", f"write --auth as {AUTH_FORMS}")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _bad(f"{path} is not a JSON file: {exc}", "fix its syntax") from None
    section = config.get("auth") if isinstance(config, dict) else None
    found = section.get("path") if isinstance(section, dict) else None
    if not isinstance(found, str) or ":" not in found:
        raise _bad(f"{path} has no auth.path", 'add "auth": {"path": "./auth.py:my_auth"}')
    where, _, name = found.rpartition(":")
    if "/" in where or "\\" in where or where.endswith(".py"):
        location = path.parent / where
        return _authorization(_import_file(location, found), name, str(location), found)
    return load_auth(found)


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise _bad(f"the auth file {path} does not exist", f"write --auth as {AUTH_FORMS}")
    resolved = path.resolve()
    name = "agentmap_auth_" + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise _bad(f"the auth file {path} is no Python module", f"write --auth as {AUTH_FORMS}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # as LangGraph's server does: dataclasses and pickling find the module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _bad(f"the auth file {path} failed to load: {_why(exc)}", _IMPORT_HINT) from None
    return module


def _authorization(module: Any, name: str, where: str, spec: str) -> Authorization:
    found = getattr(module, name, None)
    if found is None:
        raise _bad(f"{where} has no {name!r}", "name the Auth object: --auth FILE.py:NAME")
    if not isinstance(found, Auth):
        raise _bad(
            f"{where}: {name} is a {type(found).__name__}, not a langgraph_sdk.Auth",
            "make it one: from langgraph_sdk import Auth; my_auth = Auth()",
        )
    if found._authenticate_handler is None:
        raise _bad(
            f"{where}: {name} has no @{name}.authenticate handler",
            "add one that turns a request into a user (see csv_specs/serve.md, Users and permissions)",
        )
    try:
        return Authorization(found, spec)
    except BadHandler as exc:
        raise _bad(f"{where}: {exc}", "name only parameters LangGraph passes, or give the others defaults") from None


_IMPORT_HINT = "run `python FILE.py` to see the error; the modules it imports must be installed"


def _why(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"SyntaxError at line {exc.lineno}: {exc.msg}"
    return f"{type(exc).__name__}: {exc}"


def _bad(message: str, hint: str) -> ConfigError:
    return ConfigError(message, code=ErrorCode.BAD_CONFIG, hint=hint)
