/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Durable state: one SQLite database (WAL) under the state directory. Writes go into a
 * transaction that stays open for the rest of the event-loop iteration and is committed
 * by store_commit(); a commit is on disk once a sync of the WAL that began after it has
 * returned. Nothing is acknowledged or acted on before that: durability costs one fsync
 * per iteration at most, not one per job, and one sync can cover several iterations'
 * commits while the loop goes on (store_sync_fd()). */

#include "accounting/accounting.h"
#include "devices.h"
#include "job.h"

typedef struct Store Store;

/* Opens (creating and migrating as needed) <dir>/corral.db. */
int store_open(const char *dir, Store **ret);
/* A second, read-only connection to the store store_open() keeps in dir, for reads off the
 * event loop (worker.h): WAL lets it read the last committed state while corrald writes.
 * Only reads may be done on it, by one thread at a time. */
int store_open_reader(const char *dir, Store **ret);
Store *store_close(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store *, store_close);

/* Gives the WAL its whole size at once, in blocks written and on disk, and keeps it when
 * the store closes. SQLite starts the log over at its head after each checkpoint (every
 * wal_autocheckpoint pages); until the log has had that size once, every commit appends a
 * frame to the file, which costs the commit a new page of the page cache and a block to
 * allocate, and the sync that covers it a commit of the file system's journal (the file's
 * new size), several times the sync of a frame written over an old one. Zeros past the
 * log's end are harmless: recovery stops at the first frame whose salt does not match, as
 * it does at the stale frames SQLite itself leaves there when it starts over. For the
 * daemon's store, once at start-up: it writes a few megabytes the first time. */
int store_prepare_log(Store *s);

/* The machine's devices in force, by index (bit g of a gpu_mask: devices[g], gone ones
 * too), kept in the gpus table for the next start (store_load_gpus()): an allocation's
 * GPUs are stored by identity (device_key(): UUID, else PCI address, else declared name;
 * alloc_gpus), so that a restart gives each running job back its own cards whatever has
 * changed. Copied; an identity read back that no index has is dropped with a warning. The
 * first call after schema 7's migration rewrites the allocations stored before by name;
 * a name no GPU has then stays, its index kept by its job, until a call finds its card.
 * Joins the open transaction. */
typedef struct StoreGpu {
        char *uuid, *pci_address, *name;
        DeviceVendor vendor;
        bool auto_name;
} StoreGpu;
int store_set_gpus(Store *s, const DeviceSet *devices);
/* The GPUs the last store_set_gpus() kept, each a gone placeholder at its index (the
 * known set for device_set_place() at start-up); an empty set when none. */
int store_load_gpus(Store *s, DeviceSet **ret);

/* The error text of the last failure, for the log. */
const char *store_error(Store *s);
int store_schema_version(Store *s);

/* Stores the job with its request (job_submitted(j), the whole of it: -EINVAL without), or,
 * for an array task whose request_id names another job, with a reference to that job's
 * request. *ret_request_bytes (may be NULL): the size
 * of the request text stored, 0 for a reference. */
int store_insert_job(Store *s, const Job *j, size_t *ret_request_bytes);
/* Writes the job's changing columns (state, reason, times, allocation, outcome). */
int store_update_job(Store *s, const Job *j);
int store_commit(Store *s);
/* What the open transaction holds can no longer match memory (a change half written, or
 * one memory cannot take back): store_commit() rolls it back and returns error, and
 * corrald exits rather than acknowledge it; a restart reads what was committed before. */
void store_fail(Store *s, int error);
/* A unit of work inside the open transaction that lands whole or not at all (an array
 * Submit that runs out of memory half way): savepoint, then release or roll back. */
int store_savepoint(Store *s);
int store_release(Store *s);
int store_rollback(Store *s);
/* Reads back a job's complete request (argv, script, environment included), an array
 * task's from the request it shares. */
int store_load_request(Store *s, uint64_t id, SubmitRequest *ret);
bool store_in_transaction(Store *s);
/* Commits since the store was opened: GetInfo's store_commits. */
uint64_t store_n_commits(Store *s);
/* Syncs of the WAL since the store was opened: GetInfo's store_syncs. */
uint64_t store_n_syncs(Store *s);
/* Whether every commit is on disk. */
bool store_durable(Store *s);
/* Syncs the WAL on the caller's thread: every commit so far is on disk when it returns 0. */
int store_sync(Store *s);
/* The same in two halves, for a worker thread: the descriptor to sync (the store's, valid
 * while it is open), store_sync_wal(fd) on the thread, and on the loop store_synced() with
 * the store_n_commits() taken before the thread began. */
int store_sync_fd(Store *s);
int store_sync_wal(int fd);
void store_synced(Store *s, uint64_t n_commits);

/* Calls cb for every job, in id order, with what memory keeps of its request
 * (job_set_request()); cb takes ownership of the job. */
int store_load_jobs(Store *s, int (*cb)(Job *j, void *userdata), void *userdata);
/* The same for up to limit jobs after after_id, leaving out jobs that ended before
 * ended_since (the history beyond what the daemon keeps in memory: List's "history"). */
int store_load_jobs_after(Store *s, uint64_t after_id, uint64_t ended_since, unsigned limit,
                          int (*cb)(Job *j, void *userdata), void *userdata);
/* The next job id: one past the highest ever handed out. Job rows are never deleted, so
 * the highest row is that id; whatever comes to delete them must first record it as the
 * meta key "last_job_id" (which stores of earlier versions hold), read here too. */
