/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* An interactive job's client and descriptors, as its Job holds them (interactive-job.c):
 * what job_free() needs of interactive.c, apart from the rest of it, so that a Job's own
 * code calls nothing above it. */

#include <stddef.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "protocol.h"
#include "server.h"

typedef struct Manager Manager;
typedef struct FdCloser FdCloser;

typedef struct Interactive {
        Manager *manager;
        uint64_t job_id;
        int fds[CORRAL_RUN_FDS]; /* stdin, stdout, stderr until the job starts */
        size_t n_fds;
        uid_t uid;        /* who passed them */
        FdCloser *closer; /* where they are closed: never on the loop (fd-closer.h) */
        Call *call;              /* the Run call; NULL once its client has gone */
        sd_event_source *hangup; /* the grace period after the client went */
} Interactive;

Interactive *interactive_free(Interactive *it);
DEFINE_TRIVIAL_CLEANUP_FUNC(Interactive *, interactive_free);
void interactive_close_fds(Interactive *it);
