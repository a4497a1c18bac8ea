/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/store.h"
#include "strv.h"

static char dir[64];

static void requests_free(void);

static int setup(void **state) {
        strcpy(dir, "/tmp/corral-store-XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        requests_free();
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

/* The complete requests the made jobs are stored with (memory keeps part, job.h). */
static SubmitRequest *requests[64];
static size_t n_requests;

static void requests_free(void) {
        for (size_t i = 0; i < n_requests; i++) {
                submit_request_done(requests[i]);
                free(requests[i]);
        }
        n_requests = 0;
}

static Job *make_job(uint64_t id) {
        Job *j = job_new();
        SubmitRequest *req = new0(SubmitRequest, 1);

        j->id = id;
        j->uid = 2001;
        j->gid = 2001;
        j->user = intern_id("alice");
        j->project = intern_id("physics");
        j->queue = intern_id("normal");
        j->state = JOB_QUEUED;
        j->rerunnable = true;
        j->submit_time = 1700000000 + id;
        assert_non_null(req);
        assert_true(n_requests < ELEMENTSOF(requests));
        requests[n_requests++] = req;
        *req = (SubmitRequest) SUBMIT_REQUEST_INIT;
        strv_extend(&req->argv, "/bin/echo");
        strv_extend(&req->argv, "hello \"world\"");
        req->workdir = strdup("/home/alice");
        req->cpus = 4;
        req->memory = UINT64_C(4) << 30;
        req->walltime_sec = 3600;
        assert_int_equal(job_set_request(j, req), 0);
        assert_int_equal(job_set_submitted(j, req), 0);
        return j;
}

static int collect(Job *j, void *userdata) {
        Job ***l = userdata;
        size_t n = 0;
        while ((*l)[n])
                n++;
        (*l)[n] = j;
        return 0;
}

/* Runs sql on the store in dir, as an older corrald or a damaged file left it. */
static void db_exec(const char *where, const char *sql) {
        sqlite3 *db;
        char p[256];

        snprintf(p, sizeof p, "%s/corral.db", where);
        assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

static void test_round_trip(void **state) {
        Store *s = NULL;
        Job *a = make_job(1), *b = make_job(2), *loaded[4] = {}, **l = loaded;
        uint64_t next;
        char *v = NULL;

        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_schema_version(s), 10);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_true(store_in_transaction(s));
        assert_int_equal(store_insert_job(s, a, NULL), -EEXIST); /* same id twice */
        {
                /* Memory keeps only part of a request: storing needs the complete one. */
                Job *c = make_job(3);
                assert_int_equal(job_set_submitted(c, NULL), 0);
                assert_int_equal(store_insert_job(s, c, NULL), -EINVAL);
                job_free(c);
        }
        /* b runs on CPUs 2-3 of node 1 and ends */
        b->state = JOB_FAILED;
        job_run_ensure(b)->exit_code = 3;
        b->start_time = 1700000100;
        b->end_time = 1700000200;
        job_run_ensure(b)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("2-3", &job_alloc(b)->cpus);
        job_alloc(b)->node_mask = 2;
        job_alloc(b)->mem[1] = 1 << 30;
        {
                /* Every stored field of its run (JobRun), each a value of its own. */
                JobRun *run = job_run_ensure(b);
                assert_non_null(run);
                run->usage = (JobUsage) { .cpu_usec = 123456, .memory_peak = 7 << 20, .io_read_bytes = 11,
                                          .io_write_bytes = 13, .tasks_peak = 17 };
                run->suspended_usec = 19000000;
                run->suspend_start = 1700000150;
                run->preempted_by = 23;
                run->exit_signal = 9; /* a value of its own; no such pair comes from an outcome */
                run->launch_error = strdup("cannot open /home/alice/out: Permission denied");
        }
        job_set_reason(b, "NonZeroExitCode");
        assert_int_equal(store_update_job(s, b), 0);
        assert_int_equal(store_set_meta(s, "boot_id", "abc"), 0);
        assert_int_equal(store_commit(s), 0);
        assert_false(store_in_transaction(s));
        store_close(s);

        /* Reopened: everything that was committed is there. */
        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        assert_non_null(loaded[0]);
        assert_non_null(loaded[1]);
        assert_null(loaded[2]);
        assert_int_equal(loaded[0]->id, 1);
        assert_int_equal(loaded[0]->state, JOB_QUEUED);
        assert_string_equal(job_str(loaded[0], JOB_WORKDIR), "/home/alice");
        assert_int_equal(job_shared(loaded[0])->memory, UINT64_C(4) << 30);
        assert_int_equal(loaded[1]->state, JOB_FAILED);
        assert_int_equal(job_run(loaded[1])->exit_code, 3);
        assert_string_equal(job_reason(loaded[1]), "NonZeroExitCode");
        assert_null(job_alloc(loaded[0])); /* never started */
        assert_true(cpu_set_equal(&job_alloc(loaded[1])->cpus, &job_alloc(b)->cpus));
        assert_int_equal(job_alloc(loaded[1])->node_mask, 2);
        assert_int_equal(job_alloc(loaded[1])->mem[1], 1 << 30);
        assert_null(loaded[0]->run); /* never started: nothing of a run kept */
        assert_non_null(loaded[1]->run);
        assert_int_equal(job_run(loaded[1])->usage.cpu_usec, 123456);
        assert_int_equal(job_run(loaded[1])->usage.memory_peak, 7 << 20);
        assert_int_equal(job_run(loaded[1])->usage.io_read_bytes, 11);
        assert_int_equal(job_run(loaded[1])->usage.io_write_bytes, 13);
        assert_int_equal(job_run(loaded[1])->usage.tasks_peak, 17);
        assert_int_equal(job_run(loaded[1])->suspended_usec, 19000000);
        assert_int_equal(job_run(loaded[1])->suspend_start, 1700000150);
        assert_int_equal(job_run(loaded[1])->preempted_by, 23);
        assert_int_equal(job_run(loaded[1])->exit_signal, 9);
        assert_int_equal(job_run(loaded[0])->exit_code, -1); /* none */
        assert_string_equal(job_run(loaded[1])->launch_error, "cannot open /home/alice/out: Permission denied");
        assert_int_equal(store_get_meta(s, "boot_id", &v), 1);
        assert_string_equal(v, "abc");
        free(v);
        {
                SubmitRequest full = SUBMIT_REQUEST_INIT;
                assert_int_equal(store_load_request(s, 1, &full), 0);
                assert_string_equal(full.argv[1], "hello \"world\"");
                submit_request_done(&full);
                assert_int_equal(store_load_request(s, 99, &full), -ENOENT);
        }
        assert_int_equal(store_next_job_id(s, &next), 0);
        assert_int_equal(next, 3);
        store_close(s);
        for (int i = 0; loaded[i]; i++)
                job_free(loaded[i]);
        job_free(a);
        job_free(b);
}

static void test_uncommitted_is_lost(void **state) {
        Store *s = NULL;
        Job *loaded[8] = {}, **l = loaded;
        pid_t pid;
        int status;

        /* A daemon that dies before its end-of-iteration commit: nothing of that iteration
         * may appear afterwards (and nothing of it was acknowledged). */
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Job *c = make_job(8);
                if (store_open(dir, &s) < 0 || store_insert_job(s, c, NULL) < 0)
                        _exit(1);
                _exit(0); /* no commit, no close */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        for (int i = 0; loaded[i]; i++) {
                assert_int_not_equal(loaded[i]->id, 8);
                job_free(loaded[i]);
        }
        store_close(s);
}

/* An array's tasks store one request between them; each loads (and launches) with it. */
static void test_array_shares_request(void **state) {
        Store *s = NULL;
        Job *loaded[8] = {}, **l = loaded;
        Job *t[3];
        size_t bytes = 0, none = 7;
        char big[4096];

        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = 0;
        assert_int_equal(store_open(dir, &s), 0);
        for (int i = 0; i < 3; i++) {
                t[i] = make_job(20 + i);
                t[i]->array_job_id = 20;
                t[i]->array_task_id = (uint32_t) i;
                strv_extend(&requests[n_requests - 1]->argv, big);
                if (i > 0)
                        t[i]->request_of_array = true;
        }
        assert_int_equal(store_insert_job(s, t[0], &bytes), 0);
        assert_true(bytes > sizeof big);
        assert_int_equal(store_insert_job(s, t[1], &none), 0);
        assert_int_equal(none, 0); /* a reference stores no request of its own */
        assert_int_equal(store_insert_job(s, t[2], NULL), 0);
        assert_int_equal(store_commit(s), 0);
        {
                sqlite3 *db;
                sqlite3_stmt *st;
                char p[256];
                snprintf(p, sizeof p, "%s/corral.db", dir);
                assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
                assert_int_equal(sqlite3_prepare_v2(db, "SELECT SUM(LENGTH(request)) FROM jobs WHERE array_job_id=20",
                                                    -1, &st, NULL), SQLITE_OK);
                assert_int_equal(sqlite3_step(st), SQLITE_ROW);
                assert_int_equal((size_t) sqlite3_column_int64(st, 0), bytes); /* once, not three times */
                sqlite3_finalize(st);
                sqlite3_close(db);
        }
        {
                SubmitRequest full = SUBMIT_REQUEST_INIT;
                assert_int_equal(store_load_request(s, 22, &full), 0);
                assert_string_equal(full.argv[2], big);
                submit_request_done(&full);
        }
        store_close(s);
        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        for (int i = 0; loaded[i]; i++) {
                if (loaded[i]->array_job_id == 20) {
                        assert_int_equal(loaded[i]->request_bytes, bytes);
                        assert_int_equal(loaded[i]->req.cpus, 4);
                        assert_string_equal(job_str(loaded[i], JOB_WORKDIR), "/home/alice");
                        assert_int_equal(job_request_id(loaded[i]), loaded[i]->id == 20 ? 0 : 20);
                }
                job_free(loaded[i]);
        }
        store_close(s);
        /* Memory keeps only that a task's request is its array's first task's: a row
         * referring to another job's is refused, as one whose first task is missing. */
        db_exec(dir, "UPDATE jobs SET array_job_id = 0 WHERE id = 22");
        memset(loaded, 0, sizeof loaded);
        l = loaded;
        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), -EBADMSG);
        for (int i = 0; loaded[i]; i++)
                job_free(loaded[i]);
        store_close(s);
        db_exec(dir, "UPDATE jobs SET array_job_id = 20 WHERE id = 22");
        for (int i = 0; i < 3; i++)
                job_free(t[i]);
}

