"""Tools from Python functions: the schema the model sees comes from the signature and the docstring."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from stalwart.activities.tools import ToolArgumentsError, ToolContext, tool
from stalwart.activities.tools.builtin import INLINE_MAX_CHARS, calculator
from stalwart.activities.tools.registry import ToolDefinitionError
from stalwart.workers.plugin import default_tool_registry


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


@pytest.mark.parametrize(
    "expression",
    ["(10 ** 1000) ** 1000", "((2 ** 100) ** 100) ** 100", "(10 ** 4000) * (10 ** 4000)", "(7 ** 5000) * 7 ** 5000"],
)
async def test_calculator_refuses_a_product_or_power_too_large_to_return_before_computing_it(expression):
    """Computed, these hold the worker's CPU and its GIL for minutes: every other activity of the worker waits."""
    with pytest.raises(ValueError, match=r"would have about [\d,]+ digits, over the limit of 4,214; work with floats"):
        await calculator({"expression": expression}, ToolContext(idempotency_key="k", call_id="c"))


@pytest.mark.parametrize(("expression", "digits"), [("3 ** 8000", 3817), ("(10 ** 2000) * (10 ** 2000)", 4001)])
async def test_calculator_returns_integers_up_to_the_longest_python_prints(expression, digits):
    result = await calculator({"expression": expression}, ToolContext(idempotency_key="k", call_id="c"))
    assert len(result) == digits


async def test_calculator_says_a_float_overflow_is_too_large_and_how_to_work_around_it():
    with pytest.raises(ValueError, match="too large for a float; work with logarithms"):
        await calculator({"expression": "9.0 ** 9999"}, ToolContext(idempotency_key="k", call_id="c"))


async def test_calculator_works_out_a_short_expression_without_a_thread(monkeypatch):
    """A fast tool call would spend more handing a short expression to a thread than working it out."""

    async def no_thread(*args, **kwargs):
        raise AssertionError("a short expression went to a thread")

    monkeypatch.setattr("asyncio.to_thread", no_thread)
    assert await calculator({"expression": "(17 * 23) + 4"}, ToolContext(idempotency_key="k", call_id="c")) == "395"


async def test_calculator_works_out_a_long_expression_in_a_thread(monkeypatch):
    """A long one may take milliseconds: the worker's event loop does not wait for it."""
    threaded = []
    real = asyncio.to_thread

    async def counted(function, *args, **kwargs):
        threaded.append(args)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr("asyncio.to_thread", counted)
    expression = " + ".join(["1"] * (INLINE_MAX_CHARS // 4 + 1))
    result = await calculator({"expression": expression}, ToolContext(idempotency_key="k", call_id="c"))
    assert (result, threaded) == (str(INLINE_MAX_CHARS // 4 + 1), [(expression,)])


def test_a_lambda_is_refused_saying_to_name_it():
    with pytest.raises(ToolDefinitionError, match="'<lambda>': a lambda has no name of its own") as refused:
        tool(lambda query: query)
    assert '@tool(name="...")' in str(refused.value)


@pytest.mark.parametrize("name", ["has space!", "kb.search", "", "x" * 65, "café"])
def test_a_name_model_providers_refuse_is_refused_where_the_tool_is_defined(name):
    with pytest.raises(ToolDefinitionError, match="1-64 letters, digits, '_' or '-'") as refused:
        tool(name=name)(lambda: 1)
    assert repr(name) in str(refused.value) and '@tool(name="...")' in str(refused.value)


@pytest.mark.parametrize("name", ["get-weather_2", "_private", "x" * 64])
def test_a_name_of_up_to_64_letters_digits_underscores_and_dashes_is_taken(name):
    assert tool(name=name)(lambda: 1).name == name


def test_every_built_in_tool_has_a_name_model_providers_take():
    assert default_tool_registry().names() == ["calculator", "echo", "http_get", "read_file"]


class Service:
    def __init__(self) -> None:
        self.factor = 2

    def times(self, n: int) -> int:
        """Multiply by the service's factor."""
        return n * self.factor


def test_a_method_taken_from_its_class_is_refused_saying_to_pass_an_instances():
    with pytest.raises(ToolDefinitionError, match="parameter `self`") as refused:
        tool(Service.times)
    assert "tool(instance.times)" in str(refused.value)


def test_an_instances_method_is_a_tool_without_self():
    spec = tool(Service().times).spec()
    assert (spec.name, list(spec.parameters["properties"])) == ("times", ["n"])
