"""What every storage agent shares: where its file is, its options, and the checks at validation."""

from __future__ import annotations

import codecs
import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentmap._paths import LinkedRootError, OutsideRootsError
from agentmap.agents.base import AgentEnvironment, BaseAgent, ConfigProblem
from agentmap.storage._paths import StorageLocation, kind_settings, locate

__all__ = ["CONTROL_KEYS", "StorageAgent"]

CONTROL_KEYS = frozenset(
    ("collection", "mode", "format", "id_field", "document_id", "id", "query", "path", "file_path", "csv_file")
)
"""Input names that steer a storage node (as in the existing AgentMap) rather than carry data to write."""


class StorageAgent(BaseAgent):
    """Base of the storage agents: the Prompt (or Context / input `collection`) names the file.

    An option is read from an input of the same name when the node has one (as the existing AgentMap
    did), else from Context, else its default.
    """

    kind: ClassVar[str] = "file"
    formats: ClassVar[tuple[str, ...]] = ()
    modes: ClassVar[tuple[str, ...]] = ()
    default_mode: ClassVar[str] = "append"

    def option(self, inputs: Mapping[str, Any], key: str, default: Any = None) -> Any:
        """The value of option `key`: an input of that name, else Context, else `default`."""
        value = inputs.get(key)
        return value if value is not None else self.context.get(key, default)

    def location(self, inputs: Mapping[str, Any]) -> StorageLocation:
        """The node's file, resolved under the storage folders (an input `collection` wins over the Prompt)."""
        text = self.option(inputs, "collection") or self.prompt
        return locate(self.kind, str(text or ""), self.environment)

    def encoding(self, inputs: Mapping[str, Any]) -> str:
        """Context `encoding`, else `storage.<kind>.encoding`, else UTF-8."""
        value = self.option(inputs, "encoding") or kind_settings(self.kind, self.environment).get("encoding")
        return str(value or "utf-8")

    def mode(self, inputs: Mapping[str, Any]) -> str:
        """The write mode, checked (a bad input value fails the node)."""
        mode = str(self.option(inputs, "mode", self.default_mode)).strip().lower()
        if mode not in self.modes:
            raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(self.modes)}")
        return mode

    def data_to_write(self, inputs: Mapping[str, Any]) -> Any:
        """An input `data`, else the node's only (non-control) input, else its inputs as an object."""
        payload = {k: v for k, v in inputs.items() if k not in CONTROL_KEYS}
        data = inputs["data"] if "data" in inputs else (next(iter(payload.values())) if len(payload) == 1 else payload)
        if data is None:
            raise ValueError("no data to write: the node's input is empty")
        return data

    @staticmethod
    def written(where: StorageLocation, mode: str, existed: bool, **counts: Any) -> dict[str, Any]:
        """What a writer returns: `success`, `mode`, `collection`, `file_path`, `created_new` and counts."""
        done = {"success": True, "mode": mode, "collection": where.text, "file_path": str(where.path)}
        return {**done, **counts, "created_new": not existed}

    def missing(self, where: StorageLocation) -> Any:
        """Context `default` for a file that does not exist, or FileNotFoundError naming it."""
        if "default" in self.context:
            return self.context["default"]
        raise FileNotFoundError(
            f"{where.text!r} does not exist ({where.path}); write it first, or set a Context default "
            'for a missing file, e.g. {"default": []}'
        )

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> Sequence[ConfigProblem]:
        """The file must lie under the storage folders; `format`, `mode`, `encoding` must be known values."""
        problems: list[ConfigProblem] = []
        fmt = context.get("format")
        if fmt is not None and cls.formats and str(fmt).lower() not in cls.formats:
            problems.append(f"Context format {fmt!r} is not one of {', '.join(cls.formats)}")
        if fmt is not None and str(fmt).lower() == "dataframe" and importlib.util.find_spec("pandas") is None:
            problems.append('Context format "dataframe" needs pandas, which is not installed: pip install pandas')
        mode = context.get("mode")
        if mode is not None and cls.modes and str(mode).lower() not in cls.modes:
            problems.append(f"Context mode {mode!r} is not one of {', '.join(cls.modes)}")
        encoding = context.get("encoding")
        if encoding is not None:
            try:
                codecs.lookup(str(encoding))
            except LookupError:
                problems.append(f"Context encoding {encoding!r} is not a known text encoding (e.g. utf-8, latin-1)")
        problems += cls._check_location(prompt, context, environment)
        return problems

    @classmethod
    def _check_location(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> list[ConfigProblem]:
        column = "Context" if context.get("collection") else "Prompt"
        text = str(context.get("collection") or prompt or "").strip()
        if not text:
            if "collection" in context.get("input_fields", ()):
                return []  # named by the state at run time, checked then
            return [
                ("Prompt", f"a {cls.kind} storage node needs its file: put the path in the Prompt, e.g. 'items.csv'")
            ]
        try:
            locate(cls.kind, text, environment)
        except LinkedRootError as exc:
            return [(column, str(exc))]
        except OutsideRootsError as exc:
            folders = ", ".join(str(r) for r in exc.roots)
            return [
                (
                    column,
                    f"{text!r} resolves to {exc.path}, outside the storage folders ({folders}); name a file inside "
                    f"them, or set storage.{cls.kind}.default_directory (or storage.core.base_directory) in the config",
                )
            ]
        return []
