"""Model calls sent through a provider's batch API (`agentmap batch --llm-batch`): what a row's run and the batch
agree on.

A row's run is told by its config (`MODE_KEY` under `configurable`) that model calls are batched. The LLM adapter
then gives the call journal, with each model call, the request as the provider's batch API takes it (`Queued`);
the journal records a call it has no answer for as `queued` with that request, and the row's run waits: it pauses
with a question of kind `WAIT_KIND` (LangGraph's `interrupt`), which the batch reads as "waiting for a provider
batch job", never as a question to a person. The batch submits the queued calls as provider jobs
(`batch/_llm_rounds.py`) and writes each answer into the call's entry (`finished`, the provider's body under
`ANSWER_KEY`; `failed`, the provider's error under `ERROR_KEY`), then continues the row's thread: the journal
replays the answers as on a resume, and the adapter reads the provider's body with its own model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmap.errors import AgentMapError, ErrorCode

__all__ = [
    "ANSWER_KEY",
    "ERROR_KEY",
    "MODE_KEY",
    "PROVIDERS",
    "WAIT_KIND",
    "BatchCallFailed",
    "ModelBatching",
    "Queued",
    "mode_of",
]

MODE_KEY = "agentmap_llm_batch"
"""The `configurable` key of a row's run config: `on` (a failed batch request fails the row) or `sync` (it is
made again as a normal call, `--llm-batch-retry sync`)."""
WAIT_KIND = "llm-batch"
"""The kind of the question a row's run pauses with while its model call waits for a provider batch job."""
ANSWER_KEY = "agentmap_batch_answer"
"""The key of a `finished` entry's response that holds the provider's answer body as the batch API returned it."""
ERROR_KEY = "agentmap_batch_error"
"""The key of a `failed` entry's response that holds why the provider's batch job did not answer the call."""
PROVIDERS = ("openai", "anthropic")
"""The providers whose batch API AgentMap submits jobs to."""


@dataclass(frozen=True)
class Queued:
    """A model call as a provider's batch API takes it: what a `queued` journal entry holds.

    Attributes:
        provider: `openai` or `anthropic`.
        base_url: The provider's API root as the node's model is configured (`https://api.openai.com/v1`).
        key_env: The environment variable holding the API key (the key itself is never journaled).
        model: The model name.
        body: The request body (OpenAI: a `/v1/chat/completions` body; Anthropic: a `/v1/messages` params).
        price: The call's price at the batch price (USD per million tokens: input, output, cached input, cache
            write), for the progress's cost so far.
    """

    provider: str
    base_url: str
    key_env: str
    model: str
    body: Mapping[str, Any]
    price: tuple[float | None, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As JSON values (the journal's response column)."""
        return {"queued": {**self.__dict__, "body": dict(self.body), "price": list(self.price)}}

    @classmethod
    def from_dict(cls, value: Any) -> Queued | None:
        """A queued call read back from its entry's response; None when it is not one."""
        found = value.get("queued") if isinstance(value, Mapping) else None
        if not isinstance(found, Mapping) or not isinstance(found.get("body"), Mapping):
            return None
        try:
            return cls(
                str(found["provider"]),
                str(found["base_url"]),
                str(found["key_env"]),
                str(found["model"]),
                dict(found["body"]),
                tuple(found.get("price") or ()),
            )
        except KeyError:
            return None

    @property
    def group(self) -> tuple[str, str, str, str]:
        """What calls submitted in one job share: provider, API root, key and model."""
        return (self.provider, self.base_url, self.key_env, self.model)


@dataclass(frozen=True)
class ModelBatching:
    """Whether a node's model calls can go through a provider batch API (`BaseAgent.model_batching`).

    Attributes:
        provider: The provider whose batch API takes them (`openai`, `anthropic`), or None: they run synchronously.
        model: The node's model, as the notice names it.
        why: Why they run synchronously (the provider has no batch API: a local Ollama model, the offline model).
    """

    provider: str | None
    model: str
    why: str = ""


def mode_of(configurable: Mapping[str, Any]) -> str | None:
    """`on` or `sync` when the run batches its model calls, else None."""
    found = configurable.get(MODE_KEY)
    return str(found) if found else None


class BatchCallFailed(AgentMapError):
    """A provider batch job did not answer a model call: the request failed, the job expired past resubmission,
    its answer could not be read, or it stayed unfinished past `--llm-batch-timeout`."""

    default_code = ErrorCode.LLM_BATCH_FAILED
