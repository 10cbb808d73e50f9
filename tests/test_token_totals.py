"""Issue 43, item 6: a run's token totals agree wherever they are shown, and say whether sub-agents are included.

For one run the CLI printed "30 in / 30 out tokens" (the run's usage, its sub-agent's tokens counted) and
"40 tokens (20 in / 20 out)" (its metrics: its own model calls only). Every total is now the run's usage, and a run
that delegated says its sub-agents are included, and how much they spent.
"""

from __future__ import annotations

import io
import re

from stalwart.client.render import print_closed, print_result, print_state
from stalwart.contracts.agent import AgentSpec, ScriptedReply, ScriptedToolCall, SubAgent

RESEARCHER = AgentSpec(name="researcher", scripted=[ScriptedReply(text="Qubits.", input_tokens=7, output_tokens=3)])


def _lead(*, delegates: bool) -> AgentSpec:
    first = (
        ScriptedReply(tool_calls=[ScriptedToolCall(name="researcher", arguments={"task": "qubits"})])
        if delegates
        else ScriptedReply(tool_calls=[ScriptedToolCall(name="calculator", arguments={"expression": "1+1"})])
    )
    return AgentSpec(
        name="lead",
        tools=["calculator"],
        sub_agents=[SubAgent(name="researcher", spec=RESEARCHER)],
        scripted=[first, ScriptedReply(text="Done.")],
    )


def _totals(text: str) -> list[tuple[int, int]]:
    """Every `X in / Y out` of the printed text."""
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+) in / (\d+) out", text)]


async def test_every_token_total_shown_counts_the_sub_agents_and_says_so(stalwart, worker_with):
    async with worker_with():
        handle = await stalwart.start(_lead(delegates=True), "research qubits")
        result = await handle.result()
        state = await handle.state()
    assert result.stop_reason == "done"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (27, 23)  # 2 own calls of 10/10, one of 7/3
    shown = {}
    for name, printing in {
        "run": lambda out: print_result(result, None, out),
        "show": lambda out: print_state(handle.run_id, state, None, out),
        "close": lambda out: print_closed(handle.run_id, result, out),
    }.items():
        out = io.StringIO()
        printing(out)
        shown[name] = out.getvalue()
    print("\n" + "\n".join(shown.values()))
    for name, text in shown.items():
        totals = [line for line in text.splitlines() if re.search(r"tokens", line) and " in / " in line]
        assert totals, name
        for line in totals:
            assert (27, 23) in _totals(line), f"{name}: {line}"
            assert "sub-agents" in line and "included" in line, f"{name}: {line}"
    assert "sub-agents' 7 in / 3 out included" in shown["run"] and "sub-agents' 7 in / 3 out included" in shown["show"]
    assert "metrics: 2 cycles · 50 tokens (27 in / 23 out, sub-agents included)" in shown["run"]


async def test_a_run_that_delegated_nothing_shows_its_totals_without_a_word_on_sub_agents(stalwart, worker_with):
    async with worker_with():
        result = await stalwart.run(_lead(delegates=False), "add")
    out = io.StringIO()
    print_result(result, None, out)
    assert "sub-agents" not in out.getvalue()
    assert "40 tokens (20 in / 20 out)" in out.getvalue() and "· 20 in / 20 out tokens ·" in out.getvalue()
