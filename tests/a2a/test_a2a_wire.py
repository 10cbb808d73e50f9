"""Reading what remote agents publish and answer, for shapes the live test agents do not produce."""

from __future__ import annotations

import pytest

from stalwart.activities.a2a.card import card_urls, parse_card
from stalwart.activities.a2a.errors import A2AProtocolError
from stalwart.activities.a2a.wire import V03, V1

CARD_URL = "https://agents.example.com/research/.well-known/agent-card.json"


def test_the_first_json_rpc_interface_in_a_spoken_version_is_chosen():
    card = parse_card(
        {
            "name": "research",
            "supportedInterfaces": [
                {
                    "url": "https://agents.example.com/research/grpc",
                    "protocolBinding": "GRPC",
                    "protocolVersion": "1.0",
                },
                {
                    "url": "https://agents.example.com/research/v2",
                    "protocolBinding": "JSONRPC",
                    "protocolVersion": "2.0",
                },
                {"url": "/research/rpc03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            ],
        },
        CARD_URL,
    )
    assert (card.endpoint, card.protocol_version) == ("https://agents.example.com/research/rpc03", "0.3")


def test_a_card_without_a_json_rpc_interface_names_what_it_offers():
    with pytest.raises(
        A2AProtocolError, match=r"offers no JSON-RPC interface .*GRPC 1\.0 at grpc://agents\.example\.com"
    ):
        parse_card(
            {
                "name": "research",
                "supportedInterfaces": [{"url": "grpc://agents.example.com", "protocolBinding": "GRPC"}],
            },
            CARD_URL,
        )


def test_a_card_url_is_used_as_given_and_a_base_url_gets_both_well_known_paths():
    assert card_urls("https://h.example/agents/x/card.json") == ["https://h.example/agents/x/card.json"]
    assert card_urls("https://h.example/agents/x/") == [
        "https://h.example/agents/x/.well-known/agent-card.json",
        "https://h.example/agents/x/.well-known/agent.json",
        "https://h.example/.well-known/agent-card.json",
        "https://h.example/.well-known/agent.json",
    ]


def test_data_and_file_parts_are_shown_to_the_model_as_text():
    reply = V1().send_result(
        {
            "message": {
                "messageId": "m",
                "role": "ROLE_AGENT",
                "parts": [
                    {"text": "Found:"},
                    {"data": {"count": 2}},
                    {"url": "https://files.example/r.pdf", "filename": "r.pdf", "mediaType": "application/pdf"},
                    {"raw": "aGk=", "mediaType": "image/png"},
                ],
            }
        }
    )
    assert reply.text == (
        'Found:\n{"count": 2}\n[file r.pdf at https://files.example/r.pdf]\n[file (image/png) sent inline, not shown]'
    )


def test_a_completed_0_3_task_answers_with_its_artifacts_not_its_status_message():
    reply = V03().task(
        {
            "kind": "task",
            "id": "t1",
            "contextId": "c1",
            "status": {
                "state": "completed",
                "message": {"kind": "message", "role": "agent", "parts": [{"kind": "text", "text": "Done!"}]},
            },
            "artifacts": [
                {"artifactId": "a1", "parts": [{"kind": "text", "text": "part one"}]},
                {
                    "artifactId": "a2",
                    "parts": [{"kind": "file", "file": {"name": "x.csv", "uri": "https://f.example/x.csv"}}],
                },
            ],
        }
    )
    assert (reply.state, reply.text) == ("completed", "part one\n[file x.csv at https://f.example/x.csv]")


def test_a_task_in_a_state_outside_the_protocol_is_a_protocol_error():
    with pytest.raises(A2AProtocolError, match="unknown state 'TASK_STATE_PONDERING'"):
        V1().task({"id": "t1", "status": {"state": "TASK_STATE_PONDERING"}})


def test_the_agent_card_summary_names_the_agent_and_its_skills():
    card = parse_card(
        {
            "name": "research",
            "description": "Finds sources.",
            "url": "https://agents.example.com/research",
            "skills": [
                {"id": "s", "name": "Search", "description": "web search", "examples": ["qubits", "lasers", "tides"]}
            ],
        },
        CARD_URL,
    )
    assert card.summary() == "research: Finds sources.\n- Search: web search (e.g. qubits; lasers)"
