"""The refund agent of the order workflow (README, docs/agents-in-workflows.md): its tool, its answer's type, and an
activity that acts on that answer.

Kept apart from the workflow module: the workflow imports it through `workflow.unsafe.imports_passed_through()`,
so the SDK's sandbox does not import tools, pydantic models and activities again for every run.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio import activity

from stalwart import AgentSpec, Budgets, tool

ORDERS = {
    "A-1001": {"item": "kettle", "paid": 39.5, "delivered": "2026-11-20", "status": "delivered"},
    "A-1002": {"item": "toaster", "paid": 24.0, "delivered": None, "status": "lost in transit"},
}


class Refund(BaseModel):
    """What the agent proposes: the workflow shows it to a person and acts on it once approved."""

    order_id: str
    amount: float = Field(ge=0, description="In the order's currency, at most what was paid.")
    reason: str


@tool
def lookup_order(order_id: str) -> dict[str, object]:
    """The order with this id: the item, what was paid, when it was delivered, and its status.

    Args:
        order_id: The order's id, such as A-1001.
    """
    order = ORDERS.get(order_id)
    if order is None:
        raise ValueError(f"no order {order_id}; ids look like A-1001")
    return {"order_id": order_id, **order}


refund_agent = AgentSpec(
    name="refunds",
    instructions=(
        "You handle complaints about orders. Look the order up, then propose a refund: the whole amount paid "
        "for an item that never arrived or arrived broken, half of it for a late delivery, nothing otherwise."
    ),
    model="auto",  # OpenAI or Anthropic when the worker has a key, else the scripted replies below
    tools=[lookup_order],
    budgets=Budgets(max_steps=5, max_seconds=300),
    scripted=[
        {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]},
        {"text": '{"order_id": "A-1001", "amount": 39.5, "reason": "The kettle arrived broken."}'},
    ],
)


@activity.defn
async def issue_refund(refund: Refund) -> str:
    """Pays the refund back (here, says it did): the side effect the workflow takes once a person approved."""
    return f"refunded {refund.amount:.2f} on order {refund.order_id}"
