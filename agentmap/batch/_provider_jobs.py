"""The providers' batch APIs, as `agentmap batch --llm-batch` uses them: submit a job, find one submitted before a
crash, read its status, its results, cancel it.

- OpenAI: the requests as a JSONL file uploaded through the Files API (`POST /files`, purpose `batch`), then
  `POST /batches` (endpoint `/v1/chat/completions`, window `24h`, our job's tag in its `metadata`); the status of
  `GET /batches/ID` (`validating`, `in_progress`, `finalizing`, `completed`, `failed`, `expired`, `cancelling`,
  `cancelled`), its `output_file_id` and `error_file_id` read through `GET /files/ID/content`.
- Anthropic: `POST /v1/messages/batches` with `requests` (`custom_id`, `params`); `processing_status`
  (`in_progress`, `canceling`, `ended`) and `request_counts`; the results as JSONL from its `results_url`, each
  line's `result.type` `succeeded`, `errored`, `canceled` or `expired`.

Each job holds at most `max_requests` requests and `max_bytes` bytes (OpenAI: 50,000 and 200 MB; Anthropic:
100,000 and 256 MB): `split` cuts a group of calls into jobs within them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from agentmap.agents.costs import Price, Usage

__all__ = [
    "JobState",
    "Outcome",
    "ProviderError",
    "ProviderJobs",
    "jobs_for",
    "split",
    "usage_of",
]

_TIMEOUT = 60.0
_ANTHROPIC_VERSION = "2023-06-01"


class ProviderError(Exception):
    """A provider's batch API refused or failed a request.

    Attributes:
        status: The HTTP status (0: the provider could not be reached).
        final: Whether asking again cannot help (a 4xx other than 408, 409 and 429).
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.final = 400 <= status < 500 and status not in (408, 409, 429)


@dataclass(frozen=True)
class JobState:
    """A job as its provider reports it: its status text, whether it ended, and its request counts."""

    id: str
    status: str
    ended: bool
    counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """One line of a job's results.

    Attributes:
        custom_id: The id the request was sent with (None: the line names none).
        answer: The provider's answer body (a chat completion; a message) when the request succeeded.
        error: Why it did not (the provider's words).
        again: The request was not processed (the job expired or was cancelled first): it may be sent again.
        line: The line's number in its file, for errors that name it.
    """

    custom_id: str | None
    answer: Mapping[str, Any] | None = None
    error: str | None = None
    again: bool = False
    line: int = 0