int store_next_job_id(Store *s, uint64_t *ret);

int store_get_meta(Store *s, const char *key, char **ret);
int store_set_meta(Store *s, const char *key, const char *value);
int store_delete_meta(Store *s, const char *key);

/* Accounting (migration 3). A run's charge and its day's summary (usage_daily, what
 * reports read), in the open transaction; -EEXIST, nothing added, for a run already
 * charged. On another failure nothing is written, or (the charge written, not its
 * summary) the transaction is made unfit to commit (store_fail()). */
int store_record_charge(Store *s, const JobCharge *c);
/* The charge of the job's latest run (strings left NULL); -ENOENT if none. */
int store_load_charge(Store *s, uint64_t job_id, JobCharge *ret);

/* A job's state change that its row does not date (migration 10; job-history.c): the
 * names as stored (job_event_to_string(), job_state_to_string()), reason and by may be
 * NULL. */
typedef struct StoreJobEvent {
        uint32_t run;  /* the job's requeue count when it happened */
        uint64_t time; /* seconds since the epoch */
        char *event, *from, *to, *reason, *by;
} StoreJobEvent;

/* In the open transaction; the job's older events beyond its latest keep are deleted. */
int store_record_job_event(Store *s, uint64_t job_id, uint32_t run, uint64_t time, const char *event, const char *from,
                           const char *to, const char *reason, const char *by, unsigned keep);
/* The job's latest max events, oldest first (malloc'ed); 0 rows: none. */
int store_load_job_events(Store *s, uint64_t job_id, unsigned max, StoreJobEvent **ret, size_t *ret_n);
void store_job_events_free(StoreJobEvent *e, size_t n);

/* When each of the job's charged runs (job_usage) started and ended: its latest max,
 * oldest first. */
typedef struct StoreJobRun {
        uint32_t run;
        uint64_t start_time, end_time;
} StoreJobRun;
int store_load_job_runs(Store *s, uint64_t job_id, unsigned max, StoreJobRun **ret, size_t *ret_n);

/* A job's figures for one GPU over one run, from GPU telemetry (migration 8). */
typedef struct StoreGpuUsage {
        uint64_t job_id;
        uint32_t run;           /* its requeue count, as JobCharge's */
        unsigned gpu;           /* the GPU's index on this machine */
        char *uuid;             /* NULL: unknown */
        uint32_t samples;       /* readings taken; 0: the figures below are unknown */
        double util_mean;       /* percent; < 0: unknown */
        unsigned util_max;
        uint64_t memory_max;    /* bytes */
        double energy_j;        /* the energy counter's difference; < 0: unknown */
        uint64_t held_sec;      /* seconds the job held the GPU (suspended included) */
        uint64_t own_memory_max; /* bytes, the job's own processes' (NVML's per-process
                                  * figures); UINT64_MAX: none listed */
} StoreGpuUsage;

/* In the open transaction; a run and GPU recorded again replaces its row. */
int store_record_gpu_usage(Store *s, const StoreGpuUsage *u);
/* The rows of the job's latest run, by GPU index (uuid malloc'ed); 0 rows: none. */
int store_load_gpu_usage(Store *s, uint64_t job_id, StoreGpuUsage **ret, size_t *ret_n);
void store_gpu_usage_free(StoreGpuUsage *rows, size_t n);

typedef enum StoreUsageKind {
        STORE_USAGE_PROJECT,
        STORE_USAGE_USER,
} StoreUsageKind;

typedef int (*store_decayed_cb)(StoreUsageKind kind, const char *name, const AcctDecayed *d, void *userdata);
typedef int (*store_grant_cb)(const char *project, uint64_t period_begin, double service_units, void *userdata);
/* Decayed usage with its timestamp, one row per project or user. */
int store_save_decayed(Store *s, StoreUsageKind kind, const char *name, const AcctDecayed *d);
int store_load_decayed(Store *s, store_decayed_cb cb, void *userdata);
/* A project's service units in the grant period starting at period_begin. */
int store_save_grant(Store *s, const char *project, uint64_t period_begin, double service_units);
int store_load_grants(Store *s, store_grant_cb cb, void *userdata);

typedef enum StoreUsageBy {
        STORE_USAGE_BY_USER,
        STORE_USAGE_BY_PROJECT,
        STORE_USAGE_BY_QUEUE,
        STORE_USAGE_BY_DAY,
} StoreUsageBy;

typedef struct StoreUsageQuery {
        StoreUsageBy by;
        const char *since, *until;              /* days, "YYYY-MM-DD", inclusive; NULL: open */
        const char *user, *project, *queue;     /* NULL: any */
} StoreUsageQuery;

typedef struct StoreUsageRow {
        const char *key;        /* the user, project, queue or day */
        const char *project;
        uid_t uid;
        const char *user;
        UsageTotals totals;
        /* From the GPU telemetry of the runs charged in it (job_gpu_usage), over the GPUs
         * NVML read: seconds held × mean utilisation / 100, and seconds held. GPUs never
         * read count in neither: sampled 0 means nothing is known, not an idle GPU. */
        double gpu_used_sec;
        uint64_t gpu_sampled_sec;
} StoreUsageRow;

typedef int (*store_usage_cb)(const StoreUsageRow *row, void *userdata);
/* The per-day summary summed per (key, project, uid), in key order, with the GPU
 * telemetry of the runs it charged. */
int store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata);
