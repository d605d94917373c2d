"""run --thread, resume, threads: durable runs, their checkpoints and what their threads hold."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from agentmap.agents.journal_entries import Entry
    from agentmap.runtime.durable import Thread
    from agentmap.runtime.migration import Migration
    from agentmap.runtime.options import CompileOptions
    from agentmap.runtime.threads import ThreadInfo

__all__ = [
    "checkpoint_exists",
    "checkpoint_target",
    "example_answer",
    "journal_entries",
    "open_thread",
    "saved_state_keys",
    "thread_history",
    "typed_answer",
]


def checkpoint_exists(checkpoint: str | None) -> bool:
    """threads, resume: whether `--checkpoint` (or the default) may hold threads, so a missing file is reported
    as such rather than created."""
    from agentmap.runtime.checkpoint import checkpoint_exists

    return checkpoint_exists(checkpoint)


def checkpoint_target(checkpoint: str | None, *, create: bool = True) -> str:
    """run --thread, resume: the checkpoint `--checkpoint` means (else `AGENTMAP_CHECKPOINT`, else the default
    file, its folder made unless `create` is false), to name it in messages."""
    from agentmap.runtime.checkpoint import checkpoint_target

    return checkpoint_target(checkpoint, create=create)


def open_thread(
    saver: Any,
    thread_id: str,
    *,
    checkpoint_id: str | None = None,
    force: bool = False,
    latest: bool = False,
    migration: Migration | None = None,
    options: CompileOptions,
) -> Thread:
    """resume: a saved thread from its checkpoint alone, its workflow compiled at the revision it runs (at
    `checkpoint_id`, `--from-checkpoint`; `force` a thread saved before revisions on its changed file), or moved to
    the file as it is now (`--latest`, `--migrate MAP`)."""
    from agentmap.runtime.durable import open_thread

    return open_thread(
        saver,
        thread_id,
        checkpoint_id=checkpoint_id,
        force=force,
        latest=latest,
        migration=migration,
        options=options,
    )


def saved_state_keys(saver: Any, thread_id: str, checkpoint_id: str | None = None) -> tuple[str, ...]:
    """run --thread: the state keys a thread already holds, so its inputs are not reported missing."""
    from agentmap.runtime.durable import saved_state_keys

    return saved_state_keys(saver, thread_id, checkpoint_id)


def thread_history(saver: Any, thread_id: str, *, options: CompileOptions) -> tuple[ThreadInfo, list[StateSnapshot]]:
    """threads show: a thread's status and its checkpoints, newest first."""
    from agentmap.runtime.threads import thread_history

    return thread_history(saver, thread_id, options=options)


def journal_entries(saver: Any, thread_id: str) -> list[Entry]:
    """threads show --calls: the model and tool calls a thread's runs recorded (replayed on resume)."""
    from agentmap.agents.journal_entries import journal_entries

    return journal_entries(saver, thread_id)


def example_answer(payload: Any) -> str:
    """run, resume: the answer a paused node's hint shows (`agentmap resume ID --answer ...`)."""
    from agentmap.agents.questions import example_answer

    return example_answer(payload)


def typed_answer(text: str) -> Any:
    """resume: the answer typed as ANSWER, read as every channel reads typed text (words as typed, or JSON)."""
    from agentmap.agents.questions import typed_answer

    return typed_answer(text)
