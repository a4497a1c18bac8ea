/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a Job needs to let go of its Interactive (job_free()), apart from the rest of
 * interactive.c, so that what links job.c need not link the manager. */
#include "fd-closer.h"
#include "fd-util.h"
#include "interactive-job.h"

void interactive_close_fds(Interactive *it) {
        for (size_t i = 0; i < it->n_fds; i++) {
                fd_closer_close(it->closer, it->fds[i], it->uid);
                it->fds[i] = -EBADF;
        }
        it->n_fds = 0;
}

Interactive *interactive_free(Interactive *it) {
        if (!it)
                return NULL;
        interactive_close_fds(it);
        sd_event_source_disable_unref(it->hangup);
        free(it);
        return NULL;
}

