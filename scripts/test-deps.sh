#!/usr/bin/env bash
# Installs what the integration tests need and is not part of a fresh machine
# with Go and Node: server-everything, the MCP conformance suite and the
# Node 22 it needs from npm (pinned by testdata/npm/package-lock.json), and
# Chromium from Debian's packages.
# PostgreSQL is installed and started by scripts/postgres-test.sh.
# Idempotent: does nothing for what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

lock=testdata/npm/package-lock.json
stamp=testdata/npm/node_modules/.elysia-installed
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
	echo "test-deps: npm ci in testdata/npm"
	npm ci --prefix testdata/npm --no-audit --no-fund --loglevel=error
	touch "$stamp"
fi

if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "color emoji"; then
	echo "test-deps: installing chromium and an emoji font from Debian's packages"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium fonts-noto-color-emoji >/dev/null
fi
