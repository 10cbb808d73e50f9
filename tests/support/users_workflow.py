"""A user's own workflow and activity, unrelated to agents, for the worker that also runs Stalwart's."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class UsersOwnWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        return await workflow.execute_activity(shout, text, start_to_close_timeout=timedelta(seconds=10))
