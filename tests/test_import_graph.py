"""The package's modules import one another without a cycle, and at module level outside the command line.

The graph is read from the source folders (named `stalwart.*` as pyproject.toml's `package-dir` maps them), by
AST, so every module counts, whether or not a test happens to import it. Every import statement is an edge: at
module level, inside a function (it still runs, and a cycle through it breaks the day the function is called
during an import), and under `if TYPE_CHECKING:` too. Such an import never runs, but two modules that each need
the other's names are one idea split in two, and the cycle comes back the day the import has to run.
`from pkg import name` is an edge to `pkg.name` when that is a module, else to `pkg` (its `__init__`); the
implicit import of a module's parent packages is no edge, or every package whose `__init__` imports its own
modules would be a cycle with them.

A function-local import is allowed only where it keeps a measured cost off start-up: in the command line's
modules (client/cli.py and client/commands/), which load only what the command they run needs, and in the few
places `LOCAL_IMPORTS_ALLOWED` lists, each with its reason.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

from support.repo_paths import REPO

COMMAND_LINE, COMMANDS = "stalwart.client.cli", "stalwart.client.commands"
"""The command line parses its arguments and loads the module of the one command it runs, which imports inside its
functions what only some of its commands need: their local imports are the start-up of every command."""
_STORAGE = "the storage drivers (60 ms): only a chain that archived steps reads them"
_WORKFLOWS = "the workflow package (its __init__ loads AgentWorkflow, 110 ms): only for a run's events"
_TRACING = "OpenTelemetry: only for a process that traces (OTEL_EXPORTER_OTLP_ENDPOINT) or serves metrics"
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("stalwart.activities.providers", "stalwart.activities.providers."): (
        "each provider's SDK (openai, anthropic: a second or more) loads only when a run calls that provider"
    ),
    ("stalwart.activities.secrets", "temporalio.exceptions"): (
        "`stalwart check` reads the secrets policy without the Temporal SDK (about 150 ms of its start)"
    ),
    ("stalwart.activities.storage.encryption", "cryptography"): (
        "AES-GCM only with STALWART_ENCRYPTION_KEYS set: every command that connects imports this module"
    ),
    ("stalwart.activities.storage.objects", "aioboto3"): "the optional `s3` extra, installed only for S3 storage",
    ("stalwart.activities.storage.objects", "aiobotocore"): "the optional `s3` extra, installed only for S3 storage",
    ("stalwart.activities.storage.objects", "temporalio.contrib.aws"): "the optional `s3` extra (aioboto3)",
    ("stalwart.activities.telemetry", "opentelemetry"): _TRACING,
    ("stalwart.workers.telemetry", "opentelemetry"): _TRACING,
    ("stalwart.workers.telemetry", "temporalio.contrib.opentelemetry"): _TRACING,
    ("stalwart.client.connection", "stalwart.workers.telemetry"): _TRACING,
    ("stalwart.client.connection", "temporalio.client"): (
        "the SDK's client (90 ms), which the commands that only read a run (`show`, `pending`) do without"
    ),
    ("stalwart.contracts.run", "stalwart.contracts.output_schema"): (
        "the output schema's checks (16 ms of import): only a result read as a type needs them, not `show`"
    ),
    ("stalwart.client.api", "stalwart.client.agent_files"): (
        "the agent-file reader (15 ms): only a run started from a file, not `send`, `approve` or `show`"
    ),
    ("stalwart.client.api", "stalwart.client.chain"): "storage and the context window (130 ms): only for histories",
    ("stalwart.client.api", "stalwart.workflows.conversation"): _WORKFLOWS,
    ("stalwart.client.reader", "stalwart.workflows.conversation"): _WORKFLOWS,
    ("stalwart.client.reader", "stalwart.contracts.run_input"): (
        "the agent spec's contracts (17 ms): `show` of a finished run does not build them"
    ),
    ("stalwart.client.reader", "stalwart.client.offline"): (
        "the agent spec's contracts and the history's decoding (50 ms): only a run no worker answered"
    ),
    ("stalwart.client.reader", "stalwart.activities.storage.config"): _STORAGE,
    ("stalwart.client.reader", "stalwart.activities.transcripts"): _STORAGE,
    ("stalwart.client.server_errors", "temporalio."): (
        "the command line imports it at start: the Temporal SDK (200 ms) only once a command meets a server's error"
    ),
    ("stalwart.client.tool_names", "asyncio"): (
        "the event loop (25 ms, a tenth of `stalwart check`): only to list the tools of an agent's MCP servers"
    ),
    ("stalwart.workers.process_exit", "asyncio"): (
        "the event loop (25 ms, a tenth of `stalwart check`): every command exits through this module, and only a "
        "script's `run_then_exit` runs one"
    ),
    ("stalwart.workers.process_exit", "traceback"): (
        "the traceback printer (5 ms, with linecache and textwrap, which no command loads): only a script that raised"
    ),
    ("stalwart.client.tool_names", "stalwart.activities.mcp"): (
        "the MCP SDK (over half a second): only `stalwart check` of an agent with MCP servers"
    ),
}
"""(module, start of the imported module's name) -> why the import waits for the function that needs it: the start-up
it saves, measured with `python -X importtime` on top of what the module already imports (on a busy machine: the
figures give the order of the cost, not its exact value)."""


def _package_dirs() -> dict[str, Path]:
    """`stalwart.*` package name -> its folder, as pyproject.toml's `package-dir` maps them."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: REPO / folder for name, folder in setuptools["package-dir"].items()}


def _modules() -> dict[str, Path]:
    """Every module of the installed package by its dotted name (a package by its own name, for its `__init__`)."""
    found: dict[str, Path] = {}
    for package, folder in _package_dirs().items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _import_nodes(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, with whether it sits inside a function."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_function
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            yield from walk(child, inside)

    yield from walk(tree, False)


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The package's modules an import statement imports (none for a module from outside the package)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    base = node.module or ""
    if node.level:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    if base not in modules:
        return []
    return sorted({f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names})


def _graph() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """module -> the modules it imports; and every function-local import, as (module, imported, line)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    local: list[tuple[str, str, int]] = []
    for module, path in modules.items():
        for node, in_function in _import_nodes(ast.parse(path.read_text(), str(path))):
            targets = _targets(module, path, node, modules)
            graph[module] |= set(targets) - {module}
            if in_function:
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                local += [(module, name, node.lineno) for name in targets or names]
    return graph, local


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the path of modules that leads back to its first, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path, children = [start], [iter(sorted(graph[start]))]
        while path:
            following = next(children[-1], None)
            if following is None:
                done.add(path.pop())
                children.pop()
            elif following in path:
                return [*path[path.index(following) :], following]
            elif following not in done:
                path.append(following)
                children.append(iter(sorted(graph[following])))
    return None


def test_no_module_of_the_package_imports_itself_back():
    cycle = _cycle(_graph()[0])
    assert cycle is None, (
        f"import cycle: {' -> '.join(cycle or [])}; move what both modules need into one of them, "
        "or into a module of its own"
    )


def test_a_cycle_is_found_and_named_by_its_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"b"}}) is None


def _in_command_line(module: str) -> bool:
    return module in (COMMAND_LINE, COMMANDS) or module.startswith(f"{COMMANDS}.")


def _allowance(module: str, imported: str) -> tuple[str, str] | None:
    """The entry of `LOCAL_IMPORTS_ALLOWED` that lets `module` import `imported` in a function, if one does."""
    return next(
        (key for key in LOCAL_IMPORTS_ALLOWED if key[0] == module and imported.startswith(key[1])),
        None,
    )


def test_modules_outside_the_command_line_import_at_module_level():
    _, local = _graph()
    found = [
        f"{module}:{line} imports {imported}"
        for module, imported, line in local
        if not _in_command_line(module) and _allowance(module, imported) is None
    ]
    assert not found, (
        "function-local imports outside the command line's modules (move them to the top of the module, or add "
        "them to LOCAL_IMPORTS_ALLOWED with the start-up cost they save):\n" + "\n".join(found)
    )


def test_every_allowed_local_import_is_still_there():
    """An allowance whose import moved or went away would hide the next one added in its place."""
    _, local = _graph()
    used = {_allowance(module, imported) for module, imported, _ in local}
    assert sorted(set(LOCAL_IMPORTS_ALLOWED) - used) == []
