"""`file_reader` and `file_writer`: text files under the storage folder.

Context keys are documented in csv_specs/storage.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentmap.agents.base import AgentEnvironment, ConfigProblem
from agentmap.agents.registry import agent
from agentmap.storage._base import StorageAgent
from agentmap.storage._files import file_lock, read_text, write_atomic

__all__ = ["FileReaderAgent", "FileWriterAgent", "split_text"]

_TRUE = (True, "true", "yes", "1", 1)


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Chunks of at most `size` characters, each starting `overlap` characters before the previous one's end.

    A chunk ends at the last blank or newline within it when there is one, so words stay whole.
    """
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = max(text.rfind("\n", start, end), text.rfind(" ", start, end))
            if cut > start + overlap:
                end = cut + 1
        chunks.append(text[start:end])
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return chunks


def _positive_int(context: Mapping[str, Any], key: str, default: int) -> int:
    value = context.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise ValueError(f"Context {key} must be a whole number, not {value!r}")
    return int(value)


@agent("file_reader")
class FileReaderAgent(StorageAgent):
    """Reads a text file: its text, or its chunks.

    Context:
        should_split: True returns a list of chunks instead of one text.
        chunk_size: Characters per chunk (default 1000); chunk_overlap: shared between chunks (default 200).
        format: `text` (default; also `default` and `raw`), or `structured`:
            `{"content": ..., "metadata": {"source": ..., "characters": ...}}`.
        default: The result when the file does not exist (otherwise the node fails).
        encoding: The file's encoding (default utf-8).
    """

    kind = "file"
    formats = ("text", "default", "raw", "structured")

    @classmethod
    def validate_config(
        cls, prompt: str, context: Mapping[str, Any], environment: AgentEnvironment
    ) -> Sequence[ConfigProblem]:
        """Also: `chunk_size` and `chunk_overlap` are whole numbers, the overlap smaller than the size."""
        problems = list(super().validate_config(prompt, context, environment))
        try:
            size = _positive_int(context, "chunk_size", 1000)
            overlap = _positive_int(context, "chunk_overlap", 200)
        except ValueError as exc:
            return [*problems, str(exc)]
        if size < 1 or overlap >= size:
            problems.append(f"Context chunk_overlap ({overlap}) must be smaller than chunk_size ({size}), and both > 0")
        return problems

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the text (or its chunks, or both with metadata)."""
        where = self.location(inputs)
        if not where.path.is_file():
            return self.missing(where)
        text = read_text(where.path, self.encoding(inputs))
        content: Any = text
        if self.context.get("should_split") in _TRUE:
            size = _positive_int(self.context, "chunk_size", 1000)
            overlap = _positive_int(self.context, "chunk_overlap", 200)
            content = split_text(text, size, overlap)
        if str(self.option(inputs, "format", "text")).lower() == "structured":
            return {"content": content, "metadata": {"source": where.text, "characters": len(text)}}
        return content


def _as_text(data: Any) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, bytes):
        raise TypeError("file_writer writes text; got bytes")
    return json.dumps(data, ensure_ascii=False, indent=2)


@agent("file_writer")
class FileWriterAgent(StorageAgent):
    """Writes text to a file: an input `data`, else its only input, else its inputs as JSON.

    Context:
        mode: `append` (default; add at the end, on a new line), `write` (replace the file), `update`
            (the same as `write`).
        encoding: The file's encoding (default utf-8).
    """

    kind = "file"
    modes = ("append", "write", "update")

    def process(self, inputs: dict[str, Any]) -> Any:
        """Write atomically; return what was done (`success`, `mode`, `file_path`, `characters`)."""
        where = self.location(inputs)
        data = self.data_to_write(inputs)
        text = _as_text(data)
        written = len(text)
        mode = self.mode(inputs)
        encoding = self.encoding(inputs)
        with file_lock(where.path):
            existed = where.path.is_file()
            if mode == "append" and existed:
                before = read_text(where.path, encoding)
                joint = "" if not before or before.endswith("\n") else "\n"
                text = before + joint + text
            write_atomic(where.path, text, encoding)
        return self.written(where, mode, existed, characters=written)
