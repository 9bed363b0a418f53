"""Configs as flags and YAML, one way for every command: defaults < YAML file < command-line flags.

A config is a frozen dataclass whose fields are scalars, `Literal`s, optional scalars, lists of
text (`tuple[str, ...]`), mappings (a JSON object on the command line) or another config dataclass
(its fields are flattened: the env's `max_turns` is `--max-turns` and `max_turns:` in YAML, or
`env: {max_turns: ...}`). A flag and a YAML key of the same name mean the same thing. A field
declared with `option(...)` carries its help text, and may be a command's operands (positional)
or required (given by a flag or the YAML file).
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
    help: str = ""
    positional: bool = False
    required: bool = False
    short: str = ""


def option(
    default: Any = None,
    help: str = "",
    *,
    positional: bool = False,
    required: bool = False,
    short: str = "",
) -> Any:
    """A config field with its flag's help; `positional` for a command's operands (`build INPUT...`),
    `required` for a setting with no sensible default (a flag or the YAML file must give it),
    `short` for a one-letter alias of its flag (`-k`)."""
    return dataclasses.field(
        default=default,
        metadata={"help": help, "positional": positional, "required": required, "short": short},
    )


def _is_config(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def config_fields(cls: type) -> dict[str, _Field]:
    """Every setting of `cls` by its flat name, nested configs flattened."""
    out: dict[str, _Field] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if _is_config(hint):
            inner = {
                n: _Field((f.name, *sub.path), sub.hint, sub.default)
                for n, sub in config_fields(hint).items()
            }
        else:
            default = f.default if f.default is not dataclasses.MISSING else None
            meta = f.metadata
            inner = {
                f.name: _Field(
                    (f.name,),
                    hint,
                    default,
                    meta.get("help", ""),
                    meta.get("positional", False),
                    meta.get("required", False),
                    meta.get("short", ""),
                )
            }
        if clash := sorted(set(inner) & set(out)):
            raise ConfigError(
                f"{cls.__name__}: settings {clash} are named twice (a nested config's field names "
                "must differ from the outer ones)"
            )
        out.update(inner)
    return out


def _base(hint: Any) -> Any:
    """`X` for `X | None`, else the hint itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _list_item(hint: Any) -> type | None:
    """`X` for a `tuple[X, ...]` of scalars (str, int or float), else None."""
    if typing.get_origin(_base(hint)) is not tuple:
        return None
    item = typing.get_args(_base(hint))[0]
    return item if item in (str, int, float) else None


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
        flags, base = [*filter(None, [f.short]), "--" + name.replace("_", "-")], _base(f.hint)
        shown = "" if f.required or f.positional else f"(default {f.default!r})"
        help_text = " ".join(x for x in (f.help, "(required)" if f.required else shown) if x)
        if f.positional:  # operands may also come from the YAML file, so none is required here
            many = _list_item(f.hint) is not None
            parser.add_argument(
                name, nargs="*" if many else "?", default=None, metavar=name.upper(), help=help_text
            )
        elif base is bool:
            parser.add_argument(
                *flags,
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        elif choices := literal_choices(f.hint):
            parser.add_argument(
                *flags, dest=name, choices=list(choices), default=None, help=help_text
            )
        elif _is_mapping(f.hint):
            parser.add_argument(
                *flags, dest=name, type=_json_object, default=None, metavar="JSON", help=help_text
            )
        elif item := _list_item(f.hint):
            parser.add_argument(
                *flags, dest=name, nargs="+", type=item, default=None, help=help_text
            )
        elif base in (int, float, str):
            parser.add_argument(*flags, dest=name, type=base, default=None, help=help_text)
        else:
            raise ConfigError(
                f"config field {name} has type {f.hint}; flags support int, float, str, bool, "
                "Literal, tuples of scalars, mappings and nested configs"
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
    for name, f in table.items():
        if f.required and not _given(nested, f.path):
            how = "an operand" if f.positional else f"--{name.replace('_', '-')}"
            raise ConfigError(f"{where}: {name} is required ({how}, or `{name}:` in --config)")
    return _construct(cls, nested)


def _given(values: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = values
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node not in (None, "", ())


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
    if item := _list_item(hint):
        if not isinstance(value, list | tuple) or not all(
            isinstance(v, item) and not isinstance(v, bool) for v in value
        ):
            raise ConfigError(
                f"{where}: setting {name}={value!r} must be a list of {item.__name__}"
            )
        return tuple(value)
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
    given = {k: v for k, v in vars(args).items() if k in names and v != []}
    return load_config(cls, getattr(args, "config", None), given)


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """Flat settings of a config (nested configs flattened): what YAML files and results record."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            out.update(config_to_dict(value))
        else:
            out[f.name] = (
                dict(value)
                if isinstance(value, Mapping)
                else list(value)
                if isinstance(value, tuple)
                else value
            )
    return out
