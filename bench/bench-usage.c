/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Accounting through the store, as corrald does it, in a scratch database:
 *   - the cost of one job end's accounting (its charge and its day's summary, its
 *     project's and user's decayed usage) with 1,000 and with 1,000,000 runs stored;
 *   - `corral usage` by project and by day over 1,000,000 runs (a year, 50 users in 10
 *     projects, 3 queues), which reads the per-day summary; and, for contrast, the same
 *     sum computed from the runs themselves.
 * Prints figures; never pass/fail on time. Not run by `meson test`.
 * Usage: bench-usage [DIR] (default: a new directory under /tmp, removed afterwards). */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "accounting/accounting.h"
#include "daemon/store.h"

static uint64_t rng_state = 42;
static uint64_t rnd(uint64_t n) {
        return rng_next(&rng_state) % n;
}

#define DAY 86400
#define UPDATES 10000

static const uint64_t first_day = 1704067200; /* 2024-01-01 */
/* Job ids of the runs written here start above those a store already holds (bench/usage
 * fills corrald's own store, where jobs have run). */
static uint64_t id_base;
static char users[50][16], projects[10][16];
static const char *const queues[] = { "normal", "express", "bonus" };
static const double factors[] = { 1.0, 3.0, 0.0 };

/* Run id spread over a year; each user in one project mostly, sometimes a second. */
static JobCharge make_charge(uint64_t id) {
        unsigned u = (unsigned) rnd(50), q = rnd(10) < 7 ? 0 : rnd(2) + 1;
        unsigned p = rnd(10) < 8 ? u % 10 : (u + 3) % 10;
        uint64_t run = 60 + rnd(8 * 3600), end = first_day + (id * 365 * DAY) / 1000000 + rnd(3600);
        JobCharge c = { .job_id = id_base + id, .uid = 1000 + u, .user = users[u], .project = projects[p], .queue = queues[q],
                        .start_time = end - run, .end_time = end, .cpus = 1 + (unsigned) rnd(16),
                        .run_usec = run * 1000000, .charge_factor = factors[q], .cpu_usec = run * 900000,
                        .memory_peak = rnd(UINT64_C(64) << 30), .io_read_bytes = rnd(1 << 30),
                        .io_write_bytes = rnd(1 << 30), .io_read_ops = rnd(100000), .io_write_ops = rnd(100000),
                        .has_pressure = true };
        for (int s = 0; s < _ACCT_STALL_MAX; s++)
                c.stall_usec[s] = rnd(1000000);
        acct_charge_compute(&c);
        return c;
}

static int fill(Store *s, uint64_t from, uint64_t to) {
        int r;

        for (uint64_t id = from; id < to; id++) {
                JobCharge c = make_charge(id);
                if ((r = store_record_charge(s, &c)) < 0)
                        return r;
                if (id % 20000 == 0 && (r = store_commit(s)) < 0)
                        return r;
        }
        return store_commit(s);
}

/* One job end as corrald accounts it: the run, its day, its project's and user's decay. */
static int updates(Store *s, uint64_t first_id, const char *label) {
        AcctDecayed proj = {}, user = {};
        double t0, t1;
        int r;

        t0 = now_sec();
        for (uint64_t i = 0; i < UPDATES; i++) {
                JobCharge c = make_charge(first_id + i);
                if ((r = store_record_charge(s, &c)) < 0)
                        return r;
                acct_decayed_add(&proj, acct_decay_credit(c.core_hours, c.end_time - c.start_time, 168 * 3600),
                                 c.end_time, 168 * 3600);
                acct_decayed_add(&user, acct_decay_credit(c.core_hours, c.end_time - c.start_time, 168 * 3600),
                                 c.end_time, 168 * 3600);
                if ((r = store_save_decayed(s, STORE_USAGE_PROJECT, c.project, &proj)) < 0 ||
                    (r = store_save_decayed(s, STORE_USAGE_USER, c.user, &user)) < 0)
                        return r;
        }
        t1 = now_sec();
        if ((r = store_commit(s)) < 0)
                return r;
        printf("  job-end accounting with %-9s runs stored: %6.2f us per job end (%d ends; the commit, "
               "once per event-loop iteration, apart: %.1f ms)\n",
               label, (t1 - t0) / UPDATES * 1e6, UPDATES, (now_sec() - t1) * 1e3);
        return 0;
}

typedef struct Sum {
        size_t rows, keys;
        char key[32];
        UsageTotals total;
} Sum;

static int sum_row(const StoreUsageRow *row, void *userdata) {
        Sum *s = userdata;

        s->rows++;
        if (!streq(s->key, row->key)) {
                snprintf(s->key, sizeof s->key, "%s", row->key);
                s->keys++;
        }
        usage_totals_add(&s->total, &row->totals);
        return 0;
}

