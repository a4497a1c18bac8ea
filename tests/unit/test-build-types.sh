#!/bin/bash
# Builds the whole tree (tests included) as packagers and users do, beside the build that
# runs the tests: gcc and clang, each with --buildtype=release (-O3, NDEBUG) and
# --buildtype=debug (-O0). -Werror stays on, so a warning that only one compiler at one
# optimisation level gives (gcc's -Wformat-truncation needs -O2 or more) fails here rather
# than in somebody's `meson setup --buildtype=release`.
# Environment: CORRAL_SRCDIR, CORRAL_BUILDDIR; CORRAL_TEST_STRICT=1 turns a skip into a
# failure.
set -uo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${CORRAL_BUILDDIR:?CORRAL_BUILDDIR names the meson build directory}
out=$(cd "$build" && pwd)/build-types

skip() {
    echo "$1"
    [ "${CORRAL_TEST_STRICT:-0}" = 1 ] && exit 1
    exit 77
}
for c in gcc clang; do
    command -v $c >/dev/null || skip "$c is not installed (scripts/install-deps): skipped"
done

failed=()
for cc in gcc clang; do
    for type in release debug; do
        dir=$out/$cc-$type
        log=$out/$cc-$type.log
        mkdir -p "$out"
        # Reconfigured in place when it exists: only what changed is rebuilt next time.
        if [ -f "$dir/build.ninja" ]; then
            cmd=(meson setup --reconfigure "$dir" "$src")
        else
            cmd=(env CC=$cc meson setup "$dir" "$src" --buildtype=$type -Dman=disabled -Dselinux=disabled -Dintegration=false)
        fi
        if "${cmd[@]}" >"$log" 2>&1 && ninja -C "$dir" >>"$log" 2>&1; then
            echo "ok: $cc --buildtype=$type"
        else
            echo "FAILED: $cc --buildtype=$type; the first errors ($log):"
            grep -E 'error:|FAILED:' "$log" | head -n 10
            failed+=("$cc-$type")
        fi
    done
done
[ ${#failed[@]} = 0 ] || { echo "build types that fail: ${failed[*]}"; exit 1; }
