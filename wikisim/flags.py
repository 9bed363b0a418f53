"""Configs as flags and YAML, one way for every command: defaults < YAML file < command-line flags.

A config is a frozen dataclass whose fields are scalars, `Literal`s, optional scalars, mappings
(a JSON object on the command line) or another config dataclass (its fields are flattened: the
env's `max_turns` is `--max-turns` and `max_turns:` in YAML, or `env: {max_turns: ...}`). A
flag and a YAML key of the same name mean the same thing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from wikisim.checks import literal_choices
from wikisim.errors import ConfigError

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class _Field:
    path: tuple[str, ...]  # ("env", "max_turns") for a nested field
    hint: Any
    default: Any


def _is_config(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def config_fields(cls: type) -> dict[str, _Field]:
    """Every setting of `cls` by its flat name, nested configs flattened."""
    out: dict[str, _Field] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if _is_config(hint):
            for name, sub in config_fields(hint).items():
                out[name] = _Field((f.name, *sub.path), sub.hint, sub.default)
            continue
        if f.name in out:
            raise ConfigError(
                f"{cls.__name__}.{f.name} is also a field of a nested config: names must be unique"
            )
        default = f.default if f.default is not dataclasses.MISSING else None
        out[f.name] = _Field((f.name,), hint, default)
    return out


def _base(hint: Any) -> Any:
    """`X` for `X | None`, else the hint itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _is_mapping(hint: Any) -> bool:
    origin = typing.get_origin(_base(hint)) or _base(hint)
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a JSON object: {e}") from e
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"not a JSON object: {text!r}")
    return value


def add_config_arguments(
    parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = ()
) -> None:
    """`--config FILE` and one `--field-name` flag per setting; unset flags stay None so YAML values survive."""
    parser.add_argument(
        "--config", type=Path, default=None, help="YAML file of settings (flags override it)"
    )
    for name, f in config_fields(cls).items():
        if name in skip:
            continue
        flag, base = "--" + name.replace("_", "-"), _base(f.hint)
        help_text = f"(default {f.default!r})"
        if base is bool:
            parser.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif choices := literal_choices(f.hint):
            parser.add_argument(
                flag, dest=name, choices=list(choices), default=None, help=help_text
            )
        elif _is_mapping(f.hint):
            parser.add_argument(
                flag, dest=name, type=_json_object, default=None, metavar="JSON", help=help_text
            )
        elif base in (int, float, str):
            parser.add_argument(flag, dest=name, type=base, default=None, help=help_text)
        else:
            raise ConfigError(
                f"config field {name} has type {f.hint}; flags support int, float, str, bool, "
                "Literal, mappings and nested configs"
            )


def build_config(cls: type[C], values: Mapping[str, Any], where: str = "settings") -> C:
    """`cls` from flat settings (or nested mappings for nested configs), each checked by name and type."""
    table = config_fields(cls)
    nested: dict[str, Any] = {}
    for key, value in _flatten(cls, values).items():
        name = str(key).replace("-", "_")
        if name not in table:
            raise ConfigError(
                f"{where}: unknown setting {name!r} for {cls.__name__}; known: {', '.join(sorted(table))}"
            )
        f = table[name]
        node = nested
        for part in f.path[:-1]:
            node = node.setdefault(part, {})
        node[f.path[-1]] = _typed(name, f.hint, value, where)
    return _construct(cls, nested)


def _flatten(cls: type, values: Mapping[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for key, value in values.items():
        hint = hints.get(str(key))
        if hint is not None and _is_config(hint) and isinstance(value, Mapping):
            out.update(_flatten(hint, value))
        elif hint is not None and _is_config(hint) and dataclasses.is_dataclass(value):
            out.update(
                _flatten(hint, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
            )
        else:
            out[key] = value
    return out


def _typed(name: str, hint: Any, value: Any, where: str) -> Any:
    base = _base(hint)
    if value is None:
        return None
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if (
        base in (int, float, str, bool)
        and not isinstance(value, base)
        or (base is int and isinstance(value, bool))
    ):
        raise ConfigError(f"{where}: setting {name}={value!r} must be a {base.__name__}")
    if _is_mapping(hint) and not isinstance(value, Mapping):
        raise ConfigError(f"{where}: setting {name}={value!r} must be a mapping")
    return value


def _construct(cls: type[C], values: dict[str, Any]) -> C:
    hints = typing.get_type_hints(cls)
    kwargs = {k: _construct(hints[k], v) if _is_config(hints[k]) else v for k, v in values.items()}
    return cls(**kwargs)


def load_config(
    cls: type[C], path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> C:
    """Build `cls` from defaults, then a YAML file, then overrides (None values ignored)."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"config {path} must be a mapping of setting: value, got {type(loaded).__name__}"
            )
        values.update(_flatten(cls, loaded))
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return build_config(cls, values, str(path) if path is not None else "settings")


def config_from_args(cls: type[C], args: argparse.Namespace) -> C:
    """The config a parsed command line describes (`--config` YAML, then the flags that were given)."""
    names = config_fields(cls)
    return load_config(
        cls, getattr(args, "config", None), {k: v for k, v in vars(args).items() if k in names}
    )


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """Flat settings of a config (nested configs flattened): what YAML files and results record."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out.update(config_to_dict(value))
        else:
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
    return out
