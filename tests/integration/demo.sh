#!/bin/bash
# The README's demo (run by scripts/demo; not part of the suite): shows the environment
# Corral runs in. It grows with the product.
# timeout: 300
. "$CORRAL_TEST_LIB"
log "Corral demo on $(uname -n): systemd $(systemctl --version | head -n1 | cut -d' ' -f2), cgroup2, $(nproc) CPUs"
numactl --hardware | sed -n '1,3p'
bash "$(dirname "$0")/00-environment.sh"
