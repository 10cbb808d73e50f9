"""Data contracts shared by workflows, activities, workers and clients.

Everything here is plain data (pydantic models and constants): importing it does no I/O, so workflow code can
use it inside the sandbox. Each module is imported on its own, and importing this package imports none of them:
reading a finished run (`stalwart show`) loads the contracts of a run's record, not those of the agent spec.
Import each name from its module; the names a user needs are exported by `stalwart` itself.

- `agent`: the agent spec an agent file describes (`AgentSpec`, `Budgets`, ...).
- `run_input`: what a run starts with (`RunInput`), and what continue-as-new carries.
- `run`: what a run records (`StepRecord`, `RunState`, `AgentResult`, `RunEvent`).
- `output_schema`: the JSON Schema subset an agent's typed output (`[output]`) is validated against, in the workflow.
- `messages`: the conversation (`Message`, `ToolCall`, `ToolResult`, `AssistantTurn`, `Usage`).
- `activities`: the inputs and outputs of the model and tool activities.
- `tools`, `approvals`, `stream`, `a2a`, `tracing`, `names`: one subject each; `converter`, `model`, `wire`: how
  the contracts travel.
"""
