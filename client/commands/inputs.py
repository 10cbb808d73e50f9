"""What a command line gives a command: a goal or message (an argument, stdin or a file) and `--input` pairs."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from stalwart.contracts.errors import UnusablePath, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable


_T = TypeVar("_T")


def not_utf8(values: object) -> str | None:
    """The first argument with bytes that are not UTF-8 (Python holds them as lone surrogates), if any."""
    if isinstance(values, str | os.PathLike):
        text = os.fspath(values)
        return text if isinstance(text, str) and any("\udc80" <= c <= "\udcff" for c in text) else None
    if isinstance(values, dict):
        values = list(values.values())
    if isinstance(values, list | tuple):
        return next((found for value in values if (found := not_utf8(value)) is not None), None)
    return None


def parse_inputs(pairs: list[str]) -> dict[str, object]:
    from stalwart.client.agent_files import AgentFileError

    inputs: dict[str, object] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise AgentFileError(f"--input {pair!r}: write it as NAME=VALUE")
        try:
            inputs[name] = json.loads(value)
        except ValueError:  # not JSON, or a number longer than Python reads (4,300 digits): the text itself
            inputs[name] = value
    return inputs


async def text_of(args: argparse.Namespace, name: str) -> str:
    """The message or goal (`name`) of the command line: the argument, or all of standard input (`-`) or of --file."""
    given, path = getattr(args, name), args.file
    if (given is None) == (path is None):
        either = f"{name.upper()}, `-` to read it from standard input, or --file PATH"
        raise UsageError(f"give the {name} as one of {either}" if given is None else f"give either {either}, not both")
    if path is None and given != "-":
        return str(given)
    return await _off_the_loop(lambda: _read_text(path, name))


def _read_text(path: Path | None, name: str) -> str:
    """All of the file at `path` (None: standard input) as UTF-8 text, less the one newline that ends it."""
    from stalwart.contracts.agent import MAX_MESSAGE_CHARS

    source = "standard input" if path is None else str(path)
    most = 4 * MAX_MESSAGE_CHARS  # bytes: more than any agent takes, as UTF-8 spends at most 4 on a character
    data = bytearray()
    stream: BinaryIO
    with contextlib.ExitStack() as opened:
        if path is not None:
            try:
                stream = opened.enter_context(path.open("rb"))
            except OSError as err:  # --file names no file this process can read
                raise UnusablePath.of(err) from err
        elif sys.stdin is None:
            raise UsageError(f"there is no standard input to read the {name} from")
        else:
            stream = sys.stdin.buffer
            if sys.stdin.isatty():  # a person is to type it: say how to end it, rather than wait in silence
                print(f"reading the {name} from standard input; end it with Ctrl-D", file=sys.stderr, flush=True)
        while len(data) <= most:
            chunk = stream.read(1 << 20)
            data += chunk
            if len(chunk) < 1 << 20:  # read() stops short only at the end (Ctrl-D on a terminal, which ends it once)
                break
    if len(data) > most:
        raise UsageError(
            f"{source} holds over {most // 1_000_000} MB, more than any agent takes "
            f"([session] max_message_chars is at most {MAX_MESSAGE_CHARS:,} characters)"
        )
    try:
        text = data.decode()
    except UnicodeDecodeError as err:
        raise UsageError(
            f"{source} is not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start:,}); Temporal and the "
            "model take text only: convert it to UTF-8 first, e.g. `iconv -f ITS_ENCODING -t UTF-8`"
        ) from None
    return text.removesuffix("\r\n") if text.endswith("\r\n") else text.removesuffix("\n")


async def _off_the_loop(read: Callable[[], _T]) -> _T:
    """`read()` on a daemon thread of its own, so that Ctrl-C and SIGTERM end a command that waits on it.

    On the loop's thread, a read waiting on a terminal or a pipe holds off both (asyncio's Ctrl-C only cancels
    the command's task); under `asyncio.to_thread` it holds `asyncio.run`, which joins its executor's threads.
    """
    # Here, not at the top: the command line imports this module as it starts (`not_utf8`).
    import asyncio
    import threading
    from concurrent.futures import Future

    outcome: Future[_T] = Future()

    def work() -> None:
        if not outcome.set_running_or_notify_cancel():  # the command ended before the thread started
            return
        try:
            outcome.set_result(read())
        except Exception as err:
            outcome.set_exception(err)

    threading.Thread(target=work, name="stalwart-read", daemon=True).start()
    return await asyncio.wrap_future(outcome)
