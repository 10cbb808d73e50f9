"""The data converter every client and worker shares: the SDK's pydantic conversion, built once."""

from __future__ import annotations

from datetime import UTC, datetime

from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DataConverter, DefaultFailureConverter

from stalwart.contracts.converter import SharedPydanticPayloadConverter, stalwart_data_converter
from stalwart.contracts.messages import AssistantTurn, ToolCall

VALUES = [
    AssistantTurn(tool_calls=[ToolCall(id="call_1", name="echo", arguments={"text": "ping"})]),
    {"nested": [1, 2.5, "three"]},
    None,
    b"\x00bytes",
    datetime(2026, 11, 26, 3, 30, tzinfo=UTC),
    "text",
]


def test_converters_built_per_payload_share_one_json_converter_and_its_cache():
    # The SDK builds a payload converter per payload when external storage is on; they must not each start cold.
    first, second = SharedPydanticPayloadConverter(), SharedPydanticPayloadConverter()
    assert first.converters[b"json/plain"] is second.converters[b"json/plain"]


def test_stalwart_s_converter_builds_the_shared_one():
    assert stalwart_data_converter().payload_converter_class is SharedPydanticPayloadConverter


def test_the_shared_converter_writes_and_reads_what_the_sdk_pydantic_converter_does():
    ours, sdk = SharedPydanticPayloadConverter(), PydanticPayloadConverter()
    assert ours.to_payloads(VALUES) == sdk.to_payloads(VALUES)
    hints = [type(value) if value is not None else None for value in VALUES]
    payloads = sdk.to_payloads(VALUES)
    assert ours.from_payloads(payloads, hints) == sdk.from_payloads(payloads, hints)


def test_a_converter_without_pydantic_gets_the_shared_one_and_keeps_the_rest():
    class Failures(DefaultFailureConverter):
        pass

    existing = DataConverter(failure_converter_class=Failures)
    converted = stalwart_data_converter(existing)
    assert converted.payload_converter_class is SharedPydanticPayloadConverter
    assert converted.failure_converter_class is Failures