/* A unit of work rolled back leaves nothing, and the rest of the transaction stands. */
static void test_savepoint(void **state) {
        Store *s = NULL;
        Job *a = make_job(30), *b = make_job(31), *loaded[16] = {}, **l = loaded;
        bool saw_a = false, saw_b = false;

        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_savepoint(s), 0);
        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_int_equal(store_rollback(s), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);
        assert_int_equal(store_open(dir, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        for (int i = 0; loaded[i]; i++) {
                saw_a |= loaded[i]->id == 30;
                saw_b |= loaded[i]->id == 31;
                job_free(loaded[i]);
        }
        assert_true(saw_a);
        assert_false(saw_b);
        store_close(s);
        job_free(a);
        job_free(b);
}

/* Discovered NVIDIA cards by PCI address, placed over known as corrald places them. */
static DeviceSet *cards(const char *const *pcis, size_t n, const DeviceSet *known) {
        DeviceSet *set = calloc(1, sizeof *set);

        assert_non_null(set);
        set->devices = calloc(n + 1, sizeof *set->devices);
        assert_non_null(set->devices);
        for (size_t i = 0; i < n; i++) {
                Device *d = &set->devices[i];
                d->vendor = DEVICE_VENDOR_NVIDIA;
                d->pci_address = strdup(pcis[i]);
                assert_int_equal(asprintf(&d->name, "gpu%zu", i) > 0, 1);
                d->auto_name = true;
                d->numa_node = -1;
        }
        set->n_devices = n;
        assert_int_equal(device_set_place(set, known, 0), 0);
        return set;
}

static char *column(const char *where, const char *sql) {
        char path[256], *v = NULL;
        sqlite3 *db;
        sqlite3_stmt *st;

        snprintf(path, sizeof path, "%s/corral.db", where);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                v = strdup((const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

/* A running job's GPUs are stored by identity (here PCI addresses), no longer by name:
 * a store of schema 6 holding names by position has them rewritten once, by the names in
 * force at the first start; a restart on which the first card is gone gives the job back
 * its own cards, at their own indexes, and the gone one stays known. */
static void test_alloc_gpus(void **state) {
        static const char *const four[] = { "0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0" };
        char gdir[64] = "/tmp/corral-store-gpus-XXXXXX", path[128], cmd[160];
        Job *a = make_job(1), *loaded[4] = {}, **l = loaded;
        DeviceSet *set, *known;
        Store *s = NULL;
        sqlite3 *db;
        char *v;

        assert_non_null(mkdtemp(gdir));
        assert_int_equal(store_open(gdir, &s), 0);
        a->state = JOB_RUNNING;
        a->start_time = 1700000100;
        job_run_ensure(a)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("0-1", &job_alloc(a)->cpus);
        job_alloc(a)->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 3);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);
        /* As schema 6 wrote it: by name, no gpus table. */
        snprintf(path, sizeof path, "%s/corral.db", gdir);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DROP TABLE gpus; DROP TABLE job_gpu_usage; UPDATE jobs SET alloc_gpus = 'gpu1,gpu3';"
                                      "PRAGMA user_version = 6", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_schema_version(s), 10);
        assert_int_equal(store_load_gpus(s, &known), 0);
        assert_int_equal(known->n_devices, 0);
        set = cards(four, 4, known);
        device_set_free(known);
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        assert_int_equal(store_commit(s), 0);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 1");
        assert_string_equal(v, "0000:02:00.0,0000:04:00.0");
        free(v);
        assert_null(column(gdir, "SELECT value FROM meta WHERE key = 'gpus_by_name'"));
        job_alloc(a)->gpu_mask &= ~(UINT64_C(1) << 3); /* an update rewrites the column */
        assert_int_equal(store_update_job(s, a), 0);
        job_alloc(a)->gpu_mask |= UINT64_C(1) << 3;
        assert_int_equal(store_update_job(s, a), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);

        /* The first card is gone at the next start: the others keep their indexes. */
        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_load_gpus(s, &known), 0);
        assert_int_equal(known->n_devices, 4);
        assert_string_equal(known->devices[1].pci_address, "0000:02:00.0");
        set = cards(four + 1, 3, known);
        device_set_free(known);
        assert_int_equal(set->n_devices, 4);
        assert_true(set->devices[0].gone);
        assert_string_equal(set->devices[3].name, "gpu3");
        assert_string_equal(set->devices[3].pci_address, "0000:04:00.0");
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        assert_non_null(loaded[0]);
        assert_int_equal(job_alloc(loaded[0])->gpu_mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 3));
        job_free(loaded[0]);
        store_close(s);
        job_free(a);
        snprintf(cmd, sizeof cmd, "rm -rf %s", gdir);
        assert_int_equal(system(cmd), 0);
}

