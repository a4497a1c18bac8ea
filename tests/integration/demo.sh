#!/bin/bash
# The README's demo (run by scripts/demo; not part of the suite): an unprivileged user
# submits a real job to the installed, socket-activated corrald, and we look at it with
# corral, systemctl and journalctl.
# timeout: 300
. "$CORRAL_TEST_LIB"
# Shows each command as it would be typed, with the prompt of who types it.
say() { local who=$1; shift; printf '\n%s$ %s\n' "$who" "$*"; }
as() { local u=$1; shift; say "$u" "$@"; as_user "$u" "$@"; }
root() { say root "$@"; "$@"; }

root systemctl start corrald.socket
as alice corral info
say alice "corral submit -n 1 --mem 128M --time 2:00 --name demo -- sh -c '...'"
id=$(as_user alice corral submit --parsable -n 1 --mem 128M --time 2:00 --name demo -- \
     sh -c 'echo "hello from job $CORRAL_JOB_ID as $(id -un) on CPUs $CORRAL_CPUS"; sleep 5')
echo "$id"
sleep 2
as alice corral queue
root systemctl status --no-pager "corral-job-$id.scope" || true
as alice corral wait "$id"
as alice corral show "$id"
as alice corral logs "$id"
root journalctl --no-pager -u "corral-job-$id.scope"
