"""`func:` router functions: finding the function a next cell names, within what the runner allows."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmap.agents.registry import import_file
from agentmap.errors import AgentNotFoundError, ErrorCode
from agentmap.spec.models import FuncRef

__all__ = ["RouterFn", "allowed_modules", "load_router"]

RouterFn = Callable[..., Any]


def load_router(
    ref: FuncRef,
    functions_dir: Path,
    allowed_modules: Sequence[str] = (),
    refusal: Callable[[Path], str | None] | None = None,
) -> RouterFn:
    """Find the function a `func:` reference names.

    `func:name` looks for `name.py` defining `name` in `functions_dir`, then for any `.py` file there
    defining it; `func:module:function` loads `module.py` of `functions_dir`, or imports `module` when it
    is one of `allowed_modules` (or inside one of those packages): a workflow file cannot call any other
    importable function (`func:os:system`).

    A file of the functions folder that `refusal` gives a reason for (a symbolic link out of where code may come
    from, `agentmap._paths.CodeFolder`) is not imported.

    Raises:
        AgentNotFoundError: With code `unknown-function`, saying where it looked, `function-not-allowed`, or
            `code-outside-roots`.
    """
    refused = refusal or (lambda path: None)
    if ref.module and (functions_dir / f"{ref.module}.py").is_file():
        found = getattr(_import_function_file(functions_dir / f"{ref.module}.py", ref, refused), ref.name, None)
        where = f"{functions_dir / (ref.module + '.py')}"
    elif ref.module:
        if not any(ref.module == m or ref.module.startswith(f"{m}.") for m in allowed_modules):
            raise AgentNotFoundError(
                f"{ref} names module {ref.module!r}, which is neither a file of the functions folder "
                f"{functions_dir} nor a module the configuration allows",
                code=ErrorCode.FUNCTION_NOT_ALLOWED,
                hint=f"put the function in {functions_dir / (ref.module + '.py')}, or allow the module: "
                f"`functions: {{allowed_modules: [{ref.module}]}}` in agentmap.yaml (see csv_specs/security.md)",
            )
        try:
            module = importlib.import_module(ref.module)
        except Exception as exc:  # a SyntaxError or an error raised at import, too
            raise AgentNotFoundError(
                f"cannot import module {ref.module!r} for {ref}: {type(exc).__name__}: {exc}",
                code=ErrorCode.UNKNOWN_FUNCTION,
                hint=f"check the module name; it must be importable from where agentmap runs (installed, or on "
                f"PYTHONPATH), or put `def {ref.name}(state, success_target, failure_target)` in the functions folder "
                f"and write func:{ref.name}",
            ) from None
        found = getattr(module, ref.name, None)
        where = f"module {ref.module!r}"
    else:
        found = None
        candidates = [functions_dir / f"{ref.name}.py"]
        if functions_dir.is_dir():
            candidates += sorted(p for p in functions_dir.glob("*.py") if p != candidates[0])
        for path in candidates:
            if path.is_file() and not path.name.startswith("_"):
                module = _import_function_file(path, ref, refused)
                found = getattr(module, ref.name, None)
                if found is not None:
                    break
        where = f"the functions folder {functions_dir}"
    if not callable(found):
        module_name, dot, function = ref.name.rpartition(".")
        hint = (
            f"write func:{module_name}:{function} (a module and its function are separated by a colon), or define "
            f"`def {function}(state, success_target, failure_target):` in {functions_dir / (function + '.py')}"
            if dot and not ref.module
            else f"define `def {ref.name}(state, success_target, failure_target):` in "
            f"{functions_dir / (ref.name + '.py')} (or run `agentmap scaffold`), or write func:module:function"
        )
        raise AgentNotFoundError(
            f"router function {ref.name!r} ({ref}) was not found in {where}", code=ErrorCode.UNKNOWN_FUNCTION, hint=hint
        )
    _check_signature(found, ref, where)
    router: RouterFn = found
    return router


def _check_signature(found: Any, ref: FuncRef, where: str) -> None:
    """Refuse a router that cannot be called as `router(state, success_target, failure_target)`.

    Read without calling it, so `agentmap validate` reports it at the cell instead of the run failing.
    """
    try:
        signature = inspect.signature(found)
    except (TypeError, ValueError):  # a builtin or extension function without a readable signature
        return
    try:
        signature.bind({}, None, None)
    except TypeError as exc:
        raise AgentNotFoundError(
            f"router function {ref.name!r} ({ref}, in {where}) cannot be called with (state, success_target, "
            f"failure_target): its signature is {ref.name}{signature} ({exc})",
            code=ErrorCode.BAD_ROUTER,
            hint=f"define it as `def {ref.name}(state, success_target=None, failure_target=None):` "
            "(csv_specs/format.md, routers)",
        ) from None


def _import_function_file(path: Path, ref: FuncRef, refusal: Callable[[Path], str | None]) -> Any:
    refused = refusal(path)
    if refused is not None:
        raise AgentNotFoundError(
            f"{ref} is looked for in {path}, which is not imported: {refused}",
            code=ErrorCode.CODE_OUTSIDE_ROOTS,
            hint="keep routers in real files of the workflow's folder, or allow where the link leads "
            "(csv_specs/security.md)",
        )
    try:
        return import_file(path, prefix="agentmap_functions")
    except Exception as exc:  # a broken file must be reported at the cell, not crash validate
        raise AgentNotFoundError(
            f"cannot import {path} for {ref}: {type(exc).__name__}: {exc}",
            code=ErrorCode.UNKNOWN_FUNCTION,
            hint="fix the error in that file (or move it out of the functions folder)",
        ) from None


def allowed_modules(settings: Mapping[str, Any]) -> list[str]:
    """The modules `func:module:function` may import: the `functions.allowed_modules` setting."""
    section = settings.get("functions")
    value: Any = section.get("allowed_modules") if isinstance(section, Mapping) else None
    if isinstance(value, str):
        value = value.split("|")
    return [str(m).strip() for m in value or () if str(m).strip()]
