"""Reading what a process serves on its Prometheus `/metrics` endpoint: our workers' metrics, the dev server's."""

from __future__ import annotations

import re

import httpx

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


async def scrape(port: int) -> str:
    """The metrics served on 127.0.0.1:`port`, in Prometheus' text format."""
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://127.0.0.1:{port}/metrics")
    response.raise_for_status()
    return response.text


def value(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels` (0 when there is none)."""
    total = 0.0
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and match[1] == name and labels.items() <= dict(LABEL.findall(match[2] or "")).items():
            total += float(match[3])
    return total
