#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas to the version the server image expects,
# with the admin tools' temporal-sql-tool (the supported way; the auto-setup image is deprecated). Idempotent:
# `create` on an existing database fails harmlessly, `setup-schema -v 0.0` only creates the version table, and
# `update-schema` applies the versioned migrations not yet applied, so a restart or an upgraded image re-runs it.
set -eu

: "${POSTGRES_SEEDS:?set POSTGRES_SEEDS to the PostgreSQL host}"
: "${POSTGRES_USER:?set POSTGRES_USER}"
: "${SQL_PASSWORD:?set SQL_PASSWORD to the PostgreSQL password}"
PORT="${DB_PORT:-5432}"
SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

until nc -z -w 5 "$POSTGRES_SEEDS" "$PORT"; do
  echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$PORT ..."
  sleep 1
done

for db in temporal temporal_visibility; do
  sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$PORT" --db "$db" "$@"; }
  sql create || echo "database $db exists"
  sql setup-schema -v 0.0
done
temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$PORT" --db temporal \
  update-schema -d "$SCHEMA_DIR/temporal/versioned"
temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$PORT" --db temporal_visibility \
  update-schema -d "$SCHEMA_DIR/visibility/versioned"
echo "Temporal's PostgreSQL schemas are up to date"