static Job *load_one_job(Store *s, uint64_t id) {
        Job *loaded[8] = {}, **l = loaded, *found = NULL;

        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        for (size_t i = 0; loaded[i]; i++)
                if (loaded[i]->id == id)
                        found = loaded[i];
                else
                        job_free(loaded[i]);
        assert_non_null(found);
        return found;
}

/* A shard job's allocation after a restart: its GPU from the stored allocation, its shards
 * from its request, as the pass needs them to count the GPU's shards in use. */
static void test_alloc_shards(void **state) {
        static const char *const two[] = { "0000:01:00.0", "0000:02:00.0" };
        char gdir[64] = "/tmp/corral-store-shards-XXXXXX", cmd[160];
        Job *a = make_job(1), *b = make_job(2), *l;
        DeviceSet *set;
        Store *s = NULL;

        assert_non_null(mkdtemp(gdir));
        assert_int_equal(store_open(gdir, &s), 0);
        set = cards(two, 2, NULL);
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        ((SubmitRequest *) job_submitted(a))->shards = 3;
        assert_int_equal(job_set_request(a, job_submitted(a)), 0);
        a->state = JOB_RUNNING;
        a->start_time = 1700000100;
        job_run_ensure(a)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("0", &job_alloc(a)->cpus);
        job_alloc(a)->gpu_mask = UINT64_C(1) << 1;
        job_alloc(a)->shards = 3;
        b->state = JOB_RUNNING;
        b->start_time = 1700000100;
        job_run_ensure(b)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("1", &job_alloc(b)->cpus);
        job_alloc(b)->gpu_mask = UINT64_C(1) << 0;
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);

        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_load_gpus(s, &set), 0); /* as corrald starts: the cards it knew */
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        l = load_one_job(s, 1);
        assert_int_equal(l->req_shards, 3);
        assert_int_equal(job_alloc(l)->gpu_mask, UINT64_C(1) << 1);
        assert_int_equal(job_alloc(l)->shards, 3);
        job_free(l);
        l = load_one_job(s, 2);
        assert_int_equal(l->req_shards, 0);
        assert_int_equal(job_alloc(l)->gpu_mask, 1);
        assert_int_equal(job_alloc(l)->shards, 0);
        job_free(l);
        store_close(s);
        job_free(a);
        job_free(b);
        snprintf(cmd, sizeof cmd, "rm -rf %s", gdir);
        assert_int_equal(system(cmd), 0);
}

