/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "job-request.h"
#include "log.h"
#include "parse-util.h"
#include "strv.h"
#include "store.h"

/* The statements the store runs, one SQL text each (stmt_sql[]). */
typedef enum StmtId {
        STMT_BEGIN,
        STMT_COMMIT,
        STMT_ROLLBACK,
        STMT_SAVEPOINT,
        STMT_RELEASE,
        STMT_ROLLBACK_TO,
        STMT_USER_VERSION,
        STMT_PAGE_SIZE,
        STMT_WAL_AUTOCHECKPOINT,
        STMT_GET_META,
        STMT_SET_META,
        STMT_DELETE_META,
        STMT_INSERT_JOB,
        STMT_UPDATE_JOB,
        STMT_MAX_JOB_ID,
        STMT_LOAD_JOBS,
        STMT_LOAD_JOBS_AFTER,
        STMT_LOAD_REQUEST,
        STMT_MARK_GPUS_BY_NAME,
        STMT_JOBS_GPUS_BY_NAME,
        STMT_SET_JOB_GPUS,
        STMT_DELETE_GPUS,
        STMT_INSERT_GPU,
        STMT_LOAD_GPUS,
        STMT_INSERT_CHARGE,
        STMT_UPSERT_DAILY,
        STMT_LOAD_CHARGE,
        STMT_SAVE_DECAYED,
        STMT_LOAD_DECAYED,
        STMT_SAVE_GRANT,
        STMT_LOAD_GRANTS,
        STMT_USAGE_BY_USER,
        STMT_USAGE_BY_PROJECT,
        STMT_USAGE_BY_QUEUE,
        STMT_USAGE_BY_DAY,
        STMT_RECORD_GPU_USAGE,
        STMT_LOAD_GPU_USAGE,
        STMT_INSERT_JOB_EVENT,
        STMT_TRIM_JOB_EVENTS,
        STMT_LOAD_JOB_EVENTS,
        STMT_LOAD_JOB_RUNS,
        _STMT_MAX,
} StmtId;

struct Store {
        sqlite3 *db;
        bool in_txn;
        /* The open transaction lacks a change memory already has (store_fail()): it is
         * rolled back instead of committed. */
        int txn_error;
        uint64_t n_commits; /* transactions committed since the store was opened */
        /* Every statement, prepared on its first use and kept (stmt_get()): parsed again
         * each time, the transaction's own statements and the meta row every submission
         * writes were a fifth of a submission's CPU (perf, bench-memory). */
        sqlite3_stmt *stmt[_STMT_MAX];
        /* store_set_gpus(): the machine's GPUs by index, what an allocation's GPUs are
         * stored and read back by. */
        StoreGpu *gpus;
        size_t n_gpus;
        /* Commits reach the disk with a sync of the WAL of our own (synchronous=NORMAL):
         * the state directory (NULL for a reader), a descriptor of the WAL opened at the
         * first sync, and how many of the commits a sync has covered. */
        char *dir;
        int wal_fd;
        uint64_t n_synced;
        uint64_t n_syncs;
};

/* Migrations, in order: schema version N is reached by running migrations[N-1]. Never
 * edit one that has shipped; append a new one. */
