"""Issue 10, defect 5: agent files that crashed the CLI, files `check` accepted but no worker can run, and
terminal control characters in model and tool output.

Each bad file must end `stalwart check` with one `error:` line naming the file and the fix (exit 2), never a
traceback.
"""

from __future__ import annotations

import contextlib
import io
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from stalwart.client import render
from stalwart.client.cli import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, main
from stalwart.contracts.messages import Usage
from stalwart.contracts.run import AgentResult, StepRecord

ESC = "\x1b"

BAD_FILES: dict[str, tuple[bytes | None, str]] = {
    # name: (content, or None for a directory; what the error must say)
    "not-utf8": (b'name = "a"\ndescription = "caf\xe9"\n', "not UTF-8"),
    "binary": (bytes(range(256)) * 4, "not UTF-8"),
    "utf16": ('name = "a"\n'.encode("utf-16"), "not UTF-8"),
    "nested-500-arrays": (b'name = "a"\nextra = { x = ' + b"[" * 500 + b"]" * 500 + b" }\n", "nest deeper"),
    "nested-500-tables": (b'name = "a"\n[extra]\nx = ' + b"{ a = " * 500 + b"1" + b" }" * 500 + b"\n", "nest deeper"),
    "nested-500-headers": (b'name = "a"\n[extra.' + b".".join([b"a"] * 500) + b"]\n", "nest deeper"),
    "directory": (None, "is a directory"),
    "unknown-provider": (b'name = "a"\nmodel = "opnai:gpt-4.1"\n', "provider 'opnai', which no worker knows"),
    "provider-without-model": (b'name = "a"\nmodel = "openai:"\n', "provider:model-name"),
    "compatible-without-base-url": (b'name = "a"\nmodel = "openai-compatible:llama3.1"\n', "base_url"),
    "base-url-not-http": (b'name = "a"\nmodel = "ollama:llama3.1"\nbase_url = "file:///etc"\n', "http://"),
    "stall-seconds-huge": (b'name = "a"\n[extra]\nstall_seconds = 1e300\n', "extra.stall_seconds"),
    "stall-seconds-inf": (b'name = "a"\n[extra]\nstall_seconds = inf\n', "extra.stall_seconds"),
    "first-token-nan": (b'name = "a"\n[extra]\nfirst_token_seconds = nan\n', "extra.first_token_seconds"),
    "first-token-text": (b'name = "a"\n[extra]\nfirst_token_seconds = "90"\n', "extra.first_token_seconds"),
    "first-token-zero": (b'name = "a"\n[extra]\nfirst_token_seconds = 0\n', "extra.first_token_seconds"),
    "stall-seconds-bool": (b'name = "a"\n[extra]\nstall_seconds = true\n', "extra.stall_seconds"),
    "max-seconds-inf": (b'name = "a"\n[budgets]\nmax_seconds = inf\n', "budgets.max_seconds"),
    "env-name-with-nul": (
        b'name = "a"\n[[mcp_servers]]\nname = "m"\ncommand = "x"\nenv = { A = "a\\u0000b" }\n',
        "NUL",
    ),
    "header-with-newline": (
        b'name = "a"\n[[mcp_servers]]\nname = "m"\nurl = "http://h/mcp"\nheaders = { A = "x\\r\\nEvil: 1" }\n',
        "line break",
    ),
    "api-key-env-not-a-name": (b'name = "a"\nmodel = "openai:gpt-4.1"\napi_key_env = "A B"\n', "api_key_env"),
    "empty": (b"", "`name` is required"),
    "base-url-bad-ipv6": (b'name = "a"\nmodel = "ollama:llama3.1"\nbase_url = "http://[::1"\n', "not a URL a client"),
    "base-url-port-too-big": (b'name = "a"\nmodel = "ollama:l"\nbase_url = "http://localhost:99999/v1"\n', "Port"),
    "base-url-space-in-host": (b'name = "a"\nmodel = "ollama:l"\nbase_url = "http://local host/v1"\n', "space"),
    "mcp-url-bad-port": (b'name = "a"\n[[mcp_servers]]\nname = "m"\nurl = "http://h:99999/mcp"\n', "Port"),
    "sub-agent-url-bad-ipv6": (b'name = "a"\n[[sub_agents]]\nname = "r"\nurl = "http://[::1/x"\n', "IPv6"),
    "header-not-ascii": (
        b'name = "a"\n[[mcp_servers]]\nname = "m"\nurl = "http://h/mcp"\nheaders = { X = "caf\xc3\xa9" }\n',
        "not ASCII",
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES), ids=list(BAD_FILES))
def test_agent_files_that_crashed_the_cli_end_in_one_clean_error(tmp_path, capsys, case):
    content, said = BAD_FILES[case]
    path = tmp_path / f"{case}.toml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    code = main(["check", str(path)])
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE, (out, err)
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert said in err, err
    assert str(path) in err


