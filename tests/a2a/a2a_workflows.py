"""Tiny workflows that run the A2A activities as the agent workflow does: through `policy.delegate` and
`policy.describe`.

Kept apart from the test modules so the workflow sandbox never imports the
HTTP server or client; like workflow code, it imports only contracts and
`workflows/a2a_policy.py`.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from stalwart.contracts.a2a import A2AAgentCard, A2ADelegateRequest, A2ADelegateResult, A2ADescribeRequest
    from stalwart.workflows import a2a_policy as policy


@workflow.defn
class DelegateWorkflow:
    @workflow.run
    async def run(self, request: A2ADelegateRequest) -> A2ADelegateResult:
        return await policy.delegate(request)


@workflow.defn
class DescribeWorkflow:
    @workflow.run
    async def run(self, request: A2ADescribeRequest) -> A2AAgentCard:
        return await policy.describe(request)
