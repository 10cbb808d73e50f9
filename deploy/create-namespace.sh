#!/bin/sh
# Creates the namespace the Stalwart worker uses once the Temporal server answers (the server image creates none).
set -eu

NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
RETENTION="${NAMESPACE_RETENTION:-720h}"

until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  echo "waiting for the Temporal server at $TEMPORAL_ADDRESS ..."
  sleep 2
done
if temporal operator namespace describe --namespace "$NAMESPACE" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; then
  echo "namespace $NAMESPACE exists"
else
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" --address "$TEMPORAL_ADDRESS"
  echo "namespace $NAMESPACE created (retention $RETENTION)"
fi
