#!/bin/bash
# MIG devices scheduled as GPUs, on a fake NVIDIA driver: its procfs (a tmpfs over
# /proc/driver) names an A100 in MIG mode with two 1g.5gb and one 2g.10gb MIG devices
# (their capability files, as the driver writes them) and a whole A100; the capability
# nodes are char nodes of a major no driver serves, the GPU nodes of major 195; the fake
# NVML (tests/fake-nvml/) names the MIG devices' UUIDs and profiles. A --gres=gpu:1g.5gb
# job opens exactly its GPU's node, nvidiactl and its MIG device's two capability nodes
# (ENXIO: no driver) and nothing else (EPERM), with CUDA_VISIBLE_DEVICES its MIG UUID; the
# GPU in MIG mode is given to no job whole; sinfo counts the MIG devices by profile;
# --test-only refuses more than there are, with the numbers; the job is charged 1/7 of its
# GPU-hours. It runs after the other GPU tests: the cards they declared or discovered are
# known to corrald (gone), as a machine's past cards are.
# timeout: 600
. "$CORRAL_TEST_LIB"
dropin=/etc/corral/corral.conf.d/41-gpu-mig.conf
unitdrop=/run/systemd/system/corrald.service.d/41-fake-nvml.conf
lib=/usr/local/lib/corral-test/libfake-nvml.so
conf=/run/corral-fake-nvml-41.conf
cleanup() {
    corral cancel -u "$USER_A" >/dev/null 2>&1 || true
    rm -f "$dropin" "$unitdrop" /dev/nvidia0 /dev/nvidia1 /dev/nvidiactl
    rm -rf /dev/nvidia-caps
    umount /proc/driver 2>/dev/null || true
    systemctl daemon-reload
    systemctl restart corrald >/dev/null 2>&1 || true
}
trap cleanup EXIT
grep -qE '^ *195 ' /proc/devices && skip "a driver serves major 195 here: the fake GPUs would be real"
[ -f "$CORRAL_BUILDDIR/tests/fake-nvml/libfake-nvml.so" ] || fail "no fake NVML in the build tree"
install -D -m 0644 "$CORRAL_BUILDDIR/tests/fake-nvml/libfake-nvml.so" "$lib"
# nvidia-caps' major is the kernel's choice: any char major no driver serves stands in.
caps_major=
for m in $(seq 240 254); do
    awk '/^Character/ { c = 1; next } /^Block/ { c = 0 } c { print $1 }' /proc/devices | grep -qx "$m" || { caps_major=$m; break; }
done
[ -n "$caps_major" ] || skip "no free char major in 240-254 for the fake capability nodes"

uuid() { printf 'GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a%02d' "$1"; }
mount -t tmpfs -o mode=0555 corral-fake-driver /proc/driver || skip "cannot mount over /proc/driver"
card() { # I PCI MINOR
    mkdir -p "/proc/driver/nvidia/gpus/$2"
    printf 'Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 150\nGPU UUID: \t %s\nBus Type: \t PCIe\nBus Location: \t %s\nDevice Minor: \t %s\nGPU Excluded:\t No\n' \
        "$(uuid "$1")" "$2" "$3" > "/proc/driver/nvidia/gpus/$2/information"
    rm -f "/dev/nvidia$3"; mknod -m 0666 "/dev/nvidia$3" c 195 "$3"
}
access() { printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "$2" > "$1/access"; }
mig() { # GI CI GI-MINOR CI-MINOR, on the GPU of minor 0
    local d=/proc/driver/nvidia/capabilities/gpu0/mig/gi$1
    mkdir -p "$d/ci$2"
    access "$d" "$3"
    access "$d/ci$2" "$4"
    for n in "$3" "$4"; do
        [ -e "/dev/nvidia-caps/nvidia-cap$n" ] || mknod -m 0444 "/dev/nvidia-caps/nvidia-cap$n" c "$caps_major" "$n"
    done
}
rm -rf /dev/nvidia-caps; mkdir -p /dev/nvidia-caps
card 40 0000:3b:00.0 0
card 41 0000:5e:00.0 1
mig 1 0 12 13
mig 2 0 21 22
mig 3 0 30 31
rm -f /dev/nvidiactl; mknod -m 0666 /dev/nvidiactl c 195 255
printf '%s\n' \
    "gpu uuid=$(uuid 40) pci=00000000:3B:00.0 util=0 mig=1 name=NVIDIA A100-SXM4-40GB" \
    "gpu uuid=$(uuid 41) pci=00000000:5E:00.0 util=7 mig=0 name=NVIDIA A100-SXM4-40GB" \
    "mig 0 1 0 MIG-34000000-0000-5000-8000-000000000001 5368709120 NVIDIA A100-SXM4-40GB MIG 1g.5gb" \
    "mig 0 2 0 MIG-34000000-0000-5000-8000-000000000002 5368709120 NVIDIA A100-SXM4-40GB MIG 1g.5gb" \
    "mig 0 3 0 MIG-34000000-0000-5000-8000-000000000003 10737418240 NVIDIA A100-SXM4-40GB MIG 2g.10gb" > "$conf"
