"""`json_reader` and `json_writer`: a JSON document under the storage folder.

Context keys are documented in csv_specs/storage.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentmap.agents.registry import agent
from agentmap.storage._base import StorageAgent
from agentmap.storage._files import file_lock, read_text, write_atomic
from agentmap.storage._paths import kind_settings

__all__ = ["JSONReaderAgent", "JSONWriterAgent"]


def _load(path: Path, text_of: str, encoding: str) -> Any:
    try:
        return json.loads(read_text(path, encoding))
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{text_of!r} ({path}) is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


def _find(data: Any, document_id: Any, id_field: str) -> tuple[Any, Any]:
    """The document with `document_id` and its key or index in `data`, or (None, None)."""
    if isinstance(data, Mapping):
        if str(document_id) in data:
            return data[str(document_id)], str(document_id)
        items: list[tuple[Any, Any]] = list(data.items())
    elif isinstance(data, list):
        items = list(enumerate(data))
    else:
        return None, None
    for key, item in items:
        if isinstance(item, Mapping) and str(item.get(id_field)) == str(document_id):
            return item, key
    return None, None


def _at_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, Mapping):
            data = data.get(part)
        elif isinstance(data, list) and part.lstrip("-").isdigit() and -len(data) <= int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


@agent("json_reader")
class JSONReaderAgent(StorageAgent):
    """Reads a JSON document: the whole of it, one document by id, or the value at a dotted `path`.

    Context:
        format: `raw` (default; as stored), `records` or `list` (an object's values as a list), `dict`
            (a list keyed by `id_field`).
        id_field: The id key of the documents (default `id`).
        document_id: Return only this document (also an input `document_id` or `id`).
        path: A dotted path into the document, e.g. `settings.theme` or `items.0` (also an input `path`).
        default: The result when the file does not exist (otherwise the node fails).
        encoding: The file's encoding (default utf-8).
    """

    kind = "json"
    formats = ("raw", "records", "list", "dict")

    def process(self, inputs: dict[str, Any]) -> Any:
        """Return the document, or the part asked for."""
        where = self.location(inputs)
        if not where.path.is_file():
            return self.missing(where)
        data = _load(where.path, where.text, self.encoding(inputs))
        id_field = str(self.option(inputs, "id_field", "id"))
        document_id = self.option(inputs, "document_id", inputs.get("id"))
        if document_id is not None:
            data, key = _find(data, document_id, id_field)
            if key is None:
                if "default" in self.context:
                    return self.context["default"]
                raise LookupError(f"{where.text!r} has no document with {id_field}={document_id!r}")
        path = self.option(inputs, "path")
        if path:
            data = _at_path(data, str(path))
        fmt = str(self.option(inputs, "format", "raw")).lower()
        if fmt in ("records", "list") and isinstance(data, Mapping):
            return list(data.values())
        if fmt == "dict" and isinstance(data, list):
            return {
                str(item.get(id_field)) if isinstance(item, Mapping) else str(i): item for i, item in enumerate(data)
            }
        return data


@agent("json_writer")
class JSONWriterAgent(StorageAgent):
    """Writes to a JSON document: an input `data`, else its only input, else all its inputs as an object.

    Context:
        mode: `append` (default; add to a list, merge into an object; a new file becomes a list), `write`
            (replace the document, or set one document when `document_id` is given), `update` (merge
            into an existing document; the file must exist).
        document_id: The document to write (also an input `document_id` or `id`).
        id_field: The id key of the documents in a list (default `id`).
        encoding: The file's encoding (default utf-8); `storage.json.indent` sets the indent (default 2).
    """

    kind = "json"
    modes = ("append", "write", "update")

    def process(self, inputs: dict[str, Any]) -> Any:
        """Change the document atomically; return what was done (`success`, `mode`, `file_path`)."""
        where = self.location(inputs)
        data = self.data_to_write(inputs)
        mode = self.mode(inputs)
        encoding = self.encoding(inputs)
        id_field = str(self.option(inputs, "id_field", "id"))
        document_id = self.option(inputs, "document_id", inputs.get("id"))
        with file_lock(where.path):
            existed = where.path.is_file()
            current = _load(where.path, where.text, encoding) if existed else None
            if mode == "update" and not existed:
                raise FileNotFoundError(f"mode update needs an existing file; {where.text!r} does not exist")
            document = self._change(current, data, mode, document_id, id_field)
            indent = kind_settings("json", self.environment).get("indent", 2)
            try:
                text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
            except (TypeError, ValueError) as exc:
                raise TypeError(f"the data cannot be written as JSON: {exc}") from None
            write_atomic(where.path, text, encoding)
        return self.written(where, mode, existed, document_id=document_id)

    @staticmethod
    def _change(current: Any, data: Any, mode: str, document_id: Any, id_field: str) -> Any:
        if document_id is not None:
            found, key = _find(current, document_id, id_field) if current is not None else (None, None)
            if mode == "update" and key is None:
                raise LookupError(f"no document with {id_field}={document_id!r} to update")
            if mode == "update" and isinstance(found, Mapping) and isinstance(data, Mapping):
                data = {**found, **data}
            if key is not None:
                current[key] = data
            elif isinstance(current, list):
                current.append({**data, id_field: document_id} if isinstance(data, Mapping) else data)
            elif isinstance(current, dict):
                current[str(document_id)] = data
            else:
                current = {str(document_id): data}
            return current
        if mode == "write":
            return data
        if mode == "update":
            return {**current, **data} if isinstance(current, Mapping) and isinstance(data, Mapping) else data
        if current is None:
            return list(data) if isinstance(data, list) else [data]
        if isinstance(current, list):
            return [*current, *data] if isinstance(data, list) else [*current, data]
        if isinstance(current, Mapping) and isinstance(data, Mapping):
            return {**current, **data}
        raise TypeError(
            f"cannot append a {type(data).__name__} to a JSON {type(current).__name__}: append to a list, or merge "
            "an object into an object; use mode write to replace the document"
        )
