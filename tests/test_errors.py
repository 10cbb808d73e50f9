"""One error tree (docs/errors.md): every error Stalwart raises derives from `StalwartError`, the CLI's exit status
follows the branch, and the failure types written into histories keep their values."""

from __future__ import annotations

import ast
import asyncio
import base64
import builtins
import importlib
import os
import pkgutil
import re
import tomllib
from pathlib import Path

import pytest
from temporalio.api.common.v1 import GrpcStatus
from temporalio.api.errordetails.v1 import NamespaceNotFoundFailure
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from test_cli import stalwart

import stalwart as package
from stalwart.client import cli
from stalwart.client.cli import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, main
from stalwart.contracts import failure_types
from stalwart.contracts.errors import (
    InfrastructureError,
    MissingEncryptionKey,
    NotFound,
    RunFailed,
    StalwartError,
    UsageError,
)

from support.repo_paths import REPO

INTERNAL: dict[str, str] = {
    # module.class: why it never reaches a user as itself
    "stalwart.workflows.deadlines.DeadlineReached": "the workflow's own signal that the run's clock ran out: the "
    "loop stops the run with stop reason `budget`",
    "stalwart.workflows.model_step.ModelFailed": "the loop's way out of a model step that failed: the run ends `error`",
    "stalwart.workflows.chain.ContinueAsNew": "the loop's way out to continue as new, caught by `run`",
    "stalwart.activities.mcp.pool._SessionRejected": "the pool's cue to open a new MCP session and try once more",
    "stalwart.activities.mcp.connection.HandshakeTimeout": "raised on as McpHandshakeTimeout by the pool",
    "stalwart.client.reader._Unanswered": "a query no worker answered: the reader reads the run's history instead",
    "stalwart.client.reader.ClosedRun": "a query asked of the open run only found it closed: pending_approvals "
    "lists nothing and says the run has closed",
    "stalwart.client.a2a_server.RpcError": "the A2A server's JSON-RPC error, answered to the remote caller",
    "stalwart.client.serve.app.ApiError": "a route's refusal, answered to the HTTP caller as a JSON error",
    "stalwart.client.serve.guards._BodyTooLarge": "the body guard's cue to answer 413 once the body is read",
}
"""Exceptions used for control flow inside the package, each caught where it is raised."""


def _package_modules() -> list[str]:
    """Every module of the installed package: pyproject lists its packages (tests/test_package.py checks the list)."""
    packages = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    modules = []
    for name in packages:
        modules.append(name)
        package_module = importlib.import_module(name)
        modules += [f"{name}.{info.name}" for info in pkgutil.iter_modules(package_module.__path__) if not info.ispkg]
    return modules


def _exception_classes() -> dict[str, type[Exception]]:
    found = {}
    for name in _package_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_of_the_package_derives_from_stalwart_error():
    found = _exception_classes()
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, StalwartError) and name not in INTERNAL)
    assert outside == [], "each should derive from a branch of contracts/errors.py, or be listed in INTERNAL"
    assert len(found) > 30  # the walk reached the package's modules


def test_every_exception_listed_as_internal_still_exists():
    """A class renamed or moved leaves its old name here, excusing nothing: the list names only what exists."""
    assert sorted(set(INTERNAL) - set(_exception_classes())) == []


def test_the_tree_and_its_branches_are_exported_from_stalwart():
    for branch in (StalwartError, UsageError, NotFound, RunFailed, InfrastructureError):
        assert getattr(package, branch.__name__) is branch
        assert branch is StalwartError or issubclass(branch, StalwartError)


def test_errors_that_were_builtin_errors_still_are():
    """Code that caught them by their former base keeps catching them."""
    from stalwart.activities.storage.encryption import EncryptionKeyError
    from stalwart.activities.storage.objects import ObjectNotFoundError
    from stalwart.client.agent_files import AgentFileError
    from stalwart.client.api import InvalidRunInput, SessionClosed
    from stalwart.client.connection import TemporalConnectionError
    from stalwart.client.reader import RunWithoutResult
    from stalwart.client.replay import ExportError, HistoryFileError

    for error, former in [
        (AgentFileError, ValueError),
        (InvalidRunInput, ValueError),
        (HistoryFileError, ValueError),
        (EncryptionKeyError, ValueError),
        (SessionClosed, RuntimeError),
        (RunWithoutResult, RuntimeError),
        (ExportError, LookupError),
        (ObjectNotFoundError, FileNotFoundError),
        (TemporalConnectionError, ConnectionError),
        (MissingEncryptionKey, KeyError),
    ]:
        assert issubclass(error, former) and issubclass(error, StalwartError), error