static const char *const migrations[] = {
        /* 1 */
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE jobs ("
        "  id INTEGER PRIMARY KEY,"
        "  uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,"
        "  project TEXT, queue TEXT NOT NULL,"
        "  state TEXT NOT NULL, reason TEXT,"
        "  request TEXT NOT NULL,"
        "  rerunnable INTEGER NOT NULL, held_by_admin INTEGER NOT NULL DEFAULT 0,"
        "  requeue_count INTEGER NOT NULL DEFAULT 0,"
        "  array_job_id INTEGER NOT NULL DEFAULT 0, array_task_id INTEGER NOT NULL DEFAULT 0,"
        "  submit_time INTEGER NOT NULL, eligible_time INTEGER NOT NULL DEFAULT 0,"
        "  start_time INTEGER NOT NULL DEFAULT 0, end_time INTEGER NOT NULL DEFAULT 0,"
        "  suspended_usec INTEGER NOT NULL DEFAULT 0, suspend_start INTEGER NOT NULL DEFAULT 0,"
        "  exit_code INTEGER NOT NULL DEFAULT -1, exit_signal INTEGER NOT NULL DEFAULT 0,"
        "  alloc_cpus TEXT, alloc_mem TEXT,"
        "  usage_cpu_usec INTEGER NOT NULL DEFAULT 0, usage_memory_peak INTEGER NOT NULL DEFAULT 0,"
        "  usage_io_read INTEGER NOT NULL DEFAULT 0, usage_io_write INTEGER NOT NULL DEFAULT 0,"
        "  usage_tasks_peak INTEGER NOT NULL DEFAULT 0"
        ");"
        "CREATE INDEX jobs_state ON jobs (state);"
        "CREATE INDEX jobs_uid ON jobs (uid);",
        /* 2: array tasks share their first task's request (request_id, with an empty
         * request of their own); who suspended; the owner-only launch error. */
        "ALTER TABLE jobs ADD COLUMN request_id INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN suspended_by_admin INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN launch_error TEXT;",
        /* 3: accounting. Every run of a job its charge (a requeued job is charged for each
         * run), the per-day summary that reports read instead of the runs, the decayed
         * usage per project (kind 0) and user (kind 1) with its timestamp, and each
         * project's service units in its current grant period. */
        "CREATE TABLE job_usage ("
        "  job_id INTEGER NOT NULL, run INTEGER NOT NULL,"
        "  uid INTEGER NOT NULL, user TEXT NOT NULL, project TEXT NOT NULL, queue TEXT NOT NULL,"
        "  start_time INTEGER NOT NULL, end_time INTEGER NOT NULL,"
        "  cpus INTEGER NOT NULL, run_usec INTEGER NOT NULL, charge_factor REAL NOT NULL,"
        "  service_units REAL NOT NULL, cpu_usec INTEGER NOT NULL, memory_peak INTEGER NOT NULL,"
        "  io_read_bytes INTEGER NOT NULL, io_write_bytes INTEGER NOT NULL,"
        "  io_read_ops INTEGER NOT NULL, io_write_ops INTEGER NOT NULL,"
        "  has_pressure INTEGER NOT NULL, cpu_some INTEGER NOT NULL, cpu_full INTEGER NOT NULL,"
        "  memory_some INTEGER NOT NULL, memory_full INTEGER NOT NULL,"
        "  io_some INTEGER NOT NULL, io_full INTEGER NOT NULL,"
        "  PRIMARY KEY (job_id, run)"
        ");"
        "CREATE TABLE usage_daily ("
        "  day TEXT NOT NULL, project TEXT NOT NULL, uid INTEGER NOT NULL, user TEXT NOT NULL,"
        "  queue TEXT NOT NULL, jobs INTEGER NOT NULL, core_usec INTEGER NOT NULL,"
        "  service_units REAL NOT NULL, cpu_usec INTEGER NOT NULL, memory_peak INTEGER NOT NULL,"
        "  io_read_bytes INTEGER NOT NULL, io_write_bytes INTEGER NOT NULL, io_ops INTEGER NOT NULL,"
        "  cpu_some INTEGER NOT NULL, cpu_full INTEGER NOT NULL, memory_some INTEGER NOT NULL,"
        "  memory_full INTEGER NOT NULL, io_some INTEGER NOT NULL, io_full INTEGER NOT NULL,"
        "  PRIMARY KEY (day, project, uid, queue)"
        ") WITHOUT ROWID;"
        "CREATE TABLE usage_decayed ("
        "  kind INTEGER NOT NULL, name TEXT NOT NULL, value REAL NOT NULL, stamp INTEGER NOT NULL,"
        "  PRIMARY KEY (kind, name)"
        ") WITHOUT ROWID;"
        "CREATE TABLE grant_usage ("
        "  project TEXT PRIMARY KEY, period_begin INTEGER NOT NULL, service_units REAL NOT NULL"
        ") WITHOUT ROWID;",
        /* 4: the job a preempted job was suspended for, so that corral why names it after a
         * restart. */
        "ALTER TABLE jobs ADD COLUMN preempted_by INTEGER NOT NULL DEFAULT 0;",
        /* 5: GPUs. The ones an allocation holds, by device name ("gpu0,gpu3"; NULL: none);
         * in the accounting, each run its GPUs, GPU-µs and the ChargePerGPUHour= it was
         * charged at (so a stored charge recomputes as it was), the per-day summary its
         * GPU-µs. Runs charged before have none. */
        "ALTER TABLE jobs ADD COLUMN alloc_gpus TEXT;"
        "ALTER TABLE job_usage ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE job_usage ADD COLUMN gpu_usec INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE job_usage ADD COLUMN charge_per_gpu_hour REAL NOT NULL DEFAULT 0;"
        "ALTER TABLE usage_daily ADD COLUMN gpu_usec INTEGER NOT NULL DEFAULT 0;",
        /* 6: no index on jobs but its id. Nothing reads jobs by state or uid (corrald
         * holds them in memory and reads the table by id), and the two indexes were two
         * of the four pages every submission wrote to the WAL, and one of the two of
         * every state change. */
        "DROP INDEX IF EXISTS jobs_state; DROP INDEX IF EXISTS jobs_uid;",
        /* 7: GPUs by identity. Each index corral info shows, the card it is: its UUID
         * where the driver gives one, its PCI address, its vendor and, for a device a
         * [Device] section names, that name (NULL: gpu<idx>). Allocations hold each GPU's
         * UUID, else PCI address, else declared name (device_key()), no longer its name
         * by position, which moved to another card when one vanished. Rows written
         * before hold those names: store_set_gpus() rewrites them at the first start,
         * when the names still are the positions they were written with (a card not
         * there then, as it finds it later: rewrite_gpus_by_name()). */
        "CREATE TABLE gpus (idx INTEGER PRIMARY KEY, uuid TEXT, pci_address TEXT, vendor TEXT NOT NULL, name TEXT);"
        "INSERT INTO meta (key, value) SELECT 'gpus_by_name', '1'"
        "  WHERE EXISTS (SELECT 1 FROM jobs WHERE alloc_gpus IS NOT NULL);",
        /* 8: GPU telemetry. Each run's figures per GPU it held, from NVML's readings
         * (gpu-jobs.c): mean and highest utilisation (NULL: never read), highest memory,
         * energy in joules (NULL: no counter), seconds held. */
        "CREATE TABLE IF NOT EXISTS job_gpu_usage (job_id INTEGER NOT NULL, run INTEGER NOT NULL, gpu INTEGER NOT NULL,"
        "  uuid TEXT, samples INTEGER NOT NULL, util_mean REAL, util_max INTEGER NOT NULL,"
        "  memory_max INTEGER NOT NULL, energy_j REAL, held_sec INTEGER NOT NULL,"
        "  PRIMARY KEY (job_id, run, gpu));",
        /* 9: the job's own processes' GPU memory at its highest (their per-process figures
         * summed, by cgroup; NULL: NVML listed none of them), beside the whole GPU's: on a
         * GPU others share, the job's own share. */
        "ALTER TABLE job_gpu_usage ADD COLUMN own_memory_max INTEGER;",
        /* 10: a job's state changes that its row does not date (the submission, each run's
         * start and end are its submit_time, start_time and end_time, and job_usage's for
         * the runs before): holds, releases, suspensions, resumes, requeues, blocks, a
         * cancel before it started, a node failure (job-history.c puts them together).
         * Each with the run it belongs to (the job's requeue count then), the states by
         * name, the reason and who acted. Kept out of the paths every job takes, so that
         * a trivial job's commits write no more pages than before. */
        "CREATE TABLE IF NOT EXISTS job_events (job_id INTEGER NOT NULL, run INTEGER NOT NULL, time INTEGER NOT NULL,"
        "  event TEXT NOT NULL, state_from TEXT NOT NULL, state_to TEXT NOT NULL, reason TEXT, actor TEXT);"
        "CREATE INDEX IF NOT EXISTS job_events_job ON job_events (job_id);",
};
/* A GPU an allocation holds by the name it had when the allocation was stored, not by
 * identity: rows written before schema 7 hold names by position ("gpu3"), and a card that
 * is not there when they are rewritten keeps its name ("name:gpu3") until it is back.
 * Device names have no ':', identities do not start with this. */
#define GPU_BY_NAME "name:"

/* A job row's columns, in the order load_jobs() reads them; the request and its
 * request_id as given (the stored ones, or an array task's resolved). */
#define JOB_COLUMNS(request, request_id)                                                                 \
        "j.id, j.uid, j.gid, j.user, j.project, j.queue, j.state, j.reason, " request ", j.rerunnable,"  \
        " j.held_by_admin, j.requeue_count, j.array_job_id, j.array_task_id, j.submit_time,"             \
        " j.eligible_time, j.start_time, j.end_time, j.suspended_usec, j.suspend_start, j.exit_code,"    \
        " j.exit_signal, j.alloc_cpus, j.alloc_mem, j.usage_cpu_usec, j.usage_memory_peak,"              \
        " j.usage_io_read, j.usage_io_write, j.usage_tasks_peak, " request_id ", j.suspended_by_admin,"  \
        " j.launch_error, j.preempted_by, j.alloc_gpus"

/* An array task's request: its first task's (request_id), or its own. */
#define REQUEST_RESOLVED                                                                                 \
        "CASE WHEN j.request_id = 0 THEN j.request"                                                      \
        " ELSE (SELECT r.request FROM jobs r WHERE r.id = j.request_id) END"

/* The per-day summary summed per (key, project, uid), in key order: grouped by who too, so
 * that the caller can decide what each reader may see before rows merge; in key order, so
 * rows of one key come together. Beside the summary, the GPU-seconds used (held × mean
 * utilisation) and sampled (held, where NVML read the GPU) of each GPU a run held, from
 * job_gpu_usage under its run's charge: its day (the one it ended, UTC, as acct_day()),
 * project, user and queue, so that both take the same groups and filters. Those are
 * rows per GPU job, not per day: only runs that held a GPU have any. */
#define USAGE_SOURCES                                                                                    \
        "SELECT day, project, uid, user, queue, jobs, core_usec, service_units, cpu_usec, memory_peak,"  \
        " io_read_bytes, io_write_bytes, io_ops, cpu_some, cpu_full, memory_some, memory_full, io_some,"  \
        " io_full, gpu_usec, 0.0 AS gpu_used_sec, 0 AS gpu_sampled_sec FROM usage_daily"                 \
        " UNION ALL SELECT strftime('%Y-%m-%d', c.end_time, 'unixepoch'), c.project, c.uid, c.user,"      \
        " c.queue, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, g.held_sec * g.util_mean / 100.0,"     \
        " g.held_sec FROM job_gpu_usage g JOIN job_usage c ON c.job_id = g.job_id AND c.run = g.run"     \
        " WHERE g.samples > 0 AND g.util_mean IS NOT NULL"
#define USAGE_ROWS(key)                                                                                  \
        "SELECT " key ", project, uid, MIN(user), SUM(jobs), SUM(core_usec), SUM(service_units),"        \
        " SUM(cpu_usec), MAX(memory_peak), SUM(io_read_bytes), SUM(io_write_bytes), SUM(io_ops),"        \
        " SUM(cpu_some), SUM(cpu_full), SUM(memory_some), SUM(memory_full), SUM(io_some), SUM(io_full),"  \
        " SUM(gpu_usec), SUM(gpu_used_sec), SUM(gpu_sampled_sec)"                                        \
        " FROM (" USAGE_SOURCES ") WHERE day >= ?1 AND day <= ?2"                                        \
        " AND (?3 IS NULL OR user = ?3) AND (?4 IS NULL OR project = ?4) AND (?5 IS NULL OR queue = ?5)"  \
        " GROUP BY 1, project, uid ORDER BY 1"

/* Arguments are bound by position (stmt_query()): ?N, or the Nth ?, is the statement's Nth
 * argument. The job's changing columns are the first JOB_ARGS of both its insert and its
 * update. */
static const char *const stmt_sql[_STMT_MAX] = {
        [STMT_BEGIN] = "BEGIN IMMEDIATE",
        [STMT_COMMIT] = "COMMIT",
        [STMT_ROLLBACK] = "ROLLBACK",
        [STMT_SAVEPOINT] = "SAVEPOINT corral_sp",
        [STMT_RELEASE] = "RELEASE corral_sp",
        [STMT_ROLLBACK_TO] = "ROLLBACK TO corral_sp",
        [STMT_USER_VERSION] = "PRAGMA user_version",
        [STMT_PAGE_SIZE] = "PRAGMA page_size",
        [STMT_WAL_AUTOCHECKPOINT] = "PRAGMA wal_autocheckpoint",
        [STMT_GET_META] = "SELECT value FROM meta WHERE key=?1",
        [STMT_SET_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        [STMT_DELETE_META] = "DELETE FROM meta WHERE key = ?1",
        [STMT_INSERT_JOB] =
                "INSERT INTO jobs (id, state, reason, rerunnable, held_by_admin, requeue_count, eligible_time,"
                " start_time, end_time, suspended_usec, suspend_start, exit_code, exit_signal, alloc_cpus,"
                " alloc_mem, usage_cpu_usec, usage_memory_peak, usage_io_read, usage_io_write,"
                " usage_tasks_peak, queue, suspended_by_admin, launch_error, preempted_by, alloc_gpus, uid, gid,"
                " user, project, request, array_job_id, array_task_id, submit_time, request_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [STMT_UPDATE_JOB] =
                "UPDATE jobs SET state=?2, reason=?3, rerunnable=?4, held_by_admin=?5, requeue_count=?6,"
                " eligible_time=?7, start_time=?8, end_time=?9, suspended_usec=?10, suspend_start=?11,"
                " exit_code=?12, exit_signal=?13, alloc_cpus=?14, alloc_mem=?15, usage_cpu_usec=?16,"
                " usage_memory_peak=?17, usage_io_read=?18, usage_io_write=?19, usage_tasks_peak=?20,"
                " queue=?21, suspended_by_admin=?22, launch_error=?23, preempted_by=?24, alloc_gpus=?25 WHERE id=?1",
        [STMT_MAX_JOB_ID] = "SELECT MAX(id) FROM jobs",
        [STMT_LOAD_JOBS] = "SELECT " JOB_COLUMNS("j.request", "j.request_id") " FROM jobs j ORDER BY j.id",
        /* A page may start inside an array: each task reads its first task's request itself. */
        [STMT_LOAD_JOBS_AFTER] =
                "SELECT " JOB_COLUMNS(REQUEST_RESOLVED, "0")
                " FROM jobs j WHERE j.id > ?1 AND (j.end_time = 0 OR j.end_time >= ?2) ORDER BY j.id LIMIT ?3",
        [STMT_LOAD_REQUEST] = "SELECT " REQUEST_RESOLVED " FROM jobs j WHERE j.id=?1",
        [STMT_MARK_GPUS_BY_NAME] =
                "UPDATE jobs SET alloc_gpus = '" GPU_BY_NAME "' || replace(alloc_gpus, ',', '," GPU_BY_NAME "')"
                " WHERE alloc_gpus IS NOT NULL AND alloc_gpus != ''",
        [STMT_JOBS_GPUS_BY_NAME] = "SELECT id, state, alloc_gpus FROM jobs WHERE alloc_gpus LIKE '%" GPU_BY_NAME "%'",
        [STMT_SET_JOB_GPUS] = "UPDATE jobs SET alloc_gpus=?2 WHERE id=?1",
        [STMT_DELETE_GPUS] = "DELETE FROM gpus",
        [STMT_INSERT_GPU] = "INSERT INTO gpus (idx, uuid, pci_address, vendor, name) VALUES (?1, ?2, ?3, ?4, ?5)",
        [STMT_RECORD_GPU_USAGE] =
                "INSERT OR REPLACE INTO job_gpu_usage (job_id, run, gpu, uuid, samples, util_mean, util_max,"
                " memory_max, energy_j, held_sec, own_memory_max) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [STMT_LOAD_GPU_USAGE] =
                "SELECT gpu, uuid, samples, util_mean, util_max, memory_max, energy_j, held_sec, run, own_memory_max"
                " FROM job_gpu_usage WHERE job_id=?1"
                " AND run=(SELECT MAX(run) FROM job_gpu_usage WHERE job_id=?1) ORDER BY gpu",
        [STMT_INSERT_JOB_EVENT] =
                "INSERT INTO job_events (job_id, run, time, event, state_from, state_to, reason, actor)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        /* All but the job's latest ?2: a user who holds and releases a job in a loop
         * fills no disk. */
        [STMT_TRIM_JOB_EVENTS] =
                "DELETE FROM job_events WHERE job_id=?1 AND rowid <="
                " (SELECT rowid FROM job_events WHERE job_id=?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2)",
        /* The latest ?2, oldest first. */
        [STMT_LOAD_JOB_EVENTS] =
                "SELECT run, time, event, state_from, state_to, reason, actor FROM"
                " (SELECT rowid, * FROM job_events WHERE job_id=?1 ORDER BY rowid DESC LIMIT ?2) ORDER BY rowid",
        [STMT_LOAD_JOB_RUNS] =
                "SELECT run, start_time, end_time FROM"
                " (SELECT * FROM job_usage WHERE job_id=?1 ORDER BY run DESC LIMIT ?2) ORDER BY run",
        [STMT_LOAD_GPUS] = "SELECT idx, uuid, pci_address, vendor, name FROM gpus ORDER BY idx",
        [STMT_INSERT_CHARGE] =
                "INSERT INTO job_usage (job_id, run, uid, user, project, queue, start_time, end_time, cpus,"
                " run_usec, charge_factor, service_units, cpu_usec, memory_peak, io_read_bytes, io_write_bytes,"
                " io_read_ops, io_write_ops, has_pressure, cpu_some, cpu_full, memory_some, memory_full, io_some,"
                " io_full, gpus, gpu_usec, charge_per_gpu_hour)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [STMT_UPSERT_DAILY] =
                "INSERT INTO usage_daily (day, project, uid, user, queue, jobs, core_usec, service_units, cpu_usec,"
                " memory_peak, io_read_bytes, io_write_bytes, io_ops, cpu_some, cpu_full, memory_some, memory_full,"
                " io_some, io_full, gpu_usec) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (day, project, uid, queue) DO UPDATE SET jobs = jobs + 1,"
                " core_usec = core_usec + excluded.core_usec, gpu_usec = gpu_usec + excluded.gpu_usec,"
                " service_units = service_units + excluded.service_units,"
                " cpu_usec = cpu_usec + excluded.cpu_usec, memory_peak = MAX(memory_peak, excluded.memory_peak),"
                " io_read_bytes = io_read_bytes + excluded.io_read_bytes,"
                " io_write_bytes = io_write_bytes + excluded.io_write_bytes, io_ops = io_ops + excluded.io_ops,"
                " cpu_some = cpu_some + excluded.cpu_some, cpu_full = cpu_full + excluded.cpu_full,"
                " memory_some = memory_some + excluded.memory_some, memory_full = memory_full + excluded.memory_full,"
                " io_some = io_some + excluded.io_some, io_full = io_full + excluded.io_full",
        [STMT_LOAD_CHARGE] =
                "SELECT run, uid, start_time, end_time, cpus, run_usec, charge_factor, service_units,"
                " cpu_usec, memory_peak, io_read_bytes, io_write_bytes, io_read_ops, io_write_ops,"
                " has_pressure, cpu_some, cpu_full, memory_some, memory_full, io_some, io_full,"
                " gpus, charge_per_gpu_hour, gpu_usec"
                " FROM job_usage WHERE job_id=?1 ORDER BY run DESC LIMIT 1",
        [STMT_SAVE_DECAYED] = "INSERT OR REPLACE INTO usage_decayed (kind, name, value, stamp) VALUES (?1, ?2, ?3, ?4)",
        [STMT_LOAD_DECAYED] = "SELECT kind, name, value, stamp FROM usage_decayed",
        [STMT_SAVE_GRANT] =
                "INSERT OR REPLACE INTO grant_usage (project, period_begin, service_units) VALUES (?1, ?2, ?3)",
        [STMT_LOAD_GRANTS] = "SELECT project, period_begin, service_units FROM grant_usage",
        [STMT_USAGE_BY_USER] = USAGE_ROWS("user"),
        [STMT_USAGE_BY_PROJECT] = USAGE_ROWS("project"),
        [STMT_USAGE_BY_QUEUE] = USAGE_ROWS("queue"),
        [STMT_USAGE_BY_DAY] = USAGE_ROWS("day"),
};

static int sqlite_to_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_DONE:
        case SQLITE_ROW:
                return 0;
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_READONLY:
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_CANTOPEN:
                return -ENOENT;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
                return -EBADMSG;
        case SQLITE_CONSTRAINT:
                return -EEXIST;
        default:
                return -EIO;
        }
}

