"""Typed output: the JSON Schema subset a run validates an agent's answer against, as pure functions.

The answer is validated in the workflow itself (deterministic, no activity round trip), and no JSON Schema library
is a dependency, so this module checks the keywords that say what a value is: `type` (and OpenAPI's `nullable`),
`enum`, `const`, `properties`, `required`, `additionalProperties`, `items`, `prefixItems`, `anyOf`, `oneOf`,
`allOf`, `not`, `$ref` to the schema's own `$defs`, and the bounds (`minimum` ... `multipleOf`, `minLength`,
`maxLength`, `pattern`, `minItems`, `maxItems`, `uniqueItems`, `minProperties`, `maxProperties`). That covers what
pydantic writes for a model. Annotations (`title`, `description`, `default`, `format` ...) are read and ignored,
as JSON Schema says; a keyword that is none of these but close to one (`propertes`) is refused as a misspelling.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import reprlib
import sys
import typing
from collections.abc import Hashable
from typing import Any, TypeGuard

from pydantic import PydanticUserError, TypeAdapter

from stalwart.contracts import patterns
from stalwart.contracts.errors import UsageError

JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_VALUES = ("items", "not", "additionalItems", "contains", "propertyNames", "if", "then", "else")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_ANNOTATIONS = (
    "$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$dynamicRef", "$vocabulary", "title", "description",
    "default", "examples", "format", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    "contentSchema", "discriminator", "unevaluatedProperties", "unevaluatedItems", "dependentRequired",
    "dependencies", "maxContains", "minContains", "strict",
)  # fmt: skip
KEYWORDS = frozenset(
    (
        "type", "nullable", "enum", "const", "required", "additionalProperties", "uniqueItems", "pattern", "$ref",
        *_SCHEMA_LISTS, *_SCHEMA_MAPS, *_SCHEMA_VALUES, *_COUNTS, *_BOUNDS, *_ANNOTATIONS,
    )
)  # fmt: skip
MAX_SCHEMA_DEPTH = 64
MAX_ERRORS = 20
"""The most validation errors told to the model (and in a run's error) at once: enough to fix an answer."""


class OutputTypeError(UsageError, TypeError):
    """A type given as an agent's output that pydantic builds no JSON Schema for: give a model, a dataclass, or
    another type pydantic validates."""


_TYPED_DICT = (
    "a TypedDict" if sys.version_info >= (3, 12) else "a TypedDict (from typing_extensions before Python 3.12)"
)


def schema_of(tp: Any) -> dict[str, Any]:
    """The JSON Schema of a type pydantic can validate, or `OutputTypeError` saying why there is none."""
    check_output_type(tp)
    try:
        return TypeAdapter(tp).json_schema()
    except (PydanticUserError, TypeError, ValueError, NameError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise OutputTypeError(
            f"{tp!r} cannot be an agent's output: pydantic builds no JSON Schema for it ({first}); use a pydantic "
            f"model, a dataclass, {_TYPED_DICT} or a plain type such as `list[int]`"
        ) from None


def check_output_type(tp: Any) -> None:
    """Raise `OutputTypeError` unless `tp` is a type (a class, `None`, or a `typing` form such as `list[int]`).

    Pydantic takes more than types: a function gives the schema of its parameters (and validating "against" it
    calls it), a string is read as a forward reference, and a dataclass instance (a `@tool`) raises a bare
    `AttributeError`. None of these says what the answer is, so they are refused before pydantic sees them."""
    if tp is None or isinstance(tp, type) or typing.get_origin(tp) is not None:
        return
    if type(tp).__module__ in ("typing", "typing_extensions", "types"):  # `Any`, a `NewType`, a `TypeVar` ...
        return
    named = getattr(tp, "__qualname__", None) or getattr(tp, "__name__", None)
    shown = f"`{named}`" if callable(tp) and isinstance(named, str) else reprlib.repr(tp)
    instead = "`output=Refund`"
    if isinstance(getattr(tp, "name", None), str) and callable(getattr(tp, "spec", None)) and callable(tp):
        shown, why = f"`{tp.name}`", "it is a @tool, which the model calls (list it in `tools=`)"
    elif callable(tp):
        why = "it is a function, and pydantic would give its parameters' schema, not an answer's"
    elif isinstance(tp, str):
        why = "it is a string, and a type is not looked up by its name"
    else:
        why, instead = f"it is an instance of {type(tp).__name__}, not a type", f"`output={type(tp).__name__}`"
    raise OutputTypeError(
        f"{shown} cannot be an agent's output: {why}; give the type of the answer itself ({instead}: a pydantic "
        f"model, a dataclass, {_TYPED_DICT}, or a type such as `list[int]`)"
    )


# -- is it a schema? ------------------------------------------------------------


def schema_problems(schema: Any, *, longest: int | None = None) -> list[str]:
    """What makes `schema` no JSON Schema this module can validate against (empty when it is one)."""
    if not isinstance(schema, dict):
        return [f"a schema is a table (JSON object), not {_kind(schema)}"]
    try:
        size = len(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError) as err:
        return [f"it holds a value JSON cannot write ({err})"]
    except RecursionError:
        return [f"it nests deeper than {MAX_SCHEMA_DEPTH} levels"]
    if longest is not None and size > longest:
        return [f"it is {size:,} characters of JSON, over the {longest:,} an output schema may take"]
    problems: list[str] = []
    _check(schema, "#", schema, problems, depth=0)
    if not problems and (loop := _ref_cycle(schema)):
        problems.append(
            f"{' -> '.join(f'`{at}`' for at in loop)} is a loop: each schema there applies to the same value as the "
            "next (by `$ref`, `allOf`, `anyOf`, `oneOf` or `not`), so checking an answer against it never ends; a "
            "recursive schema goes down through an object's `properties` or an array's `items` (as a tree's "
            "`children` do), so point the `$ref` at a schema that says what the value is"
        )
    return problems[:MAX_ERRORS]


def _check(schema: Any, at: str, root: dict[str, Any], problems: list[str], depth: int) -> None:
    if isinstance(schema, bool):
        return  # `true` accepts anything, `false` nothing
    if not isinstance(schema, dict):
        problems.append(f"`{at}` should be a schema (a table), not {_kind(schema)}")
        return
    if depth > MAX_SCHEMA_DEPTH:
        problems.append(f"`{at}` nests deeper than {MAX_SCHEMA_DEPTH} levels")
        return
    for key in schema:
        if key not in KEYWORDS and not key.startswith("x-"):
            close = difflib.get_close_matches(key, KEYWORDS, n=1, cutoff=0.8)
            if close:
                problems.append(f"`{at}`: `{key}` is no JSON Schema keyword; did you mean `{close[0]}`?")
    kinds = schema.get("type")
    if kinds is not None:
        listed = kinds if isinstance(kinds, list) else [kinds]
        for kind in listed:
            if kind not in JSON_TYPES:
                close = difflib.get_close_matches(str(kind), JSON_TYPES, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                problems.append(f"`{at}.type` = {kind!r} is no JSON type; {hint}use one of {', '.join(JSON_TYPES)}")
    for key in ("enum", "required", *_SCHEMA_LISTS):
        if key in schema and not isinstance(schema[key], list):
            problems.append(f"`{at}.{key}` should be a list, not {_kind(schema[key])}")
    if isinstance(schema.get("required"), list) and not all(isinstance(name, str) for name in schema["required"]):
        problems.append(f"`{at}.required` should list property names (strings)")
    for key in _COUNTS:
        value = schema.get(key)
        if key in schema and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            problems.append(f"`{at}.{key}` should be a whole number, at least 0, not {value!r}")
    for key in _BOUNDS:
        value = schema.get(key)
        draft4 = key.startswith("exclusive") and isinstance(value, bool)  # draft 4's boolean form
        if key in schema and not draft4 and not _number(value):
            problems.append(f"`{at}.{key}` should be a number, not {value!r}")
    if "multipleOf" in schema and _number(schema["multipleOf"]) and schema["multipleOf"] <= 0:
        problems.append(f"`{at}.multipleOf` should be above 0")
    for key in ("nullable", "uniqueItems"):
        if key in schema and not isinstance(schema[key], bool):
            problems.append(f"`{at}.{key}` should be true or false, not {schema[key]!r}")
    if "pattern" in schema and (problem := patterns.pattern_problem(schema["pattern"])):
        problems.append(f"`{at}.pattern` = {schema['pattern']!r} {problem}")
    keyed = schema.get("patternProperties")
    for key in keyed if isinstance(keyed, dict) else ():
        if problem := patterns.pattern_problem(key):
            problems.append(f"`{at}.patternProperties` key {key!r} {problem}")
    if "$ref" in schema and _resolve(schema["$ref"], root) is None:
        problems.append(
            f"`{at}.$ref` = {schema['$ref']!r} points nowhere in the schema; refer to `#/$defs/Name` of this schema"
        )
    for key in _SCHEMA_LISTS:
        in_list = schema.get(key)
        for n, item in enumerate(in_list if isinstance(in_list, list) else []):
            _check(item, f"{at}.{key}[{n}]", root, problems, depth + 1)
    for key in _SCHEMA_MAPS:
        if key not in schema:
            continue
        if not isinstance(schema[key], dict):
            problems.append(f"`{at}.{key}` should be a table of schemas, not {_kind(schema[key])}")
            continue
        for name, item in schema[key].items():
            _check(item, f"{at}.{key}.{name}", root, problems, depth + 1)
    for key in (*_SCHEMA_VALUES, "additionalProperties"):
        if key in schema and not (key == "items" and isinstance(schema[key], list)):
            _check(schema[key], f"{at}.{key}", root, problems, depth + 1)
    if key := "items" if isinstance(schema.get("items"), list) else "":  # draft 4's tuple form
        for n, item in enumerate(schema[key]):
            _check(item, f"{at}.items[{n}]", root, problems, depth + 1)


_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_VALUES = ("not", "if", "then", "else")
"""The keywords whose schemas apply to the value itself, not to a part of it (as `properties` and `items` do)."""


def _ref_cycle(root: dict[str, Any]) -> list[str] | None:
    """A loop of schemas that apply to the same value, each through the next (`$ref`, `allOf`, `anyOf` ...), as
    the places it passes, back to its start; None when there is none.

    Validating against such a loop never reaches a keyword that looks at the value, so it recurses until Python
    stops it; a recursive schema through `properties` or `items` descends into a smaller value at each turn and
    ends with the answer."""
    places: dict[int, str] = {}
    edges: dict[int, list[Any]] = {}
    todo: list[tuple[Any, str, int]] = [(root, "#", 0)]
    while todo:  # every schema in the document, each with the schemas that apply to the same value as it
        schema, at, depth = todo.pop()
        if not isinstance(schema, dict) or id(schema) in places or depth > MAX_SCHEMA_DEPTH:
            continue
        places[id(schema)] = at
        in_place = [_resolve(schema["$ref"], root)] if "$ref" in schema else []
        in_place += [item for key in _IN_PLACE_LISTS for item in _listed(schema.get(key))]
        in_place += [schema.get(key) for key in _IN_PLACE_VALUES]
        if isinstance(schema.get("dependentSchemas"), dict):
            in_place += schema["dependentSchemas"].values()
        edges[id(schema)] = [item for item in in_place if isinstance(item, dict)]
        for key, item in _subschemas(schema):
            todo.append((item, f"{at}/{key}", depth + 1))
    done: set[int] = set()
    for start in list(edges):  # depth first along the in-place edges; a schema met again on the path is a loop
        path: list[int] = []
        stack: list[tuple[int, list[Any]]] = [(start, list(edges[start]))]
        while stack:
            node, following = stack[-1]
            if not path or path[-1] != node:
                path.append(node)
            if not following:
                done.add(node)
                stack.pop()
                path.pop()
                continue
            nxt = id(following.pop())
            if nxt in path:
                loop = path[path.index(nxt) :] + [nxt]
                return [places.get(node_id, "?") for node_id in loop]
            if nxt not in done and nxt in edges:
                stack.append((nxt, list(edges[nxt])))
    return None


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _subschemas(schema: dict[str, Any]) -> list[tuple[str, Any]]:
    """Each schema written inside `schema`, with its place as a JSON pointer step (`properties/name`)."""
    found: list[tuple[str, Any]] = []
    for key in _SCHEMA_LISTS:
        found += [(f"{key}/{n}", item) for n, item in enumerate(_listed(schema.get(key)))]
    if isinstance(schema.get("items"), list):
        found += [(f"items/{n}", item) for n, item in enumerate(schema["items"])]
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            found += [(f"{key}/{_pointer(name)}", item) for name, item in schema[key].items()]
    found += [(key, schema[key]) for key in (*_SCHEMA_VALUES, "additionalProperties") if key in schema]
    return found


def _pointer(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _resolve(ref: Any, root: dict[str, Any]) -> Any:
    """The schema a local `$ref` (`#`, `#/$defs/Name`, any JSON pointer into the schema) points to, or None."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    target: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return None
    return target if isinstance(target, dict | bool) else None


# -- does the answer fit it? ------------------------------------------------------


def answer_value(text: str) -> tuple[Any, str | None]:
    """The JSON value an answer's text holds (a ```json fence around it is taken off), or why it holds none."""
    body = text.strip()
    fenced = re.fullmatch(r"```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1).strip()
    try:
        return json.loads(body, parse_constant=_no_constant, parse_float=_finite), None
    except ValueError as err:
        if not isinstance(err, json.JSONDecodeError):
            return None, f"the answer is not JSON: {err}"
        shown = body[:60] + ("..." if len(body) > 60 else "")
        return None, f"the answer is not JSON ({err.msg} at line {err.lineno} column {err.colno}): {shown!r}"
    except RecursionError:
        return None, "the answer's JSON nests too deeply to read"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number; JSON has no NaN or infinity")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number a program can read back")
    return value


def validation_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Where and how `value` (a JSON value) breaks `schema`: at most MAX_ERRORS, empty when it is valid."""
    errors: list[str] = []
    try:
        _validate(value, schema, "$", schema, errors)
    except RecursionError:
        errors.append("the answer nests too deeply to validate")
    return errors[:MAX_ERRORS]


def is_valid(value: Any, schema: Any, root: dict[str, Any]) -> bool:
    errors: list[str] = []
    _validate(value, schema, "$", root, errors)
    return not errors


def _validate(value: Any, schema: Any, at: str, root: dict[str, Any], errors: list[str]) -> None:
    if len(errors) >= MAX_ERRORS:
        return
    if schema is True or schema == {}:
        return
    if schema is False:
        errors.append(f"`{at}`: no value is allowed here")
        return
    if "$ref" in schema:
        target = _resolve(schema["$ref"], root)
        if target is not None:
            _validate(value, target, at, root, errors)
    if value is None and schema.get("nullable") is True:
        return
    kinds = schema.get("type")
    if kinds is not None:
        listed = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is_type(value, kind) for kind in listed):
            errors.append(f"`{at}`: expected {' or '.join(map(str, listed))}, got {_kind(value)} {_shown(value)}")
            return
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        errors.append(f"`{at}`: {_shown(value)} is not one of {_shown(schema['enum'])}")
    if "const" in schema and not _same(value, schema["const"]):
        errors.append(f"`{at}`: should be {_shown(schema['const'])}, not {_shown(value)}")
    for sub in schema.get("allOf") or ():
        _validate(value, sub, at, root, errors)
    if schema.get("anyOf") and not any(is_valid(value, sub, root) for sub in schema["anyOf"]):
        errors.append(f"`{at}`: {_shown(value)} matches none of the {len(schema['anyOf'])} allowed shapes")
    if schema.get("oneOf"):
        matched = sum(is_valid(value, sub, root) for sub in schema["oneOf"])
        if matched != 1:
            errors.append(f"`{at}`: {_shown(value)} matches {matched} of the shapes of `oneOf`, not exactly one")
    if "not" in schema and is_valid(value, schema["not"], root):
        errors.append(f"`{at}`: {_shown(value)} matches a shape that is not allowed")
    if isinstance(value, str):
        _validate_string(value, schema, at, errors)
    elif _number(value):
        _validate_number(value, schema, at, errors)
    elif isinstance(value, list):
        _validate_array(value, schema, at, root, errors)
    elif isinstance(value, dict):
        _validate_object(value, schema, at, root, errors)


def _validate_string(value: str, schema: dict[str, Any], at: str, errors: list[str]) -> None:
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"`{at}`: {len(value)} characters, fewer than the {schema['minLength']} required")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"`{at}`: {len(value)} characters, more than the {schema['maxLength']} allowed")
    if "pattern" in schema and not matches(schema["pattern"], value):
        errors.append(f"`{at}`: {_shown(value)} does not match the pattern {schema['pattern']!r}")


def _validate_number(value: float, schema: dict[str, Any], at: str, errors: list[str]) -> None:
    low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"`{at}`: {_shown(value)} is less than the minimum {schema['minimum']}")
    elif low is True and "minimum" in schema and value == schema["minimum"]:  # draft 4: `minimum` made exclusive
        errors.append(f"`{at}`: {_shown(value)} should be more than {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"`{at}`: {_shown(value)} is more than the maximum {schema['maximum']}")
    elif high is True and "maximum" in schema and value == schema["maximum"]:
        errors.append(f"`{at}`: {_shown(value)} should be less than {schema['maximum']}")
    if _number(low) and value <= low:
        errors.append(f"`{at}`: {_shown(value)} should be more than {low}")
    if _number(high) and value >= high:
        errors.append(f"`{at}`: {_shown(value)} should be less than {high}")
    step = schema.get("multipleOf")
    if _number(step) and step > 0:
        quotient = value / step
        if not (math.isfinite(quotient) and abs(quotient - round(quotient)) <= 1e-9 * max(1.0, abs(quotient))):
            errors.append(f"`{at}`: {_shown(value)} is not a multiple of {step}")


def _validate_array(value: list[Any], schema: dict[str, Any], at: str, root: dict[str, Any], errors: list[str]) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"`{at}`: {len(value)} items, fewer than the {schema['minItems']} required")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"`{at}`: {len(value)} items, more than the {schema['maxItems']} allowed")
    if schema.get("uniqueItems") is True and (repeated := _first_repeated(value)) is not None:
        errors.append(f"`{at}`: {_shown(repeated[0])} is there more than once; items must be unique")
    items = schema.get("items")
    prefix = schema.get("prefixItems") or (items if isinstance(items, list) else [])
    for n, item in enumerate(value):
        if n < len(prefix):
            _validate(item, prefix[n], f"{at}[{n}]", root, errors)
        elif isinstance(items, dict | bool) and not (isinstance(items, bool) and prefix == [] and items):
            _validate(item, items, f"{at}[{n}]", root, errors)


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], at: str, root: dict[str, Any], errors: list[str]
) -> None:
    properties = schema.get("properties") or {}
    missing = [name for name in schema.get("required") or () if name not in value]
    if missing:
        errors.append(f"`{at}`: missing required propert{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}")
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(f"`{at}`: {len(value)} properties, fewer than the {schema['minProperties']} required")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(f"`{at}`: {len(value)} properties, more than the {schema['maxProperties']} allowed")
    keyed = schema.get("patternProperties") or {}
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        where = f"{at}.{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"{at}[{json.dumps(name)}]"
        matched = [sub for pattern, sub in keyed.items() if matches(pattern, name)]
        if name in properties:
            _validate(item, properties[name], where, root, errors)
        for sub in matched:
            _validate(item, sub, where, root, errors)
        if name not in properties and not matched:
            if extra is False:
                allowed = ", ".join(properties) or "none"
                errors.append(f"`{at}`: property {name!r} is not allowed (allowed: {allowed})")
            elif isinstance(extra, dict):
                _validate(item, extra, where, root, errors)


def matches(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text`, as JSON Schema's `pattern` says, in time linear in the text
    (`contracts.patterns`): no answer, however long or crafted, holds the workflow task in a catastrophic match."""
    return patterns.search(pattern, text)


# -- what a provider may be told -------------------------------------------------


NOT_STRICT = frozenset(
    ("minLength", "maxLength", "allOf", "not", "oneOf", "if", "then", "else", "dependentRequired", "dependentSchemas")
)
"""Keywords OpenAI's strict mode refuses: a schema with one is sent without `strict` (the run still enforces them)."""


def strict_compatible(schema: dict[str, Any]) -> bool:
    """Whether OpenAI's strict structured outputs take `schema` as it is: every object closed
    (`additionalProperties: false`) with all its properties required, a root that is an object, and no keyword
    strict mode refuses (`NOT_STRICT`)."""
    if schema.get("type") != "object":
        return False
    todo: list[Any] = [schema]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if NOT_STRICT & set(item):
            return False
        if item.get("type") == "object" or "properties" in item:
            properties = item.get("properties") or {}
            if item.get("additionalProperties") is not False or set(item.get("required") or ()) != set(properties):
                return False
        for key in (*_SCHEMA_LISTS, *_SCHEMA_VALUES, "additionalProperties"):
            todo.append(item.get(key))
        for key in _SCHEMA_MAPS:
            if isinstance(item.get(key), dict):
                todo.extend(item[key].values())
    return True


# -- words -------------------------------------------------------------------------


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: Any, kind: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return _number(value) and (isinstance(value, int) or float(value).is_integer())
    if kind == "number":
        return _number(value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return False


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    return bool(a == b)


def _first_repeated(items: list[Any]) -> tuple[Any] | None:
    """The first item `_same` as an earlier one, wrapped in a 1-tuple (so a repeated `null` is told from none).

    One set lookup per item (`_key`), not a comparison with every earlier item: the workflow validates the answer,
    and a quadratic check of a few thousand items outlasts the SDK's deadlock detector on every attempt."""
    seen: set[Any] = set()
    try:
        for item in items:
            key = _key(item)
            if key in seen:
                return (item,)
            seen.add(key)
    except TypeError:  # an item no key fits (not JSON): compare it the slow way
        for n, item in enumerate(items):
            if any(_same(item, other) for other in items[:n]):
                return (item,)
    return None


class _Unequal:
    """The key of a value `_same` finds equal to nothing, not even itself (NaN): a new one each time, equal to none."""


def _key(value: Any) -> Hashable:
    """A hashable key equal for two values exactly when `_same` finds them equal."""
    if isinstance(value, bool):
        return (bool, value)
    if _number(value):
        return ("number", value) if value == value else _Unequal()  # 1 and 1.0 are one key; NaN equals nothing
    if isinstance(value, list):
        return (type(value), tuple(_key(item) for item in value))
    if isinstance(value, dict):
        return (type(value), frozenset((name, _key(item)) for name, item in value.items()))
    return (type(value), value)  # TypeError when unhashable


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
