"""Register Stalwart's custom search attributes on a server that lacks them.

Without them, the first `upsert_search_attributes` of a run fails its workflow
task and the run hangs, so workers make sure they exist before polling.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeIndexedValueType
from temporalio.service import RPCError, RPCStatusCode

from stalwart.contracts.names import SEARCH_ATTRIBUTES


async def ensure_search_attributes(client: Client) -> list[str]:
    """Add whichever of Stalwart's search attributes the namespace lacks; return the names added."""
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
        existing = set(listed.custom_attributes) | set(listed.system_attributes)
    except RPCError as err:
        if err.status != RPCStatusCode.UNIMPLEMENTED:  # the time-skipping test server cannot list them
            raise
        existing = set()
    missing = {
        key.name: IndexedValueType.ValueType(int(key.indexed_value_type))
        for key in SEARCH_ATTRIBUTES
        if key.name not in existing
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
        )
    return sorted(missing)


def dev_server_flags() -> list[str]:
    """`--search-attribute Name=Type` flags for `temporal server start-dev`."""
    types = {
        SearchAttributeIndexedValueType.KEYWORD: "Keyword",
        SearchAttributeIndexedValueType.INT: "Int",
        SearchAttributeIndexedValueType.DOUBLE: "Double",
        SearchAttributeIndexedValueType.BOOL: "Bool",
        SearchAttributeIndexedValueType.TEXT: "Text",
    }
    flags: list[str] = []
    for key in SEARCH_ATTRIBUTES:
        flags += ["--search-attribute", f"{key.name}={types[key.indexed_value_type]}"]
    return flags
