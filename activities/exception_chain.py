"""The exceptions an error was raised from or while handling, walked once each.

Two readers need the chain: the secrets check, which must see every message Temporal records in a failure, and the
diagnosis of a failed connection, which looks for the socket's error that the SDKs wrap two or more deep.
"""

from __future__ import annotations

from collections.abc import Iterator


def exception_chain(err: BaseException, *, past_from_none: bool = False) -> Iterator[BaseException]:
    """`err`, then its `__cause__` (or else its `__context__`), and so on; a cycle ends the walk.

    By default the chain is the one Python prints and Temporal records: `raise ... from None` hides the error it
    was handled in. `past_from_none=True` walks on past such a hiding, for diagnosis: a library that hides a
    socket's error behind its own still failed because of it.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        hidden = current.__suppress_context__ and not past_from_none
        current = current.__cause__ or (None if hidden else current.__context__)
