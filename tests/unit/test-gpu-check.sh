#!/bin/bash
# scripts/gpu-check's NVML half on a machine without GPUs: the fake NVML
# ($FAKE_NVML_LIBRARY) and a fake nvidia-smi on PATH that agree pass every check; where
# nvidia-smi says another model, memory size or PCI address, live figures far apart, or
# another count of active NVLinks, or MIG devices other than NVML's,
# the script names each and exits non-zero.
set -uo pipefail
src=${CORRAL_SRCDIR:?}
probe=${NVML_PROBE:?}
tmp=$(mktemp -d /tmp/test-gpu-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/nvml.conf" <<'CONF'
gpu uuid=GPU-11111111-2222-3333-4444-555555555555 pci=00000000:3B:00.0 memory=85520809984 used=1048576000 util=57 numa=0 mig=0 cpus=0-15,32-47 name=NVIDIA H100 80GB HBM3
gpu uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee pci=00000000:5E:00.0 memory=85520809984 used=0 util=0 numa=1 mig=1 name=NVIDIA H100 80GB HBM3
mig 1 9 0 MIG-0b5b2b0a-0000-5000-8000-000000000001 10468982784 NVIDIA H100 80GB HBM3 MIG 1g.10gb
mig 1 2 0 MIG-0b5b2b0a-0000-5000-8000-000000000002 42279239680 NVIDIA H100 80GB HBM3 MIG 3g.40gb
nvlink 0 0 00000000:5E:00.0
nvlink 0 1 00000000:5E:00.0
nvlink 1 0 00000000:3B:00.0
nvlink 1 1 00000000:3B:00.0
CONF
mkdir "$tmp/bin"
# nvidia-smi as the driver's prints: -L, the query gpu-check makes (MiB, percent), and
# nvlink --status (GPU 0's active links: $5).
smi() {
    cat >"$tmp/bin/nvidia-smi" <<SMI
#!/bin/bash
case "\$*" in
    -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)"
        echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)"
        echo "  MIG 1g.10gb     Device  0: (UUID: MIG-0b5b2b0a-0000-5000-8000-000000000001)"
        echo "  MIG 3g.40gb     Device  1: (UUID: MIG-0b5b2b0a-0000-5000-8000-000000000002)" ;;
    *nounits*) echo "GPU-11111111-2222-3333-4444-555555555555, $1, $2, 00000000:3B:00.0, $3, 1000, 0, Disabled"
               echo "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, NVIDIA H100 80GB HBM3, 81559, $4, 0, 0, 1, Enabled" ;;
    "nvlink --status -i 0")
        echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-11111111-2222-3333-4444-555555555555)"
        for l in \$(seq 0 17); do
            if [ \$l -lt $5 ]; then echo "	 Link \$l: 26.562 GB/s"; else echo "	 Link \$l: <inactive>"; fi
        done ;;
    "nvlink --status -i 1")
        echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)"
        echo "	 Link 0: 26.562 GB/s"
        echo "	 Link 1: 26.562 GB/s" ;;
    *) echo "(the csv with units)" ;;
esac
SMI
    chmod +x "$tmp/bin/nvidia-smi"
}
run() {
    PATH="$tmp/bin:$PATH" FAKE_NVML_CONFIG="$tmp/nvml.conf" CORRAL_NVML_LIBRARY="${FAKE_NVML_LIBRARY:?}" \
        "$src/scripts/gpu-check" --nvml-only /nonexistent "$probe"
}

smi "NVIDIA H100 80GB HBM3" 81559 60 00000000:5E:00.0 2
out=$(run 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] || fail "gpu-check failed where NVML and nvidia-smi agree (rc $rc)"
grep -q '^FAIL' <<<"$out" && fail "a check failed where they agree"
[ "$(grep -c '^PASS' <<<"$out")" = 22 ] || fail "not every check ran"
grep -q '^nvml 0 uuid=GPU-11111111-2222-3333-4444-555555555555 pci=0000:3b:00.0 .* numa=0 cpus=0-15,32-47 ' <<<"$out" ||
    fail "NVML's view is not printed"

# Another model, memory size, PCI address, utilisation 60 points away, and 4 NVLinks.
smi "NVIDIA A100-SXM4-40GB" 40536 0 00000000:AF:00.0 4
sed -i 's/util=57/util=60/' "$tmp/nvml.conf"
out=$(run 2>&1); rc=$?
echo "$out"
[ $rc != 0 ] || fail "gpu-check passed where NVML and nvidia-smi disagree"
for what in 'model "NVIDIA A100-SXM4-40GB"' 'memory 40536 MiB' 'PCI address 0000:af:00.0' 'utilisation 0%' \
    '2 active NVLinks as nvidia-smi.s 4'; do
    grep -q "^FAIL: .*$what" <<<"$out" || fail "no failure for $what"
done
[ "$(grep -c '^FAIL' <<<"$out")" = 5 ] || fail "failures beyond the five disagreements"
echo "gpu-check: 5 disagreements found, as planted"