static int report(Store *s, StoreUsageBy by, const char *label) {
        double best = 1e9;
        Sum sum = {};

        for (int k = 0; k < 5; k++) {
                double t0 = now_sec();
                int r;

                sum = (Sum) {};
                r = store_usage_rows(s, &(StoreUsageQuery) { .by = by }, sum_row, &sum);
                if (r < 0)
                        return r;
                best = MIN(best, now_sec() - t0);
        }
        printf("  corral usage --by %-7s over all %" PRIu64 " runs: %7.1f ms (%zu summary groups, %zu rows of "
               "output, %.0f core-hours)\n",
               label, sum.total.jobs, best * 1e3, sum.rows, sum.keys, (double) sum.total.core_usec / 3600e6);
        return 0;
}

static uint64_t stored_max_job_id(const char *dir) {
        char path[512];
        sqlite3 *db;
        sqlite3_stmt *st;
        uint64_t max = 0;

        snprintf(path, sizeof path, "%s/corral.db", dir);
        if (access(path, F_OK) < 0 || sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
                return 0;
        if (sqlite3_prepare_v2(db, "SELECT MAX(job_id) FROM job_usage", -1, &st, NULL) == SQLITE_OK) {
                if (sqlite3_step(st) == SQLITE_ROW)
                        max = (uint64_t) sqlite3_column_int64(st, 0);
                sqlite3_finalize(st);
        }
        sqlite3_close(db);
        return max;
}

/* For contrast: the same sum from the runs themselves, what a report without the
 * per-day summary would have to read. */
static void scan_runs(const char *dir) {
        char path[512];
        sqlite3 *db;
        sqlite3_stmt *st;
        double t0 = now_sec();
        size_t n = 0;

        snprintf(path, sizeof path, "%s/corral.db", dir);
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
                return;
        if (sqlite3_prepare_v2(db, "SELECT project, SUM(cpus * run_usec), SUM(service_units) FROM job_usage GROUP BY project",
                               -1, &st, NULL) == SQLITE_OK) {
                while (sqlite3_step(st) == SQLITE_ROW)
                        n++;
                sqlite3_finalize(st);
        }
        sqlite3_close(db);
        printf("  (the same by project summed from the runs table instead: %.1f ms, %zu rows)\n",
               (now_sec() - t0) * 1e3, n);
}

int main(int argc, char **argv) {
        char dir[256];
        Store *s = NULL;
        double t0;
        int r;

        for (unsigned i = 0; i < 50; i++)
                snprintf(users[i], sizeof users[i], "user%02u", i);
        for (unsigned i = 0; i < 10; i++)
                snprintf(projects[i], sizeof projects[i], "project%u", i);
        if (argc > 1)
                snprintf(dir, sizeof dir, "%s", argv[1]);
        else {
                snprintf(dir, sizeof dir, "/tmp/bench-usage.XXXXXX");
                if (!mkdtemp(dir))
                        return EXIT_FAILURE;
        }
        id_base = stored_max_job_id(dir);
        if ((r = store_open(dir, &s)) < 0) {
                fprintf(stderr, "store_open(%s): %s\n", dir, strerror(-r));
                return EXIT_FAILURE;
        }

        printf("Accounting through the store (%s):\n", dir);
        if ((r = fill(s, 1, 1001)) < 0 || (r = updates(s, 1001, "1,000")) < 0)
                goto fail;
        t0 = now_sec();
        if ((r = fill(s, 1001 + UPDATES, 1000001)) < 0)
                goto fail;
        printf("  (stored %d more runs in %.1f s)\n", 1000000 - 1000 - UPDATES, now_sec() - t0);
        if ((r = updates(s, 1000001, "1,000,000")) < 0)
                goto fail;
        if ((r = report(s, STORE_USAGE_BY_PROJECT, "project")) < 0 || (r = report(s, STORE_USAGE_BY_DAY, "day")) < 0 ||
            (r = report(s, STORE_USAGE_BY_USER, "user")) < 0)
                goto fail;
        scan_runs(dir);
        {
                AcctDecayed d = {};
                const int n = 10000000;
                t0 = now_sec();
                for (int i = 0; i < n; i++)
                        acct_decayed_add(&d, 1.0, first_day + (uint64_t) i, 168 * 3600);
                printf("  the decay arithmetic alone: %.1f ns per update (value %.1f)\n", (now_sec() - t0) / n * 1e9,
                       d.value);
        }
        store_close(s);
        if (argc <= 1) {
                char cmd[300];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                (void) system(cmd);
        }
        return EXIT_SUCCESS;
fail:
        fprintf(stderr, "failed: %s (%s)\n", strerror(-r), store_error(s));
        store_close(s);
        return EXIT_FAILURE;
}
