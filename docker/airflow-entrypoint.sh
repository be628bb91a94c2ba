#!/usr/bin/env bash
# The Airflow image's entrypoint: waits for the metadata database when it is PostgreSQL (the init service
# creates its schema; the other services start after it), then runs the command, e.g. `airflow scheduler`.
# LAKELOADER_WAIT_FOR_DB_SECONDS (default 60) bounds the wait; 0 skips it.
set -euo pipefail

wait_for_database() {
    local seconds="${LAKELOADER_WAIT_FOR_DB_SECONDS:-60}"
    local url="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-}"
    [[ "$seconds" == 0 || "$url" != postgresql* ]] && return 0
    local deadline=$((SECONDS + seconds))
    until python - "$url" <<'PY'
import sys

import sqlalchemy

with sqlalchemy.create_engine(sys.argv[1]).connect():
    pass
PY
    do
        if ((SECONDS >= deadline)); then
            echo "airflow-entrypoint: the metadata database did not answer within ${seconds}s" >&2
            exit 1
        fi
        sleep 2
    done
}

wait_for_database
exec "$@"
