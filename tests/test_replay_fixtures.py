"""Every recorded capability still replays on the code here; a changed workflow is caught on each.

The fixtures are real runs recorded by tests/fixtures/record_capabilities.py (its docstring
says when to re-record): parallel tools, an approval approved and one rejected, a sub-agent, an
A2A delegation, MCP tools over stdio and over HTTP, each budget stop, a streamed final answer from
each provider protocol (through the real SDKs and the local wire server), both text action
formats, a long run and a session that each continued as new several times, a message that came
during a session turn's last step (recorded before `messages-wait-out-a-spent-turn`), and a run whose
`require_approval` named a tool it did not have (recorded before `unknown-tool-names-end-the-run`).
`typed_output_retried`: an agent with `[output]` whose first answer is sent back for not validating.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from changed_workflows import MemoryFirstAgentWorkflow

from stalwart.client.replay import history_files, replay_files

CAPABILITIES = Path(__file__).resolve().parent / "fixtures" / "histories" / "capabilities"
RECORD = "re-record with `.venv/bin/python -m tests.fixtures.record_capabilities` only for a deliberate break"


RECORDED = sorted(p.name for p in CAPABILITIES.iterdir())


CAPABILITIES_RECORDED = {
    "parallel_tools",
    "approval_approved",
    "approval_rejected",
    "sub_agent",
    "a2a_delegation",
    "mcp_stdio",
    "mcp_http",
    "max_steps",
    "max_tokens",
    "max_cost_usd",
    "max_seconds",
    "provider_openai_chat_streamed",
    "provider_openai_responses_streamed",
    "provider_anthropic_streamed",
    "json_actions",
    "fenced_actions",
    "long_run_continued_as_new",
    "session_continued_as_new",
    "session_turns",
    "session_listed_waiting",
    "session_message_in_a_spent_turn",
    "approval_naming_a_missing_tool",
    "session_message_signalled_while_closing",
    "session_message_signalled_with_close",
    "typed_output_retried",
    "agent_in_a_users_workflow",  # recorded by tests/fixtures/record_users_workflow.py, with its parent's history
}


def test_every_capability_has_its_recorded_run():
    assert set(RECORDED) == CAPABILITIES_RECORDED, f"fixtures and the list of capabilities differ: {RECORD}"


@pytest.mark.parametrize("capability", RECORDED)
async def test_each_recorded_capability_replays_on_the_current_code(capability):
    outcomes = await replay_files([CAPABILITIES / capability])
    assert outcomes, f"no histories for {capability}"
    failed = [f"{o.name}: {o.divergence}" for o in outcomes if not o.ok]
    assert not failed, f"recorded runs no longer replay ({RECORD}):\n" + "\n".join(failed)


async def test_a_workflow_changed_without_a_patch_fails_replay_on_every_fixture():
    outcomes = await replay_files([CAPABILITIES], workflows=[MemoryFirstAgentWorkflow])
    assert len(outcomes) == len(history_files([CAPABILITIES])) >= len(RECORDED) == len(CAPABILITIES_RECORDED)
    assert not any(o.ok for o in outcomes)
    assert all("TMPRL1100" in (o.divergence or "") for o in outcomes)
