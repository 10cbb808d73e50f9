"""The README and the pages of docs/ say what is true: their agents load, their code compiles against the public API,
their links lead somewhere, and the README's agent is the same as a file and in Python."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from stalwart import load_agent

from support.repo_paths import AGENTS_DIR, REPO

PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
EXAMPLE = re.compile(r"^<!-- example: (?P<name>\S+) -->$")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    example: str | None  # the name an `<!-- example: NAME -->` line just above gives it

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, indented ones (in a list item) included, their indent removed."""
    blocks: list[Block] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        example = EXAMPLE.match(previous.strip())
        text = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
        blocks.append(Block(page, index + 1, opening["lang"], text, example["name"] if example else None))
        index = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in _blocks(page)]


def _of(lang: str) -> list[Block]:
    return [block for block in BLOCKS if block.lang == lang]


def _example(page: str, name: str) -> Block:
    [block] = [block for block in BLOCKS if block.page == REPO / page and block.example == name]
    return block


def test_the_readme_is_a_front_page_of_at_most_200_lines():
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


@pytest.mark.parametrize("block", _of("toml"), ids=str)
def test_every_toml_block_loads_as_an_agent(block, tmp_path):
    """A block with a `name` is a whole agent file; one without is part of one, loaded under a name of its own. They
    load beside copies of agents/, so a sub-agent `file` or an MCP server's script named there resolves."""
    data = tomllib.loads(block.text)
    text = block.text if "name" in data else f'name = "example"\n{block.text}'
    folder = shutil.copytree(AGENTS_DIR, tmp_path / "agents")
    path = folder / "the_block.toml"
    path.write_text(text)
    load_agent(path)


@pytest.mark.parametrize("block", _of("python"), ids=str)
def test_every_python_block_compiles_and_imports_only_what_stalwart_has(block):
    """Top-level `await` is allowed: the pages show snippets as a notebook or `python -m asyncio` runs them."""
    tree = compile(block.text, str(block), "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "stalwart":
            module = importlib.import_module(node.module or "")
            missing = [alias.name for alias in node.names if not hasattr(module, alias.name)]
            assert not missing, f"{block}: {node.module} has no {missing}"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-'."""
    headings = [line.lstrip("#").strip() for line in page.read_text().splitlines() if re.match(r"#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def _links() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # links are in the prose, not in code
        found += [(page, match["target"]) for match in LINK.finditer(prose)]
    return found


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    broken = []
    for page, target in _links():
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_the_readme_links_every_page_of_docs_and_the_benchmarks():
    linked = {
        (page.parent / target.partition("#")[0]).resolve() for page, target in _links() if page.name == "README.md"
    }
    pages = {*(REPO / "docs").glob("*.md"), REPO / "bench" / "README.md"}
    assert sorted(str(page.relative_to(REPO)) for page in pages - linked) == []


def _readme_planner() -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "planner"}
    exec(compile(_example("README.md", "planner.py").text, "planner.py", "exec"), namespace)
    return namespace


def test_the_readme_agent_as_a_file_and_in_python_is_one_spec(tmp_path):
    path = tmp_path / "planner.toml"
    path.write_text(_example("README.md", "planner.toml").text)
    assert load_agent(path) == _readme_planner()["planner"]


async def test_the_readme_agent_in_python_answers_with_its_tool(tmp_path, monkeypatch):
    from stalwart.testing import stalwart_test_environment

    monkeypatch.setenv("STALWART_STORAGE", str(tmp_path / "storage"))
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # `auto` runs on the scripted replies without one
        monkeypatch.delenv(key, raising=False)
    planner = _readme_planner()
    async with stalwart_test_environment(tools=[planner["days_between"]]) as env:
        result = await env.client.run(planner["planner"], "How many days from 2026-03-01 to 2026-04-15?")
    assert result.stop_reason == "done"
    assert [(step.tool_name, step.result) for step in result.steps if step.role == "tool"] == [("days_between", "45")]


def test_the_public_input_schema_names_none_of_the_design_documents():
    """Where a behaviour comes from is said once, in docs/concepts.md; the schema says what a field does."""
    from stalwart.contracts.run_input import RunInput

    schema = json.dumps(RunInput.model_json_schema())
    assert re.findall(r"(?i)\bseed\b|\bKAOS\b|\bStrands\b|\bPrompty\b", schema) == []
