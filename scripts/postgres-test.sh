#!/usr/bin/env bash
# Starts and stops a throwaway PostgreSQL cluster for the store tests.
#
#   eval "$(scripts/postgres-test.sh start [DIR])"   # exports ELYSIA_TEST_POSTGRES_URL
#   go test -race ./store/
#   scripts/postgres-test.sh stop DIR
#
# start installs PostgreSQL from Debian's packages when no initdb is found
# under /usr/lib/postgresql/<version>/bin, initialises a cluster in DIR (a new
# temporary folder when DIR is not given), starts it on a free port of
# 127.0.0.1 with its unix sockets in DIR, creates the role `elysia` (password
# `elysia`) and its database `elysia_test`, waits until it accepts
# connections, and prints the export lines on stdout (all else goes to
# stderr). As root the cluster runs as the postgres user (initdb refuses
# root); otherwise as the current user. Running start again on a DIR whose
# cluster is up prints the same lines; stop on a missing or already stopped
# DIR does nothing. stop removes DIR only when start made it (a marker file)
# or it is empty.
set -euo pipefail

marker=.elysia-postgres-test
role=elysia
password=elysia
database=elysia_test

log() { echo "postgres-test: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
	echo "usage: $0 start [DIR] | stop DIR" >&2
	exit 2
}

# bindir prints the newest /usr/lib/postgresql/<version>/bin holding initdb.
bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r b; do
		[ -x "$b/initdb" ] && echo "$b"
	done | tail -n 1)
	[ -n "$d" ] && echo "$d"
}

install_postgres() {
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "PostgreSQL is not installed and sudo is missing: apt-get install postgresql"
		sudo="sudo"
	fi
	log "installing PostgreSQL from Debian's packages"
	$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql >&2
}

# as_owner runs a command as the cluster's owner.
as_owner() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

print_env() {
	echo "export ELYSIA_TEST_POSTGRES_URL=$(cat "$1/url")"
	echo "export ELYSIA_TEST_POSTGRES_DIR=$1"
}

is_running() {
	[ -f "$1/url" ] && [ -f "$1/port" ] &&
		"$bin/pg_isready" -q -h 127.0.0.1 -p "$(cat "$1/port")" -d "$database" -U "$role" >/dev/null 2>&1
}

start() {
	local dir=${1:-}
	bin=$(bindir) || true
	if [ -z "$bin" ]; then
		install_postgres
		bin=$(bindir) || die "no initdb under /usr/lib/postgresql/*/bin after installing postgresql"
	fi
	if [ -z "$dir" ]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/elysia-pg.XXXXXX")
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ -f "$dir/$marker" ] && is_running "$dir"; then
		log "cluster in $dir is already running"
		print_env "$dir"
		return
	fi
	if [ -f "$dir/$marker" ]; then
		log "cluster in $dir is not running: starting afresh"
		stop_cluster "$dir"
		find "$dir" -mindepth 1 -delete
	elif [ -n "$(ls -A "$dir")" ]; then
		die "$dir is not empty and was not made by this script"
	fi
	touch "$dir/$marker"
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$dir"
		runuser -u postgres -- test -w "$dir" ||
			die "the postgres user cannot write to $dir (is a parent folder private?)"
	fi

	local pwfile="$dir/pwfile"
	echo "$password" >"$pwfile"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$pwfile"
	log "initdb in $dir/data ($bin)"
	as_owner "$bin/initdb" -D "$dir/data" -U "$role" --pwfile="$pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; die "initdb failed"; }
	rm -f "$pwfile"

	# A port that is free now may be taken before the server binds it: retry.
	local port="" attempt
	for attempt in 1 2 3 4 5 6 7 8; do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		port_in_use "$port" && continue
		if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
			start >&2; then
			break
		fi
		log "start on port $port failed (attempt $attempt):"
		tail -n 5 "$dir/postgres.log" >&2 || true
		port=""
	done
	[ -n "$port" ] || die "could not start PostgreSQL; see $dir/postgres.log"
	echo "$port" >"$dir/port"

	local i
	for i in $(seq 1 100); do
		"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1 && break
		[ "$i" -eq 100 ] && die "PostgreSQL on port $port is not ready after 20 s; see $dir/postgres.log"
		sleep 0.2
	done
	as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U "$role" -d postgres \
		-c "CREATE DATABASE $database OWNER $role" >&2
	echo "postgres://$role:$password@127.0.0.1:$port/$database?sslmode=disable" >"$dir/url"
	log "PostgreSQL $(basename "$(dirname "$bin")") running in $dir on 127.0.0.1:$port"
	print_env "$dir"
}

# stop_cluster stops the cluster in $1 if it runs.
stop_cluster() {
	local dir=$1
	[ -f "$dir/data/postmaster.pid" ] || return 0
	bin=$(bindir) || die "no pg_ctl under /usr/lib/postgresql/*/bin"
	as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 || return 0 # a stale pid file
	as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 ||
		log "pg_ctl stop failed; see $dir/postgres.log"
}

stop() {
	local dir=${1:-}
	[ -n "$dir" ] || usage
	[ -d "$dir" ] || return 0
	if [ ! -f "$dir/$marker" ]; then
		[ -z "$(ls -A "$dir")" ] || die "$dir was not made by this script: not removing it"
		rmdir "$dir"
		return
	fi
	stop_cluster "$dir"
	rm -rf "$dir"
	log "stopped and removed $dir"
}

case "${1:-start}" in
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
*) usage ;;
esac
