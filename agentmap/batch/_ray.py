"""The Ray executor: actors that compile the workflow once from its shipped files, fed rows in chunks.

The workflow does not have to exist on the machines Ray runs the actors on: the workflow file, the prompt
files its rows name (`file:`), the workflows its graph nodes run, the tool files its rows name and the
Python files of its custom agents and functions folders travel with each actor (as a dict of file texts)
and are written to a temporary folder there. AgentMap itself must be installed on every Ray node.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentmap.batch.executors import chunks, run_chunk
from agentmap.batch.rows import Job, RowResult, RowRunner, WorkflowRecipe
from agentmap.errors import ConfigError

__all__ = ["bundle", "run_on_ray"]

_AGENTS, _FUNCTIONS = "_bundle_custom_agents", "_bundle_functions"


def _add(files: dict[str, bytes], base: Path, path: Path, name: str | None = None) -> None:
    path = path.resolve()
    if path.is_file():
        files.setdefault(name or path.relative_to(base).as_posix(), path.read_bytes())
    elif path.is_dir():
        for item in sorted(path.rglob("*.py")):
            if "__pycache__" not in item.parts:
                inside = item.relative_to(path).as_posix()
                files.setdefault(f"{name}/{inside}" if name else item.relative_to(base).as_posix(), item.read_bytes())


def _workflow_files(files: dict[str, bytes], base: Path, path: Path, seen: set[Path]) -> None:
    """The workflow file and what its rows name: prompt files, other workflows, tool files."""
    from agentmap.spec.cells import parse_context
    from agentmap.spec.columns import map_headers
    from agentmap.spec.readers import read_table

    path = path.resolve()
    if path in seen or not path.is_relative_to(base):
        return
    seen.add(path)
    _add(files, base, path)
    table = read_table(path)
    index = map_headers(table.headers).index
    for _, row in table.rows:

        def cell(column: str, row: list[str] = row) -> str:
            position = index.get(column)
            return row[position].strip() if position is not None and position < len(row) else ""

        prompt = cell("Prompt")
        if prompt.lower().startswith("file:"):
            _add(files, base, path.parent / prompt[5:].strip())
        tools = cell("Tool_Source")
        if tools and (path.parent / tools).exists():
            _add(files, base, path.parent / tools)
        try:
            context = parse_context(cell("Context"))
        except Exception:
            continue
        target = str(context.get("workflow") or context.get("graph") or "").partition("::")[0].strip()
        if target:
            _workflow_files(files, base, path.parent / target, seen)


def bundle(recipe: WorkflowRecipe) -> tuple[dict[str, bytes], WorkflowRecipe]:
    """The files an actor needs, by path relative to the workflow's folder, and the recipe to use there.

    Relative paths in the returned recipe are resolved against the folder the files are written to.
    """
    path_text, sep, graph = recipe.source.partition("::")
    workflow = Path(path_text).resolve()
    base = workflow.parent
    files: dict[str, bytes] = {}
    _workflow_files(files, base, workflow, set())
    options = dict(recipe.options)
    for key, default, name in (("agents_dir", "custom_agents", _AGENTS), ("functions_dir", "functions", _FUNCTIONS)):
        folder = Path(options[key]) if options.get(key) else base / default
        if folder.is_dir():
            _add(files, base, folder, name)
            options[key] = name
    source = workflow.relative_to(base).as_posix() + (f"::{graph}" if sep else "")
    return files, replace(recipe, source=source, options=options)


class _Actor:
    """One Ray actor: writes the shipped files to a temporary folder and compiles the workflow from there."""

    def __init__(self, files: dict[str, bytes], recipe: WorkflowRecipe) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="agentmap-batch-")
        root = Path(self._folder.name)
        for name, data in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        options = {
            k: str(root / v) if k in ("agents_dir", "functions_dir") and v else v for k, v in recipe.options.items()
        }
        source = str(root / recipe.source)
        self._runner = RowRunner(replace(recipe, source=source, options=options))

    def run(self, chunk: list[Job]) -> list[RowResult]:
        return run_chunk(self._runner, chunk)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "the ray executor needs Ray, which is not installed",
            code="missing-extra",
            hint='pip install "agentmap[ray]"',
        ) from None
    return ray


def run_on_ray(
    recipe: WorkflowRecipe, jobs: Iterator[Job], *, workers: int | None, chunk_size: int, address: str | None
) -> Iterator[RowResult]:
    """Run the jobs on Ray actors (a local Ray unless `address` or an already started Ray says otherwise)."""
    ray = _ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        except ConnectionError as exc:
            raise ConfigError(
                f"cannot connect to Ray at {address!r}: {exc}",
                code="ray-unreachable",
                hint="check --ray-address (`auto` finds a cluster started on this machine with `ray start --head`)",
            ) from None
    files, shipped = bundle(recipe)
    count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    actor_class = ray.remote(num_cpus=1)(_Actor)
    files_ref = ray.put(files)
    actors = [actor_class.remote(files_ref, shipped) for _ in range(count)]
    load = dict.fromkeys(range(count), 0)
    pending: dict[Any, int] = {}
    source = chunks(jobs, chunk_size)
    try:
        while True:
            for chunk in source:
                worker = min(load, key=load.__getitem__)
                pending[actors[worker].run.remote(chunk)] = worker
                load[worker] += 1
                if all(n >= 2 for n in load.values()):
                    break
            if not pending:
                return
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                load[pending.pop(ref)] -= 1
                yield from ray.get(ref)
    except ray.exceptions.RayActorError as exc:
        from agentmap.errors import NodeError

        raise NodeError(
            f"a Ray actor died: {exc}", code="worker-died", hint="run again to continue (finished rows are kept)"
        ) from None
    finally:
        for actor in actors:
            ray.kill(actor)
