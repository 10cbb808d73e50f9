"""Tools from Python functions: the schema the model sees comes from the signature and the docstring."""

from __future__ import annotations

from typing import Literal

import pytest

from stalwart.activities.tools import ToolArgumentsError, ToolContext, tool
from stalwart.activities.tools.builtin import calculator


@tool
def search(
    query: str, limit: int = 5, order: Literal["new", "old"] = "new", context: ToolContext | None = None
) -> list[str]:
    """Search the archive for documents.

    Longer explanation that the model also reads.

    Args:
        query: Words to look for.
        limit: How many results at most.
    """
    return [query] * limit


def test_description_is_the_docstring_before_args():
    assert search.description == "Search the archive for documents. Longer explanation that the model also reads."


def test_parameters_come_from_the_signature_with_their_docs():
    schema = search.spec().parameters
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"type": "string", "description": "Words to look for.", "title": "Query"}
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["order"]["enum"] == ["new", "old"]
    assert schema["additionalProperties"] is False


def test_a_tool_context_parameter_is_hidden_from_the_model():
    @tool
    def keyed(text: str, context: ToolContext) -> str:
        """Uses its idempotency key."""
        return context.idempotency_key

    assert list(keyed.spec().parameters["properties"]) == ["text"]


async def test_arguments_are_validated_against_the_signature():
    with pytest.raises(ToolArgumentsError, match="argument 'limit': Input should be a valid integer"):
        await search({"query": "x", "limit": "many"}, ToolContext(idempotency_key="k", call_id="c"))


@pytest.mark.parametrize(
    ("expression", "value"), [("(17 * 23) + 4", 395), ("2 ** 10", 1024), ("sqrt(16) + abs(-1)", 5.0), ("7 // 2", 3)]
)
async def test_calculator_evaluates_arithmetic(expression, value):
    assert await calculator({"expression": expression}, ToolContext(idempotency_key="k", call_id="c")) == str(value)


@pytest.mark.parametrize(
    "expression", ["__import__('os').system('true')", "open('/etc/passwd')", "[1, 2]", "9 ** 99999"]
)
async def test_calculator_refuses_anything_but_arithmetic(expression):
    with pytest.raises(ValueError, match=r"unsupported expression|is too large|not an arithmetic expression"):
        await calculator({"expression": expression}, ToolContext(idempotency_key="k", call_id="c"))
