"""An order workflow with an agent as one of its steps: the agent proposes a refund as a typed `Refund`, a person
approves it (a signal to this workflow), and the workflow pays it with an activity of its own.

Run it beside `stalwart dev` (a Temporal dev server on localhost:7233):

    cd examples/refunds && python order_workflow.py A-1001 "The kettle arrived broken."

It starts a worker for this workflow and the agent, starts the workflow, shows the proposal, approves it, and
prints what the workflow did. docs/agents-in-workflows.md explains each part.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from datetime import timedelta

from temporalio import workflow

from stalwart.workflow import execute_agent

with workflow.unsafe.imports_passed_through():  # not workflow code: the sandbox need not import it for each run
    from refund_agent import Refund, issue_refund, refund_agent
    from temporalio.client import Client
    from temporalio.worker import Worker

    from stalwart import StalwartPlugin

TASK_QUEUE = "orders"


@workflow.defn
class OrderWorkflow:
    def __init__(self) -> None:
        self.refund: Refund | None = None
        self.approved: bool | None = None

    @workflow.run
    async def run(self, order_id: str, complaint: str) -> str:
        proposal = await execute_agent(refund_agent, f"Order {order_id}: {complaint}", output_type=Refund)
        if proposal.output is None:  # the run ended without a valid Refund: its stop reason and error say why
            return f"no refund proposed ({proposal.stop_reason}: {proposal.error})"
        self.refund = proposal.output
        await workflow.wait_condition(lambda: self.approved is not None)
        if not self.approved:
            return f"refund of {self.refund.amount:.2f} declined"
        return await workflow.execute_activity(issue_refund, self.refund, start_to_close_timeout=timedelta(minutes=5))

    @workflow.query
    def proposal(self) -> Refund | None:
        """The refund the agent proposed, once it has: what the person approves."""
        return self.refund

    @workflow.signal
    def decide(self, approved: bool) -> None:
        """A person's decision on the proposal."""
        self.approved = approved


async def main(order_id: str, complaint: str, address: str = "localhost:7233") -> None:
    # The plugin brings the agent workflow, its activities, lookup_order (from the agent) and Stalwart's converter.
    client = await Client.connect(address, plugins=[StalwartPlugin(agents=[refund_agent])])
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[OrderWorkflow], activities=[issue_refund]):
        order = await client.start_workflow(
            OrderWorkflow.run, args=[order_id, complaint], id=f"order-{uuid.uuid4().hex[:8]}", task_queue=TASK_QUEUE
        )
        while (refund := await order.query(OrderWorkflow.proposal)) is None:
            await asyncio.sleep(0.5)
        print(f"the agent proposes: {refund!r}")
        await order.signal(OrderWorkflow.decide, True)
        print(await order.result())


if __name__ == "__main__":
    asyncio.run(main(*(sys.argv[1:3] if len(sys.argv) > 2 else ("A-1001", "The kettle arrived broken."))))
