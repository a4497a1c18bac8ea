# Sourced by the benchmarks (tests/integration/bench-*.sh) after lib.sh: how a figure is
# printed so that bench-all can collect it. One line per figure, tab-separated:
#   FIGURE <what> <value> <anchor> <ratio>
# (anchor and ratio "-" where a figure has none). The human-readable lines stay as they were.
figure() {
    printf 'FIGURE\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3:--}" "${4:--}"
}
# CORRAL_BENCH_QUICK=1 (bench/all's default): each benchmark's smaller sizes, so that the
# whole set fits one guest boot under TCG. A size set in the environment wins.
bench_quick() { [ "${CORRAL_BENCH_QUICK:-0}" = 1 ]; }