const char *store_error(Store *s) {
        return s && s->db ? sqlite3_errmsg(s->db) : "no database";
}

/* Runs a script of SQL that binds nothing: the pragmas at open and the migrations. */
static int exec_sql(Store *s, const char *sql) {
        return sqlite_to_errno(sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

/* One argument of a statement, bound to its parameter by position (SQL_*()). */
typedef struct SqlArg {
        enum { SQL_ARG_INT, SQL_ARG_REAL, SQL_ARG_TEXT } type;
        union {
                int64_t i;
                double d;
                const char *t;
        };
} SqlArg;

#define SQL_INT(v) ((SqlArg) { .type = SQL_ARG_INT, .i = (int64_t) (v) })
#define SQL_REAL(v) ((SqlArg) { .type = SQL_ARG_REAL, .d = (v) })
#define SQL_TEXT(v) ((SqlArg) { .type = SQL_ARG_TEXT, .t = (v) }) /* NULL: SQL's NULL */
/* A statement's arguments in order, as the array and its length stmt_exec() and
 * stmt_query() take. */
#define SQL_ARGS(...) (const SqlArg[]) { __VA_ARGS__ }, ELEMENTSOF(((const SqlArg[]) { __VA_ARGS__ }))

/* SQLite's error, with its own message at debug level: the caller logs once, with
 * store_error(). */
static int stmt_error(Store *s, const char *sql, int rc) {
        log_debug("store: \"%.60s\": %s", sql, sqlite3_errmsg(s->db));
        return sqlite_to_errno(rc) ?: -EIO;
}

/* Leaves a statement as its next use wants it: no rows pending, no lock held, nothing bound
 * (the texts it points to may be gone). */
static void stmt_reset(sqlite3_stmt *st) {
        if (!st)
                return;
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
}

static void stmt_resetp(sqlite3_stmt **st) {
        stmt_reset(*st);
}

/* Statement id, prepared once for the life of the connection. One in use (its rows being
 * read) is not given out again, to a row callback say: it would start its walk over. */
static int stmt_get(Store *s, StmtId id, sqlite3_stmt **ret) {
        sqlite3_stmt **st = &s->stmt[id];

        if (!*st) {
                int rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
                if (rc != SQLITE_OK)
                        return stmt_error(s, stmt_sql[id], rc);
        } else if (sqlite3_stmt_busy(*st))
                return -EBUSY;
        *ret = *st;
        return 0;
}

/* The statement id with args bound to ?1, ?2, ...: every parameter it has, no more. Texts
 * are not copied: they must outlive the statement's use (stmt_exec(), or the caller's
 * _cleanup_(stmt_resetp)). */
static int stmt_query(Store *s, StmtId id, const SqlArg *args, size_t n, sqlite3_stmt **ret) {
        sqlite3_stmt *st = NULL;
        int r = stmt_get(s, id, &st);

        if (r < 0)
                return r;
        assert((size_t) sqlite3_bind_parameter_count(st) == n);
        for (size_t i = 0; i < n; i++) {
                const SqlArg *a = &args[i];
                int k = (int) i + 1, rc;

                switch (a->type) {
                case SQL_ARG_INT:
                        rc = sqlite3_bind_int64(st, k, a->i);
                        break;
                case SQL_ARG_REAL:
                        rc = sqlite3_bind_double(st, k, a->d);
                        break;
                default:
                        rc = a->t ? sqlite3_bind_text(st, k, a->t, -1, SQLITE_STATIC) : sqlite3_bind_null(st, k);
                }
                if (rc != SQLITE_OK) {
                        r = stmt_error(s, stmt_sql[id], rc);
                        stmt_reset(st);
                        return r;
                }
        }
        *ret = st;
        return 0;
}

/* The next row of st: 1 with its columns to read, 0 after the last, or SQLite's error. */
static int stmt_step(Store *s, sqlite3_stmt *st) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_ROW)
                return 1;
        if (rc == SQLITE_DONE)
                return 0;
        return stmt_error(s, sqlite3_sql(st), rc);
}

/* Walks the rows of statement id with its arguments (NULL, 0 or SQL_ARGS()), st at each; r
 * ends the walk 0 after the last row, or an error (the caller's too, where it breaks out).
 * st is the caller's, declared _cleanup_(stmt_resetp). */
#define STMT_FOREACH_ROW(s, st, r, id, ...) \
        for ((r) = stmt_query((s), (id), __VA_ARGS__, &(st)); (r) >= 0 && ((r) = stmt_step((s), (st))) > 0;)

/* Runs statement id with args to its end and resets it; a row it returns is not read. */
static int stmt_exec(Store *s, StmtId id, const SqlArg *args, size_t n) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r = stmt_query(s, id, args, n, &st);

        if (r < 0)
                return r;
        r = stmt_step(s, st);
        return r < 0 ? r : 0;
}

