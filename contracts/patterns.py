"""Regular expressions from an agent file (`give_up_patterns`, an output schema's `pattern`), run in linear time.

They are matched inside the workflow task against text the model writes. Python's `re` backtracks: `(a+)+$`
against 26 a's and a `!` takes seconds, holds the worker's GIL and stalls every run on the worker. Rust's regex
engine (pydantic-core's) does not backtrack, so a match takes time linear in the text and gives the same answer on
every replay. It has no lookarounds and no backreferences, the features that need backtracking: a pattern with one
is refused where the agent is validated, never run some other way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from pydantic_core import SchemaError, SchemaValidator, ValidationError, core_schema

from stalwart.contracts.errors import UsageError

LINEAR_FIX = (
    "rewrite it without lookarounds or backreferences: patterns run in linear time so a reply cannot stall the worker"
)


def pattern_problem(pattern: object, *, ignore_case: bool = False) -> str | None:
    """Why `pattern` cannot be searched in linear time (not text, not a regular expression, or one that needs
    backtracking), phrased to follow the pattern in an error; None when it can."""
    if not isinstance(pattern, str):
        return f"is not a regular expression: it should be text, not {type(pattern).__name__}"
    try:
        _validator(_flagged(pattern, ignore_case))
    except SchemaError as err:
        reason = _reason(err)
    else:
        return None
    if "size limit" in reason:
        return f"is too large for the linear-time regex engine ({reason}); make its counted repetitions smaller"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return f"is not a regular expression ({reason})"
    return f"cannot run on the linear-time regex engine ({reason}); {LINEAR_FIX}"


class PatternError(UsageError, ValueError):
    """A pattern that reached matching without validation (an agent spec built around the checks) and that the
    linear-time engine cannot run."""


def search(pattern: str, text: str, *, ignore_case: bool = False) -> bool:
    """Whether `pattern` matches anywhere in `text` (as `re.search` and JSON Schema's `pattern` say), in time linear
    in the text; `PatternError` when the pattern cannot run that way (`pattern_problem` says why before a run)."""
    return _searcher(pattern, ignore_case)(text)


@functools.lru_cache(maxsize=256)
def _searcher(pattern: str, ignore_case: bool) -> Callable[[str], bool]:
    try:
        validator = _validator(_flagged(pattern, ignore_case))
    except SchemaError as err:
        problem = pattern_problem(pattern, ignore_case=ignore_case) or _reason(err)
        raise PatternError(f"the pattern {pattern!r} {problem}") from None

    def found(text: str) -> bool:
        try:
            validator.validate_python(text)
        except ValidationError:
            return False
        return True

    return found


@functools.lru_cache(maxsize=256)
def _validator(pattern: str) -> SchemaValidator:
    """pydantic-core's string validator with `pattern` on its Rust engine: a pattern is a search (`is_match`), and
    the engine is named so that pydantic never falls back to Python's `re` for a pattern Rust refuses."""
    return SchemaValidator(core_schema.str_schema(pattern=pattern, regex_engine="rust-regex"))


def _flagged(pattern: str, ignore_case: bool) -> str:
    """`pattern` with Rust's inline case-insensitive flag, which holds to the end of the pattern (as Python's
    `re.IGNORECASE` does) and leaves any flag the pattern sets itself in force."""
    return f"(?i){pattern}" if ignore_case else pattern


def _reason(err: SchemaError) -> str:
    """The engine's own words for a refused pattern: its `error:` line (`look-around ... is not supported`)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    said = [line.removeprefix("error:").strip() for line in lines if line.startswith("error:")]
    if said:
        return said[-1]
    return lines[-1].removeprefix("SchemaError:").strip() if lines else "the engine refuses it"
