#!/usr/bin/env bash
# The domain-record benchmark (issue 15): N records landed by `dhsi put` and
# compacted into a local store, resharded to WIDTH; then, for each dhsi
# binary given, the server's start-up (time to the first answered query,
# RSS, size of its cache directory) and point lookups
# `SELECT * FROM domains WHERE domain = $1` over the wire at 1 and 16
# clients, measured with the lean libpq client wirebench (bench/wirebench)
# beside PostgreSQL 15 holding the same rows under a primary key. The
# systems of a cell run back to back, A B then B A in a second round.
#
#   bench/domains/run.sh [-n RECORDS] [-w WIDTH] [-d WORKDIR] [-T SECONDS] DHSI [DHSI...]
#
# e.g. to compare a release with this tree:
#   go build -o /tmp/dhsi-new ./cmd/dhsi
#   bench/domains/run.sh -n 10000000 -w 4 /tmp/dhsi-old /tmp/dhsi-new
#
# Needs python3, psql, gcc and libpq-dev, and PostgreSQL 15 in
# /usr/lib/postgresql/15/bin (run as root, it runs PostgreSQL as user
# postgres). The work directory keeps the generated files and the store, and
# is reused when it has them. Numbers drift ±20% on a shared machine: only
# the ratios of one run mean anything.
set -euo pipefail
N=1000000 WIDTH=3 WORK=/tmp/dhsi-bench-domains T=10
while getopts n:w:d:T: o; do
	case $o in
	n) N=$OPTARG ;; w) WIDTH=$OPTARG ;; d) WORK=$OPTARG ;; T) T=$OPTARG ;;
	*) sed -n 2,20p "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,20p "$0"; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
PGBIN=/usr/lib/postgresql/15/bin
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
BUILD=${1}
parts=$(( (N + 999999) / 1000000 ))

if [ ! -f "$WORK/queries.csv" ]; then
	echo "generating $N records in $parts files"
	python3 "$HERE/gen.py" "$N" "$parts" "$WORK"
fi
if [ ! -d "$WORK/store" ]; then
	for f in "$WORK"/records-*.usv; do
		/usr/bin/time -f "put $(basename "$f"): %e s, peak RSS %M KB" "$BUILD" put --store "$WORK/store" "$f" >/dev/null
	done
	/usr/bin/time -f "compact --all of $N records: %e s, peak RSS %M KB" "$BUILD" compact --all --store "$WORK/store" >/dev/null
fi
"$BUILD" reshard --store "$WORK/store" --width "$WIDTH" | tail -1
echo "store: $(du -sm "$WORK/store" | cut -f1) MB"
[ -x "$WORK/wirebench" ] || gcc -O2 -Wall -pthread -I/usr/include/postgresql -o "$WORK/wirebench" "$HERE/../wirebench/wirebench.c" -lpq -lm

# PostgreSQL 15, the peer: the same rows, domain the primary key
PGPORT=5499
if psql -X -h 127.0.0.1 -p $PGPORT -U postgres -Atc "select 1" >/dev/null 2>&1; then
	echo "port $PGPORT is taken by another server: stop it first" >&2
	exit 1
fi
pgrun() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ ! -d "$WORK/pg/data" ]; then
	mkdir -p "$WORK/pg" && { [ "$(id -u)" != 0 ] || chown postgres "$WORK/pg"; }
	pgrun "$PGBIN/initdb" -D "$WORK/pg/data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync >/dev/null
	loaded=no
else
	loaded=yes
fi
pgrun "$PGBIN/postgres" -D "$WORK/pg/data" -p $PGPORT -k "$WORK/pg" -c listen_addresses=127.0.0.1 -c fsync=off \
	-c synchronous_commit=off -c full_page_writes=off -c shared_buffers=1GB -c max_connections=100 -c max_wal_size=4GB >"$WORK/pg.log" 2>&1 &
PGPID=$!
pids=()
trap 'kill $PGPID "${pids[@]}" 2>/dev/null || true' EXIT
until psql -X -h 127.0.0.1 -p $PGPORT -U postgres -Atc "select 1" >/dev/null 2>&1; do sleep 0.2; done
if [ $loaded = no ]; then
	start=$(date +%s.%N)
	psql -X -q -h 127.0.0.1 -p $PGPORT -U postgres -c "CREATE TABLE domains (domain text, company_name text, scraper_version bigint, updated_at timestamptz)" \
		-c "\\copy domains FROM '$WORK/records.tsv'" -c "ALTER TABLE domains ADD PRIMARY KEY (domain)" -c "VACUUM ANALYZE domains"
	echo "PostgreSQL load, primary key and analyze: $(echo "$(date +%s.%N) - $start" | bc) s; $(psql -X -h 127.0.0.1 -p $PGPORT -U postgres -Atc "select pg_size_pretty(pg_total_relation_size('domains'))")"
fi

# each dhsi: start-up, then it stays up for the lookups
port=5501
declare -A portOf
for bin in "$@"; do
	cache="$WORK/cache-$port"
	rm -rf "$cache"
	start=$(date +%s.%N)
	"$bin" serve --store "$WORK/store" --cache-dir "$cache" --listen 127.0.0.1:$port --unix-socket-dir "" >"$WORK/serve-$port.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	until psql -X -h 127.0.0.1 -p $port -U x -d x -Atc "select 1" >/dev/null 2>&1; do
		kill -0 $pid 2>/dev/null || { echo "$bin died:"; tail -5 "$WORK/serve-$port.log"; exit 1; }
		sleep 0.2
	done
	echo "$bin (port $port): first answer after $(echo "$(date +%s.%N) - $start" | bc) s; RSS $(awk '/VmRSS/ {print int($2/1024)}' /proc/$pid/status) MB, peak $(awk '/VmHWM/ {print int($2/1024)}' /proc/$pid/status) MB; cache dir $(du -sm "$cache" | cut -f1) MB"
	portOf[$bin]=$port
	port=$((port + 1))
done

Q='SELECT * FROM domains WHERE domain = $1'
cell() { # label port user clients
	"$WORK/wirebench" -c "host=127.0.0.1 port=$2 user=$3 dbname=$3 sslmode=disable" -s "$Q" -p d -q "$WORK/queries.csv" -n "$4" -T "$T" -w 3 -l "$1_c$4" |
		awk '{print $1, $3, $5, $7, $15, $16}'
}
for round in 1 2; do
	for n in 1 16; do
		systems=(pg "$@") # round 2 runs them in the reverse order
		[ $round = 1 ] || { r=(); for ((i = ${#systems[@]} - 1; i >= 0; i--)); do r+=("${systems[i]}"); done; systems=("${r[@]}"); }
		for s in "${systems[@]}"; do
			if [ "$s" = pg ]; then cell "r${round}_postgres" $PGPORT postgres $n; else cell "r${round}_$(basename "$s")" "${portOf[$s]}" x $n; fi
		done
	done
done
