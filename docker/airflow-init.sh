#!/usr/bin/env bash
# One-shot initialisation of the stack (the compose file's airflow-init service; idempotent, safe to rerun):
#   1. the metadata database's schema (`airflow db migrate`);
#   2. the spark_default connection: SPARK_MASTER_URL (default spark://spark-master:7077), client deploy mode,
#      so each task's driver runs in the scheduler's container (LocalExecutor) next to the DAG's files;
#   3. the lake's bucket on the S3-compatible server when LAKELOADER_S3_BUCKET and AWS_ENDPOINT_URL are set
#      (credentials from the AWS_* variables); nothing for AWS S3 or a local lake.
set -euo pipefail

master_url="${SPARK_MASTER_URL:-spark://spark-master:7077}"

airflow db migrate

# The spark provider takes a spark connection's host (with its spark:// scheme) and port as the master URL.
host="${master_url%:*}"
port="${master_url##*:}"
airflow connections delete spark_default >/dev/null 2>&1 || true
airflow connections add spark_default \
    --conn-type spark \
    --conn-host "$host" \
    --conn-port "$port" \
    --conn-extra '{"deploy-mode": "client"}'

if [[ -n "${LAKELOADER_S3_BUCKET:-}" && -n "${AWS_ENDPOINT_URL:-}" ]]; then
    python - "$LAKELOADER_S3_BUCKET" "$AWS_ENDPOINT_URL" <<'PY'
import sys

import boto3
from botocore.exceptions import ClientError

bucket, endpoint = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint)
try:
    s3.head_bucket(Bucket=bucket)
    print(f"airflow-init: bucket {bucket} exists")
except ClientError as exc:
    if exc.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
        raise
    s3.create_bucket(Bucket=bucket)
    print(f"airflow-init: created bucket {bucket}")
PY
fi
echo "airflow-init: done"
