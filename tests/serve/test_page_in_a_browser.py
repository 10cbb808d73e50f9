"""In a real browser: the page of `stalwart serve` starts a session, sends a message with Enter, approves the tool
call from its inbox, shows the answer as the model writes it, and after a reload mid-answer shows it again, once.

Set SERVE_PAGE_SCREENSHOT=docs/images/serve-page.png to keep the screenshot it takes at the end (the README's).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from serve_agents import chatter

from stalwart.client.serve.app import ServeSettings

from support.chromium import chromium, headless_page
from support.serve_api import Served, served
from wire_server.script import Reply

pytestmark = pytest.mark.slow

ACTION = json.dumps({"tool": "calculator", "arguments": {"expression": "17*23+4"}})
NEXT_ACTION = json.dumps({"tool": "calculator", "arguments": {"expression": "2**10"}})
ANSWER = (
    "Seventeen times twenty-three is three hundred and ninety-one, and four more makes three hundred and "
    "ninety-five. The calculator agrees: 17 × 23 + 4 = 395. Ask me for another sum whenever you like."
)
AGENT = """\
name = "calculating-writer"
model = "openai-compatible:scripted-words"
base_url = "{base_url}"
action_format = "json"
tools = ["calculator"]
require_approval = ["calculator"]
"""
LIVE = "document.querySelector('#log li.assistant.live .bubble')?.textContent || ''"
DONE = "document.querySelector('#log li.assistant:not(.live) .bubble')?.textContent || ''"


async def test_the_page_talks_to_a_session_approves_its_tool_and_resumes_the_answer_after_a_reload(
    server: Served, wire, opened, tmp_path: Path
):
    browser = await asyncio.to_thread(chromium)
    # The seed's two-phase protocol: an action, then `{}` (no more actions), then the answer, written without
    # tools and so streamed as it is written, a word every 0.15 s.
    script = wire.script(Reply(text=ACTION), Reply(text="{}"), Reply(text=ANSWER, pause=0.15), Reply(text=NEXT_ACTION))
    agent_file = tmp_path / "writer.toml"
    agent_file.write_text(AGENT.format(base_url=script.openai_base_url))
    async with headless_page(browser, tmp_path / "chromium") as page:
        await page.send("Page.navigate", url=f"{server.url}/")
        await page.until("document.readyState === 'complete' && !!document.querySelector('#agent-path')")
        await page.evaluate(f"document.querySelector('#agent-path').value = {json.dumps(str(agent_file))}")
        await page.evaluate("document.querySelector('#new-session button').click()")
        await page.until("!document.querySelector('#message').disabled")
        session_id = await page.evaluate("decodeURIComponent(location.hash.slice(1))")
        opened.append(session_id)

        await page.evaluate("document.querySelector('#message').focus()")
        await page.type("What is 17 * 23 + 4?")
        await page.press_enter()  # Enter sends
        assert await page.until("document.querySelector('#log li.user .bubble')?.textContent") == (
            "What is 17 * 23 + 4?"
        )

        tool = await page.until("document.querySelector('#inbox li .tool-name')?.textContent")
        assert tool == "calculator"
        assert "17*23+4" in await page.evaluate("document.querySelector('#inbox li pre').textContent")
        await page.until("document.querySelector('#log li.tool .state')?.textContent === 'waiting for approval'")
        await page.evaluate(
            "[...document.querySelectorAll('#inbox li button')].find(b => b.textContent === 'Approve').click()"
        )

        growing: list[str] = []
        while len(growing) < 4 or len(growing[-1]) < len(ANSWER) // 3:
            text = await page.evaluate(LIVE)
            assert not await page.evaluate(DONE), "the answer was finished before it was seen growing"
            if text and (not growing or text != growing[-1]):
                growing.append(text)
            await asyncio.sleep(0.05)
        assert all(later.startswith(earlier) for earlier, later in zip(growing, growing[1:], strict=False))
        assert all(ANSWER.startswith(text) for text in growing), growing

        await page.send("Page.reload")  # mid-answer
        await page.until("document.readyState === 'complete'")
        after = await page.until(f"({LIVE}) || ({DONE})")
        assert ANSWER.startswith(after), after
        final = await page.until(DONE)
        log = await page.evaluate("document.querySelector('#log').textContent")
        assert final == ANSWER
        assert log.count("Seventeen times") == 1, "text was shown twice after the reload"
        assert await page.evaluate("document.querySelector('#log li.tool .state').textContent") == "done"
        assert await page.evaluate("document.querySelectorAll('#inbox li').length") == 0
        link = await page.evaluate("document.querySelector('#ui-link').href")
        assert link.endswith(f"/workflows/{session_id}")
        await page.until("document.querySelector('#budget-steps').textContent.includes('of')")

        await page.evaluate("document.querySelector('#message').focus()")
        await page.type("And 2 to the power of 10?")
        await page.press_enter()
        await page.until("document.querySelectorAll('#inbox li').length === 1")  # the next call waits for a person
        shot = Path(os.environ.get("SERVE_PAGE_SCREENSHOT") or tmp_path / "serve-page.png")
        await page.screenshot(shot)
    assert shot.stat().st_size > 10_000


async def test_the_page_of_a_server_with_a_token_asks_for_it_once_then_lists_the_runs(
    stalwart_client, worker, opened, tmp_path: Path
):
    browser = await asyncio.to_thread(chromium)
    settings = ServeSettings(token="page-token")
    async with served(stalwart_client, settings) as server, server.client() as http:
        started = await http.post("/api/runs", json={"agent_spec": chatter("done"), "goal": "list me"})
        run_id = started.json()["run_id"]
        opened.append(run_id)
        async with headless_page(browser, tmp_path / "chromium") as page:
            await page.send("Page.navigate", url=f"{server.url}/")
            await page.until("document.querySelector('#token-dialog')?.open")
            await page.evaluate("document.querySelector('#token').focus()")
            await page.type("page-token")
            await page.press_enter()
            listed = await page.until("[...document.querySelectorAll('#run-list button')].map(b => b.dataset.runId)")
            assert run_id in listed
            assert not await page.evaluate("document.querySelector('#token-dialog').open")


async def test_the_page_withdraws_as_many_code_points_as_a_retract_says_emoji_included(
    stalwart_client, opened, tmp_path: Path
):
    # The events are handed to the page's own handler, as its reader of the stream does: what is checked is how a
    # `retract`'s count of code points (an emoji is one, and two UTF-16 units) cuts the text shown.
    browser = await asyncio.to_thread(chromium)
    async with served(stalwart_client) as server, headless_page(browser, tmp_path / "chromium") as page:
        await page.send("Page.navigate", url=f"{server.url}/")
        await page.until("document.readyState === 'complete' && !!document.querySelector('#log')")
        await page.evaluate("handle('delta', {index: 1, step: 1, text: '🌍🌍 alpha 🚀'})")
        await page.evaluate("handle('delta', {index: 1, step: 1, text: ' 🚀 beta'})")
        await page.evaluate("handle('retract', {index: 1, step: 1, chars: 7})")  # ' 🚀 beta'
        assert await page.evaluate(LIVE) == "🌍🌍 alpha 🚀"
        await page.evaluate("handle('retract', {index: 1, step: 1, chars: 10})")  # all of it
        await page.evaluate("handle('delta', {index: 1, step: 1, text: 'Plain'})")
        assert await page.evaluate(LIVE) == "Plain"


async def test_the_page_drops_what_it_shows_of_a_run_on_a_reset_and_shows_the_run_anew(
    stalwart_client, opened, tmp_path: Path
):
    # As above, the events go to the page's own handler: a `reset` comes when the offset the page resumed from is no
    # point of the run (its id now names a newer run), and the run follows from its start.
    def step(index: int, role: str, content: str) -> str:
        record = {"role": role, "content": content, "final": role == "assistant", "error": None}
        return f"handle('step', {{index: {index}, record: {json.dumps(record)}}})"

    shown = "[...document.querySelectorAll('#log .bubble')].map(b => b.textContent)"
    browser = await asyncio.to_thread(chromium)
    async with served(stalwart_client) as server, headless_page(browser, tmp_path / "chromium") as page:
        await page.send("Page.navigate", url=f"{server.url}/")
        await page.until("document.readyState === 'complete' && !!document.querySelector('#log')")
        await page.evaluate(step(0, "user", "the earlier run's question"))
        await page.evaluate(step(1, "assistant", "the earlier run's answer"))
        await page.evaluate("handle('reset', {run_id: 'r', offset: 'x.2-0', reason: 'an earlier run'})")
        await page.evaluate(step(0, "user", "the new run's question"))
        assert await page.evaluate(shown) == ["the new run's question"]
