#!/usr/bin/env bash
# Demo: serve the bundled fixture site on loopback and crawl it on the embedded defaults into ./crawls.
set -euo pipefail
cd "$(dirname "$0")/.."
node dist/fixtures/server.js > /tmp/demo-fixture-$$.json &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f /tmp/demo-fixture-$$.json' EXIT
for _ in $(seq 1 50); do [ -s /tmp/demo-fixture-$$.json ] && break; sleep 0.1; done
base=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).url)' /tmp/demo-fixture-$$.json)
collection="demo-$(date +%Y%m%d%H%M%S)"
node dist/src/cli/crawl.js --url "$base/site/index.html" --collection "$collection" --generateWACZ \
  --workers 2 --statsFilename "crawls/collections/$collection/stats.json" --logLevel warn
echo
echo "Crawl stats:"; cat "crawls/collections/$collection/stats.json"
echo "WACZ: crawls/collections/$collection/$collection.wacz ($(stat -c %s "crawls/collections/$collection/$collection.wacz") bytes)"