/* The first column of statement id's one row. */
static int stmt_int(Store *s, StmtId id, int64_t *ret) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r = stmt_query(s, id, NULL, 0, &st);

        if (r < 0)
                return r;
        r = stmt_step(s, st);
        if (r <= 0)
                return r ?: -EIO;
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

int store_schema_version(Store *s) {
        int64_t v = 0;
        int r = stmt_int(s, STMT_USER_VERSION, &v);

        return r < 0 ? r : (int) v;
}

static int migrate(Store *s) {
        int v = store_schema_version(s), r;

        if (v < 0)
                return v;
        if ((size_t) v > ELEMENTSOF(migrations))
                return -EPROTO; /* written by a newer corrald: refuse rather than damage it */
        for (size_t i = (size_t) v; i < ELEMENTSOF(migrations); i++) {
                char pragma[64];
                if ((r = stmt_exec(s, STMT_BEGIN, NULL, 0)) < 0)
                        return r;
                snprintf(pragma, sizeof pragma, "PRAGMA user_version = %zu", i + 1);
                if ((r = exec_sql(s, migrations[i])) < 0 || (r = exec_sql(s, pragma)) < 0) {
                        (void) stmt_exec(s, STMT_ROLLBACK, NULL, 0);
                        return r;
                }
                if ((r = stmt_exec(s, STMT_COMMIT, NULL, 0)) < 0)
                        return r;
        }
        return 0;
}

/* A connection to the store in dir, opened with flags. */
static int store_connect(const char *dir, int flags, Store **ret) {
        _cleanup_(store_closep) Store *s = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "%s/corral.db", dir) < 0)
                return -ENOMEM;
        s = new0(Store, 1);
        if (!s)
                return -ENOMEM;
        s->wal_fd = -EBADF;
        r = sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
        if (r != SQLITE_OK)
                return sqlite_to_errno(r);
        /* First, so that another connection recovering or checkpointing the WAL (corrald's
         * for a reader; for corrald after a crash, a reader or a sqlite3 shell) makes us wait
         * instead of failing with EBUSY. */
        (void) sqlite3_busy_timeout(s->db, 5000);
        *ret = TAKE_PTR(s);
        return 0;
}

int store_open(const char *dir, Store **ret) {
        _cleanup_(store_closep) Store *s = NULL;
        sqlite3_stmt *st = NULL;
        int r;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if ((r = store_connect(dir, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s)) < 0)
                return r;
        s->dir = strdup(dir);
        if (!s->dir)
                return -ENOMEM;
        /* WAL with synchronous=NORMAL: a commit is written to the WAL, not synced; it
         * survives power loss once a sync of the WAL that began after it has returned
         * (store_sync(), or store_sync_fd() on a worker thread), which is what SQLite's
         * FULL does at every commit. Done apart, the sync of one group of commits can run
         * while the loop handles the next group's requests. A checkpoint syncs the WAL
         * before it copies frames into the database, in either mode. */
        if ((r = exec_sql(s, "PRAGMA journal_mode=WAL")) < 0 || (r = exec_sql(s, "PRAGMA synchronous=NORMAL")) < 0 ||
            (r = exec_sql(s, "PRAGMA foreign_keys=ON")) < 0)
                return r;
        /* SQLite's page cache fills to its cap as the store grows, and stays: at the
         * default 2 MB it was a twelfth of what corrald holds with 100,000 queued. What
         * corrald does between restarts touches few pages each time (an insert the
         * table's and its indexes' right edges, an update one job's row), and a miss is a
         * read from the kernel's cache, not the disk. */
        if ((r = exec_sql(s, "PRAGMA cache_size=-512")) < 0) /* KiB */
                return r;
        if ((r = migrate(s)) < 0)
                return r;
        /* A store these cannot run on fails here rather than at the first submission. */
        if ((r = stmt_get(s, STMT_INSERT_JOB, &st)) < 0 || (r = stmt_get(s, STMT_UPDATE_JOB, &st)) < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int store_open_reader(const char *dir, Store **ret) {
        return store_connect(dir, SQLITE_OPEN_READONLY, ret);
}

static void store_gpus_free(StoreGpu *g, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(g[i].uuid);
                free(g[i].pci_address);
                free(g[i].name);
        }
        free(g);
}

Store *store_close(Store *s) {
        if (!s)
                return NULL;
        if (s->in_txn)
                (void) store_commit(s);
        for (StmtId id = 0; id < _STMT_MAX; id++)
                sqlite3_finalize(s->stmt[id]);
        sqlite3_close(s->db);
        store_gpus_free(s->gpus, s->n_gpus);
        safe_close(s->wal_fd);
        free(s->dir);
        free(s);
        return NULL;
}

bool store_in_transaction(Store *s) {
        return s->in_txn;
}

uint64_t store_n_commits(Store *s) {
        return s->n_commits;
}

bool store_durable(Store *s) {
        return s->n_synced == s->n_commits;
}

int store_sync_fd(Store *s) {
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;

        if (s->wal_fd >= 0)
                return s->wal_fd;
        if (!s->dir)
                return -EBADF; /* a reader's: nothing to sync */
        /* The WAL exists once the connection has read, and lives as long as this
         * connection (SQLite removes it only when the last connection closes, unless
         * store_prepare_log() kept it). Its name in the directory is made durable once, as
         * FULL would at its first sync. Writable, for store_prepare_log(). */
        dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        fd = openat(dfd, "corral.db-wal", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fsync(dfd) < 0)
                return -errno;
        s->wal_fd = TAKE_FD(fd);
        return s->wal_fd;
}

int store_prepare_log(Store *s) {
        static const uint8_t zeros[64 * 1024];
        int64_t page_size = 0, pages = 0;
        uint64_t want;
        struct stat st;
        int persist = 1, fd, r;

        if (!s->dir)
                return -EBADF;
        /* Kept when corrald stops (checkpointed first, as without it), so that the next
         * start finds its blocks in place. */
        r = sqlite_to_errno(sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist));
        if (r < 0)
                return r;
        if ((r = stmt_int(s, STMT_PAGE_SIZE, &page_size)) < 0 ||
            (r = stmt_int(s, STMT_WAL_AUTOCHECKPOINT, &pages)) < 0)
                return r;
        if (page_size <= 0 || pages <= 0)
                return 0; /* no automatic checkpoints: the log is not started over */
        /* The header and the frames a checkpoint comes after, with room for the commit
         * that crosses the mark (a frame is a 24-byte header and a page). */
        want = 32 + (uint64_t) (pages + pages / 8) * (uint64_t) (24 + page_size);

        fd = store_sync_fd(s);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t) st.st_size >= want)
                return 0;
        for (uint64_t at = (uint64_t) st.st_size; at < want;) {
                ssize_t n = pwrite(fd, zeros, MIN(sizeof zeros, want - at), (off_t) at);
                if (n < 0)
                        return -errno;
                at += (uint64_t) n;
        }
        /* Its size with its blocks: the name was synced when it was opened. */
        return fdatasync(fd) < 0 ? -errno : 0;
}

int store_sync_wal(int fd) {
        struct stat st;

        if (fdatasync(fd) < 0)
                return -errno;
        /* A WAL no longer in the directory would be one SQLite replaced: what was synced
         * is not what it reads. Never seen; refused rather than trusted. */
        if (fstat(fd, &st) < 0)
                return -errno;
        return st.st_nlink > 0 ? 0 : -ESTALE;
}

void store_synced(Store *s, uint64_t n_commits) {
        s->n_synced = MAX(s->n_synced, MIN(n_commits, s->n_commits));
        s->n_syncs++;
}

uint64_t store_n_syncs(Store *s) {
        return s->n_syncs;
}

int store_sync(Store *s) {
        uint64_t n = s->n_commits;
        int fd, r;

        if (store_durable(s))
                return 0;
        fd = store_sync_fd(s);
        if (fd < 0)
                return fd;
        r = store_sync_wal(fd);
        if (r < 0)
                return r;
        store_synced(s, n);
        return 0;
}

static int begin(Store *s) {
        int r;

        if (s->in_txn)
                return 0;
        r = stmt_exec(s, STMT_BEGIN, NULL, 0);
        if (r < 0)
                return r;
        s->in_txn = true;
        return 0;
}

void store_fail(Store *s, int error) {
        if (s->in_txn && s->txn_error == 0)
                s->txn_error = error < 0 ? error : -EIO;
}

int store_commit(Store *s) {
        int r;

        if (!s->in_txn)
                return 0;
        if (s->txn_error < 0) {
                r = s->txn_error;
                (void) stmt_exec(s, STMT_ROLLBACK, NULL, 0);
                s->in_txn = false;
                s->txn_error = 0;
                return r;
        }
        r = stmt_exec(s, STMT_COMMIT, NULL, 0);
        if (r < 0)
                return r;
        s->in_txn = false;
        s->n_commits++;
        return 0;
}

int store_savepoint(Store *s) {
        int r = begin(s);
        return r < 0 ? r : stmt_exec(s, STMT_SAVEPOINT, NULL, 0);
}

int store_release(Store *s) {
        return stmt_exec(s, STMT_RELEASE, NULL, 0);
}

int store_rollback(Store *s) {
        int r = stmt_exec(s, STMT_ROLLBACK_TO, NULL, 0);
        return r < 0 ? r : stmt_exec(s, STMT_RELEASE, NULL, 0);
}

/* The allocation's memory per node as "bytes,bytes,..." (node index = position). */
static char *format_alloc_mem(const SchedAllocation *a) {
        char *buf = malloc(SCHED_NODES_MAX * 21 + 1), *p = buf;
        if (!buf)
                return NULL;
        *p = 0;
        for (size_t i = 0; i < SCHED_NODES_MAX; i++)
                if (a->node_mask & (UINT64_C(1) << i))
                        p += sprintf(p, "%s%zu:%" PRIu64, p == buf ? "" : ",", i, a->mem[i]);
        return buf;
}

