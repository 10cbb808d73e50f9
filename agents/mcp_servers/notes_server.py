"""A tiny MCP server over stdio: the team's notes, searchable by the agents that declare it.

Run by a worker for an agent file such as `agents/notes.toml`:

    [[mcp_servers]]
    name = "notes"
    command = "python"                       # the worker's own interpreter
    args = ["mcp_servers/notes_server.py"]   # relative to the agent file's directory

Notes come from the JSON file named by NOTES_FILE (a list of
{"title": ..., "body": ...}), or from the built-in examples below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

EXAMPLE_NOTES = [
    {"title": "retention", "body": "Production keeps run histories for 30 days; staging keeps them for 7 days."},
    {"title": "on-call", "body": "The on-call rotation changes every Monday at 09:00 UTC; page via the #ops channel."},
    {"title": "deploys", "body": "Deploys are frozen on Fridays after 14:00 UTC and during the last week of December."},
]


def load_notes() -> list[dict[str, str]]:
    path = os.environ.get("NOTES_FILE")
    if not path:
        return EXAMPLE_NOTES
    return json.loads(Path(path).read_text(encoding="utf-8"))


def build_server(notes: list[dict[str, str]]) -> MCPServer:
    server = MCPServer("notes", instructions="Search the team's notes, then read the ones that match.")
    read_only = ToolAnnotations(read_only_hint=True)

    @server.tool(annotations=read_only)
    def search_notes(query: str) -> list[str]:
        """Titles of the notes whose title or body mentions every word of the query."""
        words = query.lower().split()
        return [n["title"] for n in notes if all(w in (n["title"] + " " + n["body"]).lower() for w in words)]

    @server.tool(annotations=read_only)
    def read_note(title: str) -> str:
        """The full text of one note, by its exact title."""
        for note in notes:
            if note["title"] == title:
                return note["body"]
        raise ToolError(f"no note titled {title!r}; search_notes lists the titles")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    def add_note(title: str, body: str) -> str:
        """Save a note for the team (replacing any note with the same title)."""
        notes[:] = [n for n in notes if n["title"] != title] + [{"title": title, "body": body}]
        return f"saved note {title!r}"

    return server


if __name__ == "__main__":
    build_server(load_notes()).run()
