"""The Ray executor: chunks of rows are Ray tasks; each Ray worker compiles the workflow once from shipped files.

The workflow does not have to exist on the machines Ray runs on: the workflow file, the prompt files its rows
name (`file:`), the workflows its graph nodes run, the tool files its rows name and the Python files of its
custom agents and functions folders travel as a dict of file texts (put in Ray's object store once) and are
written once per machine, to a temporary folder named by a digest of the files and the recipe, by the first
worker process that needs them. A worker keeps the last few workflows it compiled, by the same digest, so a
second batch of the same workflow starts warm (as the process executor's workers fork from a server that has
LangGraph imported). Ray stops its workers without running their exit hooks, so the folder is not a worker's to
remove: the batch removes it on its own machine when it ends (a local Ray leaves nothing behind); other
machines keep one folder per version of a workflow. Tasks are never retried by Ray: a row never runs twice.
A Ray worker on the batch's own machine ends with the batch's process, even when that is killed (Ray's own
notice can come late: a worker outlives a dead local Ray until the process that reaps it does so), so a batch
run again never finds the killed run's worker still running a row's thread. A worker Ray stops (SIGTERM: a node
drained, a cluster scaled down or shut down) ends at once too, recording nothing: Ray's own handler would raise
`SystemExit` in the row's node, which would fail and end the row's thread, so the batch run again would keep that
error instead of continuing the row. AgentMap itself must be installed on every Ray node.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentmap.batch.executors import end_with, run_chunk
from agentmap.batch.rows import Job, RowResult, RowRunner, WorkflowRecipe
from agentmap.errors import ConfigError, ErrorCode, NodeError
from agentmap.spec.cells import parse_context
from agentmap.spec.columns import map_headers
from agentmap.spec.readers import read_tables

if TYPE_CHECKING:
    from agentmap.spec.readers import Table

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

    path = path.resolve()
    if path in seen or not path.is_relative_to(base):
        return
    seen.add(path)
    _add(files, base, path)
    for table in read_tables(path):  # every sheet of a workbook
        _table_files(files, base, path, table, seen)


def _table_files(files: dict[str, bytes], base: Path, path: Path, table: Table, seen: set[Path]) -> None:
    """What the rows of one table of the workflow file `path` name."""

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
    """The files a Ray worker needs, by path relative to the workflow's folder, and the recipe to use there.

    Relative paths in the returned recipe are resolved against the folder the files are written to.
    """
    path_text, sep, graph = recipe.source.partition("::")
    workflow = Path(path_text).resolve()
    base = workflow.parent
    files: dict[str, bytes] = {}
    _workflow_files(files, base, workflow, set())
    given = recipe.options
    options = replace(
        given,
        agents_dir=_ship(files, base, given.agents_dir, "custom_agents", _AGENTS),
        functions_dir=_ship(files, base, given.functions_dir, "functions", _FUNCTIONS),
    )
    source = workflow.relative_to(base).as_posix() + (f"::{graph}" if sep else "")
    return files, replace(recipe, source=source, options=options)


def _ship(files: dict[str, bytes], base: Path, given: str | Path | None, default: str, name: str) -> str | Path | None:
    """The folder's name in the bundle once its files are added to `files`; `given` when there is no such folder."""
    folder = Path(given) if given else base / default
    if not folder.is_dir():
        return given
    _add(files, base, folder, name)
    return name


_KEEP = 4
_COMPILED: OrderedDict[str, RowRunner] = OrderedDict()
"""In each Ray worker process: the last few workflows compiled there, by the digest of their files and recipe
(process-wide, like a process pool worker's runner: the same for every row and every batch of that workflow)."""


def _folder(digest: str) -> Path:
    """Where this machine keeps the files of the workflow with this digest."""
    return Path(tempfile.gettempdir()) / f"agentmap-ray-{digest[:24]}"


def _write_files(folder: Path, files: dict[str, bytes]) -> None:
    """Write the files into `folder` whole or not at all (several workers of a machine may race to do it)."""
    if folder.is_dir():
        return
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    for name, data in files.items():
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    try:
        os.rename(staging, folder)
    except OSError:  # another worker wrote them first
        shutil.rmtree(staging, ignore_errors=True)


def _compiled(digest: str, files_ref: list[Any], recipe: WorkflowRecipe) -> RowRunner:
    """The runner of a shipped workflow: compiled on this worker's first chunk of it, then reused."""
    root = _folder(digest)
    hit = _COMPILED.get(digest)
    if hit is not None and root.is_dir():
        _COMPILED.move_to_end(digest)
        return hit
    import ray

    _write_files(root, ray.get(files_ref[0]))
    shipped = recipe.options
    options = replace(
        shipped,
        agents_dir=str(root / shipped.agents_dir) if shipped.agents_dir else None,
        functions_dir=str(root / shipped.functions_dir) if shipped.functions_dir else None,
    )
    runner = RowRunner(replace(recipe, source=str(root / recipe.source), options=options))
    _COMPILED[digest] = runner
    while len(_COMPILED) > _KEEP:
        _COMPILED.popitem(last=False)
    return runner


