#!/bin/bash
# scripts/gpu-check's NVML half on a machine without GPUs: the fake NVML
# ($FAKE_NVML_LIBRARY) and a fake nvidia-smi on PATH that agree pass every check; where
# nvidia-smi says another model, memory size or PCI address, or live figures far apart,
# the script names each and exits non-zero.
set -uo pipefail
src=${CORRAL_SRCDIR:?}
probe=${NVML_PROBE:?}
tmp=$(mktemp -d /tmp/test-gpu-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/nvml.conf" <<'CONF'
gpu uuid=GPU-11111111-2222-3333-4444-555555555555 pci=00000000:3B:00.0 memory=85520809984 used=1048576000 util=57 numa=0 cpus=0-15,32-47 name=NVIDIA H100 80GB HBM3
gpu uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee pci=00000000:5E:00.0 memory=85520809984 used=0 util=0 numa=1 name=NVIDIA H100 80GB HBM3
CONF
mkdir "$tmp/bin"
# nvidia-smi as the driver's prints: -L, and the query gpu-check makes (MiB, percent).
smi() {
    cat >"$tmp/bin/nvidia-smi" <<SMI
#!/bin/bash
case "\$*" in
    -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)"
        echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)" ;;
    *nounits*) echo "GPU-11111111-2222-3333-4444-555555555555, $1, $2, 00000000:3B:00.0, $3, 1000"
               echo "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, NVIDIA H100 80GB HBM3, 81559, $4, 0, 0" ;;
    *) echo "(the csv with units)" ;;
esac
SMI
    chmod +x "$tmp/bin/nvidia-smi"
}
run() {
    PATH="$tmp/bin:$PATH" FAKE_NVML_CONFIG="$tmp/nvml.conf" CORRAL_NVML_LIBRARY="${FAKE_NVML_LIBRARY:?}" \
        "$src/scripts/gpu-check" --nvml-only /nonexistent "$probe"
}

smi "NVIDIA H100 80GB HBM3" 81559 60 00000000:5E:00.0
out=$(run 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] || fail "gpu-check failed where NVML and nvidia-smi agree (rc $rc)"
grep -q '^FAIL' <<<"$out" && fail "a check failed where they agree"
[ "$(grep -c '^PASS' <<<"$out")" = 14 ] || fail "not every check ran"
grep -q '^nvml 0 uuid=GPU-11111111-2222-3333-4444-555555555555 pci=0000:3b:00.0 .* numa=0 cpus=0-15,32-47 ' <<<"$out" ||
    fail "NVML's view is not printed"

# Another model, memory size, PCI address, and utilisation 60 points away.
smi "NVIDIA A100-SXM4-40GB" 40536 0 00000000:AF:00.0
sed -i 's/util=57/util=60/' "$tmp/nvml.conf"
out=$(run 2>&1); rc=$?
echo "$out"
[ $rc != 0 ] || fail "gpu-check passed where NVML and nvidia-smi disagree"
for what in 'model "NVIDIA A100-SXM4-40GB"' 'memory 40536 MiB' 'PCI address 0000:af:00.0' 'utilisation 0%'; do
    grep -q "^FAIL: .*$what" <<<"$out" || fail "no failure for $what"
done
[ "$(grep -c '^FAIL' <<<"$out")" = 4 ] || fail "failures beyond the four disagreements"
echo "gpu-check: 4 disagreements found, as planted"
