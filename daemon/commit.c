/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Committed before acknowledged or acted on: the store's commits, the syncs that put them
 * on disk, and what waits for them (the mail they make true, the replies). */

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "commit.h"
#include "job-mail.h"
#include "log.h"
#include "manager.h"
#include "time-util.h"

int manager_commit(Manager *m) {
        int r = store_commit(m->store);
        if (r >= 0 && manager_mail_queued(m) > 0)
                r = manager_sync(m);
        if (r < 0) {
                size_t n = manager_mail_discard(m);
                if (n > 0)
                        log_debug("%zu job mails dropped: their states were not committed.", n);
                return r;
        }
        manager_mail_flush(m, (uint64_t) time(NULL));
        return 0;
}

uint64_t manager_now(Manager *m) {
        uint64_t now;

        if (!m->event || sd_event_now(m->event, CLOCK_MONOTONIC, &now) < 0)
                now = now_usec(CLOCK_MONOTONIC);
        return now;
}

int manager_sync(Manager *m) {
        int r = store_sync(m->store);
        if (r < 0)
                return r;
        if (m->server)
                server_flush(m->server);
        return 0;
}

int manager_sync_failed(Manager *m, int error) {
        log_error_errno(error, "Cannot sync the store's log: %m. Exiting rather than acknowledge or act on what "
                        "may not be on disk.");
        return sd_event_exit(m->event, EXIT_FAILURE);
}

/* ---- syncs on the worker thread ---- */

typedef struct SyncWork {
        Manager *m;
        int fd;
        uint64_t n_commits; /* the commits made before it began: what it covers */
} SyncWork;

static int sync_run(void *data) {
        SyncWork *w = data;
        return store_sync_wal(w->fd);
}

static void sync_done(void *data, int r) {
        _cleanup_free_ SyncWork *w = data;
        Manager *m = w->m;

        m->sync_in_flight = false;
        if (r == -ECANCELED)
                return; /* the pool is going: corrald stops, manager_free() syncs */
        if (r < 0) {
                (void) manager_sync_failed(m, r);
                return;
        }
        store_synced(m->store, w->n_commits);
        if (!m->server)
                return;
        server_sync_end(m->server);
        manager_sync_kick(m);
}

/* A sync on the worker thread while the loop goes on with the next requests, which commit
 * meanwhile and wait for the next sync. One at a time: the end of one begins the next. */
void manager_sync_kick(Manager *m) {
        SyncWork *w;
        int fd, r;

        if (m->sync_in_flight || store_durable(m->store))
                return;
        fd = m->sync_pool ? store_sync_fd(m->store) : -EBADF;
        w = fd >= 0 ? new(SyncWork, 1) : NULL;
        if (w) {
                *w = (SyncWork) { .m = m, .fd = fd, .n_commits = store_n_commits(m->store) };
                server_sync_begin(m->server);
                r = worker_pool_submit(m->sync_pool, sync_run, sync_done, w);
                if (r >= 0) {
                        m->sync_in_flight = true;
                        return;
                }
                free(w);
        }
        /* No thread, no memory, no descriptor: on this one. */
        r = manager_sync(m);
        if (r < 0)
                (void) manager_sync_failed(m, r);
}
