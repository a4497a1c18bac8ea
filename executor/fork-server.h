/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The wire between corrald's executor (fork-server.c) and the supervisor's fork server
 * (corral-supervisor --server-fd N): a SOCK_SEQPACKET pair, one message each way per job. */

#include <stdint.h>

/* One job's supervisor to fork; the read end of its sync pipe attached (SCM_RIGHTS). */
typedef struct ForkRequest {
        uint64_t job_id;
        uint64_t kill_wait_usec;
} ForkRequest;

/* The answer, in the order of the requests: the supervisor's pid, with a pidfd for it
 * attached (none where the kernel has no pidfd_open()), or error, a positive errno. */
typedef struct ForkReply {
        uint64_t job_id;
        int32_t pid;
        int32_t error;
} ForkReply;
