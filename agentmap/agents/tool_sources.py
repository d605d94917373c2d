"""Where a node's tools come from: the Tool_Source and Available_Tools columns.

Tool_Source holds one source, or several separated by `|`:

* a Python file or folder (`tools.py`, `tools/`): every public function and LangChain `@tool` defined
  there (only the names in `__all__` when the module has one). Paths resolve against the workflow's
  folder and must lie under it or under a folder of the `tools.roots` setting; any other path is refused.
* an importable module: `module:my_pkg.tools`, or a plain dotted name `my_pkg.tools`, when the module (or its
  package) is listed in the `tools.allowed_modules` setting.
* an MCP server: `mcp:stdio:<command line>` (started in the workflow's folder; a leading `python` is the
  interpreter AgentMap runs in) or `mcp:http://host/mcp` (streamable HTTP; a bare `http(s)://` URL too).

An empty Tool_Source with Available_Tools set means the `tools/` folder beside the workflow.
Available_Tools (`a|b`) picks tools by name from the sources; empty means all of them.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool

from agentmap._paths import OutsideRootsError, allowed_roots, confine, is_under
from agentmap.agents.base import AgentEnvironment, ConfigProblem
from agentmap.agents.registry import import_file
from agentmap.agents.tools import LocalToolExecutor, as_tool
from agentmap.errors import ConfigError, ErrorCode

__all__ = [
    "allowed_tool_roots",
    "build_tool_executor",
    "check_tool_config",
    "load_python_tools",
    "load_tools",
    "split_names",
    "tool_timeout",
]

TOOL_SOURCE_GROUP = "agentmap.tool_sources"
"""Entry point group of the loaders of sources that live outside `agentmap.agents` (`mcp`, declared in
AgentMap's pyproject.toml), each a module with `load_source_tools` and `check_source`, imported on first use."""
_EXTERNAL_KINDS = ("mcp",)
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def split_names(value: Any) -> list[str]:
    """`"a|b"`, `["a", "b"]` or None -> `["a", "b"]` (blank entries dropped)."""
    if value is None:
        return []
    items = value.split("|") if isinstance(value, str) else [str(v) for v in value]
    return [i.strip() for i in items if i and i.strip()]


def _setting(settings: Mapping[str, Any], section: str, key: str) -> Any:
    nested = settings.get(section)
    if isinstance(nested, Mapping) and nested.get(key) is not None:
        return nested[key]
    return settings.get(f"{section}.{key}")


def allowed_tool_roots(environment: AgentEnvironment) -> list[Path]:
    """The folders tool files may come from: the workflow's folder, the `tools.roots` setting and the
    allowed roots (`paths.allowed_roots`, `AGENTMAP_ALLOWED_ROOTS`)."""
    base = environment.base_dir.resolve()
    extra = [*split_names(_setting(environment.settings, "tools", "roots") or []), *allowed_roots(environment.settings)]
    roots = [base] + [(base / Path(str(r)).expanduser()).resolve() for r in extra]
    return list(dict.fromkeys(roots))


def tool_timeout(context: Mapping[str, Any], environment: AgentEnvironment) -> float | None:
    """Seconds per tool call: Context `tool_timeout`, else the `tools.timeout` setting, else 30."""
    value = context.get("tool_timeout", _setting(environment.settings, "tools", "timeout"))
    if value is None:
        return 30.0
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"tool_timeout must be a number of seconds, got {value!r}") from None
    return seconds if seconds > 0 else None


def _kind(source: str, base_dir: Path) -> str:
    lowered = source.lower()
    if lowered.startswith(("mcp:", "http://", "https://")):
        return "mcp"
    if lowered.startswith("module:"):
        return "module"
    if source.endswith(".py") or any(c in source for c in "/\\~") or source.startswith("."):
        return "path"
    if (base_dir / source).exists() or not _DOTTED.match(source):
        return "path"
    return "module"


