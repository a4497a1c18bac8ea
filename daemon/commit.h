/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Committed before acknowledged or acted on (commit.c): the store's commit and sync, the
 * mail they make true, and the syncs that only replies wait for, on a thread. */

#include <stdint.h>

typedef struct Manager Manager;

/* The store's commit, then the mail it makes true (once that is on disk); -errno from the
 * commit or the sync. */
int manager_commit(Manager *m);
/* Every commit so far on disk, on the loop's thread, and the replies that waited for it
 * sent: before corrald acts outside itself on what the commits hold (a job started, an
 * sbatch run, an outcome file removed, mail sent). */
int manager_sync(Manager *m);
/* A sync that failed: nothing it was to cover may be acknowledged or acted on; the loop
 * exits. Returns what sd_event_exit() does. */
int manager_sync_failed(Manager *m, int error);
/* What is committed and not on disk, which only replies wait for: synced on the worker
 * thread while the loop goes on (or here, without one). */
void manager_sync_kick(Manager *m);
/* CLOCK_MONOTONIC as of this event-loop iteration (sd_event_now()): for what may be a few
 * milliseconds old, such as a cache's age; read once per iteration, not per use. */
uint64_t manager_now(Manager *m);