mkdir -p /etc/corral/corral.conf.d "$(dirname "$unitdrop")"
printf '[Manager]\nGPUSampleSec=1s\n' > "$dropin"
printf '[Service]\nEnvironment=CORRAL_NVML_LIBRARY=%s FAKE_NVML_CONFIG=%s\n' "$lib" "$conf" > "$unitdrop"
systemctl daemon-reload
systemctl restart corrald

devices() { corral info --json | jq -c '[.devices[] | [.index, .name, .mig_of, .mig_gi, .mig_profile, .offline, .job_id]]'; }
wait_for 60 sh -c "[ \"\$(corral info --json | jq '[.devices[] | select(.mig_profile)] | length')\" = 3 ]" \
    || fail "the MIG devices' profiles were not read: $(devices) $(corral info --json | jq -c .gpu_telemetry.state)"
log "devices: $(devices)"
info=$(corral info)
log "$info"
assert_eq "$(corral info --json | jq -r '[.devices[] | select(.mig_mode)] | map(.pci_address) | join(",")')" 0000:3b:00.0 \
    "the A100 with MIG devices, alone in MIG mode"
assert_eq "$(corral info --json | jq -r .gpus)" 4 "schedulable GPUs: the whole A100 and the 3 MIG devices"
assert_match "$info" 'NVIDIA A100-SXM4-40GB MIG 1g\.5gb +[0-9-]+ +gpu[0-9]+ GI 1 CI 0 ' "corral info's line of a MIG device"
assert_match "$info" ' MIG mode *$' "corral info's line of the GPU in MIG mode"
if command -v sinfo >/dev/null; then
    assert_eq "$(sinfo -h -o %G)" "gpu:nvidia_a100-sxm4-40gb:1,gpu:1g.5gb:2,gpu:2g.10gb:1" "sinfo's GRES"
fi

work=$(as_user "$USER_A" mktemp -d /tmp/gpumig.XXXXXX)
# Refused with the numbers: more MIG devices of a profile, or whole A100s, than there are.
out=$(cd "$work" && as_user "$USER_A" corral submit --test-only --gres=gpu:2g.10gb:2 -- /bin/true 2>&1) \
    && fail "two 2g.10gb accepted: $out"
assert_match "$out" "of type 2g\.10gb: this machine has 1 such GPU" "--test-only refusal of two 2g.10gb"
out=$(cd "$work" && as_user "$USER_A" corral submit --test-only --gres=gpu:a100:2 -- /bin/true 2>&1) \
    && fail "two whole A100s accepted: $out"
assert_match "$out" "of type a100: this machine has 1 such GPU" "--test-only refusal of two whole A100s"

cat > /tmp/gpu-probe-41.py <<'EOF'
import errno, os, sys
for p in sys.argv[1:]:
    try:
        os.close(os.open(p, os.O_RDONLY))
        print(p, "OK")
    except OSError as e:
        print(p, errno.errorcode.get(e.errno, e.errno))
