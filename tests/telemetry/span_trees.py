"""Span trees from exported spans, compared by shape: names and nesting, children in start order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def spans_of_trace(spans: Iterable[Any], *, root_name: str, run_id: str | None = None) -> list[Any]:
    """Every span of the trace whose root span is `root_name` (of the run `run_id`, when several are)."""
    spans = list(spans)
    roots = [s for s in spans if s.name == root_name and s.parent is None]
    if run_id is not None:
        roots = [s for s in roots if s.attributes.get("stalwart.workflow_id") == run_id]
    assert len(roots) == 1, f"{len(roots)} root spans named {root_name!r}: {[s.name for s in spans]}"
    trace_id = roots[0].context.trace_id
    return [s for s in spans if s.context.trace_id == trace_id]


def tree(spans: Sequence[Any]) -> dict[str, Any]:
    """The spans as nested {"span", "children"} from the root (the one span without a parent in the list)."""
    ids = {s.context.span_id for s in spans}
    roots = [s for s in spans if s.parent is None or s.parent.span_id not in ids]
    assert len(roots) == 1, f"not one tree: roots {[s.name for s in roots]}"

    def node(span: Any) -> dict[str, Any]:
        children = sorted(
            (s for s in spans if s.parent is not None and s.parent.span_id == span.context.span_id),
            key=lambda s: s.start_time,
        )
        return {"span": span, "children": [node(c) for c in children]}

    return node(roots[0])


def signature(node: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    return (node["span"].name, tuple(signature(child) for child in node["children"]))


def render(node: dict[str, Any], depth: int = 0) -> str:
    """The tree as indented lines, with each span's GenAI attributes (for the issue's notes)."""
    span = node["span"]
    keys = (
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.response.finish_reasons",
        "gen_ai.tool.name",
        "stalwart.stop_reason",
    )
    shown = ", ".join(f"{k.split('.')[-1]}={span.attributes[k]}" for k in keys if k in span.attributes)
    line = f"{'  ' * depth}{span.name}" + (f"  [{shown}]" if shown else "")
    return "\n".join([line, *(render(child, depth + 1) for child in node["children"])])
