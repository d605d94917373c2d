"""The allow-list serializer every checkpointer AgentMap makes gets: a checkpoint that names any Python object
outside LangGraph's strict msgpack set and AgentMap's contract models is refused, never built; every record is
sealed with a checksum (`_integrity.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentmap.errors import ConfigError, ErrorCode
from agentmap.runtime._integrity import sealed, unsealed

__all__ = ["UnsafeCheckpointError", "safe_serializer"]


class UnsafeCheckpointError(ConfigError):
    """A checkpoint names a Python object outside the allow-list (a tampered or foreign checkpoint)."""

    default_code = ErrorCode.UNSAFE_CHECKPOINT


_CONSTRUCTORS = (0, 1, 2, 4, 5)  # LangGraph's msgpack extension codes that import and call (module, name)
_METHOD = 3
_OWN_MODULES = ("agentmap.contracts.",)  # AgentMap's own pydantic contracts, which nodes may put in the state


def safe_serializer() -> Any:
    """LangGraph's `JsonPlusSerializer` that refuses, rather than builds, any type outside the allow-list.

    The allow-list is LangGraph's strict msgpack set (dates, UUIDs, decimals, sets, paths, LangChain
    messages and documents, `Send`, `Interrupt`, `Command`) plus AgentMap's contract models. Pickled
    values are refused too. A refusal raises `UnsafeCheckpointError` naming the object. Every record is written
    with a checksum of its bytes, checked when it is read (`CorruptCheckpointError` on a mismatch).
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    class _Serializer(JsonPlusSerializer):
        def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
            return sealed(*super().dumps_typed(obj), obj)

        def loads_typed(self, data: tuple[str, bytes]) -> Any:
            return unsealed(data, self._load)

        def _load(self, data: tuple[str, bytes]) -> Any:
            kind, raw = data
            if kind == "msgpack":
                return _load_msgpack(raw, self._unpack_ext_hook)
            if kind == "pickle":
                raise _refusal("a pickled value")
            return super().loads_typed(data)

    return _Serializer(allowed_msgpack_modules=True)


def _refusal(what: str) -> UnsafeCheckpointError:
    return UnsafeCheckpointError(
        f"the checkpoint holds {what}, which AgentMap never writes; it was refused, not loaded "
        "(the checkpoint file or database may have been tampered with)",
        hint="restore the checkpoint from a trusted copy, or start the run again on a new thread (--restart)",
    )


def _load_msgpack(raw: bytes, construct: Callable[[int, bytes], Any]) -> Any:
    import ormsgpack
    from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_METHODS, SAFE_MSGPACK_TYPES

    refused: list[str] = []

    def guard(code: int, data: bytes) -> Any:
        if code in _CONSTRUCTORS or code == _METHOD:
            parts: Sequence[Any] = ormsgpack.unpackb(data, ext_hook=guard, option=ormsgpack.OPT_NON_STR_KEYS)
            module, name = str(parts[0]), str(parts[1])
            if code == _METHOD:
                allowed = (module, name, str(parts[3])) in SAFE_MSGPACK_METHODS
            else:
                allowed = (module, name) in SAFE_MSGPACK_TYPES or module.startswith(_OWN_MODULES)
            if not allowed:
                refused.append(f"{module}.{name}")
                raise _refusal(f"a constructor of {module}.{name}")
        return construct(code, data)

    try:
        return ormsgpack.unpackb(raw, ext_hook=guard, option=ormsgpack.OPT_NON_STR_KEYS)
    except UnsafeCheckpointError:
        raise
    except Exception:
        if refused:  # ormsgpack wraps what the hook raised
            raise _refusal(f"a constructor of {refused[0]}") from None
        raise
