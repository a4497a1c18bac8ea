/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Durable state: one SQLite database (WAL) under the state directory. Writes go into a
 * transaction that stays open for the rest of the event-loop iteration and is committed
 * by store_commit() before any reply is sent or any decision acted on, so durability
 * costs one fsync per iteration, not one per job. */

#include "job.h"

typedef struct Store Store;

/* Opens (creating and migrating as needed) <dir>/corral.db. */
int store_open(const char *dir, Store **ret);
Store *store_close(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store *, store_close);

/* The error text of the last failure, for the log. */
const char *store_error(Store *s);
int store_schema_version(Store *s);

/* Stores the job with its request, or, for an array task whose request_id names another
 * job, with a reference to that job's request. *ret_request_bytes (may be NULL): the size
 * of the request text stored, 0 for a reference. */
int store_insert_job(Store *s, const Job *j, size_t *ret_request_bytes);
/* Writes the job's changing columns (state, reason, times, allocation, outcome). */
int store_update_job(Store *s, const Job *j);
int store_commit(Store *s);
/* A unit of work inside the open transaction that lands whole or not at all (an array
 * Submit that runs out of memory half way): savepoint, then release or roll back. */
int store_savepoint(Store *s);
int store_release(Store *s);
int store_rollback(Store *s);
/* Reads back a job's complete request (argv, script, environment included), an array
 * task's from the request it shares. */
int store_load_request(Store *s, uint64_t id, SubmitRequest *ret);
bool store_in_transaction(Store *s);

/* Calls cb for every job, in id order; cb takes ownership of the job. */
int store_load_jobs(Store *s, int (*cb)(Job *j, void *userdata), void *userdata);
/* The next job id: one past the highest ever handed out (kept even when jobs are purged). */
int store_next_job_id(Store *s, uint64_t *ret);

int store_get_meta(Store *s, const char *key, char **ret);
int store_set_meta(Store *s, const char *key, const char *value);