def _resolve_path(source: str, environment: AgentEnvironment) -> Path:
    """The tool file or folder: relative to the workflow's folder, else to the working directory.

    The working directory counts as an allowed root for tool files only, and only when it holds the workflow
    file (a workflow run from its project's root may name `tools/x.py` of that root) or is itself under an
    allowed root (`--allow-root .`): a workflow file from elsewhere must not import the user's own code.
    """
    roots = allowed_tool_roots(environment)
    try:
        resolved = confine(source, environment.base_dir, roots)
    except OutsideRootsError:
        resolved = None
    if (resolved is None or not resolved.exists()) and not Path(source).expanduser().is_absolute():
        resolved = _from_working_directory(source, roots) or resolved
    if resolved is None:
        raise ConfigError(
            f"Tool_Source '{source}' is outside the allowed tool folders ({', '.join(map(str, roots))}): "
            "move it under the workflow's folder, or add its folder to the tools.roots setting or the allowed "
            "roots (--allow-root, paths.allowed_roots; see csv_specs/security.md)",
            code=ErrorCode.TOOL_PATH_REFUSED,
        )
    if not resolved.exists():
        raise ConfigError(
            f"Tool_Source '{source}' does not exist (looked for {resolved})", code=ErrorCode.TOOL_NOT_FOUND
        )
    return resolved


def _from_working_directory(source: str, roots: list[Path]) -> Path | None:
    """`source` in the working directory, when it exists there and the working directory may be used."""
    cwd = Path.cwd().resolve()
    try:
        found = confine(source, cwd, roots)
    except OutsideRootsError:
        return None
    if not found.exists():
        return None
    if roots[0].is_relative_to(cwd) or is_under(cwd, roots):
        return found
    raise ConfigError(
        f"Tool_Source '{source}' is not in the workflow's folder ({roots[0]}); it exists in the working directory "
        f"({found}), but tools are looked up there only for a workflow file inside it: allow that folder with "
        f"`--allow-root {cwd}` (or paths.allowed_roots, tools.roots; see csv_specs/security.md), or move the "
        "tool beside the workflow",
        code=ErrorCode.TOOL_PATH_REFUSED,
    )


def _module_tools(module: Any) -> list[BaseTool]:
    exported = getattr(module, "__all__", None)
    names = list(exported) if exported is not None else [n for n in vars(module) if not n.startswith("_")]
    tools: list[BaseTool] = []
    for name in names:
        obj = getattr(module, name, None)
        if isinstance(obj, BaseTool):
            tools.append(obj)
        elif inspect.isfunction(obj) and (exported is not None or obj.__module__ == module.__name__):
            tools.append(as_tool(obj))
    return tools


def load_python_tools(source: str, environment: AgentEnvironment) -> list[BaseTool]:
    """Load the tools of one Python source (file, folder or module).

    Raises:
        ConfigError: For a path outside the allowed roots, a missing file or module, or an import error.
    """
    if _kind(source, environment.base_dir) == "module":
        name = source.removeprefix("module:").strip()
        allowed = split_names(_setting(environment.settings, "tools", "allowed_modules") or [])
        if not any(name == m or name.startswith(f"{m}.") for m in allowed):
            raise ConfigError(
                f"Tool_Source '{source}' names the module {name!r}, which the configuration does not allow: a "
                "workflow file may offer its nodes (and their models) only the tool modules the person running it "
                f"allows. Add it to tools.allowed_modules (`tools: {{allowed_modules: [{name}]}}` in agentmap.yaml), "
                "or put the tools in a .py file beside the workflow (see csv_specs/security.md)",
                code=ErrorCode.TOOL_MODULE_REFUSED,
            )
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(
                f"tool module '{name}' cannot be imported: {exc}", code=ErrorCode.TOOL_NOT_FOUND
            ) from None
        return _module_tools(module)
    path = _resolve_path(source, environment)
    files = [path] if path.is_file() else sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
    tools: list[BaseTool] = []
    area = [*allowed_tool_roots(environment), path]
    for file in files:
        if not is_under(file.resolve(), area):  # a file of the folder that is a link out of it (and the roots)
            raise ConfigError(
                f"tool file '{file}' is a symbolic link to {file.resolve()}, outside the allowed tool folders "
                f"({', '.join(map(str, area))}), so it is not imported: allow its folder with "
                f"`--allow-root {file.resolve().parent}` (or tools.roots; see csv_specs/security.md)",
                code=ErrorCode.TOOL_PATH_REFUSED,
            )
        try:
            module = import_file(file, prefix="agentmap_tools")
        except Exception as exc:
            raise ConfigError(f"tool file '{file}' failed to import: {type(exc).__name__}: {exc}") from None
        tools.extend(_module_tools(module))
    return tools


