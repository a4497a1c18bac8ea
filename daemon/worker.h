/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Work that must not hold the event loop: a request whose answer takes a long read of
 * the store (a year of usage) runs on one of a few threads, and its result is handed back
 * on the loop. A work item's run() gets nothing of the daemon's state: it works on what
 * its data carries (copies taken on the loop) and on resources of its own, such as a
 * read-only store connection; done() runs on the loop, where the daemon's state is. */

#include <systemd/sd-event.h>

#include "macro.h"

typedef struct WorkerPool WorkerPool;

/* In a worker thread. Returns >= 0 or -errno, which done() gets. */
typedef int (*work_run_t)(void *data);
/* On the event loop, after run(); with -ECANCELED and without run() having been called
 * when the pool is freed first. Owns data from then on. */
typedef void (*work_done_t)(void *data, int r);

/* At most n_threads items run at once; the rest wait in submission order. The threads
 * start on first use. */
int worker_pool_new(sd_event *event, unsigned n_threads, WorkerPool **ret);
/* Waits for the items that are running (their done() is called with their result) and
 * cancels the ones waiting. */
WorkerPool *worker_pool_free(WorkerPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(WorkerPool *, worker_pool_free);

int worker_pool_submit(WorkerPool *p, work_run_t run, work_done_t done, void *data);
/* Items submitted and not yet done, running ones included. */
unsigned worker_pool_pending(const WorkerPool *p);
