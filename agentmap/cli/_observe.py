"""What `run --trace/--draw` and `export --format svg|png|dot` share: turning options into tracing and pictures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentmap.errors import ConfigError, ErrorCode

__all__ = ["TraceContentOption", "TraceOption", "check_picture", "tracing_for"]

TraceOption = Annotated[
    str | None,
    typer.Option(
        "--trace",
        metavar="otlp|console|file:PATH",
        help="OpenTelemetry spans of the runs: otlp (OTEL_EXPORTER_OTLP_ENDPOINT), console, or file:PATH.",
        show_default=False,
    ),
]
TraceContentOption = Annotated[
    bool, typer.Option("--trace-content", help="Put state values, prompts and replies in the spans.")
]

_TRACE_HINT = "use --trace otlp, --trace console or --trace file:spans.jsonl"


def tracing_for(settings: Any, trace: str | None, content: bool) -> dict[str, Any] | None:
    """What `compile(..., tracing=...)` gets for `--trace`/`--trace-content` and the `tracing:` settings.

    Raises:
        ConfigError: `--trace` names no exporter (exit 2).
    """
    if trace is not None:
        value = trace.strip()
        if value not in ("otlp", "console") and not (value.startswith("file:") and len(value) > 5):
            raise ConfigError(f"--trace {trace!r} is not a trace exporter", code=ErrorCode.USAGE, hint=_TRACE_HINT)
    exporter = trace or settings.tracing.exporter
    if not exporter:
        return None
    return {"exporter": exporter, "content": content or settings.tracing.content}


def check_picture(path: Path) -> None:
    """Refuse, before any work, a picture file that is neither .svg nor .png, or a PNG without the renderer.

    Raises:
        ConfigError: The file name or the missing renderer (exit 2).
    """
    suffix = path.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise ConfigError(
            f"cannot tell the picture format of {path}: name a .svg or .png file",
            code=ErrorCode.USAGE,
            hint="--draw run.svg",
        )
    if suffix == ".png":
        try:
            import resvg_py  # noqa: F401
        except ImportError:
            raise ConfigError(
                "PNG pictures need the resvg renderer, which is not installed",
                code=ErrorCode.BAD_CONFIG,
                hint='pip install "agentmap[draw]" (or draw an .svg)',
            ) from None
