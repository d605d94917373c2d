"""The studio's FastAPI application: the page, and the routes that open, check, draw and save workflow files."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, InstanceOf

from agentmap._paths import state_file
from agentmap.agents.registry import registry
from agentmap.errors import AgentMapError, ConfigError, ErrorCode, WorkflowFileError, WorkflowValidationError
from agentmap.runtime.options import CompileOptions
from agentmap.server import Guard, Reach, new_token
from agentmap.spec.columns import COLUMNS, map_headers
from agentmap.studio._check import check_rows, draw_sheet
from agentmap.studio._files import FileChangedError, Files
from agentmap.studio._impact import impact
from agentmap.studio._runs import ServedFile
from agentmap.studio._workbook import Editable, FormulaCellsError, SheetDocument

__all__ = ["StudioConfig", "create_studio_app"]

_DOCS = Path(__file__).resolve().parents[2] / "csv_specs"


class StudioConfig(BaseModel):
    """How a studio runs.

    Attributes:
        target: The workflow file, or folder of workflow files, the studio opens.
        api_key: The key the page must send (`X-Api-Key`); None: no key asked (loopback only).
        token: The token every request but the page and its files must carry (`X-AgentMap-Token`); a fresh one
            for each config unless given. `agentmap studio` prints it in the page's address (`?token=...`).
        allowed_hosts: Names the `Host` header may carry besides this machine's own (as `ServeConfig`'s).
        max_body: The largest request body accepted, in bytes (5 MiB).
        options: The workflow's compile options (`functions_dir`, `agents_dir`, `settings`), for checks, drawings
            and runs.
        checkpoint: Where runs started from the studio keep their threads (as `agentmap serve --checkpoint`;
            default `studio.db` in `$AGENTMAP_STATE_DIR`, else in `.agentmap/`).
        graph: The graph the page shows first (`flows.xlsx::Graph`: the sheet of that name, else that graph's tab).
        auth: The auth handlers runs from the page go through (`agentmap serve --auth`'s); the page sends the
            Authorization value entered in it.
    """

    target: Path
    api_key: str | None = None
    token: str = Field(default_factory=new_token, min_length=1, repr=False)
    allowed_hosts: tuple[str, ...] = ()
    max_body: int = Field(default=5_242_880, ge=1)  # 5 MiB
    options: InstanceOf[CompileOptions] = Field(default_factory=CompileOptions)
    checkpoint: str = Field(default_factory=lambda: str(state_file("studio.db")))
    graph: str | None = None
    auth: str | None = None


class Row(BaseModel):
    """A row of the sheet: the record it came from (None for a new row) and its cells."""

    id: int | None = None
    cells: list[str]


class Sheet(BaseModel):
    """The sheet as it is on screen."""

    file: str
    rows: list[Row]


class Drawing(Sheet):
    """A sheet and the graph of it to draw."""

    graph: str


class Save(Sheet):
    """A save: the sheet, the version it was edited from, and whether to overwrite a file changed meanwhile."""

    base: str
    force: bool = False


def create_studio_app(config: StudioConfig) -> FastAPI:
    """The studio's ASGI application for `config.target`.

    Raises:
        WorkflowFileError: The target does not exist.
    """
    files = Files(config.target)
    files.remove_stale_temporaries()  # of saves killed half-way (a studio stopped with kill -9, a crash)
    served = ServedFile(
        config.checkpoint,
        config.api_key,
        config.options,
        hosts=config.allowed_hosts,
        max_body=config.max_body,
        auth=config.auth,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await served.shutdown()  # the runs stop, the files close

    app = FastAPI(title="AgentMap studio", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    static = resources.files("agentmap.studio") / "static"

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return (static / "studio.html").read_text(encoding="utf-8")

    @app.get("/studio/docs/{name}", response_class=PlainTextResponse, include_in_schema=False)
    def docs(name: str) -> str:
        page = _DOCS / name
        if page.suffix != ".md" or page.parent != _DOCS or not page.is_file():
            raise WorkflowFileError(f"no page {name}", code=ErrorCode.FILE_NOT_FOUND)
        return page.read_text(encoding="utf-8")

    app.mount("/studio/static", StaticFiles(directory=str(static)), name="studio")
    app.include_router(
        _routes(files, config.options, config.checkpoint), dependencies=[Depends(_key_check(config.api_key))]
    )
    app.include_router(_run_routes(files, served), dependencies=[Depends(_key_check(config.api_key))])
    app.mount("/server", served)  # agentmap serve's own routes (the LangGraph protocol), for the saved file

    @app.exception_handler(AgentMapError)
    async def agentmap_error(_: Request, err: AgentMapError) -> JSONResponse:
        status = 409 if isinstance(err, FileChangedError) else 404 if isinstance(err, WorkflowFileError) else 422
        status = 422 if isinstance(err, FormulaCellsError) or err.code == "file-too-big" else status
        status = 401 if err.code == "api-key-required" else status
        return JSONResponse({"code": err.code, "message": err.message, "hint": err.hint}, status_code=status)

    reach = Reach(hosts=config.allowed_hosts, token=config.token)  # the page's own origin alone may write
    app.add_middleware(Guard, api_key=None, max_body=config.max_body, reach=reach, public=_public)
    return app


def _public(path: str) -> bool:
    """Whether a path is served without the token: the page, its scripts and styles, the documentation pages."""
    return path in ("/", "/favicon.ico") or path.startswith(("/studio/static/", "/studio/docs/"))


def _key_check(api_key: str | None) -> Any:
    def check(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("x-api-key", "")
        if not hmac.compare_digest(given.encode(), api_key.encode()):
            raise ConfigError(
                "the studio needs its API key", code=ErrorCode.API_KEY_REQUIRED, hint="enter it in the page"
            )

    return check


def _routes(files: Files, options: CompileOptions, checkpoint: str) -> APIRouter:
    router = APIRouter(prefix="/studio/api")

    @router.get("/files")
    def listing() -> dict[str, Any]:
        """The workflow files this studio may open."""
        return {"root": str(files.root), "files": files.names()}

    @router.get("/open")
    def open_file(file: str) -> dict[str, Any]:
        """A file's rows, columns and findings, read from disk now."""
        document = files.open(file)
        rows = [(i, r.cells) for i, r in enumerate(document.records)]
        return {"file": file, "version": document.version, **_sheet(document, rows, options), **_book(files, file)}

    @router.post("/check")
    def check(sheet: Sheet) -> dict[str, Any]:
        """The findings for the sheet as it is on screen (nothing is written)."""
        document = files.document(sheet.file)
        return _checked(document, [(r.id, r.cells) for r in sheet.rows], options)

    @router.post("/draw")
    def draw(body: Drawing) -> dict[str, str]:
        """The graph drawn as `agentmap export --format svg` draws it (422 while the sheet has errors)."""
        document = files.document(body.file)
        checked = check_rows(document, [(r.id, r.cells) for r in body.rows], options)
        if not checked.valid or checked.workflow is None:
            raise WorkflowValidationError(checked.issues, source=body.file)
        return {"svg": draw_sheet(checked, body.graph, options)}

    @router.post("/impact")
    def what_saving_does(sheet: Sheet) -> dict[str, Any]:
        """The threads waiting on the file (in the studio's checkpoint) and what saving the sheet as it is on screen
        would do to each (nothing is written): the page shows it before it saves."""
        checked = check_rows(files.document(sheet.file), [(r.id, r.cells) for r in sheet.rows], options)
        return impact(files.path(sheet.file), checked, checkpoint, options)

    @router.get("/version")
    def version(file: str) -> dict[str, str]:
        """The version of the file on disk now (the page compares it with the one it opened)."""
        return {"version": files.version(file)}

    @router.post("/save")
    def save(body: Save) -> dict[str, Any]:
        """Write the sheet back to its file (409 `file-changed` when the file changed on disk meanwhile)."""
        saved = files.save(body.file, [(r.id, r.cells) for r in body.rows], body.base, force=body.force)
        rows = [(i, r.cells) for i, r in enumerate(saved.records)]
        return {"file": body.file, "version": saved.version, **_sheet(saved, rows, options), **_book(files, body.file)}

    return router


def _run_routes(files: Files, served: ServedFile) -> APIRouter:
    router = APIRouter(prefix="/studio/api")

    @router.post("/serve")
    async def serve(file: str) -> dict[str, Any]:
        """Serve the file as saved at `/server` (compiled again when it changed); its assistants."""
        path = files.path(file)
        assistants = await served.prepare(path, files.version(file))
        return {"assistants": assistants, "version": files.version(file)}

    return router


def _book(files: Files, name: str) -> dict[str, Any]:
    """For a sheet of a workbook: its title (the graph of a sheet without GraphName) and every sheet to open."""
    document = files.document(name)
    sheet = document.sheet if isinstance(document, SheetDocument) else None
    return {"sheet": sheet, "sheets": files.sheets(name)}


def _sheet(document: Editable, rows: Sequence[tuple[int | None, list[str]]], options: CompileOptions) -> dict[str, Any]:
    header = next((cells for _, cells in rows if cells and not cells[0].lstrip().startswith("#")), [])
    canonical = {position: name for name, position in map_headers([h.strip() for h in header]).index.items()}
    formulas = document.formulas if isinstance(document, SheetDocument) else {}
    return {
        "rows": [
            {"id": index, "cells": cells, "formulas": {c: f for (r, c), f in formulas.items() if r == index}}
            for index, cells in rows
        ],
        "columns": [canonical.get(i, "") for i in range(len(header))],
        "known_columns": list(COLUMNS),  # what "Add column" offers
        "agent_types": sorted(registry.names()),
        **_checked(document, rows, options),
    }


def _checked(
    document: Editable, rows: Sequence[tuple[int | None, Sequence[str]]], options: CompileOptions
) -> dict[str, Any]:
    checked = check_rows(document, rows, options)
    return {"lines": checked.lines, "findings": checked.findings, "valid": checked.valid}