def test_a_missing_agent_file_is_one_clean_error(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere.toml")]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("error: ")


@pytest.mark.parametrize("kind", ["fifo", "device", "over-the-size-limit"])
def test_an_agent_file_that_is_a_pipe_a_device_or_huge_is_refused_without_reading_it_whole(tmp_path, capsys, kind):
    """A FIFO blocks its reader until someone writes (a `check` no signal stopped) and /dev/zero never ends."""
    from stalwart.client.agent_files import MAX_FILE_BYTES

    path = tmp_path / "agent.toml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path.write_bytes(b'name = "a"\ninstructions = "' + b"x" * MAX_FILE_BYTES + b'"\n')
    assert main(["check", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and "Traceback" not in err
    assert ("over 10 MB" if kind == "over-the-size-limit" else "not a regular file") in err


def test_an_unreadable_agent_file_is_one_clean_error(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp_path / "locked.toml"
    path.write_text('name = "a"\n')
    path.chmod(0)
    assert main(["check", str(path)]) == EXIT_USAGE
    assert "cannot be read" in capsys.readouterr().err


def _record(content: str, **more) -> StepRecord:
    now = datetime.now(UTC)
    return StepRecord(step=1, role="assistant", content=content, started_at=now, ended_at=now, **more)


HOSTILE = f"done{ESC}]0;pwned{chr(7)}{ESC}[2J{ESC}[31mred\r\x9b1Aover\nnext\tcol"


def test_terminal_control_characters_in_model_and_tool_output_are_escaped():
    out = io.StringIO()
    result = AgentResult(
        answer=HOSTILE, stop_reason="done", steps=[_record(HOSTILE)], usage=Usage(), elapsed_seconds=1.0, error=HOSTILE
    )
    render.print_result(result, None, out)
    line = render.LiveLine(out)
    line.delta(2, HOSTILE)
    line.step(_record(HOSTILE))
    tool = StepRecord(
        step=3, role="tool", tool_name="t", arguments={"a": HOSTILE}, result=HOSTILE, started_at=datetime.now(UTC)
    )
    line.step(tool)
    chat = render.ChatView(out, out, live=True)
    chat.delta(4, HOSTILE)
    chat.finish(result)
    shown = out.getvalue()
    assert not any(char in shown for char in (ESC, "\x07", "\r", "\x9b")), repr(shown)
    assert "\\x1b[2J" in shown and "\\x07" in shown and "\\x0d" in shown
    assert "over\nnext\tcol" in shown, "newline and tab pass"


def test_marks_that_reorder_text_are_escaped_so_a_line_shows_what_it_says():
    # U+202E (right-to-left override) shows "txt.exe" as "exe.txt"; the isolates and marks reorder text as well.
    reordering = "run \u202etxt.exe\u202c and \u2066a\u2069 \u200f!"  # U+200F, a direction mark, passes
    out = io.StringIO()
    render.print_result(
        AgentResult(answer=reordering, stop_reason="done", steps=[], usage=Usage(), elapsed_seconds=1.0), None, out
    )
    shown = out.getvalue()
    assert not any(mark in shown for mark in ("\u202e", "\u202c", "\u2066", "\u2069")), repr(shown)
    assert "run \\u202etxt.exe\\u202c and \\u2066a\\u2069 \u200f!" in shown


def test_the_cli_escapes_control_characters_in_everything_it_prints(tmp_path: Path, capsys):
    path = tmp_path / f"agent{ESC}[2J.toml"
    path.write_text('name = "a"\n')
    assert main(["check", str(path)]) == EXIT_OK
    err = capsys.readouterr().err
    assert ESC not in err and "agent\\x1b[2J.toml" in err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"[" * 100_000, "nests too deeply"),
        (b"{not json", "not JSON"),
        (b'{"a": 1}', "not a workflow history"),
        (b'{"workflowId": "x", "history": {"events": [{"eventType": 12345}]}}', "not a workflow history"),
    ],
    ids=["not-utf8", "nested", "not-json", "other-json", "bad-events"],
)
def test_replay_of_a_file_that_is_not_a_history_is_one_clean_error(tmp_path, capsys, content, said):
    """A neighbour of the agent-file crashes: `stalwart replay` read its files the same unguarded way."""
    path = tmp_path / "run.000.json"
    path.write_bytes(content)
    assert main(["replay", str(path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and said in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    "argv",
    [["show", "b\udcff"], ["run", "agents/calculator.toml", "a\udcff"], ["runs", "--query", 'AgentName="\udcff"']],
    ids=["run-id", "goal", "query"],
)
def test_an_argument_that_is_not_utf8_is_one_clean_error(capsys, argv):
    """Bytes that are not UTF-8 reach Python as lone surrogates, which no payload or RPC can carry."""
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "is not UTF-8 text" in err and "Traceback" not in err


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "[::1"])
def test_an_address_that_is_not_host_and_port_is_one_clean_error(capsys, address):
    assert main(["show", "some-run", "--address", address]) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert err.startswith(f"error: the Temporal address {address!r} is not HOST:PORT") and "Traceback" not in err


def test_a_dev_server_folder_that_cannot_be_made_is_one_clean_error(capsys):
    assert main(["run", "--dev", "--data-dir", "/dev/null/x", "agents/calculator.toml", "2+2"]) == EXIT_USAGE
    assert capsys.readouterr().err.splitlines()[-1] == "error: /dev/null/x: Not a directory"


def test_an_input_number_longer_than_python_reads_is_kept_as_text():
    from stalwart.client.commands.inputs import parse_inputs

    assert parse_inputs(["n=" + "9" * 5000, "m=12"]) == {"n": "9" * 5000, "m": 12}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["run", "agents/calculator.toml", "2+2", "--tools", "my_tools"], "--tools loads tools into the embedded"),
        (["runs", "--limit", "-1"], "is not a whole number of 1 or more"),
        (["replay", "--since", "7d"], "error: give history files or folders, or --query\n"),
        (["replay", "some.json", "--since", "7d"], "--since chooses among the runs of --query"),
        (["replay", "some.json", "--limit", "5"], "--limit chooses among the runs of --query"),
    ],
    ids=["tools-without-dev", "runs-limit", "replay-nothing", "replay-since-with-files", "replay-limit-with-files"],
)
def test_options_that_cannot_do_anything_are_refused_with_what_to_do(capsys, argv, said):
    with pytest.raises(SystemExit) if argv[0] == "runs" else contextlib.nullcontext():
        assert main(argv) == EXIT_USAGE
    assert said in capsys.readouterr().err