/* A card that is not there at the first start after schema 7 (driver not loaded yet,
 * card out during the upgrade, none found at all): the running job's allocation keeps
 * it by name and keeps its index (nobody else is given it), and a later start with the
 * card back gives it its identity. */
static void test_alloc_gpus_card_missing(void **state) {
        static const char *const two[] = { "0000:01:00.0", "0000:02:00.0" };
        char gdir[64] = "/tmp/corral-store-gpus-XXXXXX", path[128], cmd[160];
        Job *a = make_job(1), *b = make_job(2), *j;
        DeviceSet *set, *known;
        Store *s = NULL;
        sqlite3 *db;
        char *v;

        assert_non_null(mkdtemp(gdir));
        assert_int_equal(store_open(gdir, &s), 0);
        a->state = JOB_RUNNING;
        a->start_time = 1700000100;
        job_run_ensure(a)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("0-1", &job_alloc(a)->cpus);
        job_alloc(a)->gpu_mask = UINT64_C(3);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        b->state = JOB_COMPLETED;
        b->start_time = 1700000100;
        b->end_time = 1700000200;
        job_run_ensure(b)->alloc = new0(SchedAllocation, 1);
        cpu_set_parse("2", &job_alloc(b)->cpus);
        job_alloc(b)->gpu_mask = UINT64_C(2);
        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);
        snprintf(path, sizeof path, "%s/corral.db", gdir);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DROP TABLE gpus; DROP TABLE job_gpu_usage; UPDATE jobs SET alloc_gpus = 'gpu0,gpu1' WHERE id = 1;"
                                      "UPDATE jobs SET alloc_gpus = 'gpu1' WHERE id = 2; PRAGMA user_version = 6",
                                      NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        /* No GPU found at all: nothing is rewritten, the job keeps both. */
        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_load_gpus(s, &known), 0);
        set = cards(NULL, 0, known);
        device_set_free(known);
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        assert_int_equal(store_commit(s), 0);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 1");
        assert_non_null(v);
        free(v);
        j = load_one_job(s, 1);
        assert_int_equal(job_alloc(j)->gpu_mask, UINT64_C(3));
        job_free(j);
        store_close(s);

        /* Only the first card: it gets its identity, the second keeps its name and its
         * index, also when the job's row is written again. */
        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_load_gpus(s, &known), 0);
        set = cards(two, 1, known);
        device_set_free(known);
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        assert_int_equal(store_commit(s), 0);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 1");
        assert_string_equal(v, "0000:01:00.0,name:gpu1");
        free(v);
        assert_non_null(v = column(gdir, "SELECT value FROM meta WHERE key = 'gpus_by_name'"));
        free(v);
        j = load_one_job(s, 1);
        assert_int_equal(job_alloc(j)->gpu_mask, UINT64_C(3));
        assert_int_equal(store_update_job(s, j), 0);
        assert_int_equal(store_commit(s), 0);
        job_free(j);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 1");
        assert_string_equal(v, "0000:01:00.0,name:gpu1");
        free(v);
        store_close(s);

        /* The card is back: it takes the index the job kept, and its identity. */
        assert_int_equal(store_open(gdir, &s), 0);
        assert_int_equal(store_load_gpus(s, &known), 0);
        assert_int_equal(known->n_devices, 1);
        set = cards(two, 2, known);
        device_set_free(known);
        assert_string_equal(set->devices[1].pci_address, "0000:02:00.0");
        assert_int_equal(store_set_gpus(s, set), 0);
        device_set_free(set);
        assert_int_equal(store_commit(s), 0);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 1");
        assert_string_equal(v, "0000:01:00.0,0000:02:00.0");
        free(v);
        v = column(gdir, "SELECT alloc_gpus FROM jobs WHERE id = 2");
        assert_string_equal(v, "0000:02:00.0");
        free(v);
        assert_null(column(gdir, "SELECT value FROM meta WHERE key = 'gpus_by_name'"));
        j = load_one_job(s, 1);
        assert_int_equal(job_alloc(j)->gpu_mask, UINT64_C(3));
        job_free(j);
        store_close(s);
        job_free(a);
        job_free(b);
        snprintf(cmd, sizeof cmd, "rm -rf %s", gdir);
        assert_int_equal(system(cmd), 0);
}

