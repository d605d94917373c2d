"""Notes domain tools (notes kept in memory for the process)."""

_NOTES: list[str] = []


def save_note(text: str) -> str:
    """Save a note for later."""
    _NOTES.append(text)
    return f"saved note {len(_NOTES)}"


def list_notes() -> str:
    """List the saved notes."""
    return "\n".join(_NOTES) or "no notes yet"
