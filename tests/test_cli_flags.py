"""The command line hands its commands typed flags, not a bag of keywords: `scan`, `fix` and `plan` get one
RunFlags (cli/request.py) and build the workspace Request from it once."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from cudamigrate.cli.request import RunFlags
from cudamigrate.workspace.request import Request

CLI = Path(__file__).resolve().parent.parent / "cudamigrate" / "cli"


def test_no_cli_function_takes_a_bag_of_keywords():
    """Only the wrapper that types the shared flags (cli/options.py) sees click's keywords."""
    bags = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.kwarg is not None:
                bags.append(f"{path.name}:{node.name}")
    assert bags == ["options.py:command"]


def test_the_flags_make_every_field_of_the_request():
    flags = RunFlags(select=("CM1",), ignore=("CM101",), extend_select=("CM9",), target="12.0", from_version="11.0",
                     keep_compat="11.8", rules_dir=(Path("r"),), no_builtin_rules=True, config_path=Path("c.toml"),
                     cli_options=("stream=s",), max_file_size=7, compile_commands=Path("cc.json"), no_semantic=True,
                     no_cache=True, timings=True, diff_base="HEAD")
    req = flags.request((Path("src"),))
    default = Request()
    unset = [f.name for f in dataclasses.fields(Request) if getattr(req, f.name) == getattr(default, f.name)]
    assert unset == []
    assert req.rules_dirs == (Path("r"),) and req.options == ("stream=s",) and req.paths == (Path("src"),)
