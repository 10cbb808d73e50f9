"""The tool our loop calls in the history-growth benchmark: a fixed-size result, like a page of search results."""

from __future__ import annotations

from bench.baselines import blob_text
from stalwart.activities.tools.registry import tool


@tool
def blob(size: int) -> str:
    """Return `size` characters of text.

    Args:
        size: How many characters to return.
    """
    return blob_text(size)
