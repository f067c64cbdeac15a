#!/bin/sh
# Flux substitutes cluster-vars in this file too (apps-wave-1 has postBuild): every shell
# expansion in braces is escaped with a second dollar sign, which Flux removes.
set -eu
stamp=$(date -u +%Y%m%dT%H%M%SZ)
target="s3://${S3_BACKUP_BUCKET}/${CLUSTER_NAME}/$${stamp}"
for dir in /data/*; do
  name="$${dir##*/}"
  tar -C "$dir" -czf - . | rclone rcat "backup:$${target#s3://}/$${name}.tar.gz"
done