class ProviderJobs(Protocol):
    """One provider's batch API at one API root, with one key."""

    max_requests: int
    max_bytes: int

    def submit(self, tag: str, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """Submit `requests` (custom id, body) as one job tagged `tag`; its id."""
        ...

    def find(self, tag: str, since: float, count: int) -> str | None:
        """The job submitted as `tag` (of `count` requests, at or after `since`), if the provider has it."""
        ...

    def state(self, job_id: str) -> JobState:
        """The job's status."""
        ...

    def results(self, job_id: str) -> list[Outcome]:
        """The job's result lines (an ended job's)."""
        ...

    def cancel(self, job_id: str) -> None:
        """Ask the provider to stop the job."""
        ...

    def close(self) -> None:
        """Close the connections to the provider."""
        ...


class _Http:
    """A provider's HTTP client, opened on first use and kept until `close()`: a job is polled until it ends, and
    a client a poll (with its TLS context and its connection) took tens of milliseconds of CPU each time."""

    def __init__(self) -> None:
        self._client: Any = None

    def __call__(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client(timeout=_TIMEOUT)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _checked(response: Any, what: str) -> Any:
    if response.status_code >= 400:
        text = response.text[:300].strip()
        raise ProviderError(f"{what}: HTTP {response.status_code} {text}", response.status_code)
    return response


def _lines(text: str) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL text with its number, parsed (a line that is not JSON: its text)."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError:
            yield number, line


def _malformed(number: int, value: Any) -> Outcome:
    shown = value if isinstance(value, str) else json.dumps(value)[:200]
    return Outcome(None, error=f"result line {number} is not a result ({shown[:200]!r})", line=number)


class OpenAIJobs:
    """OpenAI's Files and Batches endpoints under `root` (`https://api.openai.com/v1`)."""

    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, root: str, key: str) -> None:
        self.root = root.rstrip("/")
        self._http = _Http()
        self.headers = {"Authorization": f"Bearer {key}"}

    def submit(self, tag: str, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        lines = [
            json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
            for cid, body in requests
        ]
        data = ("\n".join(lines) + "\n").encode()
        client = self._http()
        uploaded = client.post(
            f"{self.root}/files",
            headers=self.headers,
            data={"purpose": "batch"},
            files={"file": (f"{tag}.jsonl", data, "application/jsonl")},
        )
        file_id = _checked(uploaded, "uploading the requests file").json()["id"]
        made = client.post(
            f"{self.root}/batches",
            headers=self.headers,
            json={
                "input_file_id": file_id,
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
                "metadata": {"agentmap_job": tag},
            },
        )
        return str(_checked(made, "creating the batch").json()["id"])

    def find(self, tag: str, since: float, count: int) -> str | None:
        after: str | None = None
        client = self._http()
        while True:
            params = {"limit": 100, **({"after": after} if after else {})}
            page = _checked(client.get(f"{self.root}/batches", headers=self.headers, params=params), "listing")
            found = page.json()
            for job in found.get("data") or ():
                if (job.get("metadata") or {}).get("agentmap_job") == tag:
                    return str(job["id"])
                if float(job.get("created_at") or 0) < since - 60:
                    return None  # newest first: older ones cannot be it
            if not found.get("has_more") or not found.get("data"):
                return None
            after = found.get("last_id") or found["data"][-1]["id"]

    def state(self, job_id: str) -> JobState:
        client = self._http()
        job = _checked(client.get(f"{self.root}/batches/{job_id}", headers=self.headers), "reading the batch")
        found = job.json()
        status = str(found.get("status"))
        ended = status in ("completed", "failed", "expired", "cancelled")
        return JobState(job_id, status, ended, dict(found.get("request_counts") or {}))

    def results(self, job_id: str) -> list[Outcome]:
        client = self._http()
        job = _checked(client.get(f"{self.root}/batches/{job_id}", headers=self.headers), "reading the batch")
        found = job.json()
        outcomes: list[Outcome] = []
        for key in ("output_file_id", "error_file_id"):
            file_id = found.get(key)
            if not file_id:
                continue
            content = client.get(f"{self.root}/files/{file_id}/content", headers=self.headers)
            text = _checked(content, f"reading the batch's {key.removesuffix('_id')}").text
            outcomes.extend(self._outcome(number, line) for number, line in _lines(text))
        if found.get("status") == "failed" and not outcomes:
            errors = (found.get("errors") or {}).get("data") or []
            why = "; ".join(str(e.get("message")) for e in errors) or "the provider failed the batch"
            raise ProviderError(f"batch {job_id} failed: {why}", 400)
        return outcomes

    @staticmethod
    def _outcome(number: int, line: Any) -> Outcome:
        if not isinstance(line, Mapping) or not isinstance(line.get("custom_id"), str):
            return _malformed(number, line)
        cid = line["custom_id"]
        error = line.get("error")
        response = line.get("response")
        if isinstance(error, Mapping):
            code = str(error.get("code") or "")
            again = code in ("batch_expired", "batch_cancelled")
            return Outcome(cid, error=f"{code}: {error.get('message')}", again=again, line=number)
        if not isinstance(response, Mapping) or not isinstance(response.get("body"), Mapping):
            return Outcome(cid, error=f"result line {number} holds no response body", line=number)
        body = response["body"]
        if int(response.get("status_code") or 0) != 200:
            inner = body.get("error") if isinstance(body.get("error"), Mapping) else body
            return Outcome(cid, error=f"HTTP {response.get('status_code')}: {inner.get('message')}", line=number)
        if not isinstance(body.get("choices"), list):
            return Outcome(cid, error=f"result line {number} holds no completion", line=number)
        return Outcome(cid, answer=body, line=number)

    def cancel(self, job_id: str) -> None:
        _checked(self._http().post(f"{self.root}/batches/{job_id}/cancel", headers=self.headers), "cancelling")

    def close(self) -> None:
        self._http.close()


class AnthropicJobs:
    """Anthropic's Message Batches under `root` (`https://api.anthropic.com`)."""

    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, root: str, key: str) -> None:
        self.root = root.rstrip("/")
        self._http = _Http()
        self.headers = {"x-api-key": key, "anthropic-version": _ANTHROPIC_VERSION}

    def submit(self, tag: str, requests: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        body = {"requests": [{"custom_id": cid, "params": params} for cid, params in requests]}
        client = self._http()
        made = client.post(f"{self.root}/v1/messages/batches", headers=self.headers, json=body)
        return str(_checked(made, "creating the message batch").json()["id"])

    def find(self, tag: str, since: float, count: int) -> str | None:
        """Anthropic's batches carry no tag: the one created at or after `since` with `count` requests (taken by
        no other job of this batch: the caller checks)."""
        client = self._http()
        page = _checked(
            client.get(f"{self.root}/v1/messages/batches", headers=self.headers, params={"limit": 100}),
            "listing the message batches",
        )
        for job in page.json().get("data") or ():
            created = _when(job.get("created_at"))
            if (
                created is not None
                and created >= since - 1
                and sum((job.get("request_counts") or {}).values()) == count
            ):
                return str(job["id"])
        return None

    def state(self, job_id: str) -> JobState:
        client = self._http()
        job = _checked(client.get(f"{self.root}/v1/messages/batches/{job_id}", headers=self.headers), "reading")
        found = job.json()
        status = str(found.get("processing_status"))
        return JobState(job_id, status, status == "ended", dict(found.get("request_counts") or {}))

    def results(self, job_id: str) -> list[Outcome]:
        client = self._http()
        job = _checked(client.get(f"{self.root}/v1/messages/batches/{job_id}", headers=self.headers), "reading")
        url = job.json().get("results_url")
        if not url:
            raise ProviderError(f"message batch {job_id} ended without a results_url", 502)
        text = _checked(client.get(url, headers=self.headers), "reading the results").text
        return [self._outcome(number, line) for number, line in _lines(text)]

    @staticmethod
    def _outcome(number: int, line: Any) -> Outcome:
        if not isinstance(line, Mapping) or not isinstance(line.get("custom_id"), str):
            return _malformed(number, line)
        cid = line["custom_id"]
        result = line.get("result")
        kind = result.get("type") if isinstance(result, Mapping) else None
        if kind == "succeeded" and isinstance(result, Mapping) and isinstance(result.get("message"), Mapping):
            return Outcome(cid, answer=result["message"], line=number)
        if kind in ("canceled", "expired"):
            return Outcome(cid, error=f"the request was {kind}", again=True, line=number)
        if kind == "errored" and isinstance(result, Mapping):
            found = result.get("error")
            error: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            inner: Mapping[str, Any] = error["error"] if isinstance(error.get("error"), Mapping) else error
            return Outcome(cid, error=f"{inner.get('type')}: {inner.get('message')}", line=number)
        return _malformed(number, line)

    def cancel(self, job_id: str) -> None:
        _checked(
            self._http().post(f"{self.root}/v1/messages/batches/{job_id}/cancel", headers=self.headers), "cancelling"
        )

    def close(self) -> None:
        self._http.close()


def _when(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def jobs_for(provider: str, root: str, key_env: str) -> ProviderJobs:
    """The batch API of `provider` at `root`, with the key in the environment variable `key_env`.

    Raises:
        ProviderError: The variable is not set (final).
    """
    key = os.environ.get(key_env)
    if not key:
        raise ProviderError(f"the environment variable {key_env} holds no API key for the {provider} batch API", 401)
    return OpenAIJobs(root, key) if provider == "openai" else AnthropicJobs(root, key)


def split(
    requests: Sequence[tuple[str, Mapping[str, Any]]], max_requests: int, max_bytes: int
) -> list[list[tuple[str, Mapping[str, Any]]]]:
    """`requests` cut into jobs of at most `max_requests` requests and `max_bytes` bytes of JSON each."""
    jobs: list[list[tuple[str, Mapping[str, Any]]]] = []
    current: list[tuple[str, Mapping[str, Any]]] = []
    size = 0
    for request in requests:
        length = len(json.dumps(request[1]).encode()) + 200  # the line's own keys (custom_id, method, url)
        if current and (len(current) >= max_requests or size + length > max_bytes):
            jobs.append(current)
            current, size = [], 0
        current.append(request)
        size += length
    if current:
        jobs.append(current)
    return jobs


def usage_of(provider: str, body: Mapping[str, Any], price: Sequence[float | None]) -> dict[str, Any]:
    """The tokens and cost (at the batch price `price`) of an answer body, as the journal keeps a call's usage."""
    raw = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    assert isinstance(raw, Mapping)
    if provider == "anthropic":
        read = int(raw.get("cache_read_input_tokens") or 0)
        written = int(raw.get("cache_creation_input_tokens") or 0)
        usage = Usage(
            int(raw.get("input_tokens") or 0) + read + written, int(raw.get("output_tokens") or 0), read, written
        )
    else:
        details = raw.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0) if isinstance(details, Mapping) else 0
        usage = Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0), cached)
    cost = usage.cost(Price(*price)) if len(price) >= 2 and price[0] is not None else None  # type: ignore[arg-type]
    return {**dataclasses.asdict(usage), "cost": cost, "batch": True, "at": time.time()}
