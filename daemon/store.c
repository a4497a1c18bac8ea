/* SPDX-License-Identifier: GPL-2.0-or-later */
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

typedef enum Ctl {
        CTL_BEGIN,
        CTL_COMMIT,
        CTL_SAVEPOINT,
        CTL_RELEASE,
        CTL_ROLLBACK_TO,
        CTL_SET_META,
        _CTL_MAX,
} Ctl;

static const char *const ctl_sql[_CTL_MAX] = {
        [CTL_BEGIN] = "BEGIN IMMEDIATE",
        [CTL_COMMIT] = "COMMIT",
        [CTL_SAVEPOINT] = "SAVEPOINT corral_sp",
        [CTL_RELEASE] = "RELEASE corral_sp",
        [CTL_ROLLBACK_TO] = "ROLLBACK TO corral_sp",
        [CTL_SET_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
};

struct Store {
        sqlite3 *db;
        sqlite3_stmt *insert, *update;
        bool in_txn;
        /* The open transaction lacks a change memory already has (store_fail()): it is
         * rolled back instead of committed. */
        int txn_error;
        uint64_t n_commits; /* transactions committed since the store was opened */
        /* Accounting's statements, prepared on first use: one job end costs two
         * statements, whatever the history. */
        sqlite3_stmt *charge_insert, *daily_upsert, *decayed_upsert, *grant_upsert;
        /* The transaction's own statements and the meta row every submission writes,
         * prepared once: parsed again each time they were a fifth of a submission's
         * CPU (perf, bench-memory). */
        sqlite3_stmt *ctl[_CTL_MAX];
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

static int exec_sql(Store *s, const char *sql) {
        return sqlite_to_errno(sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

static int prepare_once(Store *s, sqlite3_stmt **st, const char *sql) {
        if (*st)
                return 0;
        return sqlite_to_errno(sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL));
}

/* Runs one of the prepared control statements (binding the two texts, where it has
 * parameters) and resets it, so that it holds no lock between uses. */
static int run_ctl(Store *s, Ctl k, const char *a, const char *b) {
        sqlite3_stmt *st;
        int rc = prepare_once(s, &s->ctl[k], ctl_sql[k]);

        if (rc < 0)
                return rc;
        st = s->ctl[k];
        if (a)
                sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
        if (b)
                sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : sqlite_to_errno(rc);
}

static int prepare(Store *s, const char *sql, sqlite3_stmt **ret) {
        return sqlite_to_errno(sqlite3_prepare_v2(s->db, sql, -1, ret, NULL));
}

/* The end of a walk over st's rows, stopped by sqlite3_step()'s rc (SQLITE_DONE: every row
 * was read) or by the caller's r < 0: finalizes st and returns r, or SQLite's error. */
static int rows_end(sqlite3_stmt *st, int rc, int r) {
        if (r == 0 && rc != SQLITE_DONE)
                r = sqlite_to_errno(rc) ?: -EIO;
        sqlite3_finalize(st);
        return r;
}

/* The first column of sql's one row. */
static int query_int(Store *s, const char *sql, int64_t *ret) {
        sqlite3_stmt *st;
        int rc, r = prepare(s, sql, &st);

        if (r < 0)
                return r;
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return rows_end(st, rc == SQLITE_DONE ? SQLITE_ERROR : rc, 0);
        *ret = sqlite3_column_int64(st, 0);
        return rows_end(st, SQLITE_DONE, 0);
}

int store_schema_version(Store *s) {
        int64_t v = 0;
        int r = query_int(s, "PRAGMA user_version", &v);

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
                if ((r = exec_sql(s, "BEGIN IMMEDIATE")) < 0)
                        return r;
                snprintf(pragma, sizeof pragma, "PRAGMA user_version = %zu", i + 1);
                if ((r = exec_sql(s, migrations[i])) < 0 || (r = exec_sql(s, pragma)) < 0) {
                        (void) exec_sql(s, "ROLLBACK");
                        return r;
                }
                if ((r = exec_sql(s, "COMMIT")) < 0)
                        return r;
        }
        return 0;
}

static const char update_sql[] =
        "UPDATE jobs SET state=?2, reason=?3, rerunnable=?4, held_by_admin=?5, requeue_count=?6,"
        " eligible_time=?7, start_time=?8, end_time=?9, suspended_usec=?10, suspend_start=?11,"
        " exit_code=?12, exit_signal=?13, alloc_cpus=?14, alloc_mem=?15, usage_cpu_usec=?16,"
        " usage_memory_peak=?17, usage_io_read=?18, usage_io_write=?19, usage_tasks_peak=?20,"
        " queue=?21, suspended_by_admin=?22, launch_error=?23, preempted_by=?24, alloc_gpus=?34 WHERE id=?1";
static const char insert_sql[] =
        "INSERT INTO jobs (id, state, reason, rerunnable, held_by_admin, requeue_count, eligible_time,"
        " start_time, end_time, suspended_usec, suspend_start, exit_code, exit_signal, alloc_cpus,"
        " alloc_mem, usage_cpu_usec, usage_memory_peak, usage_io_read, usage_io_write,"
        " usage_tasks_peak, queue, suspended_by_admin, launch_error, preempted_by, uid, gid, user, project,"
        " request, array_job_id, array_task_id, submit_time, request_id, alloc_gpus) VALUES (?1, ?2, ?3, ?4,"
        " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25,"
        " ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)";

int store_open(const char *dir, Store **ret) {
        _cleanup_(store_closep) Store *s = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (asprintf(&path, "%s/corral.db", dir) < 0)
                return -ENOMEM;
        s = new0(Store, 1);
        if (!s)
                return -ENOMEM;
        s->wal_fd = -EBADF;
        s->dir = strdup(dir);
        if (!s->dir)
                return -ENOMEM;
        r = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
        if (r != SQLITE_OK)
                return sqlite_to_errno(r);
        /* WAL with synchronous=NORMAL: a commit is written to the WAL, not synced; it
         * survives power loss once a sync of the WAL that began after it has returned
         * (store_sync(), or store_sync_fd() on a worker thread), which is what SQLite's
         * FULL does at every commit. Done apart, the sync of one group of commits can run
         * while the loop handles the next group's requests. A checkpoint syncs the WAL
         * before it copies frames into the database, in either mode. */
        /* First, so that a reader recovering the WAL after a crash (corrald killed, a
         * sqlite3 shell) makes us wait instead of failing the start-up with EBUSY. */
        (void) sqlite3_busy_timeout(s->db, 5000);
        if ((r = exec_sql(s, "PRAGMA journal_mode=WAL")) < 0 || (r = exec_sql(s, "PRAGMA synchronous=NORMAL")) < 0 ||
            (r = exec_sql(s, "PRAGMA foreign_keys=ON")) < 0)
                return r;
        if ((r = migrate(s)) < 0)
                return r;
        if ((r = sqlite_to_errno(sqlite3_prepare_v2(s->db, insert_sql, -1, &s->insert, NULL))) < 0 ||
            (r = sqlite_to_errno(sqlite3_prepare_v2(s->db, update_sql, -1, &s->update, NULL))) < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int store_open_reader(const char *dir, Store **ret) {
        _cleanup_(store_closep) Store *s = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "%s/corral.db", dir) < 0)
                return -ENOMEM;
        s = new0(Store, 1);
        if (!s)
                return -ENOMEM;
        s->wal_fd = -EBADF;
        r = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (r != SQLITE_OK)
                return sqlite_to_errno(r);
        /* A checkpoint or recovery by the writer may hold the WAL index briefly. */
        (void) sqlite3_busy_timeout(s->db, 5000);
        *ret = TAKE_PTR(s);
        return 0;
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
        sqlite3_finalize(s->insert);
        sqlite3_finalize(s->update);
        sqlite3_finalize(s->charge_insert);
        sqlite3_finalize(s->daily_upsert);
        sqlite3_finalize(s->decayed_upsert);
        sqlite3_finalize(s->grant_upsert);
        for (Ctl k = 0; k < _CTL_MAX; k++)
                sqlite3_finalize(s->ctl[k]);
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
        if ((r = query_int(s, "PRAGMA page_size", &page_size)) < 0 ||
            (r = query_int(s, "PRAGMA wal_autocheckpoint", &pages)) < 0)
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
        r = run_ctl(s, CTL_BEGIN, NULL, NULL);
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
                (void) exec_sql(s, "ROLLBACK");
                s->in_txn = false;
                s->txn_error = 0;
                return r;
        }
        r = run_ctl(s, CTL_COMMIT, NULL, NULL);
        if (r < 0)
                return r;
        s->in_txn = false;
        s->n_commits++;
        return 0;
}

int store_savepoint(Store *s) {
        int r = begin(s);
        return r < 0 ? r : run_ctl(s, CTL_SAVEPOINT, NULL, NULL);
}

int store_release(Store *s) {
        return run_ctl(s, CTL_RELEASE, NULL, NULL);
}

int store_rollback(Store *s) {
        int r = run_ctl(s, CTL_ROLLBACK_TO, NULL, NULL);
        return r < 0 ? r : run_ctl(s, CTL_RELEASE, NULL, NULL);
}

static int bind_text(sqlite3_stmt *st, int i, const char *v) {
        return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
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


/* A GPU an allocation holds by the name it had when the allocation was stored, not by
 * identity: rows written before schema 7 hold names by position ("gpu3"), and a card that
 * is not there when they are rewritten keeps its name ("name:gpu3") until it is back.
 * Device names have no ':', identities do not start with this. */
#define GPU_BY_NAME "name:"

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
        _cleanup_free_ char *flag = NULL;
        sqlite3_stmt *sel = NULL, *upd = NULL;
        bool pending = false;
        int r, rc;

        r = store_get_meta(s, "gpus_by_name", &flag);
        if (r <= 0)
                return r;
        if ((r = begin(s)) < 0)
                return r;
        if (streq(flag, "1")) {
                r = exec_sql(s, "UPDATE jobs SET alloc_gpus = '" GPU_BY_NAME "' ||"
                                "  replace(alloc_gpus, ',', '," GPU_BY_NAME "')"
                                " WHERE alloc_gpus IS NOT NULL AND alloc_gpus != ''");
                if (r >= 0)
                        r = store_set_meta(s, "gpus_by_name", "name");
                if (r < 0)
                        goto finish;
        }
        /* No GPU found (yet): no name can be resolved. */
        if (s->n_gpus == 0)
                return 0;
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, state, alloc_gpus FROM jobs WHERE alloc_gpus LIKE '%" GPU_BY_NAME "%'", -1,
                                &sel, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(s->db, "UPDATE jobs SET alloc_gpus=?2 WHERE id=?1", -1, &upd, NULL);
        r = sqlite_to_errno(rc);
        while (r >= 0 && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
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
                if (!changed)
                        continue;
                sqlite3_bind_int64(upd, 1, sqlite3_column_int64(sel, 0));
                bind_text(upd, 2, text);
                rc = sqlite3_step(upd);
                sqlite3_reset(upd);
                if (rc != SQLITE_DONE)
                        r = sqlite_to_errno(rc);
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sqlite_to_errno(rc);
        sqlite3_finalize(sel);
        sqlite3_finalize(upd);
        if (r >= 0 && !pending)
                r = store_delete_meta(s, "gpus_by_name");
finish:
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_set_gpus(Store *s, const DeviceSet *devices) {
        StoreGpu *v = new0(StoreGpu, devices->n_devices + 1);
        sqlite3_stmt *ins = NULL;
        int r, rc;

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
        r = exec_sql(s, "DELETE FROM gpus");
        if (r >= 0)
                r = sqlite_to_errno(sqlite3_prepare_v2(s->db, "INSERT INTO gpus (idx, uuid, pci_address, vendor, name)"
                                                       " VALUES (?1, ?2, ?3, ?4, ?5)", -1, &ins, NULL));
        for (size_t g = 0; r >= 0 && g < s->n_gpus; g++) {
                sqlite3_bind_int64(ins, 1, (sqlite3_int64) g);
                bind_text(ins, 2, v[g].uuid);
                bind_text(ins, 3, v[g].pci_address);
                bind_text(ins, 4, device_vendor_to_string(v[g].vendor));
                bind_text(ins, 5, v[g].auto_name ? NULL : v[g].name);
                rc = sqlite3_step(ins);
                sqlite3_reset(ins);
                if (rc != SQLITE_DONE)
                        r = sqlite_to_errno(rc);
        }
        sqlite3_finalize(ins);
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_load_gpus(Store *s, DeviceSet **ret) {
        _cleanup_(device_set_freep) DeviceSet *set = new0(DeviceSet, 1);
        sqlite3_stmt *st = NULL;
        int rc, r;

        if (!set)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(s->db, "SELECT idx, uuid, pci_address, vendor, name FROM gpus ORDER BY idx", -1, &st,
                                NULL);
        r = sqlite_to_errno(rc);
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t idx = sqlite3_column_int64(st, 0);
                const char *vendor = (const char *) sqlite3_column_text(st, 3);
                Device *n;

                if (idx < 0 || idx >= SCHED_GPUS_MAX || (size_t) idx < set->n_devices) {
                        r = -EBADMSG;
                        break;
                }
                n = reallocarray(set->devices, (size_t) idx + 1, sizeof *n);
                if (!n) {
                        r = -ENOMEM;
                        break;
                }
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
                        r = -ENOMEM;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = sqlite_to_errno(rc);
        sqlite3_finalize(st);
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

static int bind_mutable(Store *s, sqlite3_stmt *st, const Job *j) {
        _cleanup_free_ char *cpus = NULL, *mem = NULL, *gpus = NULL;
        const JobRun *run = job_run(j);
        int rc = 0;

        if (j->alloc && (!(cpus = cpu_set_format(&j->alloc->cpus)) || !(mem = format_alloc_mem(j->alloc))))
                return -ENOMEM;
        if (format_alloc_gpus(s, j->alloc, &gpus) < 0)
                return -ENOMEM;
        rc |= bind_text(st, 34, gpus);
        rc |= sqlite3_bind_int64(st, 1, (sqlite3_int64) j->id);
        rc |= bind_text(st, 2, job_state_to_string(j->state));
        rc |= bind_text(st, 3, j->reason);
        rc |= sqlite3_bind_int(st, 4, j->rerunnable);
        rc |= sqlite3_bind_int(st, 5, j->held_by_admin);
        rc |= sqlite3_bind_int64(st, 6, j->requeue_count);
        rc |= sqlite3_bind_int64(st, 7, (sqlite3_int64) j->eligible_time);
        rc |= sqlite3_bind_int64(st, 8, (sqlite3_int64) j->start_time);
        rc |= sqlite3_bind_int64(st, 9, (sqlite3_int64) j->end_time);
        rc |= sqlite3_bind_int64(st, 10, (sqlite3_int64) run->suspended_usec);
        rc |= sqlite3_bind_int64(st, 11, (sqlite3_int64) run->suspend_start);
        rc |= sqlite3_bind_int(st, 12, run->exit_code);
        rc |= sqlite3_bind_int(st, 13, run->exit_signal);
        rc |= bind_text(st, 14, cpus);
        rc |= bind_text(st, 15, mem);
        rc |= sqlite3_bind_int64(st, 16, (sqlite3_int64) run->usage.cpu_usec);
        rc |= sqlite3_bind_int64(st, 17, (sqlite3_int64) run->usage.memory_peak);
        rc |= sqlite3_bind_int64(st, 18, (sqlite3_int64) run->usage.io_read_bytes);
        rc |= sqlite3_bind_int64(st, 19, (sqlite3_int64) run->usage.io_write_bytes);
        rc |= sqlite3_bind_int64(st, 20, (sqlite3_int64) run->usage.tasks_peak);
        rc |= bind_text(st, 21, j->queue);
        /* Who holds it suspended, as bits: an admin (1), a pass (2), a person too (4). */
        rc |= sqlite3_bind_int(st, 22, (j->suspended_by_admin ? 1 : 0) | (j->suspended_by_sched ? 2 : 0) |
                                               (j->suspended_by_person ? 4 : 0));
        rc |= bind_text(st, 23, run->launch_error);
        rc |= sqlite3_bind_int64(st, 24, (sqlite3_int64) run->preempted_by);
        return rc ? -EIO : 0;
}

static int step_done(Store *s, sqlite3_stmt *st) {
        int rc = sqlite3_step(st);
        (void) sqlite3_reset(st);
        (void) sqlite3_clear_bindings(st);
        return rc == SQLITE_DONE ? 0 : sqlite_to_errno(rc) ?: -EIO;
}

/* The end of every write: a failed bind (rc) leaves the statement reset and fails. */
static int step_bound(Store *s, sqlite3_stmt *st, int rc) {
        if (rc) {
                (void) sqlite3_reset(st);
                return -EIO;
        }
        return step_done(s, st);
}

int store_insert_job(Store *s, const Job *j, size_t *ret_request_bytes) {
        _cleanup_free_ char *request = NULL;
        size_t bytes = 0;
        int r, rc = 0;

        if (j->request_id == 0 || j->request_id == j->id) {
                json_object *o = NULL;
                if (!j->submitted)
                        return -EINVAL; /* memory keeps only part of it (job.h) */
                r = submit_request_to_json(j->submitted, &o);
                if (r < 0)
                        return r;
                request = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
                json_object_put(o);
                if (!request)
                        return -ENOMEM;
                bytes = strlen(request);
        }
        if ((r = begin(s)) < 0)
                return r;
        r = bind_mutable(s, s->insert, j);
        if (r < 0) {
                (void) sqlite3_reset(s->insert);
                return r;
        }
        rc |= sqlite3_bind_int64(s->insert, 25, j->uid);
        rc |= sqlite3_bind_int64(s->insert, 26, j->gid);
        rc |= bind_text(s->insert, 27, j->user);
        rc |= bind_text(s->insert, 28, j->project);
        rc |= bind_text(s->insert, 29, request ?: "");
        rc |= sqlite3_bind_int64(s->insert, 30, (sqlite3_int64) j->array_job_id);
        rc |= sqlite3_bind_int64(s->insert, 31, j->array_task_id);
        rc |= sqlite3_bind_int64(s->insert, 32, (sqlite3_int64) j->submit_time);
        rc |= sqlite3_bind_int64(s->insert, 33, (sqlite3_int64) (request ? 0 : j->request_id));
        if (rc) {
                (void) sqlite3_reset(s->insert);
                return -EIO;
        }
        r = step_done(s, s->insert);
        if (r >= 0 && ret_request_bytes)
                *ret_request_bytes = bytes;
        return r;
}

int store_update_job(Store *s, const Job *j) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        r = bind_mutable(s, s->update, j);
        if (r < 0) {
                (void) sqlite3_reset(s->update);
                return r;
        }
        return step_done(s, s->update);
}

static char *col_strdup(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);
        return t ? strdup((const char *) t) : NULL;
}

/* A job row's columns, in the order load_jobs() reads them; the request and its
 * request_id as given (the stored ones, or an array task's resolved). */
#define JOB_COLUMNS(request, request_id)                                                                 \
        "j.id, j.uid, j.gid, j.user, j.project, j.queue, j.state, j.reason, " request ", j.rerunnable,"  \
        " j.held_by_admin, j.requeue_count, j.array_job_id, j.array_task_id, j.submit_time,"             \
        " j.eligible_time, j.start_time, j.end_time, j.suspended_usec, j.suspend_start, j.exit_code,"    \
        " j.exit_signal, j.alloc_cpus, j.alloc_mem, j.usage_cpu_usec, j.usage_memory_peak,"              \
        " j.usage_io_read, j.usage_io_write, j.usage_tasks_peak, " request_id ", j.suspended_by_admin,"  \
        " j.launch_error, j.preempted_by, j.alloc_gpus"

static int load_jobs(Store *s, sqlite3_stmt *st, int (*cb)(Job *j, void *userdata), void *userdata);

int store_load_jobs(Store *s, int (*cb)(Job *j, void *userdata), void *userdata) {
        static const char sql[] =
                "SELECT " JOB_COLUMNS("j.request", "j.request_id") " FROM jobs j ORDER BY j.id";
        sqlite3_stmt *st;
        int r;

        r = prepare(s, sql, &st);
        if (r < 0)
                return r;
        return load_jobs(s, st, cb, userdata);
}

int store_load_jobs_after(Store *s, uint64_t after_id, uint64_t ended_since, unsigned limit,
                          int (*cb)(Job *j, void *userdata), void *userdata) {
        /* A page may start inside an array: each task reads its first task's request itself. */
        static const char sql[] =
                "SELECT " JOB_COLUMNS("CASE WHEN j.request_id = 0 THEN j.request"
                                      " ELSE (SELECT r.request FROM jobs r WHERE r.id = j.request_id) END", "0")
                " FROM jobs j WHERE j.id > ?1 AND (j.end_time = 0 OR j.end_time >= ?2) ORDER BY j.id LIMIT ?3";
        sqlite3_stmt *st;
        int r;

        r = prepare(s, sql, &st);
        if (r < 0)
                return r;
        if (sqlite3_bind_int64(st, 1, (sqlite3_int64) MIN(after_id, (uint64_t) INT64_MAX)) != SQLITE_OK ||
            sqlite3_bind_int64(st, 2, (sqlite3_int64) MIN(ended_since, (uint64_t) INT64_MAX)) != SQLITE_OK ||
            sqlite3_bind_int64(st, 3, limit) != SQLITE_OK) {
                sqlite3_finalize(st);
                return -EIO;
        }
        return load_jobs(s, st, cb, userdata);
}

/* Takes st (finalized here). */
static int load_jobs(Store *s, sqlite3_stmt *st, int (*cb)(Job *j, void *userdata), void *userdata) {
        /* Array tasks refer to their first task's request, which comes first in id order:
         * it is parsed once and copied, not parsed again per task. */
        _cleanup_(submit_request_done) SubmitRequest shared = SUBMIT_REQUEST_INIT;
        uint64_t shared_id = 0;
        size_t shared_bytes = 0;
        int rc, r = 0;

        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                _cleanup_(job_freep) Job *j = job_new();
                _cleanup_free_ char *state = NULL, *cpus = NULL, *mem = NULL;
                JobRun run = job_run_none;
                const char *request;
                json_object *o;

                if (!j) {
                        r = -ENOMEM;
                        break;
                }
                j->id = (uint64_t) sqlite3_column_int64(st, 0);
                j->uid = (uid_t) sqlite3_column_int64(st, 1);
                j->gid = (gid_t) sqlite3_column_int64(st, 2);
                j->user = intern((const char *) sqlite3_column_text(st, 3));
                j->project = intern((const char *) sqlite3_column_text(st, 4));
                j->queue = intern((const char *) sqlite3_column_text(st, 5));
                state = col_strdup(st, 6);
                j->reason = intern((const char *) sqlite3_column_text(st, 7));
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
                j->request_id = (uint64_t) sqlite3_column_int64(st, 29);
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
                        j->alloc = new0(SchedAllocation, 1);
                        if (!j->alloc) {
                                r = -ENOMEM;
                                break;
                        }
                        if (cpu_set_parse(cpus, &j->alloc->cpus) < 0 || (mem && parse_alloc_mem(mem, j->alloc) < 0)) {
                                r = -EBADMSG;
                                break;
                        }
                        parse_alloc_gpus(s, j->id, (const char *) sqlite3_column_text(st, 33),
                                         job_state_is_active(j->state), j->alloc);
                }
                if (j->request_id != 0) {
                        if (j->request_id != shared_id) {
                                r = -EBADMSG; /* its array's first task is missing */
                                break;
                        }
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
                r = cb(TAKE_PTR(j), userdata);
                if (r < 0)
                        break;
        }
        return rows_end(st, rc, r);
}

int store_get_meta(Store *s, const char *key, char **ret) {
        sqlite3_stmt *st;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key=?1", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *ret = col_strdup(st, 0);
                r = *ret ? 1 : -ENOMEM;
        } else if (rc == SQLITE_DONE)
                *ret = NULL;
        else
                r = sqlite_to_errno(rc);
        sqlite3_finalize(st);
        return r;
}

int store_set_meta(Store *s, const char *key, const char *value) {
        int r;

        if ((r = begin(s)) < 0)
                return r;
        return run_ctl(s, CTL_SET_META, key, value);
}

int store_delete_meta(Store *s, const char *key) {
        sqlite3_stmt *st;
        int rc, r;

        if ((r = begin(s)) < 0)
                return r;
        rc = sqlite3_prepare_v2(s->db, "DELETE FROM meta WHERE key = ?1", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : sqlite_to_errno(rc);
}

int store_next_job_id(Store *s, uint64_t *ret) {
        _cleanup_free_ char *v = NULL;
        int64_t max = 0;
        uint64_t meta = 0;
        int r;

        r = query_int(s, "SELECT MAX(id) FROM jobs", &max);
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
        sqlite3_stmt *st;
        json_object *o = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT CASE WHEN j.request_id = 0 THEN j.request"
                                " ELSE (SELECT r.request FROM jobs r WHERE r.id = j.request_id) END"
                                " FROM jobs j WHERE j.id=?1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_int64(st, 1, (sqlite3_int64) id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
                o = json_tokener_parse((const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (!o)
                return rc == SQLITE_ROW ? -EBADMSG : sqlite_to_errno(rc);
        r = submit_request_decode(o, SUBMIT_REQUEST_STORED, ret, NULL);
        json_object_put(o);
        return r;
}

/* ---- accounting (migration 3) ---- */


int store_record_charge(Store *s, const JobCharge *c) {
        static const char charge_sql[] =
                "INSERT INTO job_usage (job_id, run, uid, user, project, queue, start_time, end_time, cpus,"
                " run_usec, charge_factor, service_units, cpu_usec, memory_peak, io_read_bytes, io_write_bytes,"
                " io_read_ops, io_write_ops, has_pressure, cpu_some, cpu_full, memory_some, memory_full, io_some,"
                " io_full, gpus, gpu_usec, charge_per_gpu_hour) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                " ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)";
        static const char daily_sql[] =
                "INSERT INTO usage_daily (day, project, uid, user, queue, jobs, core_usec, service_units, cpu_usec,"
                " memory_peak, io_read_bytes, io_write_bytes, io_ops, cpu_some, cpu_full, memory_some, memory_full,"
                " io_some, io_full, gpu_usec) VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
                " ?15, ?16, ?17, ?18, ?19)"
                " ON CONFLICT (day, project, uid, queue) DO UPDATE SET jobs = jobs + 1,"
                " core_usec = core_usec + excluded.core_usec, gpu_usec = gpu_usec + excluded.gpu_usec, service_units = service_units + excluded.service_units,"
                " cpu_usec = cpu_usec + excluded.cpu_usec, memory_peak = MAX(memory_peak, excluded.memory_peak),"
                " io_read_bytes = io_read_bytes + excluded.io_read_bytes,"
                " io_write_bytes = io_write_bytes + excluded.io_write_bytes, io_ops = io_ops + excluded.io_ops,"
                " cpu_some = cpu_some + excluded.cpu_some, cpu_full = cpu_full + excluded.cpu_full,"
                " memory_some = memory_some + excluded.memory_some, memory_full = memory_full + excluded.memory_full,"
                " io_some = io_some + excluded.io_some, io_full = io_full + excluded.io_full";
        const char *project = c->project ?: "", *user = c->user ?: "", *queue = c->queue ?: "";
        UsageTotals t;
        char day[16];
        int r, rc = 0;

        if ((r = begin(s)) < 0 || (r = prepare_once(s, &s->charge_insert, charge_sql)) < 0 ||
            (r = prepare_once(s, &s->daily_upsert, daily_sql)) < 0)
                return r;
        usage_totals_from_charge(&t, c);

        rc |= sqlite3_bind_int64(s->charge_insert, 1, (sqlite3_int64) c->job_id);
        rc |= sqlite3_bind_int64(s->charge_insert, 2, c->run);
        rc |= sqlite3_bind_int64(s->charge_insert, 3, c->uid);
        rc |= bind_text(s->charge_insert, 4, user);
        rc |= bind_text(s->charge_insert, 5, project);
        rc |= bind_text(s->charge_insert, 6, queue);
        rc |= sqlite3_bind_int64(s->charge_insert, 7, (sqlite3_int64) c->start_time);
        rc |= sqlite3_bind_int64(s->charge_insert, 8, (sqlite3_int64) c->end_time);
        rc |= sqlite3_bind_int64(s->charge_insert, 9, c->cpus);
        rc |= sqlite3_bind_int64(s->charge_insert, 10, (sqlite3_int64) c->run_usec);
        rc |= sqlite3_bind_double(s->charge_insert, 11, c->charge_factor);
        rc |= sqlite3_bind_double(s->charge_insert, 12, c->service_units);
        rc |= sqlite3_bind_int64(s->charge_insert, 13, (sqlite3_int64) c->cpu_usec);
        rc |= sqlite3_bind_int64(s->charge_insert, 14, (sqlite3_int64) c->memory_peak);
        rc |= sqlite3_bind_int64(s->charge_insert, 15, (sqlite3_int64) c->io_read_bytes);
        rc |= sqlite3_bind_int64(s->charge_insert, 16, (sqlite3_int64) c->io_write_bytes);
        rc |= sqlite3_bind_int64(s->charge_insert, 17, (sqlite3_int64) c->io_read_ops);
        rc |= sqlite3_bind_int64(s->charge_insert, 18, (sqlite3_int64) c->io_write_ops);
        rc |= sqlite3_bind_int(s->charge_insert, 19, c->has_pressure);
        for (int i = 0; i < _ACCT_STALL_MAX; i++)
                rc |= sqlite3_bind_int64(s->charge_insert, 20 + i, (sqlite3_int64) c->stall_usec[i]);
        rc |= sqlite3_bind_int64(s->charge_insert, 26, c->gpus);
        rc |= sqlite3_bind_int64(s->charge_insert, 27, (sqlite3_int64) t.gpu_usec);
        rc |= sqlite3_bind_double(s->charge_insert, 28, c->charge_per_gpu_hour);
        if (rc) {
                (void) sqlite3_reset(s->charge_insert);
                return -EIO;
        }
        /* A run is charged once: seen again (an outcome read twice), nothing is added. */
        r = step_done(s, s->charge_insert);
        if (r < 0)
                return r;
        /* From here on a failure leaves the charge without its day's summary. */

        rc |= bind_text(s->daily_upsert, 1, acct_day(day, sizeof day, c->end_time));
        rc |= bind_text(s->daily_upsert, 2, project);
        rc |= sqlite3_bind_int64(s->daily_upsert, 3, c->uid);
        rc |= bind_text(s->daily_upsert, 4, user);
        rc |= bind_text(s->daily_upsert, 5, queue);
        rc |= sqlite3_bind_int64(s->daily_upsert, 6, (sqlite3_int64) t.core_usec);
        rc |= sqlite3_bind_double(s->daily_upsert, 7, t.service_units);
        rc |= sqlite3_bind_int64(s->daily_upsert, 8, (sqlite3_int64) t.cpu_usec);
        rc |= sqlite3_bind_int64(s->daily_upsert, 9, (sqlite3_int64) t.memory_peak);
        rc |= sqlite3_bind_int64(s->daily_upsert, 10, (sqlite3_int64) t.io_read_bytes);
        rc |= sqlite3_bind_int64(s->daily_upsert, 11, (sqlite3_int64) t.io_write_bytes);
        rc |= sqlite3_bind_int64(s->daily_upsert, 12, (sqlite3_int64) t.io_ops);
        for (int i = 0; i < _ACCT_STALL_MAX; i++)
                rc |= sqlite3_bind_int64(s->daily_upsert, 13 + i, (sqlite3_int64) t.stall_usec[i]);
        rc |= sqlite3_bind_int64(s->daily_upsert, 19, (sqlite3_int64) t.gpu_usec);
        r = step_bound(s, s->daily_upsert, rc);
        if (r < 0)
                store_fail(s, r);
        return r;
}

int store_load_charge(Store *s, uint64_t job_id, JobCharge *ret) {
        sqlite3_stmt *st;
        int rc;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT run, uid, start_time, end_time, cpus, run_usec, charge_factor, service_units,"
                                " cpu_usec, memory_peak, io_read_bytes, io_write_bytes, io_read_ops, io_write_ops,"
                                " has_pressure, cpu_some, cpu_full, memory_some, memory_full, io_some, io_full,"
                                " gpus, charge_per_gpu_hour"
                                " FROM job_usage WHERE job_id=?1 ORDER BY run DESC LIMIT 1",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return sqlite_to_errno(rc);
        sqlite3_bind_int64(st, 1, (sqlite3_int64) job_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
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
        }
        sqlite3_finalize(st);
        return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sqlite_to_errno(rc) ?: -EIO;
}

int store_save_decayed(Store *s, StoreUsageKind kind, const char *name, const AcctDecayed *d) {
        int r, rc = 0;

        if ((r = begin(s)) < 0 ||
            (r = prepare_once(s, &s->decayed_upsert,
                              "INSERT OR REPLACE INTO usage_decayed (kind, name, value, stamp) VALUES (?1, ?2, ?3, ?4)")) < 0)
                return r;
        rc |= sqlite3_bind_int(s->decayed_upsert, 1, (int) kind);
        rc |= bind_text(s->decayed_upsert, 2, name ?: "");
        rc |= sqlite3_bind_double(s->decayed_upsert, 3, d->value);
        rc |= sqlite3_bind_int64(s->decayed_upsert, 4, (sqlite3_int64) d->stamp);
        return step_bound(s, s->decayed_upsert, rc);
}

int store_load_decayed(Store *s, store_decayed_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int rc, r;

        r = prepare(s, "SELECT kind, name, value, stamp FROM usage_decayed", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                AcctDecayed d = { .value = sqlite3_column_double(st, 2),
                                  .stamp = (uint64_t) sqlite3_column_int64(st, 3) };
                const char *name = (const char *) sqlite3_column_text(st, 1);
                r = cb((StoreUsageKind) sqlite3_column_int(st, 0), name ?: "", &d, userdata);
                if (r < 0)
                        break;
        }
        return rows_end(st, rc, r);
}

int store_save_grant(Store *s, const char *project, uint64_t period_begin, double service_units) {
        int r, rc = 0;

        if ((r = begin(s)) < 0 ||
            (r = prepare_once(s, &s->grant_upsert,
                              "INSERT OR REPLACE INTO grant_usage (project, period_begin, service_units)"
                              " VALUES (?1, ?2, ?3)")) < 0)
                return r;
        rc |= bind_text(s->grant_upsert, 1, project);
        rc |= sqlite3_bind_int64(s->grant_upsert, 2, (sqlite3_int64) period_begin);
        rc |= sqlite3_bind_double(s->grant_upsert, 3, service_units);
        return step_bound(s, s->grant_upsert, rc);
}

int store_load_grants(Store *s, store_grant_cb cb, void *userdata) {
        sqlite3_stmt *st;
        int rc, r;

        r = prepare(s, "SELECT project, period_begin, service_units FROM grant_usage", &st);
        if (r < 0)
                return r;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *project = (const char *) sqlite3_column_text(st, 0);
                r = cb(project ?: "", (uint64_t) sqlite3_column_int64(st, 1), sqlite3_column_double(st, 2), userdata);
                if (r < 0)
                        break;
        }
        return rows_end(st, rc, r);
}

static const char *usage_key_column(StoreUsageBy by) {
        switch (by) {
        case STORE_USAGE_BY_USER:
                return "user";
        case STORE_USAGE_BY_PROJECT:
                return "project";
        case STORE_USAGE_BY_QUEUE:
                return "queue";
        case STORE_USAGE_BY_DAY:
                return "day";
        default:
                return NULL;
        }
}

int store_usage_rows(Store *s, const StoreUsageQuery *q, store_usage_cb cb, void *userdata) {
        _cleanup_free_ char *sql = NULL;
        const char *key = usage_key_column(q->by);
        sqlite3_stmt *st;
        int rc, r;

        if (!key)
                return -EINVAL;
        /* Grouped by the key and by who (project, uid), so that the caller can decide
         * what each reader may see before rows merge; in key order, so rows of one key
         * come together. The per-day table is all this reads: never the runs. */
        if (asprintf(&sql,
                     "SELECT %s, project, uid, MIN(user), SUM(jobs), SUM(core_usec), SUM(service_units),"
                     " SUM(cpu_usec), MAX(memory_peak), SUM(io_read_bytes), SUM(io_write_bytes), SUM(io_ops),"
                     " SUM(cpu_some), SUM(cpu_full), SUM(memory_some), SUM(memory_full), SUM(io_some), SUM(io_full),"
                     " SUM(gpu_usec)"
                     " FROM usage_daily WHERE day >= ?1 AND day <= ?2"
                     " AND (?3 IS NULL OR user = ?3) AND (?4 IS NULL OR project = ?4) AND (?5 IS NULL OR queue = ?5)"
                     " GROUP BY 1, project, uid ORDER BY 1",
                     key) < 0)
                return -ENOMEM;
        r = prepare(s, sql, &st);
        if (r < 0)
                return r;
        (void) bind_text(st, 1, q->since ?: "0000-00-00");
        (void) bind_text(st, 2, q->until ?: "9999-99-99");
        (void) bind_text(st, 3, q->user);
        (void) bind_text(st, 4, q->project);
        (void) bind_text(st, 5, q->queue);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
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
                r = cb(&row, userdata);
                if (r < 0)
                        break;
        }
        return rows_end(st, rc, r);
}