for k in ("CUDA_VISIBLE_DEVICES", "CORRAL_GPUS"):
    print("env", k, os.environ.get(k, "-"))
EOF
chmod 0644 /tmp/gpu-probe-41.py
nodes="/dev/nvidia0 /dev/nvidia1 /dev/nvidiactl $(ls /dev/nvidia-caps/* | tr '\n' ' ')"
line() { printf '%s\n' "$1" | awk -v k="$2" 'index($0, k " ") == 1 { print substr($0, length(k) + 2); exit }'; }
id=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gres=gpu:1g.5gb:1 -o "$work/out" -- \
    sh -c "python3 /tmp/gpu-probe-41.py $nodes; sleep 2")
[ -n "$id" ] || fail "the 1g.5gb job was refused"
wait_for 120 sh -c "[ \"\$(corral show --json $id | jq -r .job.state)\" = COMPLETED ]" \
    || fail "job $id did not complete: $(corral show --json "$id" | jq -c .job.state) $(corral why "$id")"
out=$(cat "$work/out")
log "job $id: $(echo "$out" | tr '\n' ';')"
g=$(line "$out" 'env CORRAL_GPUS')
gi=$(corral info --json | jq -r --argjson i "$g" '.devices[] | select(.index == $i) | .mig_gi')
case "$gi" in
    1) mine="12 13" ;;
    2) mine="21 22" ;;
    *) fail "job $id was given GPU $g (GPU instance '$gi'), not a 1g.5gb" ;;
esac
assert_eq "$(line "$out" 'env CUDA_VISIBLE_DEVICES')" "MIG-34000000-0000-5000-8000-00000000000$gi" \
    "job $id's CUDA_VISIBLE_DEVICES: its MIG device's UUID"
assert_eq "$(line "$out" /dev/nvidia0)" ENXIO "job $id opening its MIG device's GPU node"
assert_eq "$(line "$out" /dev/nvidiactl)" ENXIO "job $id opening nvidiactl"
assert_eq "$(line "$out" /dev/nvidia1)" EPERM "job $id opening the whole A100"
for n in 12 13 21 22 30 31; do
    case " $mine " in
        *" $n "*) assert_eq "$(line "$out" "/dev/nvidia-caps/nvidia-cap$n")" ENXIO "job $id opening its capability node $n" ;;
        *) assert_eq "$(line "$out" "/dev/nvidia-caps/nvidia-cap$n")" EPERM "job $id opening another MIG device's capability node $n" ;;
    esac
done

# Charged 1/7 of an A100's hours: its GPU-hours are its core-hours (1 CPU) over 7 (to the
# microsecond: its GPU time is the whole microseconds of run / 7, so 7 x it is short by < 7 us).
c=$(corral show --json "$id" | jq -c .job.charge)
log "charge: $c"
jq -e '.gpus == 1 and ((.core_hours - .gpu_hours * 7) * 3600e6 | fabs) < 8' <<<"$c" >/dev/null \
    || fail "job $id not charged 1/7 of its GPU's hours: $c"

# The GPU in MIG mode is never given whole: a job asking for 2 whole A100s by model waits
# (refused outright), and a plain 2-GPU job is given the whole A100 and a MIG device, never
# the GPU in MIG mode.
id2=$(cd "$work" && as_user "$USER_A" corral submit --parsable --gpus 2 -o "$work/out2" -- sh -c 'echo $CORRAL_GPUS')
wait_for 120 sh -c "[ \"\$(corral show --json $id2 | jq -r .job.state)\" = COMPLETED ]" \
    || fail "job $id2 did not complete: $(corral why "$id2")"
parent=$(corral info --json | jq -r '.devices[] | select(.mig_mode) | .index')
case ",$(cat "$work/out2")," in *",$parent,"*) fail "job $id2 was given the GPU in MIG mode: $(cat "$work/out2")" ;; esac
log "MIG devices scheduled; the GPU in MIG mode ($parent) given to no job"
