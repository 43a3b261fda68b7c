#!/usr/bin/env node
// The indexer (dedupe-index import from WACZ files and manifests) is not built yet; see issue 4.
process.stderr.write("indexer: not available in this version yet\n");
process.exit(2);
