"""Worker versioning: a worker names its deployment version so old and new code run side by side.

Temporal's worker deployments route each run to the workers of one version
(`deployment name` + `build id`). How a run moves between versions is its
versioning behaviour, chosen per worker here:

- `pinned` (the default): a run stays on the version it started on to its end, so a
  deploy never changes the code under a run in flight; keep the old version's workers
  until its runs are done (`temporal worker deployment describe-version` shows them).
- `auto-upgrade`: a run moves to the deployment's current version at its next workflow
  task; the new code must replay the old runs (`workflow.patched`, `stalwart replay`).

Either way, when a run continues as new (a session between turns, a long run between
steps) the new run starts on the current version, and a session whose version is no
longer the current one continues as new at its next rest between turns: sessions, which
can live for weeks, move to new code without patching (see docs/deploying.md, "Worker versioning").
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from temporalio.api.enums.v1 import RoutingConfigUpdateState
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    DescribeWorkerDeploymentResponse,
    SetWorkerDeploymentCurrentVersionRequest,
)
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import WorkerDeploymentConfig

from stalwart.contracts.errors import InfrastructureError, UsageError

Behaviour = Literal["pinned", "auto-upgrade"]
BEHAVIOURS: dict[str, VersioningBehavior] = {
    "pinned": VersioningBehavior.PINNED,
    "auto-upgrade": VersioningBehavior.AUTO_UPGRADE,
}


class VersioningError(UsageError, ValueError):
    """A worker version that cannot be: a deployment name with a dot, no build id, an unknown behaviour."""


class VersionNotReady(InfrastructureError, TimeoutError):
    """A worker version the server did not see polling, or did not pass on as current, in the time given."""


def deployment_config(deployment_name: str, build_id: str, behaviour: Behaviour = "pinned") -> WorkerDeploymentConfig:
    """The SDK's deployment options for a worker of version `deployment_name`.`build_id`.

    Pass the result to `build_worker(..., deployment_config=...)` (or `Worker(...)`).
    """
    if not deployment_name or "." in deployment_name:
        raise VersioningError(
            f"deployment name {deployment_name!r} must be non-empty and contain no '.' "
            "(Temporal writes a version as NAME.BUILD_ID): e.g. --deployment-name stalwart"
        )
    if not build_id:
        raise VersioningError("a versioned worker needs a build id: e.g. --build-id 2026-11-23.1 or the git commit")
    if behaviour not in BEHAVIOURS:
        raise VersioningError(f"versioning behaviour {behaviour!r} is not one of: {', '.join(BEHAVIOURS)}")
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=deployment_name, build_id=build_id),
        use_worker_versioning=True,
        default_versioning_behavior=BEHAVIOURS[behaviour],
    )


async def describe_deployment(client: Client, deployment_name: str) -> DescribeWorkerDeploymentResponse:
    """The deployment as the server sees it; its per-deployment rate limit ("too many requests") is waited out."""
    request = DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment_name)
    while True:
        try:
            return await client.workflow_service.describe_worker_deployment(request)
        except RPCError as err:
            if err.status != RPCStatusCode.RESOURCE_EXHAUSTED:
                raise
        await asyncio.sleep(1.0)


async def wait_for_version(client: Client, deployment_name: str, build_id: str, *, timeout: float = 60.0) -> None:
    """Return once the server has seen a worker of this version poll (it cannot be made current before)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            described = await describe_deployment(client, deployment_name)
            summaries = described.worker_deployment_info.version_summaries
            if any(s.deployment_version.build_id == build_id for s in summaries):
                return
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
        if time.monotonic() > deadline:
            raise VersionNotReady(
                f"no worker of version {deployment_name}.{build_id} has polled namespace {client.namespace!r} "
                f"within {timeout:g}s: is one running with --deployment-name {deployment_name} --build-id {build_id}?"
            )
        await asyncio.sleep(0.5)


async def set_current_version(client: Client, deployment_name: str, build_id: str, *, timeout: float = 60.0) -> None:
    """Make `deployment_name`.`build_id` the version new runs start on (what
    `temporal worker deployment set-current-version` does), once a worker of it polls; return when the
    server has told every task queue of the deployment (until then a task may still go to the old version)."""
    await wait_for_version(client, deployment_name, build_id, timeout=timeout)
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=deployment_name, build_id=build_id, identity="stalwart"
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            break
        except RPCError as err:
            # Refused while the new version's pollers have not yet registered every task queue (workflow and
            # activity) the current version has: they do within moments of the worker starting.
            registering = "missing active task queues" in err.message
            if err.status == RPCStatusCode.FAILED_PRECONDITION and registering and time.monotonic() < deadline:
                pass
            elif err.status != RPCStatusCode.RESOURCE_EXHAUSTED:
                raise
        await asyncio.sleep(1.0)
    while True:
        info = (await describe_deployment(client, deployment_name)).worker_deployment_info
        current = info.routing_config.current_deployment_version.build_id
        state = info.routing_config_update_state
        if current == build_id and state != RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS:
            return
        if time.monotonic() > deadline:
            raise VersionNotReady(
                f"version {deployment_name}.{build_id} was made current but the server had not passed it on to every "
                f"task queue within {timeout:g}s (current: {current or 'none'}); check the server's matching service"
            )
        await asyncio.sleep(0.5)
