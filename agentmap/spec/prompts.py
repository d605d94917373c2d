"""The Prompt cell's references: `file:path` loads a file, `prompt:name` an entry of the prompt registry.

`file:path` resolves against the workflow's folder, then against the prompts folder (`paths.prompts`, or
`prompts.directory` in an existing `agentmap_config.yaml`). Either way the file must lie under the
workflow's folder, the prompts folder or an allowed root (`agentmap._paths.confine`). `prompt:name` looks
`name` up in `registry.yaml` of the prompts folder (default: `prompts/` beside the workflow), a mapping
of names to prompt texts, as the existing AgentMap's prompt manager reads it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentmap._paths import OutsideRootsError, confine, widen_hint
from agentmap._sources import exists, read_bytes
from agentmap.spec.cells import CellError

__all__ = ["REGISTRY_NAME", "prompts_folder", "resolve_prompt"]

_REFERENCE = re.compile(r"^prompt:([\w.\-/]+)\s*$")  # `prompt:name`; "Prompt: some words" stays plain text
REGISTRY_NAME = "registry.yaml"
"""The prompt registry's file name inside the prompts folder."""


def prompts_folder(settings: Mapping[str, Any] | None) -> Path | None:
    """The configured prompts folder (`settings["paths"]["prompts"]`), or None."""
    paths = (settings or {}).get("paths")
    folder = paths.get("prompts") if isinstance(paths, Mapping) else None
    return Path(str(folder)).expanduser() if folder else None


def resolve_prompt(cell: str, base_dir: Path, roots: Sequence[Path] = (), prompts_dir: Path | None = None) -> str:
    """The prompt text a Prompt cell stands for: the file of `file:`, the registry entry of `prompt:`, else the cell.

    Args:
        cell: The Prompt cell as written.
        base_dir: The workflow file's folder.
        roots: Extra allowed roots.
        prompts_dir: The configured prompts folder, if any (also an allowed root).

    Raises:
        CellError: The file is outside the allowed folders, missing or unreadable; the name is not in the
            registry.
    """
    lowered = cell.lower()
    if lowered.startswith("file:"):
        return _read_file(cell[len("file:") :].strip(), base_dir, roots, prompts_dir)
    reference = _REFERENCE.match(cell)
    if reference is not None:
        return _from_registry(reference.group(1), base_dir, roots, prompts_dir)
    return cell


def _read_file(text: str, base_dir: Path, roots: Sequence[Path], prompts_dir: Path | None) -> str:
    extra = [*roots, *([prompts_dir] if prompts_dir is not None else [])]
    bases = [base_dir, *([prompts_dir] if prompts_dir is not None else [])]
    tried: list[Path] = []
    for base in bases:
        try:
            path = confine(text, base, extra)
            found = exists(path)
        except OutsideRootsError as err:
            raise CellError(
                "path-outside-roots",
                f"prompt file {text!r} resolves to {err.path}, outside the folders a workflow may read "
                f"({', '.join(map(str, err.roots))})",
                widen_hint("the prompt file"),
            ) from None
        except (OSError, ValueError) as exc:  # a NUL byte, a name too long, a symlink loop
            raise CellError("bad-prompt-file", f"prompt file {text!r} cannot be used: {exc}", "fix the path") from None
        if found:
            try:
                return read_bytes(path).decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CellError(
                    "bad-prompt-file", f"cannot read prompt file {path}: {exc}", "save the file as UTF-8 text"
                ) from None
        tried.append(path)
    raise CellError(
        "bad-prompt-file",
        f"prompt file {text!r} does not exist (looked for {' and '.join(map(str, tried))})",
        "fix the path after file: (relative to the workflow file's folder"
        + (", or to the prompts folder)" if prompts_dir is not None else ")"),
    )


def _from_registry(name: str, base_dir: Path, roots: Sequence[Path], prompts_dir: Path | None) -> str:
    folder = prompts_dir if prompts_dir is not None else base_dir / "prompts"
    if not exists(base_dir / folder / REGISTRY_NAME):
        raise CellError(
            "unknown-prompt",
            f"prompt:{name} names the prompt registry, but there is no {REGISTRY_NAME} in {base_dir / folder}",
            f"write {REGISTRY_NAME} there (`{name}: <prompt text>`), or set the prompts folder: "
            "`paths: {prompts: DIR}` in agentmap.yaml",
        )
    registry = _read_file(f"{folder / REGISTRY_NAME}", base_dir, roots, prompts_dir)
    try:
        import yaml

        from agentmap._yaml import load
    except ImportError:
        raise CellError(
            "missing-extra",
            f"reading the prompt registry for prompt:{name} needs PyYAML",
            'pip install "agentmap[yaml]"',
        ) from None
    try:
        entries: Any = load(registry)
    except yaml.YAMLError as exc:
        raise CellError(
            "bad-prompt-file", f"{folder / REGISTRY_NAME} is not valid YAML: {exc}", "fix the registry file"
        ) from None
    entries = entries if isinstance(entries, Mapping) else {}
    value = entries.get(name)
    if isinstance(value, str | int | float):
        return str(value)
    close = difflib.get_close_matches(name, [str(k) for k in entries], n=1, cutoff=0.6)
    guess = f"; did you mean 'prompt:{close[0]}'?" if close else ""
    names = sorted(map(str, entries))
    raise CellError(
        "unknown-prompt",
        f"prompt {name!r} is not in the prompt registry {folder / REGISTRY_NAME}{guess}",
        f"use one of: {', '.join(names)}" if names else f"add `{name}: <prompt text>` to {folder / REGISTRY_NAME}",
    )
