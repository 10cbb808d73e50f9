"""Tools an agent is given as functions, which only the plugin's `agents=[...]` brings to the worker."""

from __future__ import annotations

from stalwart.activities.tools import tool


@tool
def lookup_order(order_id: str) -> dict[str, object]:
    """The order with this id: what was bought, for how much, and whether it was delivered.

    Args:
        order_id: The order's id, such as A-1001.
    """
    return {"order_id": order_id, "item": "kettle", "amount": 39.5, "delivered": True}