static void test_refuses_newer_schema(void **state) {
        char cmd[256];
        Store *s = NULL;

        sqlite3 *db;

        snprintf(cmd, sizeof cmd, "%s/corral.db", dir);
        assert_int_equal(sqlite3_open(cmd, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        assert_int_equal(store_open(dir, &s), -EPROTO);
        assert_null(s);
}

static int count_usage(const StoreUsageRow *row, void *userdata) {
        UsageTotals *t = userdata;
        usage_totals_add(t, &row->totals);
        return 0;
}

/* A store whose accounting predates GPUs: its runs keep their charge and read as
 * GPU-less, and runs charged after the migration carry their GPUs and GPU-µs, per run
 * and in the per-day summary. */
static void test_gpu_accounting_migration(void **state) {
        char old[200], path[256];
        Store *s = NULL;
        sqlite3 *db;
        JobCharge c;
        UsageTotals t = {};

        /* A directory of its own: the other tests' store is a current one. */
        snprintf(old, sizeof old, "%s/old", dir);
        assert_int_equal(mkdir(old, 0700), 0);
        snprintf(path, sizeof path, "%s/corral.db", old);
        /* A current store taken back to schema 4 (what migration 5 added, dropped), with
         * one run charged then. */
        assert_int_equal(store_open(old, &s), 0);
        store_close(s);
        s = NULL;
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db,
                "DROP TABLE gpus;"
                "DROP TABLE job_gpu_usage;"
                "ALTER TABLE jobs DROP COLUMN alloc_gpus;"
                "ALTER TABLE job_usage DROP COLUMN gpus;"
                "ALTER TABLE job_usage DROP COLUMN gpu_usec;"
                "ALTER TABLE job_usage DROP COLUMN charge_per_gpu_hour;"
                "ALTER TABLE usage_daily DROP COLUMN gpu_usec;"
                "INSERT INTO job_usage VALUES (7, 0, 1000, 'ann', 'physics', 'normal', 1700000000, 1700003600,"
                "  2, 3600000000, 1.0, 2.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);"
                "INSERT INTO usage_daily VALUES ('2023-11-14', 'physics', 1000, 'ann', 'normal', 1, 7200000000,"
                "  2.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);"
                "PRAGMA user_version = 4;", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        assert_int_equal(store_open(old, &s), 0);
        assert_int_equal(store_schema_version(s), 10);
        assert_int_equal(store_load_charge(s, 7, &c), 0);
        assert_int_equal(c.cpus, 2);
        assert_int_equal(c.gpus, 0);
        assert_true(c.gpu_hours == 0.0);
        assert_true(c.service_units == 2.0);

        /* A run with 2 GPUs for half an hour, the same day. */
        c = (JobCharge) { .job_id = 8, .uid = 1000, .user = "ann", .project = "physics", .queue = "normal",
                          .start_time = 1700004000, .end_time = 1700005800, .cpus = 1, .gpus = 2,
                          .run_usec = UINT64_C(1800000000), .charge_factor = 1.0, .charge_per_gpu_hour = 8 };
        acct_charge_compute(&c);
        assert_true(c.gpu_hours == 1.0);
        assert_true(c.service_units == 0.5 + 8.0);
        assert_int_equal(store_record_charge(s, &c), 0);
        c = (JobCharge) {};
        assert_int_equal(store_load_charge(s, 8, &c), 0);
        assert_int_equal(c.gpus, 2);
        assert_true(c.charge_per_gpu_hour == 8.0);
        assert_true(c.gpu_hours == 1.0);
        assert_int_equal(store_usage_rows(s, &(StoreUsageQuery) { .by = STORE_USAGE_BY_PROJECT }, count_usage, &t), 0);
        assert_int_equal(t.jobs, 2);
        assert_int_equal(t.core_usec, UINT64_C(7200000000) + UINT64_C(1800000000));
        assert_int_equal(t.gpu_usec, UINT64_C(3600000000));
        assert_true(t.service_units == 2.0 + 8.5);
        store_close(s);
}

/* The reader (store_open_reader) sees what is committed, not what the writer holds in
 * its open transaction, and cannot write. */
static int count_rows(const char *path, const char *sql) {
        sqlite3 *db;
        sqlite3_stmt *st;
        int n = -1;

        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

/* Schema 6 drops the jobs table's two indexes, which nothing read and every submission
 * wrote: a store of schema 5 loses them and keeps its jobs, and the next id still comes
 * past both its highest row and the last_job_id that version wrote with every submit. */
/* A job's GPU figures (migration 8): one row per run and GPU, kept across a reopen; a
 * run recorded again replaces its row; only the latest run is read back. */
static void test_gpu_usage(void **state) {
        _cleanup_free_ StoreGpuUsage *rows = NULL;
        char udir[64] = "/tmp/corral-store-gpu-usage-XXXXXX", cmd[160];
        Store *s = NULL;
        size_t n = 0;
        StoreGpuUsage a = {
                .job_id = 7, .run = 0, .gpu = 1, .uuid = (char *) "GPU-1", .samples = 30, .util_mean = 57.5,
                .util_max = 90, .memory_max = UINT64_C(3) << 30, .energy_j = 1234.5, .held_sec = 300,
                .own_memory_max = UINT64_C(1) << 30,
        }, b = a;

        assert_non_null(mkdtemp(udir));
        assert_int_equal(store_open(udir, &s), 0);
        assert_int_equal(store_load_gpu_usage(s, 7, &rows, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(store_record_gpu_usage(s, &a), 0);
        b.gpu = 0;
        b.uuid = NULL;
        b.util_mean = -1; /* no sample: unknown */
        b.energy_j = -1;
        b.samples = 0;
        b.own_memory_max = UINT64_MAX; /* none of its processes listed (migration 9) */
        assert_int_equal(store_record_gpu_usage(s, &b), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);

        assert_int_equal(store_open(udir, &s), 0);
        assert_int_equal(store_load_gpu_usage(s, 7, &rows, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(rows[0].gpu, 0);
        assert_null(rows[0].uuid);
        assert_true(rows[0].util_mean < 0 && rows[0].energy_j < 0);
        assert_true(rows[0].own_memory_max == UINT64_MAX);
        assert_int_equal(rows[1].gpu, 1);
        assert_string_equal(rows[1].uuid, "GPU-1");
        assert_int_equal(rows[1].samples, 30);
        assert_true(rows[1].util_mean == 57.5);
        assert_int_equal(rows[1].util_max, 90);
        assert_true(rows[1].memory_max == UINT64_C(3) << 30);
        assert_true(rows[1].energy_j == 1234.5);
        assert_int_equal(rows[1].held_sec, 300);
        assert_true(rows[1].own_memory_max == UINT64_C(1) << 30);
        store_gpu_usage_free(rows, n);
        rows = NULL;

        /* A requeued job's next run: only it is read back. */
        a.run = 1;
        a.util_max = 12;
        assert_int_equal(store_record_gpu_usage(s, &a), 0);
        assert_int_equal(store_record_gpu_usage(s, &a), 0);
        assert_int_equal(store_load_gpu_usage(s, 7, &rows, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(rows[0].util_max, 12);
        store_gpu_usage_free(rows, n);
        rows = NULL;
        assert_int_equal(store_commit(s), 0);
        store_close(s);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", udir);
        assert_int_equal(system(cmd), 0);
}

static void test_no_job_indexes(void **state) {
        static const char *const indexes =
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' AND sql IS NOT NULL";
        Job *a = make_job(1), *b = make_job(2), *loaded[4] = {}, **l = loaded;
        char sub[96], path[128];
        Store *s = NULL;
        uint64_t next;
        sqlite3 *db;

        snprintf(sub, sizeof sub, "%s/indexes", dir);
        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        store_close(s);
        snprintf(path, sizeof path, "%s/corral.db", sub);
        assert_int_equal(count_rows(path, indexes), 0);

        /* Back to schema 5, as that version left it. */
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "DROP TABLE gpus;"
                                      "DROP TABLE job_gpu_usage;"
                                      "CREATE INDEX jobs_state ON jobs (state);"
                                      "CREATE INDEX jobs_uid ON jobs (uid);"
                                      "INSERT INTO meta VALUES ('last_job_id', '5');"
                                      "PRAGMA user_version = 5", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        assert_int_equal(count_rows(path, indexes), 2);

        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_schema_version(s), 10);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        assert_non_null(loaded[1]);
        assert_int_equal(loaded[1]->id, 2);
        assert_int_equal(store_next_job_id(s, &next), 0);
        assert_int_equal(next, 6); /* the meta row's 5, above the rows' 2 */
        store_close(s);
        assert_int_equal(count_rows(path, indexes), 0);
        for (int i = 0; loaded[i]; i++)
                job_free(loaded[i]);
        job_free(a);
        job_free(b);
}

/* A commit is on disk once a sync that began after it has returned: store_sync() on the
 * caller's thread, or its two halves (a worker's store_sync_wal(), then store_synced()
 * with the count taken before it began, which covers no later commit). A reader has
 * nothing to sync. */
static void test_sync(void **state) {
        Store *s = NULL, *rd = NULL;
        Job *a = make_job(1), *b = make_job(2);
        char sub[96];
        uint64_t n;
        int fd;

        snprintf(sub, sizeof sub, "%s/sync", dir);
        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_sync(s), 0);
        assert_true(store_durable(s));
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_true(store_durable(s)); /* nothing committed yet */
        assert_int_equal(store_commit(s), 0);
        assert_false(store_durable(s));
        assert_int_equal(store_sync(s), 0);
        assert_true(store_durable(s));

        assert_int_equal(store_insert_job(s, b, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        n = store_n_commits(s);
        fd = store_sync_fd(s);
        assert_true(fd >= 0);
        assert_int_equal(store_sync_fd(s), fd);
        b->state = JOB_HELD;
        assert_int_equal(store_update_job(s, b), 0);
        assert_int_equal(store_sync_wal(fd), 0); /* as if on a thread, the update meanwhile */
        assert_int_equal(store_commit(s), 0);
        store_synced(s, n);
        assert_false(store_durable(s)); /* the update's commit came after */
        assert_int_equal(store_sync(s), 0);
        assert_true(store_durable(s));
        /* A count beyond the commits made covers none made later. */
        store_synced(s, store_n_commits(s) + 5);
        b->state = JOB_QUEUED;
        assert_int_equal(store_update_job(s, b), 0);
        assert_int_equal(store_commit(s), 0);
        assert_false(store_durable(s));
        store_close(s);

        assert_int_equal(store_open_reader(sub, &rd), 0);
        assert_true(store_durable(rd));
        assert_int_equal(store_sync_fd(rd), -EBADF);
        store_close(rd);
        job_free(a);
        job_free(b);
}

static off_t wal_size(const char *sub) {
        char path[128];
        struct stat st;

        snprintf(path, sizeof path, "%s/corral.db-wal", sub);
        return stat(path, &st) < 0 ? -1 : st.st_size;
}

/* The log is given its size at once, commits write over it in place, SQLite starts it over
 * at its head after each checkpoint without growing it, it outlives a clean stop, and a
 * crash leaves every commit synced before it readable past the zeros. */
static void test_prepared_log(void **state) {
        Store *s = NULL;
        Job *loaded[8] = {}, **l = loaded, *j = make_job(1);
        char sub[96];
        off_t size;
        pid_t pid;
        int status, n = 0;

        snprintf(sub, sizeof sub, "%s/log", dir);
        assert_int_equal(store_open(sub, &s), 0);
        assert_true(wal_size(sub) < 1 << 20);
        assert_int_equal(store_prepare_log(s), 0);
        size = wal_size(sub);
        assert_true(size >= 1000 * (24 + 4096)); /* SQLite's default checkpoint mark */
        assert_int_equal(store_insert_job(s, j, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        /* Past the first checkpoint (a job's commit is one or two frames), and some. */
        for (int i = 0; i < 1500; i++) {
                j->state = i % 2 ? JOB_HELD : JOB_QUEUED;
                assert_int_equal(store_update_job(s, j), 0);
                assert_int_equal(store_commit(s), 0);
        }
        assert_int_equal(store_sync(s), 0);
        assert_int_equal(wal_size(sub), size);
        store_close(s);
        assert_int_equal(wal_size(sub), size);

        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_prepare_log(s), 0);
        assert_int_equal(wal_size(sub), size);
        store_close(s);

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                Job *c = make_job(2);
                if (store_open(sub, &s) < 0 || store_prepare_log(s) < 0 || store_insert_job(s, c, NULL) < 0 ||
                    store_commit(s) < 0 || store_sync(s) < 0)
                        _exit(1);
                _exit(0); /* no close */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_load_jobs(s, collect, &l), 0);
        for (int i = 0; loaded[i]; i++) {
                assert_int_equal(loaded[i]->id, ++n);
                assert_int_equal(loaded[i]->state, n == 1 ? JOB_HELD : JOB_QUEUED);
                job_free(loaded[i]);
        }
        assert_int_equal(n, 2);
        assert_int_equal(wal_size(sub), size);
        store_close(s);
        job_free(j);
}

static void test_reader(void **state) {
        Store *s = NULL, *rd = NULL;
        Job *loaded[8] = {}, **l = loaded;
        Job *a = make_job(1), *b = make_job(2);
        char sub[96];

        /* A store of its own: the tests before leave theirs in dir. */
        snprintf(sub, sizeof sub, "%s/reader", dir);
        assert_int_equal(store_open(sub, &s), 0);
        assert_int_equal(store_insert_job(s, a, NULL), 0);
        assert_int_equal(store_commit(s), 0);
        assert_int_equal(store_insert_job(s, b, NULL), 0); /* not committed */
        assert_true(store_in_transaction(s));

        assert_int_equal(store_open_reader(sub, &rd), 0);
        assert_int_equal(store_load_jobs(rd, collect, &l), 0);
        assert_non_null(loaded[0]);
        assert_int_equal(loaded[0]->id, 1);
        assert_null(loaded[1]);
        job_free(loaded[0]);
        assert_int_not_equal(store_insert_job(rd, b, NULL), 0);
        store_close(rd);

        assert_int_equal(store_commit(s), 0);
        store_close(s);
        job_free(a);
        job_free(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_uncommitted_is_lost),
                cmocka_unit_test(test_array_shares_request),
                cmocka_unit_test(test_savepoint),
                cmocka_unit_test(test_alloc_gpus),
                cmocka_unit_test(test_alloc_shards),
                cmocka_unit_test(test_alloc_gpus_card_missing),
                cmocka_unit_test(test_refuses_newer_schema),
                cmocka_unit_test(test_gpu_accounting_migration),
                cmocka_unit_test(test_gpu_usage),
                cmocka_unit_test(test_reader),
                cmocka_unit_test(test_no_job_indexes),
                cmocka_unit_test(test_sync),
                cmocka_unit_test(test_prepared_log),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