def _sources(context: Mapping[str, Any], environment: AgentEnvironment) -> list[str]:
    sources = split_names(context.get("tool_source"))
    if not sources and split_names(context.get("available_tools")):
        default = environment.base_dir / "tools"
        if not default.is_dir():
            raise ConfigError(
                "Available_Tools names tools but Tool_Source is empty and there is no tools/ folder beside "
                "the workflow: set Tool_Source to a .py file, a folder, a module or an mcp: server"
            )
        sources = ["tools"]
    return sources


async def load_tools(source: str, environment: AgentEnvironment) -> list[BaseTool]:
    """Load the tools of one source, MCP servers included (see the module docstring for the forms)."""
    kind = _kind(source, environment.base_dir)
    if kind in _EXTERNAL_KINDS:
        loader = _external_loader(kind)
        tools: list[BaseTool] = await loader.load_source_tools(
            source, base_dir=environment.base_dir, settings=environment.settings
        )
        return tools
    return load_python_tools(source, environment)


def _external_loader(kind: str) -> Any:
    """The loader module the `agentmap.tool_sources` entry point `kind` names."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=TOOL_SOURCE_GROUP, name=kind):
        return ep.load()
    raise ConfigError(
        f"no loader for `{kind}:` tool sources is installed (the entry point {kind!r} of group {TOOL_SOURCE_GROUP!r})",
        code=ErrorCode.TOOL_NOT_FOUND,
        hint='reinstall AgentMap (pip install -e ".[dev]" in a checkout) so its entry points are declared',
    )


def _unknown(lead: str, name: str, found: Sequence[str]) -> ConfigError:
    close = difflib.get_close_matches(name, list(found), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return ConfigError(f"{lead}{hint} Tools found: {', '.join(found) or 'none'}", code=ErrorCode.UNKNOWN_TOOL)


def _select(tools: Sequence[BaseTool], wanted: list[str]) -> list[BaseTool]:
    by_name = {t.name: t for t in tools}
    if not wanted:
        return list(by_name.values())
    for name in wanted:
        if name not in by_name:
            raise _unknown(f"Available_Tools names '{name}', which no Tool_Source provides", name, list(by_name))
    return [by_name[n] for n in wanted]


async def build_tool_executor(context: Mapping[str, Any], environment: AgentEnvironment) -> LocalToolExecutor:
    """Load a node's tools (Context `tool_source`, `available_tools`, `tool_timeout`) into an executor.

    Raises:
        ConfigError: When a source cannot be loaded or a named tool is missing.
    """
    tools: list[BaseTool] = []
    for source in _sources(context, environment):
        tools.extend(await load_tools(source, environment))
    chosen = _select(tools, split_names(context.get("available_tools")))
    return LocalToolExecutor(chosen, timeout=tool_timeout(context, environment))


def check_tool_config(
    context: Mapping[str, Any], environment: AgentEnvironment, *, tool: str | None = None
) -> list[ConfigProblem]:
    """Problems with a node's tool configuration, found without starting any MCP server.

    Python sources are imported, so Available_Tools names (and `tool`, a name the node will call) are
    checked against what they define. Each problem names the column it is about.
    """
    problems: list[ConfigProblem] = []
    try:
        tool_timeout(context, environment)
    except ConfigError as exc:
        problems.append(exc.message)
    try:
        sources = _sources(context, environment)
    except ConfigError as exc:
        return [*problems, ("Tool_Source", exc.message)]
    tools: list[BaseTool] = []
    python_only = True
    for source in sources:
        kind = _kind(source, environment.base_dir)
        if kind in _EXTERNAL_KINDS:
            python_only = False
            loader = _external_loader(kind)
            found = loader.check_source(source, base_dir=environment.base_dir, settings=environment.settings)
            problems.extend(("Tool_Source", p) for p in found)
            continue
        try:
            tools.extend(load_python_tools(source, environment))
        except ConfigError as exc:
            problems.append(("Tool_Source", exc.message))
            python_only = False
    if python_only and not problems:
        try:
            chosen = _select(tools, split_names(context.get("available_tools")))
            names = [t.name for t in chosen]
        except ConfigError as exc:
            problems.append(("Available_Tools", exc.message))
        else:
            if tool is not None and tool not in names:
                problems.append(
                    _unknown(f"Context tool '{tool}' is not among the tools of Tool_Source", tool, names).message
                )
    return problems
