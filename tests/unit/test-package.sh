#!/bin/bash
# Builds the Debian packages once, as a user would (dpkg-buildpackage -us -uc -b), in a copy
# of the source tree under BUILDDIR/deb/ so that the working tree stays clean, checks what
# they hold and how their maintainer scripts treat the units, and runs lintian on them:
# any error or warning fails (debian/*.lintian-overrides give each override its reason).
# The .deb files stay in BUILDDIR/deb/ for the integration tier, whose guest installs them.
# Environment: CORRAL_SRCDIR, CORRAL_BUILDDIR; CORRAL_TEST_STRICT=1 turns a skip into a
# failure.
set -uo pipefail
src=${CORRAL_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${CORRAL_BUILDDIR:?CORRAL_BUILDDIR names the meson build directory}
build=$(cd "$build" && pwd)
out=$build/deb

skip() {
    echo "$1"
    [ "${CORRAL_TEST_STRICT:-0}" = 1 ] && exit 1
    exit 77
}
for t in dpkg-buildpackage dh dpkg-checkbuilddeps lintian; do
    command -v $t >/dev/null || skip "$t is not installed (scripts/install-deps): skipped"
done
if ! deps=$(cd "$src" && dpkg-checkbuilddeps -B 2>&1 && dpkg-checkbuilddeps -A 2>&1); then
    skip "build dependencies missing (scripts/install-deps): $deps"
fi

version=$(cd "$src" && dpkg-parsechangelog -S Version)
rm -rf "$out"
mkdir -p "$out/src/corral-$version"
tree=$out/src/corral-$version
# The tree as it is (tracked and new files, uncommitted changes included), without build
# directories or anything git ignores.
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
    (cd "$src" && git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf -) | tar -xf - -C "$tree"
else
    (cd "$src" && tar --exclude='./build*' --exclude='./obj-*' --exclude=./.git -cf - .) | tar -xf - -C "$tree"
fi

echo "building corral $version in $tree"
start=$(date +%s)
# The unit suite runs in the project's own build: nocheck keeps this one to one build.
if ! (cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" nice -n 5 \
        dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1); then
    tail -n 40 "$out/build.log"
    echo "FAIL: dpkg-buildpackage -us -uc -b (log: $out/build.log)"
    exit 1
fi
echo "dpkg-buildpackage: $(( $(date +%s) - start ))s"
arch=$(dpkg --print-architecture)
deb=$out/src/corral_${version}_$arch.deb
sedeb=$out/src/corral-selinux_${version}_all.deb
changes=$out/src/corral_${version}_$arch.changes
slurmdeb=$out/src/corral-slurm-compat_${version}_$arch.deb
cockpitdeb=$out/src/corral-cockpit_${version}_all.deb
for f in "$deb" "$sedeb" "$slurmdeb" "$cockpitdeb" "$changes"; do
    [ -f "$f" ] || { echo "FAIL: $f was not built"; ls "$out/src"; exit 1; }
done
cp "$deb" "$sedeb" "$slurmdeb" "$cockpitdeb" "$out/"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# What the packages hold.
contents=$(dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|')
for f in /usr/bin/corral /usr/bin/corral-sim /usr/libexec/corrald /usr/libexec/corral/corral-supervisor \
         /lib/systemd/system/corrald.service /lib/systemd/system/corrald.socket /lib/systemd/system/corral.slice /lib/systemd/system/corral-mail.slice \
         /etc/corral/corral.conf /etc/corral/corral.conf.d/ \
         /usr/share/man/man1/corral.1.gz /usr/share/man/man1/corral-sim.1.gz /usr/share/man/man8/corrald.8.gz \
         /usr/share/man/man5/corral.conf.5.gz /usr/share/man/man5/corral-projects.5.gz \
         /usr/share/bash-completion/completions/corral /usr/share/zsh/vendor-completions/_corral; do
    grep -qxF "$f" <<<"$contents" || fail "corral.deb lacks $f"
done
secontents=$(dpkg-deb -c "$sedeb" | awk '{ print $NF }' | sed 's|^\./|/|')
for f in /usr/share/selinux/packages/corral.pp /usr/share/selinux/devel/include/contrib/corral.if; do
    grep -qxF "$f" <<<"$secontents" || fail "corral-selinux.deb lacks $f"
done

# The Slurm commands only in corral-slurm-compat, which conflicts with Slurm's.
slurmcontents=$(dpkg-deb -c "$slurmdeb" | awk '{ print $NF }' | sed 's|^\./|/|')
for t in sbatch squeue scancel sacct sinfo scontrol srun sacctmgr seff; do
    grep -qxF "/usr/bin/$t" <<<"$slurmcontents" || fail "corral-slurm-compat.deb lacks /usr/bin/$t"
    grep -qxF "/usr/bin/$t" <<<"$contents" && fail "corral.deb holds /usr/bin/$t (only corral-slurm-compat may)"
done
grep -qxF /usr/share/man/man7/corral-slurm.7.gz <<<"$slurmcontents" || fail "corral-slurm-compat.deb lacks corral-slurm(7)"
# Beside slurm-client, not against it: its commands are diverted for corrald's forwarding
# queues (corrald(8), FORWARDING TO SLURM), and given back on removal.
dpkg-deb -f "$slurmdeb" Conflicts | grep -qw slurm-client && fail "corral-slurm-compat conflicts with slurm-client"
sctl=$out/slurm-control
rm -rf "$sctl" && mkdir -p "$sctl" && dpkg-deb -e "$slurmdeb" "$sctl"
grep -q 'dpkg-divert --package corral-slurm-compat' "$sctl/preinst" || fail "corral-slurm-compat does not divert Slurm's commands"
grep -q -- '--remove' "$sctl/postrm" || fail "corral-slurm-compat does not give Slurm's commands back"

# The Cockpit page (corral-cockpit(7)) only in corral-cockpit: static files and Cockpit's
# own cockpit.js, nothing bundled, nothing to run with privileges.
cockpitcontents=$(dpkg-deb -c "$cockpitdeb" | awk '{ print $NF }' | sed 's|^\./|/|')
for f in manifest.json index.html corral.js corral.css; do
    grep -qxF "/usr/share/cockpit/corral/$f" <<<"$cockpitcontents" || fail "corral-cockpit.deb lacks /usr/share/cockpit/corral/$f"
    grep -qxF "/usr/share/cockpit/corral/$f" <<<"$contents" && fail "corral.deb holds /usr/share/cockpit/corral/$f"
done
grep -qxF /usr/share/man/man7/corral-cockpit.7.gz <<<"$cockpitcontents" || fail "corral-cockpit.deb lacks corral-cockpit(7)"
dpkg-deb -f "$cockpitdeb" Depends | grep -q 'cockpit-bridge (>= 287)' || fail "corral-cockpit does not depend on cockpit-bridge (>= 287)"
dpkg-deb -f "$cockpitdeb" Architecture | grep -qx all || fail "corral-cockpit is not Architecture: all"

# The maintainer scripts: the configuration is a conffile; the socket is enabled and
# started, and never stopped or restarted by an upgrade; the service is restarted after
# an upgrade, not stopped before it; only a purge removes the state.
ctl=$out/control
rm -rf "$ctl" && mkdir -p "$ctl" && dpkg-deb -e "$deb" "$ctl"
grep -qx /etc/corral/corral.conf "$ctl/conffiles" || fail "/etc/corral/corral.conf is not a conffile"
grep -q "deb-systemd-helper enable 'corrald.socket'\|deb-systemd-helper enable 'corrald.service'" "$ctl/postinst" \
    || fail "postinst does not enable the units"
grep -q "deb-systemd-invoke start 'corrald.socket'" "$ctl/postinst" || fail "postinst does not start corrald.socket"
grep -q "deb-systemd-invoke restart corrald.service" "$ctl/postinst" \
    || fail "postinst does not restart corrald.service after an upgrade"
grep -Eq "(restart|_dh_action|stop).*corrald.socket" "$ctl/postinst" && fail "postinst restarts corrald.socket"
grep -E "deb-systemd-invoke (stop|restart)" "$ctl/prerm" "$ctl/postrm" | grep -q socket \
    && ! awk '/deb-systemd-invoke stop .*corrald.socket/ { print prev } { prev = $0 }' "$ctl/prerm" | grep -q '= remove' \
    && fail "corrald.socket is stopped other than on removal"
if grep -q "deb-systemd-invoke stop" "$ctl/prerm"; then
    # Stopping belongs to removal only.
    awk '/deb-systemd-invoke stop/ { print prev } { prev = $0 }' "$ctl/prerm" | grep -q 'remove' \
        || fail "prerm stops units on upgrade: $(cat "$ctl/prerm")"
fi
[ -f "$ctl/preinst" ] && grep -q 'deb-systemd-invoke stop' "$ctl/preinst" && fail "preinst stops units: $(cat "$ctl/preinst")"
grep -q 'rm -rf /var/lib/corral' "$ctl/postrm" || fail "postrm does not remove /var/lib/corral on purge"
awk '/rm -rf \/var\/lib\/corral/ { exit !inpurge } /"\$1" = purge/ { inpurge = 1 }' "$ctl/postrm" \
    || fail "postrm removes /var/lib/corral outside purge"

# lintian, on everything built.
lintian_out=$out/lintian.txt
lintian --fail-on error,warning --display-info "$changes" >"$lintian_out" 2>&1
lrc=$?
cat "$lintian_out"
errors=$(grep -c '^E: ' "$lintian_out" || true)
warnings=$(grep -c '^W: ' "$lintian_out" || true)
infos=$(grep -c '^I: ' "$lintian_out" || true)
overridden=$(lintian --show-overrides "$changes" 2>/dev/null | grep -c '^O: ' || true)
echo "lintian: $errors errors, $warnings warnings, $infos infos, $overridden overridden"
[ "$lrc" = 0 ] && [ "$errors" = 0 ] && [ "$warnings" = 0 ] || fail "lintian (exit $lrc)"

[ $fails = 0 ] && echo "ok: corral $version packages built and checked: $deb $sedeb"
[ $fails = 0 ]
