#!/bin/bash
# notes-bench (or, with `neighbours` first, notes-neighbours) on a throwaway
# PostgreSQL 15 cluster of its own (fsync on, as in production), started on a Unix
# socket under /tmp and removed at the end. The other arguments go to the program, e.g.
#   scripts/bench-postgres.sh --records 100000
#   scripts/bench-postgres.sh neighbours --seconds 10
# Needs Debian's postgresql package (scripts/setup-debian.sh installs it) and a
# release build (this script makes one, in .build or in SCRATCH if set, e.g.
# SCRATCH=.build-release to keep it apart from the debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=/usr/lib/postgresql/15/bin
[ -x "$bin/initdb" ] || { echo "PostgreSQL 15 is not installed: run scripts/setup-debian.sh" >&2; exit 69; }
program=notes-bench
if [ "${1:-}" = neighbours ]; then program=notes-neighbours; shift; fi
scratch=${SCRATCH:-.build}
swift build -c release --scratch-path "$scratch" --product "$program" >&2
swift build -c release --scratch-path "$scratch" --product notesd >&2
dir=$(mktemp -d /tmp/notes-bench-pg-XXXXXX)
chmod 755 "$dir"
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"
cleanup() {
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
as_postgres "$bin/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >/dev/null
as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-k $dir -c listen_addresses='' -c max_connections=200 -c shared_buffers=256MB -c min_wal_size=1GB" start >/dev/null
as_postgres "$bin/createdb" -h "$dir" -U postgres bench
# A cluster that has run for a while reuses its old log segments; a new one creates
# each 16 MB segment (zeroed, then flushed) inside whichever commit first needs it, which
# then waits tens of milliseconds, with every commit queued behind it. Write and recycle
# 512 MB of log first, so that what is measured is notesd, not the cluster's first day.
as_postgres "$bin/psql" -h "$dir" -U postgres -d bench -q \
    -c "CREATE TABLE warm AS SELECT repeat('x', 2000) AS x FROM generate_series(1, 250000)" \
    -c "DROP TABLE warm" -c "CHECKPOINT" -c "SELECT pg_switch_wal()" -c "CHECKPOINT" >/dev/null
socket=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$dir")
"$scratch/release/$program" --database "postgres://postgres@$socket/bench" "$@"
