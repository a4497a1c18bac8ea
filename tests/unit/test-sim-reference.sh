#!/bin/bash
# corral-sim --semantics=published against sim-reference.py, an independent reference of
# the published EASY simulators' rules: job by job and every printed figure, EASY and
# EASY-SJBF, on synthetic traces with long queues (thousands waiting), many submissions
# at one second, jobs ending together early and at their request, jobs as wide as the
# machine; through the flat engine (the default there) and the scheduling core. The
# reference itself must first give the published HPC2N rows (when the shared trace is
# there). Without python3 the test says so and is skipped.
set -uo pipefail
src=${CORRAL_SRCDIR:?}
sim=${CORRAL_BUILDDIR:?}/sim/corral-sim
ref=$src/tests/unit/sim-reference.py
if ! command -v python3 >/dev/null; then
    echo "SKIP: no python3 to run the reference" >&2
    exit 77
fi
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0

hpc2n=$src/../shared/traces/hpc2n-2002-first3170.swf
if [ -r "$hpc2n" ]; then
    for o in "" --sjbf; do
        got=$(python3 "$ref" run $o "$hpc2n" 2>&1 >/dev/null)
        want="'avg_wait': '3470.178', 'avg_bsld': '16.213660'"
        [ -n "$o" ] && want="'avg_wait': '3316.780', 'avg_bsld': '16.051249'"
        if [[ "$got" != *"$want"* ]]; then
            echo "FAIL: the reference ${o:-EASY} on HPC2N: $got, published $want" >&2
            fail=1
        fi
    done
else
    echo "note: $hpc2n absent: the reference's published rows not checked" >&2
fi

for case in "1 4000 64" "2 2000 128" "3 1500 32"; do
    set -- $case
    python3 "$ref" gen "$1" "$2" "$3" > "$dir/g$1.swf" || exit 1
    for engine in flat core; do
        for o in "" --sjbf; do
            if ! python3 "$ref" compare "$sim" "$dir/g$1.swf" $o --engine=$engine; then
                echo "FAIL: corral-sim ($engine) differs from the reference (seed $1, $2 jobs," \
                     "$3 processors ${o:-EASY})" >&2
                fail=1
            fi
        done
    done
done
exit $fail
