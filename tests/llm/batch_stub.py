"""The test servers' batch APIs: OpenAI's Files and Batches endpoints, Anthropic's Message Batches, on 127.0.0.1.

Usage (importable from any test under tests/llm)::

    from batch_stub import AnthropicBatchStub, OpenAIBatchStub

    with OpenAIBatchStub() as stub:
        stub.script(*(text(f"answer {n}") for n in range(10)))   # the answers, as for the chat endpoint
        stub.plans.append(("expire", 1))                          # the next job answers 1 request, then expires

Each request of a job is answered as the chat endpoint answers it (the same script, usage and price accounting),
when the job is first polled. `plans` says what each new job does, in order (default `complete`):
`complete`; `("expire", k)`: k requests answered, the rest expired (OpenAI: lines `batch_expired` in the error
file; Anthropic: results `expired`); `hold`: stays `in_progress`; `("fail", k)`: request k answered with an error;
`malformed`: a result line that is not JSON added; `stray`: a result line whose custom_id is no request's added.
`billed` counts each request answered (what the provider bills); `custom_ids` every custom id submitted.
`hold_create` (an event), when set on the OpenAI server, makes it take a new job, set `created`, then hold its
answer until the event is set: a client killed meanwhile never heard of a job the provider has.
`answer_after` (seconds, default 0) keeps every job `in_progress` that long after its creation, as a provider
takes its time. A job is answered once even when two clients poll it at the same moment.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from anthropic_stub import AnthropicStub
from openai_stub import OpenAIStub
from timing import scaled

__all__ = ["AnthropicBatchStub", "OpenAIBatchStub"]


class _Jobs:
    """What the two servers share: the jobs, their plans, what was billed."""

    def _init_jobs(self) -> None:
        self.plans: deque[Any] = deque()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.files: dict[str, str] = {}
        self.billed = 0
        self.custom_ids: list[str] = []
        self.answer_after = 0.0
        self._answering = threading.Lock()
        self._numbers = itertools.count(1)

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        stub: Any = self
        reply = stub._next(body)
        if reply.status != 200:
            return reply.status, {"error": {"message": reply.error_message, "type": "invalid_request_error"}}
        self.billed += 1
        return 200, stub._completion(body, reply)

    def _new_job(self, requests: list[tuple[str, dict[str, Any]]], metadata: dict[str, Any]) -> dict[str, Any]:
        plan = self.plans.popleft() if self.plans else "complete"
        number = next(self._numbers)  # two jobs created at the same moment get two numbers
        job = {
            "number": number,
            "requests": requests,
            "plan": plan,
            "status": "in_progress",
            "lines": [],
            "metadata": metadata,
            "created": time.time(),
        }
        self.custom_ids.extend(cid for cid, _ in requests)
        return job

    def _run(self, job: dict[str, Any]) -> None:
        """Answer a job's requests as its plan says (once)."""
        with self._answering:
            self._run_once(job)

    def _run_once(self, job: dict[str, Any]) -> None:
        plan = job["plan"]
        if job["status"] != "in_progress" or plan == "hold" or time.time() - job["created"] < self.answer_after:
            return
        kind, k = plan if isinstance(plan, tuple) else (plan, None)
        lines: list[Any] = []
        for index, (cid, body) in enumerate(job["requests"]):
            if kind == "expire" and index >= k:
                lines.append((cid, "expired", None))
                continue
            status, answer = self._answer(body)
            if kind == "fail" and index == k:
                status, answer = 400, {"error": {"message": "max_tokens is too large", "type": "invalid_request"}}
            lines.append((cid, status, answer))
        job["lines"] = lines
        job["extra"] = {"malformed": ["{not json"], "stray": ["stray"]}.get(kind, [])
        job["status"] = "expired" if kind == "expire" else "completed"