def test_the_failure_types_recorded_in_histories_keep_their_values():
    """Recorded histories name these types: a changed value would make old runs fail differently on replay."""
    assert {name: value for name, value in vars(failure_types).items() if name.isupper()} == {
        "INVALID_RUN_INPUT": "InvalidRunInput",
        "INVALID_ARGUMENT": "InvalidArgument",
        "MESSAGE_REFUSED": "MessageRefused",
        "SESSION_CONTINUING": "SessionContinuing",
        "BUDGET_OVER": "BudgetOver",
        "LONG_RATE_LIMIT": "ModelRateLimited",
        "MODEL_CONFIG_ERROR": "ModelConfigError",
        "MODEL_REQUEST_ERROR": "ModelRequestError",
        "TRANSCRIPT_ERROR": "TranscriptError",
        "UNKNOWN_TOOL": "UnknownToolError",
        "RETRYABLE_TOOL_ERROR": "RetryableToolError",
        "ENCRYPTION_KEY_ERROR": "EncryptionKeyError",
        "MISSING_ENCRYPTION_KEY": "MissingEncryptionKey",
        "ACTIVITIES_MISSING": "StalwartActivitiesMissing",
        "A2A_UNAVAILABLE": "A2AUnavailableError",
        "A2A_PROTOCOL": "A2AProtocolError",
        "A2A_REQUEST": "A2ARequestError",
        "A2A_TASK": "A2ATaskError",
    }


def test_failure_types_written_as_a_class_name_are_that_class_name():
    """Activities write `type(err).__name__`: a class renamed would write a type no retry policy names."""
    from stalwart.activities.a2a import errors as a2a
    from stalwart.activities.providers.base import ModelConfigError, ModelRequestError
    from stalwart.activities.storage.encryption import EncryptionKeyError
    from stalwart.activities.tools.registry import RetryableToolError
    from stalwart.activities.transcripts import TranscriptError
    from stalwart.workflows.local_activities import StalwartActivitiesMissing

    assert [
        cls.__name__
        for cls in (
            ModelConfigError,
            ModelRequestError,
            TranscriptError,
            RetryableToolError,
            EncryptionKeyError,
            MissingEncryptionKey,
            StalwartActivitiesMissing,
            a2a.A2AUnavailableError,
            a2a.A2AProtocolError,
            a2a.A2ARequestError,
            a2a.A2ATaskError,
        )
    ] == [
        failure_types.MODEL_CONFIG_ERROR,
        failure_types.MODEL_REQUEST_ERROR,
        failure_types.TRANSCRIPT_ERROR,
        failure_types.RETRYABLE_TOOL_ERROR,
        failure_types.ENCRYPTION_KEY_ERROR,
        failure_types.MISSING_ENCRYPTION_KEY,
        failure_types.ACTIVITIES_MISSING,
        failure_types.A2A_UNAVAILABLE,
        failure_types.A2A_PROTOCOL,
        failure_types.A2A_REQUEST,
        failure_types.A2A_TASK,
    ]


