"""What the contract types keep of pydantic's model API once they are (pydantic) dataclasses.

The agent I/O contract declares its types as dataclasses, so `dataclasses.is_dataclass`, `replace` and
`asdict` work on them; pydantic's dataclass decorator keeps the validation. Code that used them as models
keeps working through these few methods.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from pydantic.fields import FieldInfo
from pydantic_core import ArgsKwargs

__all__ = ["ModelMethods", "fields_of"]


def fields_of(data: Any) -> Any:
    """The keyword arguments of a `model_validator(mode="before")` input (a mapping, or pydantic's `ArgsKwargs`)."""
    return data.kwargs if isinstance(data, ArgsKwargs) else data


class ModelMethods:
    """`model_dump`, `model_validate`, `model_copy` and `model_construct`, as pydantic models have them."""

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """The fields as a dict (`mode="json"`: JSON-ready values)."""
        data: dict[str, Any] = self.__pydantic_serializer__.to_python(self, mode=mode)  # type: ignore[attr-defined]
        return data

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """Build and validate an instance from a dict (or an instance)."""
        if isinstance(data, cls):
            data = dataclasses.asdict(data)  # type: ignore[call-overload]
        value: Self = cls.__pydantic_validator__.validate_python(data)  # type: ignore[attr-defined]
        return value

    @classmethod
    def model_construct(cls, **values: Any) -> Self:
        """An instance with these values, unvalidated (defaults filled in), as pydantic's `model_construct`."""
        instance = object.__new__(cls)
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            if field.name in values:
                value = values[field.name]
            elif isinstance(field.default, FieldInfo):  # pydantic's Field(default_factory=...)
                value = field.default.get_default(call_default_factory=True, validated_data={})
            elif field.default is not dataclasses.MISSING:
                value = field.default
            elif field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            else:
                continue
            object.__setattr__(instance, field.name, value)
        return instance

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy with `update` applied, unvalidated, as pydantic's `model_copy`."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return type(self).model_construct(**{**values, **(update or {})})
