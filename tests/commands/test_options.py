"""Every command takes its settings one way: an options dataclass made into flags and YAML keys."""

from __future__ import annotations

import argparse
import importlib

import pytest
import yaml

from wikisim.cli import COMMANDS, main


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for name, (module_name, _) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=name)
        importlib.import_module(module_name).add_arguments(parser)
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        out += [(f"{name} {s}", p) for a in subs for s, p in a.choices.items()] or [(name, parser)]
    return out


@pytest.mark.parametrize(("name", "parser"), _parsers(), ids=lambda v: str(v)[:20])
def test_every_command_reads_a_config_file(name: str, parser: argparse.ArgumentParser) -> None:
    flags = {s for a in parser._actions for s in a.option_strings}
    assert "--config" in flags, name
    helps = [a.help for a in parser._actions if a.option_strings and a.dest != "help"]
    assert all(helps), f"{name}: a flag without help"


def test_a_yaml_file_and_flags_mean_the_same(sample_index, tmp_path, capsys) -> None:
    args = ["--index", str(sample_index), "--retriever", "bm25s", "-k", "2", "--json"]
    assert main(["search", *args, "origin of anarchism"]) == 0
    by_flags = capsys.readouterr().out
    config = tmp_path / "search.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "index": str(sample_index),
                "retriever": "bm25s",
                "k": 2,
                "json": True,
                "queries": ["origin of anarchism"],
            }
        )
    )
    assert main(["search", "--config", str(config)]) == 0
    assert capsys.readouterr().out == by_flags
    assert main(["search", "--config", str(config), "--k", "1"]) == 0  # flags win over the file
    assert len(yaml.safe_load(capsys.readouterr().out)["hits"]) == 1


def test_missing_and_mistyped_settings_name_the_setting(tmp_path, capsys) -> None:
    assert main(["synth", "--n", "5", "--out", str(tmp_path / "q.jsonl")]) == 2
    assert "index is required (--index, or `index:` in --config)" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"baseline": "runs/a", "seeds": ["two"]}))
    assert main(["power", "--config", str(bad)]) == 2
    assert "seeds=['two'] must be a list of int" in capsys.readouterr().err
    bad.write_text(yaml.safe_dump({"inputs": ["x.xml"], "out": "o", "workerz": 2}))
    assert main(["build", "--config", str(bad)]) == 2
    assert "unknown setting 'workerz'" in capsys.readouterr().err
