#!/bin/bash
# bench/launch, run in the test guest (tests/vm/run --build-dir build bench-launch):
# N sequential launches of /bin/true through the executor vs `systemd-run --scope
# /bin/true` run the same way, p50/p99 and the ratio; then throughput with K in flight.
# Prints figures; never fails on time.
# timeout: 1200
. "$CORRAL_TEST_LIB"
. "$(dirname "$0")/bench-lib.sh"
N=${CORRAL_BENCH_N:-100}
! bench_quick || N=${CORRAL_BENCH_N:-30}
K=${CORRAL_BENCH_K:-8}
run=/usr/libexec/corral/corral-exec-run

bare=()
for i in $(seq "$N"); do
    t0=$(date +%s%N); systemd-run --quiet --scope /bin/true; t1=$(date +%s%N)
    bare+=($(( (t1 - t0) / 1000 )))
done
read -r bp50 bp99 < <(printf '%s\n' "${bare[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int(NR/2)+1]/1000, a[int(NR*0.99)]/1000}')
ours=$($run --id 500000 --repeat "$N" --print-latency -- /bin/true)
read -r _ _ _ op50 _ op99 <<<"$ours"
echo "launch: N=$N sequential /bin/true"
echo "  systemd-run --scope : p50 ${bp50} ms  p99 ${bp99} ms"
echo "  corral executor     : p50 ${op50} ms  p99 ${op99} ms"
echo "  ratio p50 (corral / systemd-run): $(awk -v a="$op50" -v b="$bp50" 'BEGIN {printf "%.2f", a / b}')"
figure "executor launch of /bin/true p50, ms (anchor: systemd-run --scope)" "$op50" "$bp50" \
    "$(awk -v a="$op50" -v b="$bp50" 'BEGIN {printf "%.2f", a / b}')"
t0=$(date +%s%N)
$run --id 600000 --repeat "$N" --parallel "$K" --print-latency -- /bin/true > /dev/null
t1=$(date +%s%N)
echo "  throughput with $K in flight: $(awk -v n="$N" -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", n / (ns / 1e9)}') launches/s"
