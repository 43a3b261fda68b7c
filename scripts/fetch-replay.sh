#!/usr/bin/env bash
# Obtain ReplayWeb.page's prebuilt UI and service worker (ui.js, sw.js) for the
# replay test harness (test/helpers/replay.ts).
#
# `npm install replaywebpage` fails (its install scripts pull Electron), so the
# package tarball is only packed and the two prebuilt files are extracted.
# Idempotent: does nothing when both files already exist.
set -euo pipefail

VERSION="${REPLAYWEB_VERSION:-2.5.3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${ROOT}/.cache/replaywebpage"

if [[ -s "${DEST}/ui.js" && -s "${DEST}/sw.js" ]]; then
  echo "fetch-replay: ReplayWeb.page files already present in ${DEST}"
  exit 0
fi

fail() {
  echo "fetch-replay: ERROR: $*" >&2
  exit 1
}

command -v npm >/dev/null 2>&1 || fail "npm not found on PATH"
command -v tar >/dev/null 2>&1 || fail "tar not found on PATH"

mkdir -p "${DEST}"
TMP="$(mktemp -d "${DEST}/.tmp.XXXXXX")"
trap 'rm -rf "${TMP}"' EXIT

echo "fetch-replay: packing replaywebpage@${VERSION} ..."
if ! (cd "${TMP}" && npm pack "replaywebpage@${VERSION}" >"${TMP}/pack.out" 2>"${TMP}/pack.err"); then
  cat "${TMP}/pack.err" >&2 || true
  fail "npm pack replaywebpage@${VERSION} failed"
fi

TARBALL="$(ls "${TMP}"/replaywebpage-*.tgz 2>/dev/null | head -n 1 || true)"
[[ -n "${TARBALL}" && -s "${TARBALL}" ]] || fail "npm pack produced no tarball"

if ! tar -xzf "${TARBALL}" -C "${TMP}" package/ui.js package/sw.js; then
  fail "tarball ${TARBALL##*/} does not contain package/ui.js and package/sw.js"
fi
[[ -s "${TMP}/package/ui.js" && -s "${TMP}/package/sw.js" ]] || fail "extracted ui.js/sw.js are empty"

# Move into place (sw.js first, ui.js last: the presence check tests both).
mv -f "${TMP}/package/sw.js" "${DEST}/sw.js"
mv -f "${TMP}/package/ui.js" "${DEST}/ui.js"
echo "fetch-replay: extracted ui.js and sw.js into ${DEST}"
