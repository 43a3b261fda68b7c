#!/usr/bin/env bash
# Build the Docker image without a Docker engine, with buildah (apt: buildah, debootstrap). Where the base
# image cannot be pulled (no registry access), a stand-in for node:20-bookworm-slim is made locally: a
# minimal Debian bookworm (debootstrap) plus this machine's Node 20 and npm.
#   bash scripts/build-image-buildah.sh [tag]        (default tag: warc-crawler)
# Then: buildah --storage-driver vfs run --isolation chroot --network host <container> crawl --help
set -euo pipefail
cd "$(dirname "$0")/.."
TAG="${1:-warc-crawler}"
B=(buildah --storage-driver vfs)
BASE=docker.io/library/node:20-bookworm-slim

if ! "${B[@]}" inspect --type image "$BASE" >/dev/null 2>&1 && ! "${B[@]}" pull -q "$BASE" >/dev/null 2>&1; then
  echo "build-image: cannot pull $BASE: making a local stand-in (debootstrap bookworm + this machine's node)" >&2
  ROOTFS="$(mktemp -d /var/tmp/bookworm-rootfs-XXXXXX)"
  debootstrap --variant=minbase bookworm "$ROOTFS" http://deb.debian.org/debian >/dev/null
  NODE_BIN="$(command -v node)"
  NODE_PREFIX="$(dirname "$(dirname "$NODE_BIN")")"
  install -D "$NODE_BIN" "$ROOTFS/usr/local/bin/node"
  mkdir -p "$ROOTFS/usr/local/lib/node_modules"
  cp -a "$NODE_PREFIX/lib/node_modules/npm" "$ROOTFS/usr/local/lib/node_modules/"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOTFS/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOTFS/usr/local/bin/npx"
  # Machines that reach the npm registry through a TLS-inspecting proxy trust it via their CA bundle:
  # the stand-in trusts the same (npm and node), as the machine's own node does.
  install -D -m 644 /etc/ssl/certs/ca-certificates.crt "$ROOTFS/usr/local/share/host-ca-bundle.crt"
  ctr="$("${B[@]}" from scratch)"
  mnt="$("${B[@]}" mount "$ctr")"
  cp -a "$ROOTFS/." "$mnt/"
  "${B[@]}" umount "$ctr"
  "${B[@]}" config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_EXTRA_CA_CERTS=/usr/local/share/host-ca-bundle.crt --env npm_config_cafile=/usr/local/share/host-ca-bundle.crt --cmd node "$ctr"
  "${B[@]}" commit -q "$ctr" "$BASE" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
  rm -rf "$ROOTFS"
fi
"${B[@]}" bud --layers --isolation chroot --network host -t "$TAG" .
echo "build-image: built $TAG" >&2