_Batch = tuple[int, tuple[str, int] | None]
"""The batch's process: its pid, and the machine and pid namespace it runs in (`_machine`)."""
_WATCHED: set[int] = set()  # in a Ray worker: the batch processes it ends with


def _machine() -> tuple[str, int] | None:
    """This kernel's boot id and this process's pid namespace: a pid names the same process only where both
    match (None: not Linux)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return boot, os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def _end_with_batch(batch: _Batch) -> None:
    """In a Ray worker: end with the batch's process when it runs on this machine (once per batch process)."""
    pid, machine = batch
    if pid in _WATCHED or machine is None or machine != _machine():
        return
    _WATCHED.add(pid)
    end_with(pid)


def _stopped_at_once() -> None:
    """In a Ray worker: SIGTERM ends it at once, as SIGKILL would (see the module's docstring)."""
    if threading.current_thread() is threading.main_thread():  # where Ray runs a task, and signals are set
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_chunk(
    digest: str, files_ref: list[Any], recipe: WorkflowRecipe, chunk: list[Job], home: str, batch: _Batch
) -> list[RowResult]:
    """A Ray task: run a chunk of rows (`files_ref` is wrapped in a list so it is fetched only on a miss).

    An error that names a file names it where the user keeps it (`home`, the workflow's folder), not where this
    worker wrote its copy. `batch` is the batch's process: on this machine, the worker ends with it.
    """
    _stopped_at_once()
    _end_with_batch(batch)
    runner = _compiled(digest, files_ref, recipe)
    copy = str(Path(runner.recipe.source.partition("::")[0]).parent)
    return [
        replace(result, error=result.error.replace(copy, home)) if result.error and copy in result.error else result
        for result in run_chunk(runner, chunk)
    ]


def _digest(files: dict[str, bytes], recipe: WorkflowRecipe) -> str:
    digest = hashlib.sha256(repr(recipe).encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "the ray executor needs Ray, which is not installed",
            code=ErrorCode.MISSING_EXTRA,
            hint='pip install "agentmap[ray]"',
        ) from None
    return ray


def run_on_ray(
    recipe: WorkflowRecipe, jobs: Iterator[Job], *, workers: int | None, chunk_size: int, address: str | None
) -> Iterator[RowResult]:
    """Run the jobs as Ray tasks (a local Ray unless `address` or an already started Ray says otherwise)."""
    ray = _ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        except ConnectionError as exc:
            raise ConfigError(
                f"cannot connect to Ray at {address!r}: {exc}",
                code=ErrorCode.RAY_UNREACHABLE,
                hint="check --ray-address (`auto` finds a cluster started on this machine with `ray start --head`)",
            ) from None
    files, shipped = bundle(recipe)
    home = str(Path(recipe.source.partition("::")[0]).resolve().parent)
    digest = _digest(files, shipped)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    count = workers or cpus
    # At most `count` chunks run at once; twice as many are queued when Ray cannot run more than that anyway,
    # so a worker never waits for the driver between chunks.
    in_flight = 2 * count if count >= cpus else count
    task = ray.remote(num_cpus=1, max_retries=0)(_run_chunk)  # a row never runs twice
    files_ref = [ray.put(files)]
    pending: set[Any] = set()
    sizer = _ChunkSizer(chunk_size)
    try:
        while chunk := list(islice(jobs, sizer.size)):
            pending.add(task.remote(digest, files_ref, shipped, chunk, home, (os.getpid(), _machine())))
            if len(pending) >= in_flight:
                yield from sizer.watch(_gather(ray, pending))
        while pending:
            yield from _gather(ray, pending)
    except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.RayTaskError) as exc:
        raise NodeError(
            f"a Ray worker failed: {exc}",
            code=ErrorCode.WORKER_DIED,
            hint="run again to continue (finished rows are kept)",
        ) from None
    finally:
        for ref in pending:  # stopped early (Ctrl-C, an error): drop the chunks not yet finished
            ray.cancel(ref, force=True)
        shutil.rmtree(_folder(digest), ignore_errors=True)  # this machine's copy (see the module's docstring)


class _ChunkSizer:
    """Chunks of `--chunk-size` rows at least, grown to about `TASK_SECONDS` of work each as rows finish: a Ray task
    costs milliseconds of scheduling, which chunks of short rows would pay again and again."""

    TASK_SECONDS = 0.25
    LARGEST = 1024

    def __init__(self, least: int) -> None:
        self.size = least
        self._least = least
        self._rows = 0
        self._seconds = 0.0

    def watch(self, results: Iterator[RowResult]) -> Iterator[RowResult]:
        """Pass the results on, learning how long a row takes; the next chunk's size follows."""
        for result in results:
            self._rows += 1
            self._seconds += result.duration_s
            yield result
        if self._seconds > 0:
            fit = round(self.TASK_SECONDS * self._rows / self._seconds)
            self.size = max(self._least, min(self.LARGEST, fit))


def _gather(ray: Any, pending: set[Any]) -> Iterator[RowResult]:
    """Wait for one chunk at least; yield the rows of every chunk finished."""
    ready, _ = ray.wait(list(pending), num_returns=1)
    for ref in ready:
        pending.discard(ref)
        yield from ray.get(ref)
