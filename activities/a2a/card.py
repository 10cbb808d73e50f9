"""Agent card discovery: find a remote agent's card and read where and how to call it.

A2A 1.0 (and 0.3 since 0.3.0) serves the card at `/.well-known/agent-card.json`;
earlier agents at `/.well-known/agent.json`. Both are tried, under the URL
given and at the host's root. A 1.0 card lists its endpoints in
`supportedInterfaces`; a 0.3 card has `url` + `preferredTransport` and
`additionalInterfaces`. Stalwart speaks JSON-RPC, so it picks the first
JSON-RPC interface in a protocol version it knows.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from stalwart.activities.a2a import transport
from stalwart.activities.a2a.errors import A2AProtocolError, A2ARequestError
from stalwart.contracts.a2a import A2AAgentCard, A2ASkill

WELL_KNOWN_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
_SPOKEN_MAJORS = ("1", "0")


def card_urls(url: str) -> list[str]:
    """Where the card of the agent at `url` may be, in the order to try."""
    if urlsplit(url).path.endswith(".json"):
        return [url]
    base = url.rstrip("/")
    parts = urlsplit(base)
    root = f"{parts.scheme}://{parts.netloc}"
    candidates = [base + path for path in WELL_KNOWN_PATHS]
    if base != root:
        candidates += [root + path for path in WELL_KNOWN_PATHS]
    return candidates


async def discover(
    http: httpx.AsyncClient, url: str, *, headers: dict[str, str], token_env: str | None = None
) -> A2AAgentCard:
    """Fetch and read the card of the agent at `url` (a base URL or the card's own URL)."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise A2ARequestError(
            f"{url!r} is not an http(s) URL; give the agent's base URL, e.g. https://agents.example.com/researcher"
        )
    missing: list[str] = []
    for card_url in card_urls(url):
        response = await transport.send(http, "GET", card_url, "A2A agent card", headers=headers)
        if response.status_code in (404, 405, 410):
            missing.append(card_url)
            continue
        transport.check_status(response, "A2A agent card", token_env=token_env)
        return parse_card(transport.json_body(response, "A2A agent card"), card_url)
    raise A2ARequestError(
        f"no A2A agent card at {', '.join(missing)} (not found); check the agent's URL: "
        f"give its base URL or the full URL of its agent card."
    )


def parse_card(data: Any, card_url: str) -> A2AAgentCard:
    """Stalwart's view of a card: name, description, skills, and the JSON-RPC endpoint to call."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        raise A2AProtocolError(f"{card_url} is not an A2A agent card (no `name`); check the URL.")
    endpoint, version = _jsonrpc_interface(data, card_url)
    return A2AAgentCard(
        name=data["name"],
        description=str(data.get("description") or ""),
        version=str(data.get("version") or ""),
        skills=[_skill(s) for s in data.get("skills") or [] if isinstance(s, dict)],
        card_url=card_url,
        endpoint=endpoint,
        protocol_version=version,
    )


def _jsonrpc_interface(card: dict[str, Any], card_url: str) -> tuple[str, str]:
    interfaces = card.get("supportedInterfaces")
    if isinstance(interfaces, list) and interfaces:
        offered = [
            (str(i.get("protocolBinding", "")), str(i.get("url", "")), str(i.get("protocolVersion") or "1.0"))
            for i in interfaces
            if isinstance(i, dict)
        ]
    else:
        version = str(card.get("protocolVersion") or "0.3.0")
        offered = [(str(card.get("preferredTransport") or "JSONRPC"), str(card.get("url") or ""), version)]
        offered += [
            (str(i.get("transport", "")), str(i.get("url", "")), version)
            for i in card.get("additionalInterfaces") or []
            if isinstance(i, dict)
        ]
    for binding, url, version in offered:
        if binding.upper() == "JSONRPC" and url and version.strip().split(".")[0] in _SPOKEN_MAJORS:
            return urljoin(card_url, url), version
    listed = ", ".join(f"{b or '?'} {v} at {u or '?'}" for b, u, v in offered) or "none"
    raise A2AProtocolError(
        f"the agent card at {card_url} offers no JSON-RPC interface in A2A 1.0 or 0.3 (offered: {listed}); "
        f"Stalwart calls agents over JSON-RPC, so enable that binding on the agent."
    )


def _skill(data: dict[str, Any]) -> A2ASkill:
    name = str(data.get("name") or data.get("id") or "")
    return A2ASkill(
        id=str(data.get("id") or name),
        name=name,
        description=str(data.get("description") or ""),
        tags=[str(t) for t in data.get("tags") or []],
        examples=[str(e) for e in data.get("examples") or []],
    )
