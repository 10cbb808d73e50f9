"""A stdio "MCP server" that starts and never answers: it writes its pid to the file named by its argument,
then reads its stdin forever without a word, so the MCP handshake never finishes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    Path(sys.argv[1]).write_text(str(os.getpid()))
    for _ in sys.stdin:
        pass
    time.sleep(3600)
