"""Storage agents: `csv_reader`, `csv_writer`, `json_reader`, `json_writer`, `file_reader`, `file_writer`.

Each reads or writes one file under the configured storage folders (`data/` beside the workflow unless
`storage.*.default_directory` says otherwise), never outside them; every write replaces the file
atomically under a per-file lock. Importing this package registers the types; the registry does so on
first use. csv_specs/storage.md is the reference.
"""

from agentmap.storage.documents import JSONReaderAgent, JSONWriterAgent
from agentmap.storage.tables import CSVReaderAgent, CSVWriterAgent
from agentmap.storage.texts import FileReaderAgent, FileWriterAgent

__all__ = [
    "CSVReaderAgent",
    "CSVWriterAgent",
    "FileReaderAgent",
    "FileWriterAgent",
    "JSONReaderAgent",
    "JSONWriterAgent",
]
