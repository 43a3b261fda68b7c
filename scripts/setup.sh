#!/usr/bin/env bash
# Installs everything the crawler and its tests need on a Debian machine, then builds the project.
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need_apt+=(chromium)
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
fc-list 2>/dev/null | grep -qi dejavu || need_apt+=(fonts-dejavu-core)
command -v git >/dev/null 2>&1 || need_apt+=(git)   # --customBehaviors git+ sources (and their test)
# --blockAds: EasyList + EasyPrivacy as Debian's uBlock Origin package ships them (src/block/adHosts.ts)
[ -f /usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist/easylist.txt ] || need_apt+=(webext-ublock-origin-chromium)
# ssh:// proxies (ssh -D); the proxy tests' own proxies and the ss that tells who opened a connection
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v tinyproxy >/dev/null 2>&1 || need_apt+=(tinyproxy)
command -v microsocks >/dev/null 2>&1 || need_apt+=(microsocks)
command -v ss >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)   # the media site's clips and streams (fixtures/mediaFiles.ts)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} with apt-get" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "setup: building" >&2
npm run --silent build
bash scripts/fetch-replay.sh
echo "setup: ready" >&2
