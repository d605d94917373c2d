"""Executors: how the rows of a batch are spread over threads, an event loop, processes or Ray workers.

Each executor takes an iterator of jobs and yields a `RowResult` per job as rows finish (in any order),
keeping only a bounded number of rows in flight, so input is read as it is needed. Every row goes
through `RowRunner`, that is through `CompiledWorkflow`: no executor has a run loop of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from itertools import islice
from pathlib import Path
from typing import Any, Literal, get_args

from agentmap.batch._process_state import ProcessExit, exits_stop_the_batch, quiet_resource_tracker
from agentmap.batch._row_threads import threads
from agentmap.batch.rows import Job, RowResult, RowRunner, WorkflowRecipe
from agentmap.errors import ConfigError, ErrorCode, NodeError

__all__ = ["EXECUTORS", "Executor", "chunks", "execute", "executor_named", "run_chunk", "stop_worker_processes"]

Executor = Literal["thread", "async", "process", "ray"]
"""Where a batch runs its rows: threads, one event loop, worker processes or a Ray cluster."""

EXECUTORS: tuple[Executor, ...] = get_args(Executor)


def executor_named(name: str) -> Executor:
    """`name` as an `Executor` (it comes from the command line or an untyped caller), or a usage error."""
    for executor in EXECUTORS:
        if name == executor:
            return executor
    raise ConfigError(f"unknown executor {name!r}", code=ErrorCode.USAGE, hint=f"use one of {', '.join(EXECUTORS)}")


def chunks(jobs: Iterator[Job], size: int) -> Iterator[list[Job]]:
    """Consecutive lists of up to `size` jobs."""
    while chunk := list(islice(jobs, size)):
        yield chunk


def execute(
    recipe: WorkflowRecipe,
    jobs: Iterator[Job],
    *,
    executor: Executor = "thread",
    concurrency: int = 8,
    workers: int | None = None,
    chunk_size: int = 16,
    ray_address: str | None = None,
    runner: RowRunner | None = None,
) -> Iterator[RowResult]:
    """Run every job; yield the results as rows finish.

    Args:
        recipe: How to compile the workflow (workers compile it themselves).
        jobs: The rows to run.
        executor: `thread`, `async`, `process` or `ray`.
        concurrency: Rows in flight at once (thread and async executors).
        workers: Worker processes or Ray workers (default: the CPUs available).
        chunk_size: Rows sent to a worker process or Ray worker at a time.
        ray_address: A Ray cluster to connect to (`auto`, `ray://host:10001`); default: a local Ray.
        runner: An already compiled runner for the in-process executors.

    Raises:
        ConfigError: An unknown executor (the numbers are `BatchOptions`' to check).
    """
    executor = executor_named(executor)
    if executor == "thread":
        return _in_process(threads(runner or RowRunner(recipe), jobs, concurrency))
    if executor == "async":
        return _in_process(_async(runner or RowRunner(recipe), jobs, concurrency))
    if executor == "process":
        return _processes(recipe, jobs, workers or default_workers(), chunk_size)
    from agentmap.batch._ray import run_on_ray

    return run_on_ray(recipe, jobs, workers=workers, chunk_size=chunk_size, address=ray_address)


def default_workers() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _in_process(results: Iterator[RowResult]) -> Iterator[RowResult]:
    """The results of rows run in this process; a row that calls `os._exit` stops the batch with `row-exited`."""
    with exits_stop_the_batch.active():
        try:
            yield from results
        except ProcessExit as exited:
            row = f"row {exited.row}" if exited.row is not None else "a row"
            raise NodeError(
                f"{row} called os._exit({exited.status}), which would end the whole batch's process: the batch "
                "stopped (rows still running are not recorded)",
                code=ErrorCode.ROW_EXITED,
                hint="run again to continue (finished rows are kept); have the agent raise an error instead: its row "
                "then fails and the batch goes on",
            ) from None


_DONE = object()


def _async(runner: RowRunner, jobs: Iterator[Job], concurrency: int) -> Iterator[RowResult]:
    """An event loop in a helper thread runs `concurrency` rows at once; results come back through a queue."""
    results: queue.Queue[Any] = queue.Queue(maxsize=4 * concurrency)
    stop = threading.Event()

    async def main() -> None:
        slots = asyncio.Semaphore(concurrency)
        tasks: set[asyncio.Task[None]] = set()

        async def one(job: Job) -> None:
            try:
                try:
                    result = await runner.arun(job)
                except ProcessExit as exited:  # handed to the reader at once, which stops the batch
                    exited.row = job[0]
                    stop.set()
                    results.put(exited)
                    return
                while not stop.is_set():
                    try:
                        results.put(result, timeout=0.05)
                        break
                    except queue.Full:
                        await asyncio.sleep(0.01)
            finally:
                slots.release()

        for job in jobs:
            await slots.acquire()
            if stop.is_set():
                break
            task = asyncio.create_task(one(job))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)

    def loop() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:
            results.put(exc)
        results.put(_DONE)

    helper = threading.Thread(target=loop, name="agentmap-batch-loop", daemon=True)
    helper.start()
    try:
        while (item := results.get()) is not _DONE:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()


# -- worker processes -------------------------------------------------------------------------------

_RUNNER: RowRunner | None = None


def _start_worker(recipe: WorkflowRecipe, batch_pid: int, environment: dict[str, str]) -> None:
    """Process pool initializer: the batch's environment as it is now (the fork server, which an earlier batch of
    this process may have started, keeps the one of its own start: a key set since would be missing); compile
    once; leave Ctrl-C to the parent, which stops the pool."""
    os.environ.clear()
    os.environ.update(environment)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with(batch_pid)
    global _RUNNER
    _RUNNER = RowRunner(recipe)


def end_with(batch_pid: int) -> None:
    """End this worker as soon as the batch's own process ends, even by kill -9.

    Nothing the worker runs after that is recorded, and it would go on running its row's thread beside the
    batch run again to continue it. A pool worker would also wait on its task queue for ever (it holds the
    queue's write end itself, so it never sees end-of-file), and its parent is the fork server, so a
    parent-death signal would not fire either. A thread waits on a pidfd of the batch's process instead: no
    polling. The process must be on this machine, in this process's pid namespace.
    """
    try:
        watched = os.pidfd_open(batch_pid)
    except ProcessLookupError:
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd (not Linux, or an old kernel): the pool's own shutdown remains
        return

    def watch() -> None:
        select.select([watched], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="agentmap-batch-watch", daemon=True).start()


def stop_worker_processes(timeout: float = 5.0) -> None:
    """Stop the fork server and resource tracker a process batch started, waiting at most `timeout` seconds.

    Both end by themselves once the process that started them has gone, but only some time after it; a command
    that has exited must leave no process of its own behind, so `agentmap batch` calls this before it exits
    (a pool's workers are joined by the pool itself). The fork server's leftover children and the server itself
    are stopped by signals (`_stop_children`); the helpers' `_stop` methods, the standard library's own way to
    stop them, then close their pipes and reap them. Nothing to do if no batch used processes.
    """
    if "multiprocessing.forkserver" not in sys.modules:
        return
    from multiprocessing import forkserver, resource_tracker

    def stop() -> None:
        recorded = getattr(forkserver._forkserver, "_forkserver_pid", None)
        for server in {recorded, *_fork_servers_started_here()}:
            if server is None:
                continue
            _stop_children(server, timeout)
            if server != recorded:  # started, but Ctrl-C came before the standard library recorded it: reap it here
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(server, 0)
        tracker = resource_tracker._resource_tracker
        for helper in (forkserver._forkserver, tracker):
            stop_helper = getattr(helper, "_stop", None)
            if helper is tracker and getattr(tracker, "_pid", 0) is None:
                continue  # inherited from the process that forked this one (its pipe, not its pid): not ours
            if stop_helper is not None:
                with contextlib.suppress(OSError):  # already gone
                    stop_helper()

    stopper = threading.Thread(target=stop, name="agentmap-batch-stop", daemon=True)
    stopper.start()
    stopper.join(timeout)


def _fork_servers_started_here() -> list[int]:
    """The processes this process started that run multiprocessing's fork server (Linux: read from /proc)."""
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return []
    found = []
    for task in tasks:
        with contextlib.suppress(OSError):
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    if b"from multiprocessing.forkserver import main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        found.append(int(pid))
    return found


def _stop_children(server: int, timeout: float) -> None:
    """Stop the fork server and the processes it started that still run, waiting for them (at most `timeout`
    seconds); the server's `_stop` then reaps it at once.

    A pool joins the workers it knows; a worker whose start Ctrl-C cut short (forked, not yet recorded by the
    pool) is known only to the fork server. It would end once the command has gone (it watches the command's
    process), but after the command had exited. The server is paused first, so that it forks none after its
    children are read, and killed last: asked to end by closing its pipe, a server that Ctrl-C caught still
    importing its preloaded modules would go on importing for seconds after the command had exited (it reads
    the pipe only once it serves). It holds nothing to save. Linux only (the server's children are read from
    /proc, waited for on pidfds); elsewhere the server is only asked to end.
    """
    try:
        ours = Path(f"/proc/{server}/stat").read_text().rpartition(")")[2].split()[1] == str(os.getpid())
    except (OSError, IndexError):  # gone already, or no /proc
        return
    if not ours:  # a server inherited from the process that forked this one: not this command's to stop
        return
    os.kill(server, signal.SIGSTOP)
    try:
        _stop_forked(server, timeout)
    finally:
        with contextlib.suppress(OSError):
            os.kill(server, signal.SIGKILL)


def _stop_forked(server: int, timeout: float) -> None:
    """SIGTERM to each process the (paused) fork server `server` started; wait for them (at most `timeout` s)."""
    try:
        pids = [int(p) for p in Path(f"/proc/{server}/task/{server}/children").read_text().split()]
    except (OSError, ValueError):
        return
    watched = []
    for pid in pids:
        try:
            handle = os.pidfd_open(pid)
        except (AttributeError, OSError):  # gone already, or no pidfd
            continue
        try:
            signal.pidfd_send_signal(handle, signal.SIGTERM)
        except OSError:  # ended meanwhile
            os.close(handle)
            continue
        watched.append(handle)
    deadline = time.monotonic() + timeout
    try:
        while watched and (left := deadline - time.monotonic()) > 0:
            ended, _, _ = select.select(watched, [], [], left)
            watched = [w for w in watched if w not in ended]
            for handle in ended:
                os.close(handle)
    finally:
        for handle in watched:
            os.close(handle)


def _run_chunk(chunk: list[Job]) -> list[RowResult]:
    assert _RUNNER is not None, "the worker was not initialised"
    return run_chunk(_RUNNER, chunk)


def run_chunk(runner: RowRunner, chunk: list[Job]) -> list[RowResult]:
    """Run a chunk of rows in a worker process or Ray worker, then send the spans of its runs.

    A worker ends without its exit hooks (the pool stops it, Ray kills the actor), so what its tracer buffers
    goes out with each chunk: every row whose result the parent records has its spans written.
    """
    results = [runner.run(job) for job in chunk]
    runner.app.flush()
    return results


def _processes(recipe: WorkflowRecipe, jobs: Iterator[Job], workers: int, chunk_size: int) -> Iterator[RowResult]:
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    # Workers fork from a server that has imported LangGraph once (no threads start at import): a pool's start-up
    # is then a fork and a compile, not a second or more of imports per worker.
    context.set_forkserver_preload(["agentmap.batch.executors", "agentmap.runtime.api", "agentmap.runtime.compiler"])
    with quiet_resource_tracker.active():
        yield from _pool(context, recipe, jobs, workers, chunk_size)


def _pool(
    context: Any, recipe: WorkflowRecipe, jobs: Iterator[Job], workers: int, chunk_size: int
) -> Iterator[RowResult]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(recipe, os.getpid(), dict(os.environ))
    )
    pending: set[Future[list[RowResult]]] = set()
    try:
        for chunk in chunks(jobs, chunk_size):
            pending.add(pool.submit(_run_chunk, chunk))
            if len(pending) >= 2 * workers:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield from future.result()
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield from future.result()
    except BrokenProcessPool as exc:
        raise NodeError(
            f"a batch worker process died: {exc}",
            code=ErrorCode.WORKER_DIED,
            hint="run again to continue (finished rows are kept); if it repeats, use --executor thread to see why",
        ) from None
    finally:
        if pending:  # stopped early (Ctrl-C, an error): stop the workers now; their rows are not recorded
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