static int parse_alloc_mem(const char *s, SchedAllocation *a) {
        const char *p = s;

        a->node_mask = 0;
        while (p && *p) {
                unsigned node;
                uint64_t bytes;
                int n = 0;
                if (sscanf(p, "%u:%" SCNu64 "%n", &node, &bytes, &n) != 2 || node >= SCHED_NODES_MAX)
                        return -EBADMSG;
                a->node_mask |= UINT64_C(1) << node;
                a->mem[node] = bytes;
                p += n;
                if (*p == ',')
                        p++;
        }
        return 0;
}

static char *col_strdup(sqlite3_stmt *st, int i);

static bool streq_ptr(const char *a, const char *b) {
        return a && b && streq(a, b);
}

static const char *gpu_by_name(const char *key) {
        return strncmp(key, GPU_BY_NAME, (sizeof GPU_BY_NAME - 1)) == 0 ? key + (sizeof GPU_BY_NAME - 1) : NULL;
}

static const char *store_gpu_key(const StoreGpu *x) {
        return x->uuid ?: x->pci_address ?: x->name;
}

/* Which index a stored GPU is: its key is the UUID, PCI address or (a declared device)
 * name of one; by_name: the name of one. -1: none. */
static ssize_t find_gpu(const Store *s, const char *key, bool by_name) {
        for (size_t g = 0; g < s->n_gpus; g++) {
                const StoreGpu *x = &s->gpus[g];

                if (by_name ? streq_ptr(x->name, key)
                            : (x->uuid && strcasecmp(x->uuid, key) == 0) ||
                                      (x->pci_address && strcasecmp(x->pci_address, key) == 0) ||
                                      (!x->uuid && !x->pci_address && streq_ptr(x->name, key)))
                        return (ssize_t) g;
        }
        return -1;
}

/* The allocation's GPUs by identity, "GPU-5e7c...,0000:3b:00.0"; NULL for none. An index
 * no GPU has is one a job keeps for a card not there (parse_alloc_gpus()): by its name. */
static int format_alloc_gpus(const Store *s, const SchedAllocation *a, char **ret) {
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        *ret = NULL;
        if (!a || a->gpu_mask == 0)
                return 0;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t g = 0, n = 0; g < 64; g++)
                if (a->gpu_mask & (UINT64_C(1) << g)) {
                        if (g < s->n_gpus)
                                fprintf(f, "%s%s", n++ ? "," : "", store_gpu_key(&s->gpus[g]));
                        else
                                fprintf(f, "%s" GPU_BY_NAME "gpu%zu", n++ ? "," : "", g);
                }
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        return 0;
}

static void parse_alloc_gpus(const Store *s, uint64_t id, const char *text, bool warn, SchedAllocation *a) {
        _cleanup_strv_free_ char **l = NULL;
        unsigned g;

        a->gpu_mask = 0;
        if (isempty(text) || strv_split(text, ",", &l) < 0)
                return;
        STRV_FOREACH(key, l) {
                const char *name = gpu_by_name(*key);
                ssize_t k = find_gpu(s, name ?: *key, name);

                if (k >= 0)
                        a->gpu_mask |= UINT64_C(1) << k;
                else if (name && strncmp(name, "gpu", 3) == 0 && safe_atou(name + 3, &g) >= 0 && g < 64) {
                        /* A card not there since before schema 7, its name its position:
                         * the job keeps that index, so that nobody is given the card when
                         * it is back (it takes that index when it is the next new one). */
                        a->gpu_mask |= UINT64_C(1) << g;
                        if (warn)
                                log_warning("Job %" PRIu64 " holds %s, which is not on this machine now: the job keeps "
                                            "its index %u, nobody else is given it.", id, name, g);
                } else if ((*key)[0] == '#' && safe_atou(*key + 1, &g) >= 0 && g < 64 && s->n_gpus == 0)
                        a->gpu_mask |= UINT64_C(1) << g;
                else if (warn)
                        log_warning("Job %" PRIu64 " held %s, which this machine has never had: nobody is given "
                                    "it in the job's place.", id, *key);
        }
}

/* Rows written before schema 7 hold GPUs by name ("gpus_by_name" is 1): each is marked
 * as such, then, as each start or reload finds it, becomes its card's key. A name no GPU
 * has now is kept, never dropped: its card may be late (a driver not loaded yet, a card
 * out during the upgrade, one whose identity cannot be read) and its job still running.
 * The flag stays ("name") while a running or suspended job holds such a name. */
