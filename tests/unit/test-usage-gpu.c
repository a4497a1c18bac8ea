/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Usage report's GPU-hours used and GPU efficiency, against a tmpdir store: each GPU
 * row of job_gpu_usage counted under its run's charge (its day, user, project, queue),
 * held seconds × mean utilisation summed, efficiency of the sampled GPU-hours only, null
 * where no GPU was read, the period and name filters and who sees which rows as for the
 * rest of the report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/manager.h"
#include "daemon/store.h"
#include "daemon/usage.h"
#include "json-util.h"
#include "tmp-tree.h"
#include "test-manager-call.h"

#define NOBODY 65534
#define USEC UINT64_C(1000000)

static Manager *manager_for_test(const char *dir) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL;

        assert_non_null(m);
        manager_pick_backends(m);
        m->confdir = strdup(dir);
        assert_non_null(m->confdir);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", strna(err));
        assert_int_equal(store_open(dir, &m->store), 0);
        assert_int_equal(accounting_new(m->store, NULL, m->config, &m->acct), 0);
        m->sched = sched_context_new();
        assert_non_null(m->sched);
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        return m;
}

static void put(const char *dir, const char *name, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static json_object *params_of(json_object *reply) {
        json_object *p, *e;

        if (json_object_object_get_ex(reply, "error", &e))
                fail_msg("error reply: %s", json_object_to_json_string(reply));
        assert_true(json_object_object_get_ex(reply, "parameters", &p));
        return p;
}

static json_object *get(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                fail_msg("no \"%s\" in %s", key, json_object_to_json_string(o));
        return v;
}

/* A number field, or fails; is_null: the field is there and null. */
static double get_double(json_object *o, const char *key) {
        json_object *v = get(o, key);

        if (!v)
                fail_msg("\"%s\" is null in %s", key, json_object_to_json_string(o));
        return json_object_get_double(v);
}

static bool is_null(json_object *o, const char *key) {
        return get(o, key) == NULL;
}

static void assert_close(double got, double want) {
        if (fabs(got - want) > 1e-9)
                fail_msg("got %.12g, want %.12g", got, want);
}

static json_object *find_row(json_object *rows, const char *key) {
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (streq(json_object_get_string(get(json_object_array_get_idx(rows, i), "key")), key))
                        return json_object_array_get_idx(rows, i);
        fail_msg("no row %s", key);
        return NULL;
}

/* A run of run_sec that ended at end, holding gpus GPUs. */
static void charge(Manager *m, uint64_t id, uint32_t run, uid_t uid, const char *user, const char *project,
                   uint64_t end, unsigned gpus, uint64_t run_sec) {
        JobCharge c = { .job_id = id, .run = run, .uid = uid, .user = user, .project = project, .queue = "normal",
                        .start_time = end - run_sec, .end_time = end, .cpus = 1, .run_usec = run_sec * USEC,
                        .charge_factor = 1.0, .cpu_usec = run_sec * USEC, .gpus = gpus };

        acct_charge_compute(&c);
        assert_int_equal(store_record_charge(m->store, &c), 0);
}

/* One GPU's row; mean < 0: never read (samples 0). */
static void gpu(Manager *m, uint64_t id, uint32_t run, unsigned idx, double mean, uint64_t held_sec) {
        StoreGpuUsage u = { .job_id = id, .run = run, .gpu = idx, .samples = mean < 0 ? 0 : 10,
                            .util_mean = mean, .util_max = mean < 0 ? 0 : 100, .memory_max = 1 << 30,
                            .energy_j = -1, .held_sec = held_sec };

        assert_int_equal(store_record_gpu_usage(m->store, &u), 0);
}

static json_object *usage(Manager *m, uid_t uid, const char *params) {
        return call(m, uid, CORRAL_METHOD_USAGE, params);
}

static void test_gpu_used(void **state) {
        Tree *t = *state;
        const uint64_t day = 1717200000; /* 2024-06-01 00:00 UTC */
        json_object *r, *p, *rows, *row;
        Manager *m;

        {
                char d[512];
                snprintf(d, sizeof d, "%s/projects.d", t->dir);
                assert_int_equal(mkdir(d, 0755), 0);
        }
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        put(t->dir, "projects.d/astro.conf", "[Project]\nMembers=root\n");
        m = manager_for_test(t->dir);

        /* nobody, geo, 2024-06-01: two GPUs an hour each, 50 % and 25 %: 0.75 GPU-hours
         * used of 2 sampled. */
        charge(m, 1, 0, NOBODY, "nobody", "geo", day + 7200, 2, 3600);
        gpu(m, 1, 0, 0, 50.0, 3600);
        gpu(m, 1, 0, 1, 25.0, 3600);
        /* nobody, geo, 2024-06-01: a GPU never read (two hours): counted in no figure. */
        charge(m, 2, 0, NOBODY, "nobody", "geo", day + 7300, 1, 7200);
        gpu(m, 2, 0, 0, -1, 7200);
        /* nobody, geo, 2024-06-03: a requeued job, both runs charged, both runs' GPU rows
         * count: 100 % of an hour, then 10 % of half an hour. */
        charge(m, 3, 0, NOBODY, "nobody", "geo", day + 2 * 86400 + 100, 1, 3600);
        gpu(m, 3, 0, 0, 100.0, 3600);
        charge(m, 3, 1, NOBODY, "nobody", "geo", day + 2 * 86400 + 5000, 1, 1800);
        gpu(m, 3, 1, 0, 10.0, 1800);
        /* root, astro, 2024-06-02: 80 % of half an hour. */
        charge(m, 4, 0, 0, "root", "astro", day + 86400 + 60, 1, 1800);
        gpu(m, 4, 0, 3, 80.0, 1800);
        /* daemon, geo: GPUs held, none read: nothing known. */
        charge(m, 5, 0, 1, "daemon", "geo", day + 600, 1, 600);
        gpu(m, 5, 0, 0, -1, 600);
        /* bin (uid 2), astro: no GPU at all. */
        charge(m, 6, 0, 2, "bin", "astro", day + 700, 0, 600);
        /* A GPU row whose run has no charge (none recorded): in no report. */
        gpu(m, 7, 0, 0, 100.0, 36000);

        /* By user, all days: nobody used (1800 + 900 + 3600 + 180) s of 12600 s sampled. */
        r = usage(m, 0, "{\"by\":\"user\"}");
        p = params_of(r);
        rows = get(p, "rows");
        row = find_row(rows, "nobody");
        assert_close(get_double(row, "gpu_hours_used"), 6480.0 / 3600);
        assert_close(get_double(row, "gpu_hours_sampled"), 12600.0 / 3600);
        assert_close(get_double(row, "gpu_efficiency"), 6480.0 / 12600);
        /* Held, from the charges, still counts the GPU never read. */
        assert_close(get_double(row, "gpu_hours"), (2 * 3600 + 7200 + 3600 + 1800) / 3600.0);
        row = find_row(rows, "root");
        assert_close(get_double(row, "gpu_hours_used"), 0.4);
        assert_close(get_double(row, "gpu_efficiency"), 0.8);
        row = find_row(rows, "daemon");
        assert_true(get_double(row, "gpu_hours") > 0);
        assert_true(is_null(row, "gpu_hours_used"));
        assert_true(is_null(row, "gpu_efficiency"));
        row = find_row(rows, "bin");
        assert_true(is_null(row, "gpu_hours_used"));
        assert_true(is_null(row, "gpu_efficiency"));
        row = get(p, "total");
        assert_close(get_double(row, "gpu_hours_used"), (6480.0 + 1440) / 3600);
        assert_close(get_double(row, "gpu_efficiency"), (6480.0 + 1440) / (12600 + 1800));
        json_object_put(r);

        /* The period as the charges': 2024-06-01 and 02 only leave job 3 out. */
        r = usage(m, 0, "{\"by\":\"user\",\"since\":\"2024-06-01\",\"until\":\"2024-06-02\"}");
        row = find_row(get(params_of(r), "rows"), "nobody");
        assert_close(get_double(row, "gpu_hours_used"), 0.75);
        assert_close(get_double(row, "gpu_efficiency"), 0.375);
        json_object_put(r);

        /* By day: each run on the day it ended. */
        r = usage(m, 0, "{\"by\":\"day\"}");
        rows = get(params_of(r), "rows");
        assert_close(get_double(find_row(rows, "2024-06-01"), "gpu_hours_used"), 0.75);
        assert_close(get_double(find_row(rows, "2024-06-02"), "gpu_efficiency"), 0.8);
        assert_close(get_double(find_row(rows, "2024-06-03"), "gpu_hours_used"), 3780.0 / 3600);
        assert_close(get_double(find_row(rows, "2024-06-03"), "gpu_efficiency"), 3780.0 / 5400);
        json_object_put(r);

        /* By project, with a project filter: astro is root's 80 % and bin's nothing. */
        r = usage(m, 0, "{\"by\":\"project\",\"project\":\"astro\"}");
        rows = get(params_of(r), "rows");
        assert_int_equal(json_object_array_length(rows), 1);
        assert_close(get_double(find_row(rows, "astro"), "gpu_efficiency"), 0.8);
        json_object_put(r);

        /* nobody sees geo's rows (theirs and daemon's), not astro's: root's GPU is in no
         * figure of theirs. */
        r = usage(m, NOBODY, "{\"by\":\"project\"}");
        p = params_of(r);
        rows = get(p, "rows");
        assert_int_equal(json_object_array_length(rows), 1);
        assert_close(get_double(find_row(rows, "geo"), "gpu_hours_used"), 6480.0 / 3600);
        assert_close(get_double(get(p, "total"), "gpu_efficiency"), 6480.0 / 12600);
        json_object_put(r);

        manager_free(m);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "corral-usage-gpu");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_gpu_used, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