class OpenAIBatchStub(_Jobs, OpenAIStub):
    """The OpenAI test server with `/v1/files` and `/v1/batches`."""

    def __init__(self) -> None:
        self._init_jobs()
        self.hold_create: threading.Event | None = None
        self.created = threading.Event()
        super().__init__()

    def _batch(self, job_id: str) -> dict[str, Any]:
        job = self.jobs[job_id]
        self._run(job)
        done = [line for line in job["lines"] if line[1] == 200]
        failed = [line for line in job["lines"] if line[1] != 200]
        out = err = None
        if job["status"] != "in_progress":
            out = f"file-out-{job_id}"
            self.files[out] = "".join(
                json.dumps(
                    {
                        "id": f"req-{cid}",
                        "custom_id": cid,
                        "response": {"status_code": 200, "request_id": "r", "body": body},
                        "error": None,
                    }
                )
                + "\n"
                for cid, _, body in done
            ) + "".join(
                (line + "\n")
                if line != "stray"
                else json.dumps(
                    {"custom_id": "nobody", "response": {"status_code": 200, "body": {"choices": []}}, "error": None}
                )
                + "\n"
                for line in job.get("extra", [])
            )
            if failed:
                err = f"file-err-{job_id}"
                self.files[err] = "".join(
                    json.dumps(
                        {
                            "id": f"req-{cid}",
                            "custom_id": cid,
                            "response": None,
                            "error": {"code": "batch_expired", "message": "expired"},
                        }
                    )
                    + "\n"
                    if status == "expired"
                    else json.dumps(
                        {
                            "id": f"req-{cid}",
                            "custom_id": cid,
                            "response": {"status_code": status, "body": body},
                            "error": None,
                        }
                    )
                    + "\n"
                    for cid, status, body in failed
                )
        total = len(job["requests"])
        return {
            "id": job_id,
            "object": "batch",
            "status": job["status"],
            "output_file_id": out,
            "error_file_id": err,
            "metadata": job["metadata"],
            "created_at": int(job["created"]),
            "request_counts": {"total": total, "completed": len(done), "failed": len(failed)},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler_class()
        stub = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                if path.endswith("/files"):
                    length = int(self.headers.get("Content-Length") or 0)
                    raw = self.rfile.read(length)
                    text = raw.split(b"\r\n\r\n", 2)[-1].rsplit(b"\r\n--", 1)[0].decode()
                    file_id = f"file-{len(stub.files) + 1}"
                    stub.files[file_id] = text
                    return self._json(200, {"id": file_id, "object": "file", "purpose": "batch"})
                if path.endswith("/batches"):
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    lines = [json.loads(x) for x in stub.files[body["input_file_id"]].splitlines() if x.strip()]
                    requests = [(x["custom_id"], x["body"]) for x in lines]
                    job = stub._new_job(requests, body.get("metadata") or {})
                    job_id = f"batch_{job['number']}"
                    stub.jobs[job_id] = job
                    stub.created.set()
                    if stub.hold_create is not None:
                        stub.hold_create.wait(scaled(30))
                    return self._json(
                        200, {"id": job_id, "object": "batch", "status": "validating", "metadata": job["metadata"]}
                    )
                match = re.search(r"/batches/([^/]+)/cancel$", path)
                if match:
                    stub.jobs[match.group(1)]["status"] = "cancelled"
                    return self._json(200, stub._batch(match.group(1)))
                super().do_POST()
                return None

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                match = re.search(r"/files/([^/]+)/content$", path)
                if match:
                    data = stub.files[match.group(1)].encode()
                    self._send(200, data, "application/jsonl")
                    return None
                match = re.search(r"/batches/([^/]+)$", path)
                if match:
                    return self._json(200, stub._batch(match.group(1)))
                if path.endswith("/batches"):
                    listed = [stub._batch(j) for j in reversed(stub.jobs)]
                    return self._json(200, {"object": "list", "data": listed, "has_more": False})
                return self._json(404, {"error": {"message": f"no route {path}"}})

            def _json(self, status: int, value: Any) -> None:
                self._send(status, json.dumps(value).encode(), "application/json")

        return Handler


class AnthropicBatchStub(_Jobs, AnthropicStub):
    """The Anthropic test server with `/v1/messages/batches`."""

    def __init__(self, **kwargs: Any) -> None:
        self._init_jobs()
        super().__init__(**kwargs)

    def _batch(self, job_id: str) -> dict[str, Any]:
        job = self.jobs[job_id]
        self._run(job)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for _, status, _ in job["lines"]:
            counts["succeeded" if status == 200 else "expired" if status == "expired" else "errored"] += 1
        if job["status"] == "in_progress":
            counts["processing"] = len(job["requests"])
        ended = job["status"] != "in_progress"
        url = f"{self.base_url}/v1/messages/batches/{job_id}/results" if ended else None
        created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(job["created"])) + "Z"
        return {
            "id": job_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "results_url": url,
            "created_at": created,
        }

    def _results(self, job_id: str) -> str:
        job = self.jobs[job_id]
        out = []
        for cid, status, body in job["lines"]:
            if status == 200:
                result: dict[str, Any] = {"type": "succeeded", "message": body}
            elif status == "expired":
                result = {"type": "expired"}
            else:
                result = {"type": "errored", "error": {"type": "error", "error": body["error"]}}
            out.append(json.dumps({"custom_id": cid, "result": result}))
        for extra in job.get("extra", []):
            out.append(extra if extra != "stray" else json.dumps({"custom_id": "nobody", "result": {"type": "x"}}))
        return "\n".join(out) + "\n"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler_class()
        stub = self

        class Handler(base):  # type: ignore[valid-type,misc]
            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                if path.endswith("/v1/messages/batches"):
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                    job = stub._new_job([(r["custom_id"], r["params"]) for r in body["requests"]], {})
                    job_id = f"msgbatch_{job['number']}"
                    stub.jobs[job_id] = job
                    return self._json(200, stub._batch(job_id))
                match = re.search(r"/messages/batches/([^/]+)/cancel$", path)
                if match:
                    stub.jobs[match.group(1)]["status"] = "canceled"
                    return self._json(200, stub._batch(match.group(1)))
                super().do_POST()
                return None

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                match = re.search(r"/messages/batches/([^/]+)/results$", path)
                if match:
                    self._send(200, stub._results(match.group(1)).encode(), "application/binary")
                    return None
                match = re.search(r"/messages/batches/([^/]+)$", path)
                if match:
                    return self._json(200, stub._batch(match.group(1)))
                if path.endswith("/messages/batches"):
                    data = [stub._batch(j) for j in reversed(stub.jobs)]
                    return self._json(200, {"data": data, "has_more": False})
                return self._json(404, {"error": {"message": f"no route {path}"}})

            def _json(self, status: int, value: Any) -> None:
                self._send(status, json.dumps(value).encode(), "application/json")

        return Handler
