"""Issue 43, item 6: an error event in the middle of a stream is reported as what it is, through the real SDKs.

The stream began with HTTP 200, then the provider sent its error event (Anthropic's `event: error`, an OpenAI
`error` chunk or Responses `error` event). Anthropic's SDK raises that as a status error of the stream's own status,
which read "anthropic answered 200 (Overloaded)". Each is now "reported an error while streaming", with its type,
and is retried or not by that type.
"""

from __future__ import annotations

import logging

from flavors import Flavor, agent_for, run_agent

from wire_server.script import Broken, Reply

ANSWER = "The answer is 395, as the tool said."


async def test_an_overloaded_event_mid_stream_is_reported_as_a_streaming_error_and_retried(
    time_skipping_env, task_queue, wire, flavor: Flavor, caplog
):
    caplog.set_level(logging.WARNING)
    script = wire.script(
        Broken(Reply(text=ANSWER), events=3, kind="overloaded_error", message="Overloaded"), Reply(text=ANSWER)
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    assert (result.stop_reason, result.answer, len(script.requests)) == ("done", ANSWER, 2)
    [failed] = [r.getMessage() for r in caplog.records if "Temporal retries it" in r.getMessage()]
    print(f"\n{flavor.id}: {failed}")
    assert "reported an error while streaming: overloaded_error: Overloaded; the attempt is retried" in failed
    assert "answered 200" not in failed


async def test_a_request_error_event_mid_stream_ends_the_run_at_once_naming_it(
    time_skipping_env, task_queue, wire, flavor: Flavor
):
    script = wire.script(
        Broken(Reply(text=ANSWER), events=3, kind="invalid_request_error", message="tools.0: bad schema"),
        Reply(text=ANSWER),
    )
    result = await run_agent(time_skipping_env, task_queue, agent_for(flavor, script, tools=[]))
    error = result.error or ""
    print(f"\n{flavor.id}: {error}")
    assert (result.stop_reason, len(script.requests)) == ("error", 1), "a request at fault is not sent again"
    assert "reported an error while streaming: invalid_request_error: tools.0: bad schema" in error
    assert "answered 200" not in error and "Retrying the same request cannot help" in error
