"""Issue 10, fuzz: seeded mutations of the example agent files, each of which must end as a clean error or a
valid spec, through the loader `stalwart check` uses and through the CLI's entry function, in process.

Never a traceback: the loader raises only AgentFileError, `main(["check", ...])` returns 0 or 2 with one
`error:` line. What is accepted must also be what a workflow decodes (the run input's JSON round trip),
and a sample of the accepted scripted agents runs to an end on the time-skipping server. The mutations
are seeded, so a failure names a case that reproduces.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stalwart.client.agent_files import AgentFileError, check_agent
from stalwart.client.api import StalwartClient
from stalwart.client.cli import EXIT_OK, EXIT_USAGE, main
from stalwart.contracts.agent import AgentSpec
from stalwart.contracts.run_input import RunInput
from stalwart.workers.worker import build_worker

from support.repo_paths import AGENTS_DIR

SEED = 10
BYTE_CASES = 150
TREE_CASES = 150
RUNS = 12
"""Accepted scripted agents run to an end on the time-skipping server (each is a whole run: keep it small)."""
CLI_ACCEPTED = 4
"""Accepted files also go through the CLI up to this many; every refused one does."""

EXAMPLES = sorted(AGENTS_DIR.glob("*.toml"))
STRANGE_VALUES: list[Any] = [
    math.inf,
    -math.inf,
    math.nan,
    2**63,
    -(2**63),
    10**30,
    1e308,
    -1,
    0,
    0.5,
    "",
    " ",
    "x" * 5000,
    "\x00\x1b[2J\u202e",
    "${HOME}",
    "openai-compatible:x",
    "nope:model",
    "http://",
    True,
    [],
    {},
    [[[[[[[[]]]]]]]],
    {"a": {"b": {"c": {}}}},
]


def _toml(value: Any) -> str:
    """A TOML rendering of plain data (inline tables and arrays), enough to write mutated agent files back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"


def _document(data: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(str(key))} = {_toml(value)}\n" for key, value in data.items())


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from _leaves(child, (*path, key))


def _mutate_tree(data: dict[str, Any], chance: random.Random) -> dict[str, Any]:
    """Replace, delete or add a value somewhere in the parsed file."""
    path = chance.choice([p for p in _leaves(data) if p])
    parent: Any = data
    for part in path[:-1]:
        parent = parent[part]
    action = chance.random()
    if action < 0.6:
        parent[path[-1]] = chance.choice(STRANGE_VALUES)
    elif action < 0.8:
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[chance.choice(["extra_field", "toolz", "max_secs", path[-1] + "_"])] = chance.choice(STRANGE_VALUES)
    else:
        parent.append(chance.choice(STRANGE_VALUES))
    return data


def _mutate_bytes(text: bytes, chance: random.Random) -> bytes:
    """Flip, insert, delete, repeat or cut bytes: encodings, syntax and nesting the loader must survive."""
    data = bytearray(text)
    for _ in range(chance.randint(1, 4)):
        at = chance.randrange(len(data) + 1)
        action = chance.randrange(6)
        if action == 0 and data:
            data[min(at, len(data) - 1)] = chance.randrange(256)
        elif action == 1:
            data[at:at] = bytes(chance.choice([0, 0x1B, 0xFF, 0xC3, 0x80, ord("["), ord("{"), ord('"'), ord("\n")]))
        elif action == 2:
            del data[at : at + chance.randint(1, 40)]
        elif action == 3:
            data[at:at] = data[at : at + chance.randint(1, 60)] * chance.randint(2, 5)
        elif action == 4:
            del data[at:]
        else:
            data[at:at] = b"x = " + b"[" * 600 + b"]" * 600 + b"\n"
    return bytes(data)


def _cases() -> Iterator[tuple[str, str, bytes]]:
    import tomllib

    chance = random.Random(SEED)
    for n in range(BYTE_CASES):
        example = chance.choice(EXAMPLES)
        yield f"bytes-{n}", example.name, _mutate_bytes(example.read_bytes(), chance)
    for n in range(TREE_CASES):
        example = chance.choice(EXAMPLES)
        data = _mutate_tree(tomllib.loads(example.read_text()), chance)
        yield f"tree-{n}", example.name, _document(data).encode()


@pytest.fixture
def agents_copy(tmp_path: Path) -> Path:
    """The example agents (with their MCP server and sub-agent files) where mutated files can sit beside them."""
    return Path(shutil.copytree(AGENTS_DIR, tmp_path / "agents"))


def _load_all(folder: Path) -> Iterator[tuple[str, str, Path, AgentSpec | None]]:
    """Each case written beside the examples and loaded as `stalwart check` loads it: its spec, or None if refused."""
    for case, source, content in _cases():
        path = folder / f"{case}.toml"
        path.write_bytes(content)
        try:
            spec = check_agent(path)
        except AgentFileError as err:
            assert str(err).startswith(str(path)), (case, source, str(err))
            spec = None
        yield case, source, path, spec


@pytest.mark.slow
def test_fuzz_mutated_agent_files_end_in_a_clean_error_or_a_valid_spec(agents_copy, capsys):
    outcomes = {"refused": 0, "accepted": 0}
    for case, source, path, spec in _load_all(agents_copy):
        outcomes["accepted" if spec else "refused"] += 1
        if spec is not None:  # what check accepts is what a workflow decodes: the run input's JSON round trip
            decoded = RunInput.model_validate_json(RunInput(agent=spec, goal="go").model_dump_json())
            assert decoded.agent == spec, (case, source)
        if spec is not None and outcomes["accepted"] > CLI_ACCEPTED:
            continue  # check starts its MCP servers to list their tools, seconds each: a sample is enough
        code = main(["check", str(path)])
        out, err = capsys.readouterr()
        assert code == (EXIT_OK if spec is not None else EXIT_USAGE), (case, source, err[-2000:])
        if spec is None:
            assert err.startswith("error: ") and "Traceback" not in err, (case, source, err[-2000:])
    print(f"\n{outcomes}")
    assert outcomes["refused"] and outcomes["accepted"], "the mutations must reach both outcomes"


@pytest.mark.slow
async def test_fuzz_accepted_mutated_agents_run_to_an_end(agents_copy, time_skipping_env, task_queue, monkeypatch):
    monkeypatch.setenv("NOTES_FILE", str(agents_copy / "notes.json"))
    runnable = [
        (case, spec.model_copy(update={"model": "scripted"}))
        for case, _, _, spec in _load_all(agents_copy)
        if spec is not None and spec.model in ("scripted", "auto")
    ][:RUNS]
    assert runnable
    stalwart = StalwartClient(time_skipping_env.client, task_queue=task_queue)
    async with build_worker(time_skipping_env.client, task_queue=task_queue):
        for case, spec in runnable:
            result = await stalwart.run(spec, "How much longer is production retention?")
            assert result.stop_reason in ("done", "max_steps", "max_tokens", "max_seconds", "max_cost", "error"), case
            assert result.stop_reason != "error" or result.error, (case, result)
