"""`agentmap batch --llm-batch`: the rows' model calls sent as provider batch jobs, round by round (`run_rounds`).

Each round runs the rows that can go on (`run_batch` through the usual executor); a row stops at its next model
call, journaled `queued` (agents/llm_batch.py), and waits. `Jobs.settle` then places every queued call not yet in
a live job into new jobs (grouped by provider, API root, key and model; split within the provider's limits; each
written `submitting` before it is sent, `_llm_jobs.py`), polls the open jobs until some end, writes each answer
into its call's entry (`finished`; `failed` for a request the provider failed, a result line that cannot be read,
a call the job did not answer or a job past `--llm-batch-timeout`), places again the calls of a job that expired
or was cancelled, and says which rows can go on: those with no call left queued.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentmap.agents.journal_entries import QueuedAnswer, QueuedCall, answer_queued_many, queued_calls
from agentmap.batch._llm_budget import within
from agentmap.batch._llm_jobs import JobRow, JobStore, custom_id
from agentmap.batch._provider_jobs import Outcome, ProviderError, ProviderJobs, jobs_for, split, usage_of
from agentmap.batch.rows import Job
from agentmap.batch.status import remember_command

if TYPE_CHECKING:
    from agentmap.batch._recording import Recorder
    from agentmap.runtime.runner import CompiledWorkflow

__all__ = ["Jobs", "LLMBatchOptions", "LLMBatchReport", "Rounds", "Tell", "run_rounds", "say_synchronous"]

_logger = logging.getLogger("agentmap.batch.llm")


@dataclass(frozen=True)
class LLMBatchOptions:
    """How `--llm-batch` runs (the command's options of the same names).

    Attributes:
        retry: `fail` (a request the provider failed is its row's error) or `sync` (made again as a normal call).
        timeout: Seconds a job may stay unfinished before it is cancelled and its calls fail their rows.
        poll: Seconds between two looks at the open jobs.
        detach: Stop once every queued call is in a job (run the same command again to collect).
        budget: `--budget`: calls are placed in jobs only while what the batch committed fits in it
            (`_llm_budget.py`); the others stay queued, their rows waiting for a run with a higher budget.
        look: The command that shows the batch's state (`agentmap batch status OUTPUT`), told on the progress lines.
        again: The command that runs the batch again to collect (the command line's, without `--detach`), noted
            in the store for `agentmap batch status`.
    """

    retry: str = "fail"
    timeout: float = 24 * 3600.0
    poll: float = 30.0
    detach: bool = False
    budget: float | None = None
    look: str = ""
    again: str = ""


@dataclass
class LLMBatchReport:
    """What the batch's provider jobs did (the progress lines and the summary).

    Attributes:
        submitted: Jobs submitted by this call.
        jobs: Jobs open now, by provider status.
        waiting: Calls waiting for an answer.
        answered: Calls answered by this call.
        failed: Calls failed by this call.
        resubmitted: Calls placed again (their job expired or was cancelled).
        cost: What the answered calls cost at the batch price, in USD.
        detached: The batch stopped after submitting (`--detach`).
        waiting_rows: Rows still waiting when the batch stopped (run the same command again to go on).
        parked: Rows not run again at the start: they wait on a call an earlier run of the batch queued.
        held: Calls the budget kept out of jobs at the last placing (`--budget`; they wait for a higher one).
        committed: What the batch committed at the last placing, with `--budget`: its answered calls at the prices
            paid and the estimates of the calls in its jobs, in USD.
    """

    submitted: int = 0
    jobs: dict[str, int] = field(default_factory=dict)
    waiting: int = 0
    answered: int = 0
    failed: int = 0
    resubmitted: int = 0
    cost: float = 0.0
    detached: bool = False
    waiting_rows: int = 0
    parked: int = 0
    held: int = 0
    committed: float = 0.0

    def line(self) -> str:
        """One progress line."""
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.jobs.items())) or "none open"
        held = f", {self.held} held by the budget (${self.committed:.4f} committed)" if self.held else ""
        return (
            f"llm-batch: jobs submitted {self.submitted} (open: {statuses}); calls waiting {self.waiting}{held}, "
            f"answered {self.answered}, failed {self.failed}; cost so far ${self.cost:.4f} at the batch price"
        )


Tell = Callable[[str], None]


class Rounds(Protocol):
    """What runs the rows of a round: through the batch's executor, recording those that end."""

    def run(self, jobs: Iterable[Job], recorder: Recorder) -> dict[str, Job]:
        """Run `jobs`, record each row that ends; the rows that wait for a provider batch job, by id."""
        ...


def run_rounds(
    rounds: Rounds, jobs: Iterable[Job], recorder: Recorder, app: CompiledWorkflow, llm: LLMBatchOptions, tell: Tell
) -> LLMBatchReport:
    """Run the rows round by round: each to its next model call, then the provider jobs, then on."""
    provider_jobs = Jobs(app.graph.checkpointer, llm, tell)
    if llm.again:  # for `agentmap batch status OUTPUT` to say how to collect
        remember_command(provider_jobs.saver, llm.again)
    parked: dict[str, Job] = {}
    try:
        waiting = rounds.run(provider_jobs.not_queued(jobs, parked), recorder)
        waiting.update(parked)
        while waiting:
            ready = provider_jobs.settle(waiting)
            # not ready: no job open, the calls left held by the budget
            if provider_jobs.report.detached or not ready:
                break
            going = sorted((waiting.pop(key) for key in ready if key in waiting), key=lambda job: job[0])
            waiting.update(rounds.run(going, recorder))
    finally:
        provider_jobs.close()
    provider_jobs.report.waiting_rows = len(waiting)
    return provider_jobs.report


def say_synchronous(app: CompiledWorkflow, tell: Tell) -> None:
    """Before any row runs: the nodes whose model calls go through no provider batch job, and why."""
    for name, agent in app.agents.items():
        batching = agent.model_batching()
        if batching is not None and batching.provider is None:
            tell(f"llm-batch: node {name!r} ({batching.model}) runs synchronously: {batching.why}")


class Jobs:
    """The provider jobs of one batch's checkpoint store."""

    def __init__(self, saver: Any, options: LLMBatchOptions, tell: Tell | None = None) -> None:
        self.saver = saver
        self.store = JobStore(saver)
        self.options = options
        self.report = LLMBatchReport()
        self._tell = tell or _logger.info
        self._clients: dict[tuple[str, str, str], ProviderJobs] = {}

    def not_queued(self, jobs: Iterable[Job], parked: dict[str, Job]) -> Iterator[Job]:
        """`jobs` but the rows waiting on a call an earlier run queued (killed, or `--detach`), which go into
        `parked` by id: run again, they would only replay their thread up to that call and wait on it again
        (a collecting run of 10,000 rows did that work for each before its first look at the jobs)."""
        queued = {call.key.thread_id for call in queued_calls(self.saver)}
        for job in jobs:
            if job[1] in queued:
                parked[job[1]] = job
            else:
                yield job
        self.report.parked = len(parked)
        if parked:
            self._tell(f"llm-batch: {len(parked)} rows wait on calls queued before; they go on once answered")

    def settle(self, threads: Iterable[str]) -> set[str]:
        """Place the queued calls, wait for answers; the rows (threads of `threads`) that can go on.

        Returns nothing new with `detach` once every call is placed (`report.detached`).
        """
        waiting = set(threads)
        self._recover()
        queued = self._place()
        if self.options.detach:
            self.report.detached = True
            self._progress(queued)
            return set()
        while True:
            self._poll()
            self._recover()  # a job whose sending failed for a while (the provider down): sent again
            queued = self._place()  # the calls of jobs that expired or were cancelled
            ready = waiting - {call.key.thread_id for call in queued}
            self._progress(queued)
            if ready or not self.store.jobs("open", "submitting"):
                return ready
            time.sleep(self.options.poll)

    # -- placing calls ------------------------------------------------------------------------

    def _place(self) -> list[QueuedCall]:
        """Submit the queued calls in no live job; the calls queued now (read once: the journal is read again
        only when placing failed some)."""
        failed = self.report.failed
        queued = queued_calls(self.saver)
        placed = self.store.placed()
        groups: dict[tuple[str, str, str, str], list[QueuedCall]] = defaultdict(list)
        allowed = queued
        if self.options.budget is not None:
            allowed, held, done = within(self.options.budget, queued, placed, self.saver)
            self.report.held, self.report.committed = len(held), done.total
        for call in allowed:
            if (call.key, call.digest) in placed:
                continue
            if call.request is None:
                self._fail(call, "its queued request cannot be read from the call journal")
                continue
            groups[call.request.group].append(call)
        for group, calls in groups.items():
            self._submit(group, calls)
        return queued if self.report.failed == failed else queued_calls(self.saver)

    def _submit(self, group: tuple[str, str, str, str], calls: list[QueuedCall]) -> None:
        provider, root, key_env, model = group
        try:
            client = self._client(provider, root, key_env)
        except ProviderError as exc:
            for call in calls:
                self._fail(call, str(exc))
            return
        by_index = [(str(n), call.request.body if call.request is not None else {}) for n, call in enumerate(calls)]
        for chunk in split(by_index, client.max_requests, client.max_bytes):
            tag = uuid.uuid4().hex
            named = [(custom_id(tag, calls[int(n)]), calls[int(n)]) for n, _ in chunk]
            self.store.intend(tag, group, named)
            self._send(tag, client, named, model)

    def _send(self, tag: str, client: ProviderJobs, named: list[tuple[str, QueuedCall]], model: str) -> None:
        requests = [(cid, call.request.body) for cid, call in named if call.request is not None]
        try:
            job_id = client.submit(tag, requests)
        except ProviderError as exc:
            if exc.final:
                for _, call in named:
                    self._fail(call, f"the provider refused the batch job: {exc}")
                self.store.done(tag, "refused")
            else:
                _logger.warning("llm-batch: submitting a job of %s failed (%s); trying again later", model, exc)
            return
        self.store.submitted(tag, job_id)
        self.report.submitted += 1
        self._tell(f"llm-batch: submitted job {job_id} ({len(requests)} calls of {model})")

    def _recover(self) -> None:
        """Jobs written `submitting` by a batch that stopped before it heard back: taken over if the provider
        has them, else submitted (their calls are in no other job)."""
        for job in self.store.jobs("submitting"):
            try:
                client = self._client(job.provider, job.root, job.key_env)
                taken = {j.job_id for j in self.store.jobs() if j.job_id}
                found = client.find(job.tag, job.made_at, job.calls)
            except ProviderError as exc:
                _logger.warning("llm-batch: looking for job %s failed (%s); trying again later", job.tag, exc)
                continue
            if found is not None and found not in taken:
                self.store.submitted(job.tag, found)
                self._tell(f"llm-batch: took over job {found}, submitted before the batch stopped")
                continue
            calls = self._calls_of(job)
            if not calls:
                self.store.abandon(job.tag)
                continue
            self._send(job.tag, client, calls, job.model)

    def _calls_of(self, job: JobRow) -> list[tuple[str, QueuedCall]]:
        queued = {(c.key, c.digest): c for c in queued_calls(self.saver)}
        found = []
        for cid, key_digest in self.store.calls_of(job.tag).items():
            call = queued.get(key_digest)
            if call is not None:
                found.append((cid, call))
        return found

    # -- polling jobs -------------------------------------------------------------------------

    def _poll(self) -> None:
        statuses: dict[str, int] = defaultdict(int)
        for job in self.store.jobs("open"):
            assert job.job_id is not None
            try:
                client = self._client(job.provider, job.root, job.key_env)
                state = client.state(job.job_id)
            except ProviderError as exc:
                _logger.warning("llm-batch: reading job %s failed (%s); trying again later", job.job_id, exc)
                statuses["unreachable"] += 1
                continue
            self.store.seen(job.tag, state.status, dict(state.counts))
            if state.ended:
                self._collect(job, client, state.status)
            elif job.submitted_at is not None and time.time() - job.submitted_at > self.options.timeout:
                self._time_out(job, client, state.status)
            else:
                statuses[state.status] += 1
        self.report.jobs = dict(statuses)

    def _collect(self, job: JobRow, client: ProviderJobs, status: str) -> None:
        assert job.job_id is not None
        calls = self.store.calls_of(job.tag)
        try:
            outcomes = client.results(job.job_id)
            problem = ""
        except ProviderError as exc:
            if not exc.final:
                _logger.warning("llm-batch: reading the results of %s failed (%s)", job.job_id, exc)
                return
            outcomes, problem = [], str(exc)
        queued = {(c.key, c.digest): c for c in queued_calls(self.saver)}
        again: list[str] = []
        unread: list[str] = []
        written: list[QueuedAnswer] = []  # the job's answers and failures, written at once (one transaction)
        for outcome in outcomes:
            if outcome.custom_id is None:
                unread.append(str(outcome.error))
                continue
            found = calls.pop(outcome.custom_id, None)
            if found is None:
                self._tell(
                    f"llm-batch: job {job.job_id}, result line {outcome.line}: custom_id {outcome.custom_id!r} "
                    "matches no call of the job; ignored"
                )
            elif outcome.again:
                again.append(outcome.custom_id)
            elif found in queued:
                written.append(self._answer(job, queued[found], outcome))
        if status in ("expired", "cancelled"):  # OpenAI lists no line for a request it never started
            again.extend(calls)
        else:
            why = problem or "the job ended without an answer for the call"
            if unread:
                why = f"{why}; {'; '.join(unread[:3])}"
            failed = [queued[found] for found in calls.values() if found in queued]
            written.extend(QueuedAnswer(call, error=f"job {job.job_id}: {why}") for call in failed)
        self._write(written)
        self.store.release(again)
        self.report.resubmitted += len(again)
        self.store.done(job.tag, status)
        more = f"; {len(again)} calls to submit again" if again else ""
        self._tell(f"llm-batch: job {job.job_id} {status}{more}")

    def _answer(self, job: JobRow, call: QueuedCall, outcome: Outcome) -> QueuedAnswer:
        if outcome.answer is None:
            return QueuedAnswer(call, error=f"job {job.job_id}, result line {outcome.line}: {outcome.error}")
        price = call.request.price if call.request is not None else ()
        return QueuedAnswer(call, dict(outcome.answer), usage_of(job.provider, outcome.answer, price))

    def _write(self, answers: list[QueuedAnswer]) -> None:
        """Write answers and failures into their calls' entries (those still queued), counting them."""
        for given, done in zip(answers, answer_queued_many(self.saver, answers), strict=True):
            if not done:
                continue
            if given.error is not None:
                self.report.failed += 1
            else:
                self.report.answered += 1
                self.report.cost += (given.usage or {}).get("cost") or 0.0

    def _time_out(self, job: JobRow, client: ProviderJobs, status: str) -> None:
        assert job.job_id is not None
        try:
            client.cancel(job.job_id)
        except ProviderError as exc:
            _logger.warning("llm-batch: cancelling job %s failed (%s)", job.job_id, exc)
        why = f"job {job.job_id} was still {status} after --llm-batch-timeout {self.options.timeout:g} s"
        queued = {(c.key, c.digest): c for c in queued_calls(self.saver)}
        calls = [queued[found] for found in self.store.calls_of(job.tag).values() if found in queued]
        self._write([QueuedAnswer(call, error=why) for call in calls])
        self.store.done(job.tag, f"timed out ({status})")

    def _fail(self, call: QueuedCall, why: str) -> None:
        self._write([QueuedAnswer(call, error=why)])

    def close(self) -> None:
        """Close the connections to the providers."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def _client(self, provider: str, root: str, key_env: str) -> ProviderJobs:
        key = (provider, root, key_env)
        if key not in self._clients:
            self._clients[key] = jobs_for(provider, root, key_env)
        return self._clients[key]

    def _progress(self, queued: list[QueuedCall]) -> None:
        self.report.waiting = len(queued)
        look = f"; to look: {self.options.look}" if self.options.look else ""
        self._tell(self.report.line() + look)
