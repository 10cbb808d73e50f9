"""The README's order workflow, examples/refunds, run end to end as its `main` runs it: on a dev server, the agent
on its scripted replies proposes a typed Refund, the proposal is approved, and the workflow pays it."""

from __future__ import annotations

import sys

import pytest

from support.repo_paths import REPO

EXAMPLE = REPO / "examples" / "refunds"


@pytest.fixture
def example(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # `auto` runs on the scripted replies without one
        monkeypatch.delenv(key, raising=False)
    import order_workflow

    yield order_workflow
    for name in ("order_workflow", "refund_agent"):
        sys.modules.pop(name, None)


async def test_the_order_workflow_pays_the_refund_its_agent_proposed_once_approved(example, dev_env, capsys):
    await example.main("A-1001", "The kettle arrived broken.", address=dev_env.address)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "the agent proposes: Refund(order_id='A-1001', amount=39.5, reason='The kettle arrived broken.')",
        "refunded 39.50 on order A-1001",
    ]
