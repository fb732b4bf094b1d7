#!/usr/bin/env bash
# Two builds side by side on run.sh's store: each statement timed with
# psql (\timing) on one server and then the other, the order alternating
# per round; medians (min-max) of each. The README's before/after of
# dataset_domains reading only the columns a statement uses came from it.
#
#   bench/reverse/ab.sh [-d WORKDIR] [-r ROUNDS] BEFORE AFTER
#
# Run run.sh once first (it makes the store in WORKDIR). Needs python3 and
# psql.
set -euo pipefail
WORK=/tmp/dhsi-bench-reverse ROUNDS=7
while getopts d:r: o; do
	case $o in
	d) WORK=$OPTARG ;; r) ROUNDS=$OPTARG ;;
	*) sed -n 2,10p "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] && [ -f "$WORK/store/index/manifest.json" ] || { sed -n 2,10p "$0"; exit 2; }
A=$1 B=$2
PA=$((20000 + RANDOM % 20000)) PB=$((PA + 1))
rm -rf "$WORK/cacheA" "$WORK/cacheB"
"$A" serve --store "$WORK/store" --cache-dir "$WORK/cacheA" --listen 127.0.0.1:$PA >"$WORK/serveA.log" 2>&1 &
SA=$!
"$B" serve --store "$WORK/store" --cache-dir "$WORK/cacheB" --listen 127.0.0.1:$PB >"$WORK/serveB.log" 2>&1 &
SB=$!
trap 'kill $SA $SB' EXIT
for p in $PA $PB; do
	for _ in $(seq 100); do psql -X -q -h 127.0.0.1 -p $p -c 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
done
Q=("SELECT * FROM dataset_domains(1)"
	"SELECT domain FROM dataset_domains(1)"
	"COPY (SELECT * FROM dataset_domains(1)) TO STDOUT"
	"COPY (SELECT domain FROM dataset_domains(1)) TO STDOUT"
	"SELECT domain FROM dataset_domains_set(1, 'andnot', 2)"
	"SELECT count(*) FROM dataset_domains(1)")
t() { psql -X -h 127.0.0.1 -p "$1" -c '\timing on' -c '\o /dev/null' -c "$2" | awk '/^Time:/ {print $2}'; }
: >"$WORK/ab.txt"
for r in $(seq "$ROUNDS"); do
	for i in "${!Q[@]}"; do
		if [ $((r % 2)) -eq 1 ]; then
			a=$(t $PA "${Q[$i]}") b=$(t $PB "${Q[$i]}")
		else
			b=$(t $PB "${Q[$i]}") a=$(t $PA "${Q[$i]}")
		fi
		echo "$i $a $b" >>"$WORK/ab.txt"
	done
done
python3 - "$WORK/ab.txt" "${Q[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]; qs = sys.argv[2:]
for i, q in enumerate(qs):
    a = [float(r[1]) for r in rows if int(r[0]) == i]; b = [float(r[2]) for r in rows if int(r[0]) == i]
    print(f"{q}\n  before {statistics.median(a):.1f} ms ({min(a):.1f}-{max(a):.1f}), after {statistics.median(b):.1f} ms ({min(b):.1f}-{max(b):.1f})")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
