#!/bin/bash
# The README's demo (run by scripts/demo; not part of the suite): an unprivileged user
# submits a real job to the installed, socket-activated corrald, and we look at it with
# corral, systemctl and journalctl.
# timeout: 300
. "$CORRAL_TEST_LIB"
set -x
systemctl start corrald.socket
corral info
id=$(as_user alice corral submit --parsable -n 1 --mem 128M --time 2:00 --name demo -- \
     sh -c 'echo "hello from job $CORRAL_JOB_ID as $(id -un) on CPUs $CORRAL_CPUS"; sleep 5')
sleep 2
as_user alice corral queue
systemctl status --no-pager "corral-job-$id.scope" || true
as_user alice corral wait "$id"
as_user alice corral show "$id"
journalctl --no-pager -u "corral-job-$id.scope"
