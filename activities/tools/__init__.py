"""Tools: Python functions the model can call, registered by name in a worker."""

from stalwart.activities.tools.registry import (
    RetryableToolError,
    Tool,
    ToolArgumentsError,
    ToolContext,
    ToolRegistry,
    tool,
)

__all__ = ["RetryableToolError", "Tool", "ToolArgumentsError", "ToolContext", "ToolRegistry", "tool"]
