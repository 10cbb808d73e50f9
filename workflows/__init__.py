"""Workflow definitions. Deterministic code only: all I/O happens in activities."""

from stalwart.workflows.agent import AgentWorkflow

__all__ = ["AgentWorkflow"]
