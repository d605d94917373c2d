"""One run of a workflow per row of a table: readers and writers, resume, executors (thread, async, process, Ray).

```python
import agentmap

result = agentmap.batch("graphs/hello_world.csv", [{"name": "Ada"}, {"name": "Grace"}])
print([row.outputs["greeting"] for row in result.rows])
```

`agentmap.batch` is both this package and the function: once the package is imported, Python binds the
name `batch` of `agentmap` to it, so the package itself can be called and calls `batch()`.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from agentmap.batch._options import parse_rate
from agentmap.batch.engine import batch, run_batch
from agentmap.batch.results import BatchInterrupted, BatchResult
from agentmap.batch.rows import RowResult

__all__ = ["BatchInterrupted", "BatchResult", "RowResult", "batch", "parse_rate", "run_batch"]


class _CallablePackage(types.ModuleType):
    """`agentmap.batch(...)` works whether the name is bound to the function or to this package."""

    def __call__(self, *args: Any, **kwargs: Any) -> BatchResult:
        return batch(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
