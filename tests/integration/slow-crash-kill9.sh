#!/bin/bash
# 50-crash-kill9 at its full size: 1,000 jobs ($CORRAL_FI_JOBS) under a SIGKILL of corrald
# every 3-5 s, about 80 kills in 6.5 minutes of the guest. Every run has the same test with
# 300 jobs (about 25 kills, 2 minutes): the same assertions, fewer of the moments a kill
# can land in.
# timeout: 600
CORRAL_FI_JOBS=${CORRAL_FI_JOBS:-1000} exec bash "$(dirname "$0")/50-crash-kill9.sh"
