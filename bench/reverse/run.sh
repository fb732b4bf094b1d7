#!/usr/bin/env bash
# The reverse-lookup measurement (issue 17 §3): a local store of N domains
# in three datasets (gen.py: "full" holds every domain, "sixty" and "thirty"
# random subsets), served by DHSI; then psql (\timing, \o /dev/null) runs
# each statement ROUNDS times, interleaved, and prints min, median and max:
# dataset_domains of the full dataset on the server's own path and through
# DuckDB (COPY), two set operations, and the lake scan the reverse lookup
# replaces. Also the size of the new object per domain.
#
#   bench/reverse/run.sh [-n DOMAINS] [-d WORKDIR] [-r ROUNDS] DHSI
#
# e.g.  go build -o /tmp/dhsi ./cmd/dhsi && bench/reverse/run.sh /tmp/dhsi
#
# Needs python3 and psql. The work directory keeps the corpus and the store
# and reuses them. Numbers drift on a shared machine: the figures of one run
# beside each other are what mean something.
set -euo pipefail
N=200000 WORK=/tmp/dhsi-bench-reverse ROUNDS=7
while getopts n:d:r: o; do
	case $o in
	n) N=$OPTARG ;; d) WORK=$OPTARG ;; r) ROUNDS=$OPTARG ;;
	*) sed -n 2,17p "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 2,17p "$0"; exit 2; }
DHSI=$1 HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
if [ ! -f "$WORK/store/index/manifest.json" ]; then
	python3 "$HERE/gen.py" "$N" "$WORK"
	for d in full sixty thirty; do "$DHSI" ingest --store "$WORK/store" --dataset $d "$WORK/$d.txt" >/dev/null; done
fi
PORT=$((20000 + RANDOM % 20000))
"$DHSI" serve --store "$WORK/store" --cache-dir "$WORK/cache" --listen 127.0.0.1:$PORT >"$WORK/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 100); do psql -X -q -h 127.0.0.1 -p $PORT -c 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
Q=("SELECT * FROM dataset_domains(1)"
	"COPY (SELECT * FROM dataset_domains(1)) TO STDOUT"
	"SELECT * FROM dataset_domains_set(2, 'or', 3)"
	"SELECT * FROM dataset_domains_set(1, 'andnot', 2)"
	"SELECT count(DISTINCT etld1(url)) FROM urls WHERE dataset_id = 1")
{
	printf '\\timing on\n\\o /dev/null\n'
	for _ in $(seq "$ROUNDS"); do printf '%s;\n' "${Q[@]}"; done
} >"$WORK/q.sql"
psql -X -h 127.0.0.1 -p $PORT -f "$WORK/q.sql" | awk '/^Time:/ {print $2}' >"$WORK/times.txt"
rows=()
for q in "${Q[0]}" "${Q[0]}" "${Q[2]}" "${Q[3]}" "${Q[0]}"; do
	rows+=("$(psql -X -At -h 127.0.0.1 -p $PORT -c "SELECT count(*) FROM ($q) t")")
done
python3 - "$WORK/times.txt" "${#Q[@]}" "${rows[@]}" "${Q[@]}" <<'PY'
import statistics, sys
t = [float(x) for x in open(sys.argv[1])]
k = int(sys.argv[2]); rows = [int(x) for x in sys.argv[3:3 + k]]; qs = sys.argv[3 + k:]
for i, q in enumerate(qs):
    xs = t[i::k]
    m = statistics.median(xs)
    print(f"{q}\n  {rows[i]:,} domains: min {min(xs):.1f} ms, median {m:.1f} ms, max {max(xs):.1f} ms; {rows[i] / m * 1000:,.0f} domains/s at the median")
PY
man=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); v=[v for v in m['versions'] if v['version']==m['current_version']][0]; print(v['dataset_to_domains_roar'], v['domains'])" "$WORK/store/index/manifest.json")
set -- $man
size=$(stat -c %s "$WORK/store/$1")
echo "dataset_to_domains.roar: $size bytes for $2 domains: $(python3 -c "print(round($size / $2, 3))") B/domain"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
