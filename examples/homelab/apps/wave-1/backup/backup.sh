#!/bin/sh
# Flux substitutes cluster-vars in this file too (apps-wave-1 has postBuild): the bucket and
# cluster name below are cluster vars. The script's own variables are written without braces
# ($stamp), which Flux leaves alone, so nothing here needs Flux's double-dollar escape.
set -eu
stamp=$(date -u +%Y%m%dT%H%M%SZ)
prefix="${S3_BACKUP_BUCKET}/${CLUSTER_NAME}/$stamp"
for dir in /data/*; do
  name=$(basename "$dir")
  tar -C "$dir" -czf - . | rclone rcat "backup:$prefix/$name.tar.gz"
done
