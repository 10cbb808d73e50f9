"""A model activity older than `ModelRequest.sent` (commit 4cd1208) refuses an input that names a sent message.

Such an activity reads the input with the ModelRequest of its release, which knows no `sent`: were the named message
to travel without its `content` (its empty default), it would read the message as empty, send the model no text and
store none. It travels with `"content": null`, which that ModelRequest refuses to decode, so the call fails
("Failed decoding arguments", which Temporal retries) until a worker of this release takes it. The older contracts
are the release's own file, kept in tests/fixtures/older_contracts (its Message is this one: unchanged since).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel, ValidationError

from stalwart.contracts.activities import ModelRequest
from stalwart.contracts.converter import DATA_CONVERTER
from stalwart.contracts.messages import Message, TranscriptRef

OLDER = Path(__file__).parent.parent / "fixtures" / "older_contracts" / "activities_4cd1208.py"


@pytest.fixture
def older(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The activities' contracts of the release before `sent`, as a module of their own."""
    spec = importlib.util.spec_from_file_location("older_activity_contracts", OLDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # pydantic resolves the annotations there
    spec.loader.exec_module(module)
    for value in vars(module).values():  # built now: they are Contracts too, which a worker builds if still deferred
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == spec.name:
            value.model_rebuild()
    return module


def _request(sent: dict[int, str]) -> ModelRequest:
    return ModelRequest(
        step=3,
        transcript=TranscriptRef(chain_id="a-chain", messages=2),
        new_messages=[Message(role="user", content=""), Message(role="user", content="signalled, so sent whole")],
        sent=sent,
    )


def _read_as(request: ModelRequest, read_as: type) -> object:
    """`request` as a worker reads it: written and read by the data converter every Stalwart process shares."""
    converter = DATA_CONVERTER.payload_converter
    [read] = converter.from_payloads(converter.to_payloads([request]), [read_as])
    return read


def test_an_older_model_activity_refuses_an_input_that_names_a_sent_message(older: ModuleType):
    with pytest.raises(ValidationError, match="new_messages.0.content"):
        _read_as(_request({0: "update-1"}), older.ModelRequest)


def test_an_older_model_activity_reads_an_input_that_names_no_message_as_before(older: ModuleType):
    read = _read_as(_request({}), older.ModelRequest)
    assert [m.content for m in read.new_messages] == ["", "signalled, so sent whole"]  # type: ignore[attr-defined]


def test_this_releases_model_activity_reads_a_named_message_as_empty_until_it_reads_its_text():
    read = _read_as(_request({0: "update-1"}), ModelRequest)
    assert read == _request({0: "update-1"})
