"""An MCP tool result as the text a model reads."""

from __future__ import annotations

import json

from mcp.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)


def render(result: CallToolResult) -> str:
    """Text blocks as they are; other blocks as short notes; structured content when there is no text."""
    parts = [_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, default=str)
    return "\n".join(parts)


def _block(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} of type {block.mime_type}, {len(block.data) * 3 // 4} bytes, not shown]"
    if isinstance(block, ResourceLink):
        return f"[resource {block.uri}{f' ({block.description})' if block.description else ''}]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri}, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"
