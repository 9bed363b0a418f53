"""Range and choice checks for configs: one wording for every "must be >= 1" in the package."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from wikisim.errors import ConfigError


def at_least(owner: str, low: float, **values: float) -> None:
    """Raise ConfigError naming `owner.field` for the first value below `low`."""
    for name, value in values.items():
        if value < low:
            raise ConfigError(f"{owner}.{name}={value!r} must be >= {low}")


def above(owner: str, low: float, **values: float) -> None:
    """Raise ConfigError naming `owner.field` for the first value not above `low`."""
    for name, value in values.items():
        if value <= low:
            raise ConfigError(f"{owner}.{name}={value!r} must be > {low}")


def check_literals(config: Any) -> None:
    """Every `Literal[...]` field of a dataclass instance holds one of its values."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        choices = literal_choices(hints[f.name])
        value = getattr(config, f.name)
        optional = type(None) in typing.get_args(hints[f.name])
        if choices and value not in choices and not (optional and value is None):
            raise ConfigError(
                f"{type(config).__name__}.{f.name}={value!r}: choose one of {', '.join(map(str, choices))}"
            )


def literal_choices(hint: Any) -> tuple[Any, ...]:
    """The values of a `Literal` hint (also inside `X | None`), else ()."""
    if typing.get_origin(hint) is typing.Literal:
        return typing.get_args(hint)
    for arg in typing.get_args(hint):
        if typing.get_origin(arg) is typing.Literal:
            return typing.get_args(arg)
    return ()