static int rewrite_gpus_by_name(Store *s) {
        _cleanup_(stmt_resetp) sqlite3_stmt *sel = NULL;
        _cleanup_free_ char *flag = NULL;
        bool pending = false;
        int r;

        r = store_get_meta(s, "gpus_by_name", &flag);
        if (r <= 0)
                return r;
        if ((r = begin(s)) < 0)
                return r;
        if (streq(flag, "1")) {
                r = stmt_exec(s, STMT_MARK_GPUS_BY_NAME, NULL, 0);
                if (r >= 0)
                        r = store_set_meta(s, "gpus_by_name", "name");
                if (r < 0)
                        goto finish;
        }
        /* No GPU found (yet): no name can be resolved. */
        if (s->n_gpus == 0)
                return 0;
        STMT_FOREACH_ROW(s, sel, r, STMT_JOBS_GPUS_BY_NAME, NULL, 0) {
                const char *state = (const char *) sqlite3_column_text(sel, 1);
                _cleanup_strv_free_ char **l = NULL;
                _cleanup_free_ char *text = NULL;
                bool changed = false, left = false;
                size_t size = 0;
                FILE *f;

                if (strv_split((const char *) sqlite3_column_text(sel, 2), ",", &l) < 0) {
                        r = -ENOMEM;
                        break;
                }
                f = open_memstream(&text, &size);
                if (!f) {
                        r = -ENOMEM;
                        break;
                }
                STRV_FOREACH(key, l) {
                        const char *name = gpu_by_name(*key);
                        ssize_t k = name ? find_gpu(s, name, true) : -1;

                        fprintf(f, "%s%s", key == l ? "" : ",", k >= 0 ? store_gpu_key(&s->gpus[k]) : *key);
                        changed |= k >= 0;
                        left |= name && k < 0;
                }
                if (fclose(f) != 0) {
                        r = -ENOMEM;
                        break;
                }
                if (left && state && job_state_is_active(job_state_from_string(state)))
                        pending = true;
                if (changed)
                        r = stmt_exec(s, STMT_SET_JOB_GPUS,
                                      SQL_ARGS(SQL_INT(sqlite3_column_int64(sel, 0)), SQL_TEXT(text)));
        }
        if (r >= 0 && !pending)
                r = store_delete_meta(s, "gpus_by_name");
finish:
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_set_gpus(Store *s, const DeviceSet *devices) {
        StoreGpu *v = new0(StoreGpu, devices->n_devices + 1);
        int r;

        if (!v)
                return -ENOMEM;
        for (size_t g = 0; g < devices->n_devices; g++) {
                const Device *d = &devices->devices[g];

                if ((d->uuid && !(v[g].uuid = strdup(d->uuid))) ||
                    (d->pci_address && !(v[g].pci_address = strdup(d->pci_address))) ||
                    (d->name && !(v[g].name = strdup(d->name)))) {
                        store_gpus_free(v, devices->n_devices);
                        return -ENOMEM;
                }
                v[g].vendor = d->vendor;
                v[g].auto_name = d->auto_name;
        }
        store_gpus_free(s->gpus, s->n_gpus);
        s->gpus = v;
        s->n_gpus = devices->n_devices;

        r = rewrite_gpus_by_name(s);
        if (r < 0)
                return r;
        if ((r = begin(s)) < 0)
                return r;
        r = stmt_exec(s, STMT_DELETE_GPUS, NULL, 0);
        for (size_t g = 0; r >= 0 && g < s->n_gpus; g++)
                r = stmt_exec(s, STMT_INSERT_GPU,
                              SQL_ARGS(SQL_INT(g), SQL_TEXT(v[g].uuid), SQL_TEXT(v[g].pci_address),
                                       SQL_TEXT(device_vendor_to_string(v[g].vendor)),
                                       SQL_TEXT(v[g].auto_name ? NULL : v[g].name)));
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_load_gpus(Store *s, DeviceSet **ret) {
        _cleanup_(device_set_freep) DeviceSet *set = new0(DeviceSet, 1);
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        if (!set)
                return -ENOMEM;
        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_GPUS, NULL, 0) {
                int64_t idx = sqlite3_column_int64(st, 0);
                const char *vendor = (const char *) sqlite3_column_text(st, 3);
                Device *n;

                if (idx < 0 || idx >= SCHED_GPUS_MAX || (size_t) idx < set->n_devices)
                        return -EBADMSG;
                n = reallocarray(set->devices, (size_t) idx + 1, sizeof *n);
                if (!n)
                        return -ENOMEM;
                set->devices = n;
                /* Indexes no row names (none written so): gone, nameless cards. */
                for (; set->n_devices <= (size_t) idx; set->n_devices++)
                        n[set->n_devices] = (Device) { .vendor = DEVICE_VENDOR_OTHER, .numa_node = -1, .gone = true,
                                                       .auto_name = true };
                Device *d = &n[idx];
                d->uuid = col_strdup(st, 1);
                d->pci_address = col_strdup(st, 2);
                d->vendor = vendor && (int) device_vendor_from_string(vendor) >= 0 ? device_vendor_from_string(vendor)
                                                                                    : DEVICE_VENDOR_OTHER;
                d->name = col_strdup(st, 4);
                d->auto_name = !d->name;
                if (!d->name && asprintf(&d->name, "gpu%" PRIi64, idx) < 0)
                        d->name = NULL;
                if (!d->name || (sqlite3_column_type(st, 1) != SQLITE_NULL && !d->uuid) ||
                    (sqlite3_column_type(st, 2) != SQLITE_NULL && !d->pci_address))
                        return -ENOMEM;
        }
        if (r < 0)
                return r;
        for (size_t g = 0; g < set->n_devices; g++)
                if (!set->devices[g].name && asprintf(&set->devices[g].name, "gpu%zu", g) < 0) {
                        set->devices[g].name = NULL;
                        return -ENOMEM;
                }
        *ret = TAKE_PTR(set);
        return 0;
}

/* The texts a job's row is written with: its allocation's CPUs, memory and GPUs. */
typedef struct JobTexts {
        char *cpus, *mem, *gpus;
} JobTexts;

static void job_texts_done(JobTexts *t) {
        free(t->cpus);
        free(t->mem);
        free(t->gpus);
}

#define JOB_ARGS 25

/* The job's changing columns, the first JOB_ARGS arguments of its insert and its update. */
static int job_args(Store *s, const Job *j, JobTexts *t, SqlArg a[static JOB_ARGS]) {
        const JobRun *run = job_run(j);
        const SchedAllocation *alloc = run->alloc;

        if (alloc && (!(t->cpus = cpu_set_format(&alloc->cpus)) || !(t->mem = format_alloc_mem(alloc))))
                return -ENOMEM;
        if (format_alloc_gpus(s, alloc, &t->gpus) < 0)
                return -ENOMEM;
        const SqlArg v[] = {
                SQL_INT(j->id), SQL_TEXT(job_state_to_string(j->state)), SQL_TEXT(job_reason(j)),
                SQL_INT(j->rerunnable), SQL_INT(j->held_by_admin), SQL_INT(j->requeue_count),
                SQL_INT(j->eligible_time), SQL_INT(j->start_time), SQL_INT(j->end_time),
                SQL_INT(run->suspended_usec), SQL_INT(run->suspend_start), SQL_INT(run->exit_code),
                SQL_INT(run->exit_signal), SQL_TEXT(t->cpus), SQL_TEXT(t->mem), SQL_INT(run->usage.cpu_usec),
                SQL_INT(run->usage.memory_peak), SQL_INT(run->usage.io_read_bytes),
                SQL_INT(run->usage.io_write_bytes), SQL_INT(run->usage.tasks_peak), SQL_TEXT(job_queue(j)),
                /* Who holds it suspended, as bits: an admin (1), a pass (2), a person too (4). */
                SQL_INT((j->suspended_by_admin ? 1 : 0) | (j->suspended_by_sched ? 2 : 0) |
                        (j->suspended_by_person ? 4 : 0)),
                SQL_TEXT(run->launch_error), SQL_INT(run->preempted_by), SQL_TEXT(t->gpus),
        };
        _Static_assert(ELEMENTSOF(v) == JOB_ARGS, "a job's changing columns");
        memcpy(a, v, sizeof v);
        return 0;
}

int store_insert_job(Store *s, const Job *j, size_t *ret_request_bytes) {
        _cleanup_(job_texts_done) JobTexts t = {};
        _cleanup_free_ char *request = NULL;
        size_t bytes = 0;
        int r;

        if (job_request_id(j) == 0 || job_request_id(j) == j->id) {
                json_object *o = NULL;
                if (!job_submitted(j))
                        return -EINVAL; /* memory keeps only part of it (job.h) */
                r = submit_request_to_json(job_submitted(j), &o);
                if (r < 0)
                        return r;
                request = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                json_object_put(o);
                if (!request)
                        return -ENOMEM;
                bytes = strlen(request);
        }
        SqlArg a[] = {
                [JOB_ARGS] = SQL_INT(j->uid), SQL_INT(j->gid), SQL_TEXT(job_user(j)), SQL_TEXT(job_project(j)),
                SQL_TEXT(request ?: ""), SQL_INT(j->array_job_id), SQL_INT(j->array_task_id),
                SQL_INT(j->submit_time), SQL_INT(request ? 0 : job_request_id(j)),
        };
        if ((r = begin(s)) < 0 || (r = job_args(s, j, &t, a)) < 0 ||
            (r = stmt_exec(s, STMT_INSERT_JOB, a, ELEMENTSOF(a))) < 0)
                return r;
        if (ret_request_bytes)
                *ret_request_bytes = bytes;
        return r;
}

int store_update_job(Store *s, const Job *j) {
        _cleanup_(job_texts_done) JobTexts t = {};
        SqlArg a[JOB_ARGS];
        int r;

        if ((r = begin(s)) < 0 || (r = job_args(s, j, &t, a)) < 0)
                return r;
        return stmt_exec(s, STMT_UPDATE_JOB, a, ELEMENTSOF(a));
}

static char *col_strdup(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? strdup((const char *) t) : NULL;
}

static int load_jobs(Store *s, StmtId id, const SqlArg *args, size_t n, int (*cb)(Job *j, void *userdata),
                     void *userdata);

int store_load_jobs(Store *s, int (*cb)(Job *j, void *userdata), void *userdata) {
        return load_jobs(s, STMT_LOAD_JOBS, NULL, 0, cb, userdata);
}

int store_load_jobs_after(Store *s, uint64_t after_id, uint64_t ended_since, unsigned limit,
                          int (*cb)(Job *j, void *userdata), void *userdata) {
        return load_jobs(s, STMT_LOAD_JOBS_AFTER,
                         SQL_ARGS(SQL_INT(MIN(after_id, (uint64_t) INT64_MAX)),
                                  SQL_INT(MIN(ended_since, (uint64_t) INT64_MAX)), SQL_INT(limit)),
                         cb, userdata);
}

/* Calls cb with the job of each row of statement id (JOB_COLUMNS). */
static int load_jobs(Store *s, StmtId id, const SqlArg *args, size_t n, int (*cb)(Job *j, void *userdata),
                     void *userdata) {
        /* Array tasks refer to their first task's request, which comes first in id order:
         * it is parsed once and copied, not parsed again per task. */
        _cleanup_(submit_request_done) SubmitRequest shared = SUBMIT_REQUEST_INIT;
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        uint64_t shared_id = 0;
        size_t shared_bytes = 0;
        int r;

        STMT_FOREACH_ROW(s, st, r, id, args, n) {
                _cleanup_(job_freep) Job *j = job_new();
                _cleanup_free_ char *state = NULL, *cpus = NULL, *mem = NULL;
                JobRun run = job_run_none;
                uint64_t request_id;
                const char *request;
                json_object *o;

                if (!j) {
                        r = -ENOMEM;
                        break;
                }
                j->id = (uint64_t) sqlite3_column_int64(st, 0);
                j->uid = (uid_t) sqlite3_column_int64(st, 1);
                j->gid = (gid_t) sqlite3_column_int64(st, 2);
                j->user = intern_id((const char *) sqlite3_column_text(st, 3));
                j->project = intern_id((const char *) sqlite3_column_text(st, 4));
                j->queue = intern_id((const char *) sqlite3_column_text(st, 5));
                state = col_strdup(st, 6);
                j->reason = intern_id((const char *) sqlite3_column_text(st, 7));
                request = (const char *) sqlite3_column_text(st, 8);
                j->rerunnable = sqlite3_column_int(st, 9);
                j->held_by_admin = sqlite3_column_int(st, 10);
                j->requeue_count = (uint32_t) sqlite3_column_int64(st, 11);
                j->array_job_id = (uint64_t) sqlite3_column_int64(st, 12);
                j->array_task_id = (uint32_t) sqlite3_column_int64(st, 13);
                j->submit_time = (uint64_t) sqlite3_column_int64(st, 14);
                j->eligible_time = (uint64_t) sqlite3_column_int64(st, 15);
                j->start_time = (uint64_t) sqlite3_column_int64(st, 16);
                j->end_time = (uint64_t) sqlite3_column_int64(st, 17);
                run.suspended_usec = (uint64_t) sqlite3_column_int64(st, 18);
                run.suspend_start = (uint64_t) sqlite3_column_int64(st, 19);
                run.exit_code = sqlite3_column_int(st, 20);
                run.exit_signal = sqlite3_column_int(st, 21);
                cpus = col_strdup(st, 22);
                mem = col_strdup(st, 23);
                run.usage.cpu_usec = (uint64_t) sqlite3_column_int64(st, 24);
                run.usage.memory_peak = (uint64_t) sqlite3_column_int64(st, 25);
                run.usage.io_read_bytes = (uint64_t) sqlite3_column_int64(st, 26);
                run.usage.io_write_bytes = (uint64_t) sqlite3_column_int64(st, 27);
                run.usage.tasks_peak = (uint64_t) sqlite3_column_int64(st, 28);
                request_id = (uint64_t) sqlite3_column_int64(st, 29);
                j->suspended_by_admin = sqlite3_column_int(st, 30) & 1;
                j->suspended_by_sched = sqlite3_column_int(st, 30) & 2;
                j->suspended_by_person = sqlite3_column_int(st, 30) & 4;
                run.preempted_by = (uint64_t) sqlite3_column_int64(st, 32);
                if (sqlite3_column_type(st, 31) != SQLITE_NULL && !(run.launch_error = col_strdup(st, 31))) {
                        r = -ENOMEM;
                        break;
                }
                /* A job that never started has no run to keep (most of a long queue). */
                if (!job_run_is_empty(&run)) {
                        JobRun *jr = job_run_ensure(j);
                        if (!jr) {
                                free(run.launch_error);
                                r = -ENOMEM;
                                break;
                        }
                        *jr = run;
                }

                if (!j->user || !j->queue || !state || !request) {
                        r = -EBADMSG;
                        break;
                }
                j->state = job_state_from_string(state);
                if ((int) j->state < 0) {
                        r = -EBADMSG;
                        break;
                }
                if (!isempty(cpus)) {
                        JobRun *jr = job_run_ensure(j); /* a job with an allocation has started */
                        if (!jr || !(jr->alloc = new0(SchedAllocation, 1))) {
                                r = -ENOMEM;
                                break;
                        }
                        if (cpu_set_parse(cpus, &jr->alloc->cpus) < 0 || (mem && parse_alloc_mem(mem, jr->alloc) < 0)) {
                                r = -EBADMSG;
                                break;
                        }
                        parse_alloc_gpus(s, j->id, (const char *) sqlite3_column_text(st, 33),
                                         job_state_is_active(j->state), jr->alloc);
                        if (job_state_is_final(j->state)) /* never written again: shared (job.c) */
                                jr->alloc = job_alloc_share(jr->alloc);
                }
                if (request_id != 0) {
                        /* Memory keeps only that it is its array's first task's. */
                        if (request_id != shared_id || request_id != j->array_job_id) {
                                r = -EBADMSG; /* its array's first task is missing */
                                break;
                        }
                        j->request_of_array = true;
                        r = job_set_request(j, &shared);
                        if (r < 0)
                                break;
                        j->request_bytes = (uint32_t) shared_bytes;
                } else {
                        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;

                        o = json_tokener_parse(request);
                        if (!o) {
                                r = -EBADMSG;
                                break;
                        }
                        r = submit_request_decode(o, SUBMIT_REQUEST_STORED, &req, NULL);
                        json_object_put(o);
                        if (r < 0)
                                break;
                        r = job_set_request(j, &req);
                        if (r < 0)
                                break;
                        j->request_bytes = (uint32_t) strlen(request);
                        if (j->array_job_id == j->id) {
                                /* Kept whole for its tasks, which follow. */
                                submit_request_done(&shared);
                                shared = req;
                                req = (SubmitRequest) SUBMIT_REQUEST_INIT;
                                shared_id = j->id;
                                shared_bytes = j->request_bytes;
                        }
                }
                /* A shard job holds its request's shards of its one GPU: the allocation
                 * keeps the GPU, the request how many (a final job's is shared, unwritten). */
                if (job_alloc(j) && j->req_shards > 0 && !job_state_is_final(j->state))
                        job_alloc(j)->shards = j->req_shards;
                r = cb(TAKE_PTR(j), userdata);
                if (r < 0)
                        break;
        }
        return r;
}

int store_get_meta(Store *s, const char *key, char **ret) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        if ((r = stmt_query(s, STMT_GET_META, SQL_ARGS(SQL_TEXT(key)), &st)) < 0 || (r = stmt_step(s, st)) < 0)
                return r;
        if (r == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = col_strdup(st, 0);
        return *ret ? 1 : -ENOMEM;
}

int store_set_meta(Store *s, const char *key, const char *value) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return stmt_exec(s, STMT_SET_META, SQL_ARGS(SQL_TEXT(key), SQL_TEXT(value)));
}

