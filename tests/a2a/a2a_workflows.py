"""Tiny workflows that run the A2A activities the way the agent workflow will: by name, with the policy's timeouts.

Kept apart from the test modules so the workflow sandbox never imports the
HTTP server or client; like workflow code, it imports only contracts and
`activities.a2a.policy`.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.a2a import policy
    from contracts.a2a import A2AAgentCard, A2ADelegateRequest, A2ADelegateResult, A2ADescribeRequest


@workflow.defn
class DelegateWorkflow:
    @workflow.run
    async def run(self, request: A2ADelegateRequest) -> A2ADelegateResult:
        return await workflow.execute_activity(
            policy.A2A_DELEGATE,
            request,
            result_type=A2ADelegateResult,
            start_to_close_timeout=policy.DELEGATE_START_TO_CLOSE,
            schedule_to_close_timeout=policy.DELEGATE_SCHEDULE_TO_CLOSE,
            heartbeat_timeout=policy.DELEGATE_HEARTBEAT,
            retry_policy=policy.DELEGATE_RETRY,
        )


@workflow.defn
class DescribeWorkflow:
    @workflow.run
    async def run(self, request: A2ADescribeRequest) -> A2AAgentCard:
        return await workflow.execute_activity(
            policy.A2A_DESCRIBE,
            request,
            result_type=A2AAgentCard,
            start_to_close_timeout=policy.DESCRIBE_START_TO_CLOSE,
            retry_policy=policy.DESCRIBE_RETRY,
        )