def test_a_bad_agent_file_exits_with_the_usage_status(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "a"\nmodel = "opnai:gpt-4.1"\n')
    assert main(["check", str(bad)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}") and "Traceback" not in err


def test_an_unreachable_server_exits_with_the_infrastructure_status(capsys):
    assert main(["show", "some-run", "--address", "127.0.0.1:1"]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach Temporal at 127.0.0.1:1") and "no port was given" not in err


def test_an_address_without_a_port_is_said_to_lack_one(capsys):
    assert main(["show", "some-run", "--address", "127.0.0.1"]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert "cannot reach Temporal at 127.0.0.1 (no port was given: Temporal's is usually 7233, 127.0.0.1:7233)" in err


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (UsageError("said"), EXIT_USAGE),
        (NotFound("said"), EXIT_RUN_FAILED),
        (RunFailed("said"), EXIT_RUN_FAILED),
        (InfrastructureError("said"), EXIT_RUN_FAILED),
        (StalwartError("said"), EXIT_RUN_FAILED),
    ],
)
def test_the_exit_status_follows_the_branch(monkeypatch, capsys, tmp_path, error, status):
    _command_raising(monkeypatch, error)
    assert main(["check", str(tmp_path / "any.toml")]) == status
    assert capsys.readouterr().err == "error: said\n"


def test_an_error_is_explained_by_its_class_not_its_words(monkeypatch, tmp_path):
    """A KeyError that reads like the converter's old one about encrypted payloads is a bug like any other."""
    _command_raising(monkeypatch, KeyError("Unknown payload encoding binary/encrypted"))
    with pytest.raises(KeyError):
        main(["check", str(tmp_path / "any.toml")])


def test_a_reader_gone_away_ends_quietly(monkeypatch, capsys, tmp_path):
    _command_raising(monkeypatch, BrokenPipeError())
    assert main(["check", str(tmp_path / "any.toml")]) == EXIT_OK
    assert capsys.readouterr().err == ""


def _command_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    from stalwart.client.commands import inspecting

    async def check(args: object) -> int:
        raise error

    monkeypatch.setattr(inspecting, "check", check)


def test_a_server_refusal_is_told_by_its_status_and_detail_not_its_words():
    from stalwart.client.server_errors import (
        NamespaceNotFound,
        RequestRefused,
        RunNotFound,
        TemporalRefused,
        explained,
    )

    detail = GrpcStatus()
    detail.details.add().Pack(NamespaceNotFoundFailure(namespace="nope"))
    namespace = RPCError("no such place", RPCStatusCode.NOT_FOUND, detail.SerializeToString())
    assert isinstance(explained(namespace), NamespaceNotFound)
    worded_like_one = RPCError("Namespace nope is not found.", RPCStatusCode.NOT_FOUND, b"")
    assert isinstance(explained(worded_like_one), RunNotFound)
    refused = explained(RPCError("WorkflowId exceeds maximum allowed length", RPCStatusCode.INVALID_ARGUMENT, b""))
    assert isinstance(refused, RequestRefused) and isinstance(refused, UsageError)
    busy = explained(RPCError("too many requests", RPCStatusCode.RESOURCE_EXHAUSTED, b""))
    assert isinstance(busy, TemporalRefused) and str(busy) == "Temporal answered RESOURCE_EXHAUSTED: too many requests"


def test_a_payload_sealed_with_a_key_this_process_lacks_is_a_missing_key_error():
    from stalwart.activities.storage.converter import stalwart_converter
    from stalwart.activities.storage.encryption import Keyring

    sealing = stalwart_converter(encryption=Keyring.parse(f"k1:{base64.b64encode(os.urandom(32)).decode()}"))
    sealed = asyncio.run(sealing.encode(["a goal"]))
    with pytest.raises(MissingEncryptionKey, match="no encryption key is set here: set STALWART_ENCRYPTION_KEYS"):
        asyncio.run(stalwart_converter().decode(sealed, [str]))


def test_a_failed_run_is_a_run_failed_error_that_is_still_the_sdks_workflow_failure():
    from stalwart.client.run_failures import RunEndedInError

    cause = ApplicationError("the run needs a goal", type=failure_types.INVALID_RUN_INPUT)
    failed = RunEndedInError(WorkflowFailureError(cause=cause))
    assert isinstance(failed, RunFailed) and isinstance(failed, WorkflowFailureError)
    assert failed.cause is cause
    assert str(failed) == "the run failed: InvalidRunInput: the run needs a goal"


@pytest.mark.slow
def test_a_run_the_server_does_not_have_exits_with_the_not_found_status(dev_env):
    shown = stalwart("show", "no-such-run", address=dev_env.address)
    assert shown.returncode == EXIT_RUN_FAILED
    assert shown.stderr.startswith("error: workflow not found for ID: no-such-run. `stalwart runs` lists the runs")


@pytest.mark.slow
def test_a_query_the_server_refuses_exits_with_the_usage_status(dev_env):
    listed = stalwart("runs", "--query", "AgentSteps >", address=dev_env.address)
    assert listed.returncode == EXIT_USAGE
    assert listed.stderr.startswith("error: --query is not a visibility query Temporal accepts: "), listed.stderr


def test_the_cli_names_no_error_class_but_the_tree():
    """The exit statuses are the branches': a new error class needs no line in the CLI."""
    assert {branch for branch, _ in cli.EXIT_STATUSES} == {
        StalwartError,
        UsageError,
        NotFound,
        RunFailed,
        InfrastructureError,
    }


def _documented_error_names() -> set[str]:
    """The class names in backticks in docs/errors.md's tree, less Python's and the SDK's own (named as bases)."""
    text = (REPO / "docs" / "errors.md").read_text()
    tree = text.split("## The tree", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([A-Z][A-Za-z0-9]+)`", tree))
    return {name for name in named if not hasattr(builtins, name)} - SDK_ERRORS_NAMED - {"StalwartPlugin"}


SDK_ERRORS_NAMED = {"WorkflowFailureError", "WorkflowUpdateFailedError", "WorkflowAlreadyStartedError"}
"""The SDK's errors docs/errors.md names as the former base of one of ours."""


def test_every_error_the_docs_name_is_importable_from_stalwart_errors_and_nothing_else_is():
    import stalwart.errors

    assert sorted(stalwart.errors.__all__) == sorted(_documented_error_names())
    for name in stalwart.errors.__all__:
        assert issubclass(getattr(stalwart.errors, name), StalwartError), name
    typed = {  # what type checkers see: the module's imports under TYPE_CHECKING
        alias.name
        for node in ast.walk(ast.parse(Path(stalwart.errors.__file__).read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    } - {"annotations", "TYPE_CHECKING", "_lazily"}
    assert typed == set(stalwart.errors.__all__)
