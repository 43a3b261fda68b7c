# Debian-based Node image with Debian's Chromium and redis-server: the same steps as scripts/setup.sh.
FROM node:20-bookworm-slim

# setpriv (util-linux, essential in Debian) gives Chromium a parent-death signal: it dies with its crawler.
# git fetches --customBehaviors git+ sources, as browsertrix-crawler's image can; ssh opens ssh:// proxy tunnels.
# webext-ublock-origin-chromium ships EasyList and EasyPrivacy, the --blockAds host list (never loaded into Chromium: puppeteer starts it with --disable-extensions).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium redis-server fonts-dejavu-core ca-certificates git openssh-client webext-ublock-origin-chromium \
 && rm -rf /var/lib/apt/lists/* \
 && test -x /usr/bin/setpriv

ENV BROWSER_BIN=/usr/bin/chromium
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
# ReplayWeb.page's ui.js and sw.js for `qa` and `crawl --qa` (from its npm package: the script packs it and
# extracts the two files; `npm install replaywebpage` would pull Electron). qa finds them through REPLAYWEB_DIR.
COPY scripts/fetch-replay.sh ./scripts/
RUN bash scripts/fetch-replay.sh
ENV REPLAYWEB_DIR=/app/.cache/replaywebpage
COPY tsconfig.json ./
COPY scripts/bundle.mjs ./scripts/
COPY src ./src
COPY indexer ./indexer
COPY fixtures ./fixtures
COPY bench ./bench
RUN npm run build && npm prune --omit=dev && npm link

# The default --cwd is ./crawls: from / that is /crawls, so output lands in /crawls/collections/<name>/
# (mount a volume at /crawls).
WORKDIR /
# `docker run IMAGE crawl --url ...`, `docker run IMAGE indexer ...`, `docker run IMAGE create-login-profile ...`
# `docker run -v $PWD/crawls:/crawls IMAGE qa --qaSource /crawls/collections/NAME/NAME.wacz --collection NAME-qa`
# and `docker run -p 127.0.0.1:8090:8090 -v $PWD/crawls:/crawls IMAGE replay /crawls/collections/NAME --host 0.0.0.0 --port 8090`
# all work: the command is the program (npm link put every package.json bin on the PATH).
# create-login-profile's interactive page: `docker run -p 127.0.0.1:9223:9223 -v $PWD/crawls:/crawls IMAGE
# create-login-profile --url https://example.com/login --port 0.0.0.0:9223` (inside the container it must
# listen on every interface; -p 127.0.0.1:... keeps it on the host's loopback). The profile lands in
# /crawls/profiles/profile.tar.gz.
EXPOSE 9223
CMD ["crawl", "--help"]
