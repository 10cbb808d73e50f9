"""Every error docs/errors.md names, importable from one place: `from stalwart.errors import SessionClosed`.

Each class lives beside the code that raises it; this module only names them. They load on first use, as the
package's names do, so importing it imports neither the SDK's client nor a provider's SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stalwart import _lazily

if TYPE_CHECKING:  # the names' types, for type checkers: at run time they load on first use
    from stalwart.activities.a2a.errors import (
        A2AError,
        A2AProtocolError,
        A2ARequestError,
        A2ATaskError,
        A2AUnavailableError,
    )
    from stalwart.activities.mcp.errors import (
        McpConfigError,
        McpServerExited,
        McpToolError,
        McpUnavailable,
    )
    from stalwart.activities.providers.base import (
        ModelConfigError,
        ModelError,
        ModelGarbledError,
        ModelRequestError,
        ModelUnavailableError,
    )
    from stalwart.activities.secrets import EnvNotAllowed
    from stalwart.activities.storage.config import StorageSettingError
    from stalwart.activities.storage.objects import ObjectNotFoundError
    from stalwart.activities.tool_activities import BindingError
    from stalwart.activities.tools.builtin import NotAllowed
    from stalwart.activities.tools.registry import (
        RetryableToolError,
        ToolArgumentsError,
        ToolDefinitionError,
        ToolSignatureError,
    )
    from stalwart.activities.transcripts import TranscriptError
    from stalwart.client.agent_files import AgentFileError
    from stalwart.client.api import (
        DecisionRefused,
        InvalidRunInput,
        MessageRefused,
        RunExists,
        SessionClosed,
        UpdateRefused,
    )
    from stalwart.client.chain import ModelCallNotFound
    from stalwart.client.connection import TemporalConnectionError
    from stalwart.client.queries import InvalidQuery
    from stalwart.client.reader import RunWithoutResult
    from stalwart.client.replay import (
        ExportError,
        HistoryFileError,
        NotAStalwartRun,
    )
    from stalwart.client.run_failures import RunEndedInError
    from stalwart.client.server_errors import (
        NamespaceNotFound,
        RequestRefused,
        RunNotFound,
        TemporalRefused,
    )
    from stalwart.client.stream import ForeignOffset
    from stalwart.contracts.errors import (
        ConfigurationError,
        EncryptionKeyError,
        InfrastructureError,
        MissingEncryptionKey,
        NotFound,
        RunFailed,
        StalwartError,
        UnusablePath,
        UsageError,
    )
    from stalwart.contracts.patterns import PatternError
    from stalwart.contracts.run import OutputNotOfType
    from stalwart.contracts.tracing import TracingSettingError
    from stalwart.workers.dev_server import (
        DevServerExited,
        DevServerUnanswered,
        ExecutableNotFound,
    )
    from stalwart.workers.plugin import PluginError
    from stalwart.workers.telemetry import (
        MetricsUnavailable,
        TelemetrySettingError,
    )
    from stalwart.workers.versioning import VersioningError, VersionNotReady
    from stalwart.workers.worker import ToolModuleError
    from stalwart.workflows.local_activities import StalwartActivitiesMissing


_DEFINED_IN: dict[str, str] = {
    "StalwartError": "stalwart.contracts.errors",
    "UsageError": "stalwart.contracts.errors",
    "AgentFileError": "stalwart.client.agent_files",
    "InvalidRunInput": "stalwart.client.api",
    "RunExists": "stalwart.client.api",
    "ForeignOffset": "stalwart.client.stream",
    "HistoryFileError": "stalwart.client.replay",
    "InvalidQuery": "stalwart.client.queries",
    "UpdateRefused": "stalwart.client.api",
    "DecisionRefused": "stalwart.client.api",
    "RequestRefused": "stalwart.client.server_errors",
    "UnusablePath": "stalwart.contracts.errors",
    "BindingError": "stalwart.activities.tool_activities",
    "EnvNotAllowed": "stalwart.activities.secrets",
    "McpConfigError": "stalwart.activities.mcp.errors",
    "ToolArgumentsError": "stalwart.activities.tools.registry",
    "NotAllowed": "stalwart.activities.tools.builtin",
    "ToolModuleError": "stalwart.workers.worker",
    "PatternError": "stalwart.contracts.patterns",
    "ToolDefinitionError": "stalwart.activities.tools.registry",
    "VersioningError": "stalwart.workers.versioning",
    "TelemetrySettingError": "stalwart.workers.telemetry",
    "PluginError": "stalwart.workers.plugin",
    "NotFound": "stalwart.contracts.errors",
    "RunNotFound": "stalwart.client.server_errors",
    "NamespaceNotFound": "stalwart.client.server_errors",
    "ExportError": "stalwart.client.replay",
    "NotAStalwartRun": "stalwart.client.replay",
    "ObjectNotFoundError": "stalwart.activities.storage.objects",
    "ModelCallNotFound": "stalwart.client.chain",
    "RunFailed": "stalwart.contracts.errors",
    "RunEndedInError": "stalwart.client.run_failures",
    "RunWithoutResult": "stalwart.client.reader",
    "SessionClosed": "stalwart.client.api",
    "OutputNotOfType": "stalwart.contracts.run",
    "InfrastructureError": "stalwart.contracts.errors",
    "TemporalConnectionError": "stalwart.client.connection",
    "TemporalRefused": "stalwart.client.server_errors",
    "ConfigurationError": "stalwart.contracts.errors",
    "StorageSettingError": "stalwart.activities.storage.config",
    "EncryptionKeyError": "stalwart.contracts.errors",
    "TracingSettingError": "stalwart.contracts.tracing",
    "MissingEncryptionKey": "stalwart.contracts.errors",
    "StalwartActivitiesMissing": "stalwart.workflows.local_activities",
    "DevServerExited": "stalwart.workers.dev_server",
    "DevServerUnanswered": "stalwart.workers.dev_server",
    "ExecutableNotFound": "stalwart.workers.dev_server",
    "VersionNotReady": "stalwart.workers.versioning",
    "MetricsUnavailable": "stalwart.workers.telemetry",
    "TranscriptError": "stalwart.activities.transcripts",
    "ModelError": "stalwart.activities.providers.base",
    "ModelConfigError": "stalwart.activities.providers.base",
    "ModelRequestError": "stalwart.activities.providers.base",
    "ModelUnavailableError": "stalwart.activities.providers.base",
    "ModelGarbledError": "stalwart.activities.providers.base",
    "A2AError": "stalwart.activities.a2a.errors",
    "A2AUnavailableError": "stalwart.activities.a2a.errors",
    "A2AProtocolError": "stalwart.activities.a2a.errors",
    "A2ARequestError": "stalwart.activities.a2a.errors",
    "A2ATaskError": "stalwart.activities.a2a.errors",
    "RetryableToolError": "stalwart.activities.tools.registry",
    "McpUnavailable": "stalwart.activities.mcp.errors",
    "MessageRefused": "stalwart.client.api",
    "McpServerExited": "stalwart.activities.mcp.errors",
    "McpToolError": "stalwart.activities.mcp.errors",
    "ToolSignatureError": "stalwart.activities.tools.registry",
}
"""Each error's name -> the module that defines it. tests/test_errors.py checks it against docs/errors.md."""

__all__ = list(_DEFINED_IN)


__getattr__, __dir__ = _lazily(_DEFINED_IN, __name__)