int store_delete_meta(Store *s, const char *key) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return stmt_exec(s, STMT_DELETE_META, SQL_ARGS(SQL_TEXT(key)));
}

int store_next_job_id(Store *s, uint64_t *ret) {
        _cleanup_free_ char *v = NULL;
        int64_t max = 0;
        uint64_t meta = 0;
        int r;

        r = stmt_int(s, STMT_MAX_JOB_ID, &max);
        if (r < 0)
                return r;
        r = store_get_meta(s, "last_job_id", &v);
        if (r < 0)
                return r;
        if (v)
                meta = strtoull(v, NULL, 10);
        *ret = MAX((uint64_t) max, meta) + 1;
        return 0;
}

int store_load_request(Store *s, uint64_t id, SubmitRequest *ret) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        json_object *o;
        int r;

        if ((r = stmt_query(s, STMT_LOAD_REQUEST, SQL_ARGS(SQL_INT(id)), &st)) < 0 || (r = stmt_step(s, st)) < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        if (sqlite3_column_type(st, 0) == SQLITE_NULL ||
            !(o = json_tokener_parse((const char *) sqlite3_column_text(st, 0))))
                return -EBADMSG;
        r = submit_request_decode(o, SUBMIT_REQUEST_STORED, ret, NULL);
        json_object_put(o);
        return r;
}

/* ---- accounting (migration 3) ---- */


/* A run's or a summary's stall totals, in AcctStall's order. */
#define SQL_STALLS(v) \
        SQL_INT((v)[0]), SQL_INT((v)[1]), SQL_INT((v)[2]), SQL_INT((v)[3]), SQL_INT((v)[4]), SQL_INT((v)[5])
_Static_assert(_ACCT_STALL_MAX == 6, "SQL_STALLS() binds every stall total");

int store_record_charge(Store *s, const JobCharge *c) {
        const char *project = c->project ?: "", *user = c->user ?: "", *queue = c->queue ?: "";
        sqlite3_stmt *daily = NULL;
        UsageTotals t;
        char day[16];
        int r;

        /* The summary's statement too, so that failing to prepare it writes nothing. */
        if ((r = begin(s)) < 0 || (r = stmt_get(s, STMT_UPSERT_DAILY, &daily)) < 0)
                return r;
        usage_totals_from_charge(&t, c);

        /* A run is charged once: seen again (an outcome read twice), nothing is added. */
        r = stmt_exec(s, STMT_INSERT_CHARGE,
                      SQL_ARGS(SQL_INT(c->job_id), SQL_INT(c->run), SQL_INT(c->uid), SQL_TEXT(user),
                               SQL_TEXT(project), SQL_TEXT(queue), SQL_INT(c->start_time), SQL_INT(c->end_time),
                               SQL_INT(c->cpus), SQL_INT(c->run_usec), SQL_REAL(c->charge_factor),
                               SQL_REAL(c->service_units), SQL_INT(c->cpu_usec), SQL_INT(c->memory_peak),
                               SQL_INT(c->io_read_bytes), SQL_INT(c->io_write_bytes), SQL_INT(c->io_read_ops),
                               SQL_INT(c->io_write_ops), SQL_INT(c->has_pressure), SQL_STALLS(c->stall_usec),
                               SQL_INT(c->gpus), SQL_INT(t.gpu_usec), SQL_REAL(c->charge_per_gpu_hour)));
        if (r < 0)
                return r;
        /* From here on a failure leaves the charge without its day's summary. */
        r = stmt_exec(s, STMT_UPSERT_DAILY,
                      SQL_ARGS(SQL_TEXT(acct_day(day, sizeof day, c->end_time)), SQL_TEXT(project), SQL_INT(c->uid),
                               SQL_TEXT(user), SQL_TEXT(queue), SQL_INT(t.core_usec), SQL_REAL(t.service_units),
                               SQL_INT(t.cpu_usec), SQL_INT(t.memory_peak), SQL_INT(t.io_read_bytes),
                               SQL_INT(t.io_write_bytes), SQL_INT(t.io_ops), SQL_STALLS(t.stall_usec),
                               SQL_INT(t.gpu_usec)));
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_record_gpu_usage(Store *s, const StoreGpuUsage *u) {
        SqlArg mean = u->util_mean >= 0 ? SQL_REAL(u->util_mean) : SQL_TEXT(NULL),
               energy = u->energy_j >= 0 ? SQL_REAL(u->energy_j) : SQL_TEXT(NULL),
               own = u->own_memory_max != UINT64_MAX ? SQL_INT(MIN(u->own_memory_max, (uint64_t) INT64_MAX))
                                                     : SQL_TEXT(NULL);
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return stmt_exec(s, STMT_RECORD_GPU_USAGE,
                         SQL_ARGS(SQL_INT(u->job_id), SQL_INT(u->run), SQL_INT(u->gpu), SQL_TEXT(u->uuid),
                                  SQL_INT(u->samples), mean, SQL_INT(u->util_max),
                                  SQL_INT(MIN(u->memory_max, (uint64_t) INT64_MAX)), energy,
                                  SQL_INT(MIN(u->held_sec, (uint64_t) INT64_MAX)), own));
}

void store_gpu_usage_free(StoreGpuUsage *rows, size_t n) {
        for (size_t i = 0; rows && i < n; i++)
                free(rows[i].uuid);
        free(rows);
}

int store_load_gpu_usage(Store *s, uint64_t job_id, StoreGpuUsage **ret, size_t *ret_n) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        StoreGpuUsage *rows = NULL;
        size_t n = 0;
        int r;

        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_GPU_USAGE, SQL_ARGS(SQL_INT(job_id))) {
                StoreGpuUsage *a = reallocarray(rows, n + 1, sizeof *rows);
                const char *uuid = (const char *) sqlite3_column_text(st, 1);

                if (!a) {
                        r = -ENOMEM;
                        break;
                }
                rows = a;
                rows[n] = (StoreGpuUsage) {
                        .job_id = job_id,
                        .gpu = (unsigned) sqlite3_column_int64(st, 0),
                        .samples = (uint32_t) sqlite3_column_int64(st, 2),
                        .util_mean = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 3),
                        .util_max = (unsigned) sqlite3_column_int64(st, 4),
                        .memory_max = (uint64_t) sqlite3_column_int64(st, 5),
                        .energy_j = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 6),
                        .held_sec = (uint64_t) sqlite3_column_int64(st, 7),
                        .run = (uint32_t) sqlite3_column_int64(st, 8),
                        .own_memory_max = sqlite3_column_type(st, 9) == SQLITE_NULL
                                                  ? UINT64_MAX
                                                  : (uint64_t) sqlite3_column_int64(st, 9),
                };
                if (uuid && !(rows[n].uuid = strdup(uuid))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (r < 0) {
                store_gpu_usage_free(rows, n);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

/* A shard run's share, K of N, back from its GPU-µs as charged (the row keeps no K and N):
 * the first N up to CORRAL_SHARDS_MAX whose K gives exactly those µs (the run's own K/N,
 * or an equal fraction), so that a charge computed again is the one recorded. */
static void charge_find_share(JobCharge *c, uint64_t gpu_usec) {
        uint64_t whole = (uint64_t) c->gpus * c->run_usec;

        if (whole == 0 || gpu_usec >= whole)
                return;
        for (uint32_t n = 2; n <= CORRAL_SHARDS_MAX; n++) {
                double k = (double) gpu_usec * n / (double) whole;

                for (uint32_t x = k > 1 ? (uint32_t) k - 1 : 1; x <= (uint32_t) k + 1 && x < n; x++) {
                        c->shards = x;
                        c->shards_of = n;
                        if (acct_gpu_usec(c) == gpu_usec) {
                                c->gpu_hours = (double) gpu_usec / ACCT_USEC_PER_HOUR;
                                return;
                        }
                }
        }
        c->shards = c->shards_of = 0;
}

int store_load_charge(Store *s, uint64_t job_id, JobCharge *ret) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        if ((r = stmt_query(s, STMT_LOAD_CHARGE, SQL_ARGS(SQL_INT(job_id)), &st)) < 0 || (r = stmt_step(s, st)) < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        *ret = (JobCharge) {
                .job_id = job_id,
                .run = (uint32_t) sqlite3_column_int64(st, 0),
                .uid = (uid_t) sqlite3_column_int64(st, 1),
                .start_time = (uint64_t) sqlite3_column_int64(st, 2),
                .end_time = (uint64_t) sqlite3_column_int64(st, 3),
                .cpus = (unsigned) sqlite3_column_int64(st, 4),
                .run_usec = (uint64_t) sqlite3_column_int64(st, 5),
                .charge_factor = sqlite3_column_double(st, 6),
                .service_units = sqlite3_column_double(st, 7),
                .cpu_usec = (uint64_t) sqlite3_column_int64(st, 8),
                .memory_peak = (uint64_t) sqlite3_column_int64(st, 9),
                .io_read_bytes = (uint64_t) sqlite3_column_int64(st, 10),
                .io_write_bytes = (uint64_t) sqlite3_column_int64(st, 11),
                .io_read_ops = (uint64_t) sqlite3_column_int64(st, 12),
                .io_write_ops = (uint64_t) sqlite3_column_int64(st, 13),
                .has_pressure = sqlite3_column_int(st, 14),
        };
        for (int i = 0; i < _ACCT_STALL_MAX; i++)
                ret->stall_usec[i] = (uint64_t) sqlite3_column_int64(st, 15 + i);
        ret->gpus = (unsigned) sqlite3_column_int64(st, 21);
        ret->charge_per_gpu_hour = sqlite3_column_double(st, 22);
        ret->core_hours = (double) ret->cpus * (double) ret->run_usec / ACCT_USEC_PER_HOUR;
        ret->gpu_hours = (double) ret->gpus * (double) ret->run_usec / ACCT_USEC_PER_HOUR;
        charge_find_share(ret, (uint64_t) sqlite3_column_int64(st, 23));
        return 0;
}

int store_save_decayed(Store *s, StoreUsageKind kind, const char *name, const AcctDecayed *d) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return stmt_exec(s, STMT_SAVE_DECAYED,
                         SQL_ARGS(SQL_INT(kind), SQL_TEXT(name ?: ""), SQL_REAL(d->value), SQL_INT(d->stamp)));
}

int store_load_decayed(Store *s, store_decayed_cb cb, void *userdata) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_DECAYED, NULL, 0) {
                AcctDecayed d = { .value = sqlite3_column_double(st, 2),
                                  .stamp = (uint64_t) sqlite3_column_int64(st, 3) };
                const char *name = (const char *) sqlite3_column_text(st, 1);

                if ((r = cb((StoreUsageKind) sqlite3_column_int(st, 0), name ?: "", &d, userdata)) < 0)
                        break;
        }
        return r;
}

