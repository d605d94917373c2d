"""`agentmap studio`: a workflow file in the browser as a spreadsheet, checked on every change, drawn and saved.

The page edits the file's rows in an ARIA grid; every change goes to `/studio/api/check`, which renders the rows
as the file would be saved and runs `agentmap.validate` on them, so each finding lands on its cell. Saving
writes the file back atomically in its own style (column order, comment rows, quoting, BOM, line endings),
and never over a version of the file the page did not open. See csv_specs/studio.md.

```python
from agentmap.studio import StudioConfig, create_studio_app, studio

app = create_studio_app(StudioConfig(target="graphs/branching.csv"))   # an ASGI app (needs the `serve` extra)
studio(StudioConfig(target="graphs/"), port=8124)                       # serve until Ctrl-C
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmap._lazy import lazy_exports

if TYPE_CHECKING:
    from agentmap.studio._app import StudioConfig, create_studio_app
    from agentmap.studio._serve import background, studio

__all__ = ["StudioConfig", "background", "create_studio_app", "studio"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "StudioConfig": "agentmap.studio._app",
        "background": "agentmap.studio._serve",
        "create_studio_app": "agentmap.studio._app",
        "studio": "agentmap.studio._serve",
    },
)
