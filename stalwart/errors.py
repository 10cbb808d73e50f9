"""Every error docs/errors.md names, importable from one place: `from stalwart.errors import SessionClosed`.

Each class lives beside the code that raises it; this module only names them. They load on first use, as the
package's names do, so importing it imports neither the SDK's client nor a provider's SDK.
"""

from __future__ import annotations

import importlib
from typing import Any

_DEFINED_IN: dict[str, str] = {
    "StalwartError": "stalwart.contracts.errors",
    "UsageError": "stalwart.contracts.errors",
    "AgentFileError": "stalwart.client.agent_files",
    "InvalidRunInput": "stalwart.client.api",
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


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module 'stalwart.errors' has no attribute {name!r}; docs/errors.md lists the errors")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