int store_save_grant(Store *s, const char *project, uint64_t period_begin, double service_units) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return stmt_exec(s, STMT_SAVE_GRANT,
                         SQL_ARGS(SQL_TEXT(project), SQL_INT(period_begin), SQL_REAL(service_units)));
}

int store_load_grants(Store *s, store_grant_cb cb, void *userdata) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_GRANTS, NULL, 0) {
                const char *project = (const char *) sqlite3_column_text(st, 0);

                if ((r = cb(project ?: "", (uint64_t) sqlite3_column_int64(st, 1), sqlite3_column_double(st, 2),
                            userdata)) < 0)
                        break;
        }
        return r;
}

int store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata) {
        static const StmtId by_stmt[] = {
                [STORE_USAGE_BY_USER] = STMT_USAGE_BY_USER,
                [STORE_USAGE_BY_PROJECT] = STMT_USAGE_BY_PROJECT,
                [STORE_USAGE_BY_QUEUE] = STMT_USAGE_BY_QUEUE,
                [STORE_USAGE_BY_DAY] = STMT_USAGE_BY_DAY,
        };
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        int r;

        if ((size_t) q->by >= ELEMENTSOF(by_stmt))
                return -EINVAL;
        STMT_FOREACH_ROW(s, st, r, by_stmt[q->by],
                         SQL_ARGS(SQL_TEXT(q->since ?: "0000-00-00"), SQL_TEXT(q->until ?: "9999-99-99"),
                                  SQL_TEXT(q->user), SQL_TEXT(q->project), SQL_TEXT(q->queue))) {
                UsageTotals t = {
                        .jobs = (uint64_t) sqlite3_column_int64(st, 4),
                        .core_usec = (uint64_t) sqlite3_column_int64(st, 5),
                        .service_units = sqlite3_column_double(st, 6),
                        .cpu_usec = (uint64_t) sqlite3_column_int64(st, 7),
                        .memory_peak = (uint64_t) sqlite3_column_int64(st, 8),
                        .io_read_bytes = (uint64_t) sqlite3_column_int64(st, 9),
                        .io_write_bytes = (uint64_t) sqlite3_column_int64(st, 10),
                        .io_ops = (uint64_t) sqlite3_column_int64(st, 11),
                };
                StoreUsageRow row = {
                        .key = (const char *) sqlite3_column_text(st, 0),
                        .project = (const char *) sqlite3_column_text(st, 1),
                        .uid = (uid_t) sqlite3_column_int64(st, 2),
                        .user = (const char *) sqlite3_column_text(st, 3),
                };
                for (int i = 0; i < _ACCT_STALL_MAX; i++)
                        t.stall_usec[i] = (uint64_t) sqlite3_column_int64(st, 12 + i);
                t.gpu_usec = (uint64_t) sqlite3_column_int64(st, 18);
                row.totals = t;
                row.gpu_used_sec = sqlite3_column_double(st, 19);
                row.gpu_sampled_sec = (uint64_t) sqlite3_column_int64(st, 20);
                r = cb(&row, userdata);
                if (r < 0)
                        break;
        }
        return r;
}

int store_record_job_event(Store *s, uint64_t job_id, uint32_t run, uint64_t time, const char *event, const char *from,
                           const char *to, const char *reason, const char *by, unsigned keep) {
        int r = begin(s);

        if (r < 0)
                return r;
        r = stmt_exec(s, STMT_INSERT_JOB_EVENT,
                      SQL_ARGS(SQL_INT(job_id), SQL_INT(run), SQL_INT(MIN(time, (uint64_t) INT64_MAX)), SQL_TEXT(event),
                               SQL_TEXT(from), SQL_TEXT(to), SQL_TEXT(reason), SQL_TEXT(by)));
        if (r < 0)
                return r;
        return stmt_exec(s, STMT_TRIM_JOB_EVENTS, SQL_ARGS(SQL_INT(job_id), SQL_INT(keep)));
}

void store_job_events_free(StoreJobEvent *e, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(e[i].event);
                free(e[i].from);
                free(e[i].to);
                free(e[i].reason);
                free(e[i].by);
        }
        free(e);
}

static int column_strdup(sqlite3_stmt *st, int col, char **ret) {
        const char *t = (const char *) sqlite3_column_text(st, col);

        *ret = NULL;
        if (t && !(*ret = strdup(t)))
                return -ENOMEM;
        return 0;
}

int store_load_job_events(Store *s, uint64_t job_id, unsigned max, StoreJobEvent **ret, size_t *ret_n) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        StoreJobEvent *rows = new0(StoreJobEvent, MAX(max, 1U)); /* the statement's LIMIT */
        size_t n = 0;
        int r;

        if (!rows)
                return -ENOMEM;
        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_JOB_EVENTS, SQL_ARGS(SQL_INT(job_id), SQL_INT(max))) {
                StoreJobEvent *e = &rows[n++];

                e->run = (uint32_t) sqlite3_column_int64(st, 0);
                e->time = (uint64_t) MAX(sqlite3_column_int64(st, 1), 0);
                if ((r = column_strdup(st, 2, &e->event)) < 0 || (r = column_strdup(st, 3, &e->from)) < 0 ||
                    (r = column_strdup(st, 4, &e->to)) < 0 || (r = column_strdup(st, 5, &e->reason)) < 0 ||
                    (r = column_strdup(st, 6, &e->by)) < 0 || n == max)
                        break;
        }
        if (r < 0) {
                store_job_events_free(rows, n);
                return r;
        }
        *ret = rows;
        *ret_n = n;
        return 0;
}

int store_load_job_runs(Store *s, uint64_t job_id, unsigned max, StoreJobRun **ret, size_t *ret_n) {
        _cleanup_(stmt_resetp) sqlite3_stmt *st = NULL;
        _cleanup_free_ StoreJobRun *rows = new0(StoreJobRun, MAX(max, 1U)); /* the statement's LIMIT */
        size_t n = 0;
        int r;

        if (!rows)
                return -ENOMEM;
        STMT_FOREACH_ROW(s, st, r, STMT_LOAD_JOB_RUNS, SQL_ARGS(SQL_INT(job_id), SQL_INT(max))) {
                rows[n++] = (StoreJobRun) {
                        .run = (uint32_t) sqlite3_column_int64(st, 0),
                        .start_time = (uint64_t) MAX(sqlite3_column_int64(st, 1), 0),
                        .end_time = (uint64_t) MAX(sqlite3_column_int64(st, 2), 0),
                };
                if (n == max)
                        break;
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(rows);
        *ret_n = n;
        return 0;
}
