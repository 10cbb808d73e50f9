"""The tool our loop calls in the history-growth benchmark: a fixed-size result, like a page of search results."""

from __future__ import annotations

from bench.baselines import blob_text
from stalwart.activities.tools.registry import tool


@tool
def blob(size: int, page: int = 0) -> str:
    """Return `size` characters of text.

    Args:
        size: How many characters to return.
        page: Which page: each has its own text.
    """
    return blob_text(size, page)
