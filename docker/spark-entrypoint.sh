#!/usr/bin/env bash
# The Spark image's entrypoint: `master` or `worker` starts that daemon in the foreground from the pyspark
# installation's spark-class (pyspark's wheel is a whole Spark distribution); anything else runs as given.
#
#   master                   SPARK_MASTER_HOST (default: this host's name), SPARK_MASTER_PORT (7077),
#                            SPARK_MASTER_WEBUI_PORT (8080)
#   worker [MASTER_URL]      MASTER_URL or SPARK_MASTER_URL (default spark://spark-master:7077),
#                            SPARK_WORKER_CORES (1), SPARK_WORKER_MEMORY (1g), SPARK_WORKER_WEBUI_PORT (8081)
set -euo pipefail

spark_home() {
    python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
}

main() {
    local role="${1:-master}"
    case "$role" in
        master | worker)
            shift || true
            export SPARK_HOME="${SPARK_HOME:-$(spark_home)}"
            ;;
        *)
            exec "$@"
            ;;
    esac
    local spark_class="$SPARK_HOME/bin/spark-class"
    if [[ "$role" == master ]]; then
        exec "$spark_class" org.apache.spark.deploy.master.Master \
            --host "${SPARK_MASTER_HOST:-$(hostname)}" \
            --port "${SPARK_MASTER_PORT:-7077}" \
            --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}"
    fi
    mkdir -p "${SPARK_WORKER_DIR:-/tmp/spark-work}"
    exec "$spark_class" org.apache.spark.deploy.worker.Worker \
        --cores "${SPARK_WORKER_CORES:-1}" \
        --memory "${SPARK_WORKER_MEMORY:-1g}" \
        --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
        --work-dir "${SPARK_WORKER_DIR:-/tmp/spark-work}" \
        "${1:-${SPARK_MASTER_URL:-spark://spark-master:7077}}"
}

main "$@"
