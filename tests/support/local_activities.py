"""What history holds of a local activity: one marker per call, its metadata as JSON and its result, no input."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent

MARKER = "core_local_activity"


@dataclass
class LocalActivityCall:
    data: dict[str, Any]
    """The SDK's metadata: `activity_type`, the final `attempt`, ..."""
    result: list[Payload]
    """Empty when the call failed."""

    @property
    def attempt(self) -> int:
        return int(self.data["attempt"])


def local_activity_calls(events: Iterable[HistoryEvent], activity_type: str) -> list[LocalActivityCall]:
    calls = []
    for event in events:
        if not event.HasField("marker_recorded_event_attributes"):
            continue
        marker = event.marker_recorded_event_attributes
        if marker.marker_name != MARKER:
            continue
        data = json.loads(marker.details["data"].payloads[0].data)
        if data.get("activity_type") == activity_type:
            result = list(marker.details["result"].payloads) if "result" in marker.details else []
            calls.append(LocalActivityCall(data, result))
    return calls
