/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's accounting against a tmpdir store and a manager with no executor, or one
 * with no bus over a fake cgroup tree: a run's charge at its end (suspension excluded,
 * the queue's factor), what show says of a running job (its cgroup as the executor reads
 * it, faked in the tmpdir), decayed usage and fair-share with the
 * express queue left out, the Usage report's sums and who sees which rows, a spent grant
 * sending a job to the bonus queue or refused, the metrics file. */
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
#include <time.h>
#include <unistd.h>

#include "daemon/job-outcome.h"
#include "daemon/job-table.h"
#include "daemon/manager.h"
#include "daemon/metrics.h"
#include "daemon/sched-driver.h"
#include "daemon/usage.h"
#include "json-util.h"
#include "tmp-tree.h"
#include "test-manager-call.h"

#define NOBODY 65534
#define USEC UINT64_C(1000000)

static SchedNode nodes[2];

/* cgroup_root: the executor's (one that asks systemd nothing), NULL: no executor. */
static Manager *manager_for_test_cgroup(const char *dir, const char *cgroup_root) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL, run[512];

        assert_non_null(m);
        manager_pick_backends(m);
        m->confdir = strdup(dir);
        assert_non_null(m->confdir);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", strna(err));
        assert_int_equal(store_open(dir, &m->store), 0);
        if (cgroup_root) {
                snprintf(run, sizeof run, "%s/run", dir);
                assert_int_equal(executor_new(NULL, NULL,
                                              &(ExecutorConfig) { .supervisor_path = "/nonexistent", .run_dir = run,
                                                                  .cgroup_root = cgroup_root },
                                              &m->executor),
                                 0);
        }
        assert_int_equal(accounting_new(m->store, m->executor, m->config, &m->acct), 0);
        m->sched = sched_context_new();
        assert_non_null(m->sched);
        for (unsigned k = 0; k < 2; k++) {
                nodes[k] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
                for (unsigned c = 0; c < 4; c++)
                        cpu_set_add(&nodes[k].cpus, k * 4 + c);
        }
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 2 };
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        return m;
}

static Manager *manager_for_test(const char *dir) {
        return manager_for_test_cgroup(dir, NULL);
}

static void put(const char *dir, const char *name, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void mkdir_in(const char *dir, const char *name) {
        char p[512];

        snprintf(p, sizeof p, "%s/%s", dir, name);
        assert_int_equal(mkdir(p, 0755), 0);
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

static double get_double(json_object *o, const char *key) {
        return json_object_get_double(get(o, key));
}

static void assert_close(double got, double want, double tolerance) {
        if (fabs(got - want) > tolerance)
                fail_msg("got %.9g, want %.9g (± %g)", got, want, tolerance);
}

static uint64_t submit(Manager *m, uid_t uid, const char *extra) {
        char params[512];
        json_object *r;
        uint64_t id;

        snprintf(params, sizeof params, "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\"%s}", extra);
        r = call(m, uid, CORRAL_METHOD_SUBMIT, params);
        id = (uint64_t) json_object_get_int64(get(params_of(r), "job_id"));
        json_object_put(r);
        return id;
}

/* The executor's report of a run that went from start to end, suspended for a while. */
static void finish(Manager *m, uint64_t id, uint64_t start, uint64_t wall_sec, uint64_t suspended_sec,
                   uint64_t cpu_sec) {
        JobOutcome o = {
                .id = id,
                .start_usec = start * USEC,
                .end_usec = (start + wall_sec) * USEC,
                .suspended_usec = suspended_sec * USEC,
                .cpu_usage_usec = cpu_sec * USEC,
                .memory_peak = 1 << 20,
                .io_read_bytes = 4096,
                .io_read_ios = 1,
                .io_write_ios = 2,
        };
        manager_on_job_finished(NULL, &o, m);
}

static json_object *show_charge(Manager *m, uid_t uid, uint64_t id) {
        char params[64];
        json_object *r, *job, *c;

        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);
        r = call(m, uid, CORRAL_METHOD_SHOW, params);
        job = get(params_of(r), "job");
        c = json_object_object_get_ex(job, "charge", &c) ? json_object_get(c) : NULL;
        json_object_put(r);
        return c;
}

static double share_usage(Manager *m, const char *project, double *ret_fairshare) {
        json_object *r = call(m, NOBODY, CORRAL_METHOD_SHARE, "{}"), *ps = get(params_of(r), "projects");
        double usage = -1;

        for (size_t i = 0; i < json_object_array_length(ps); i++) {
                json_object *p = json_object_array_get_idx(ps, i);
                if (streq(json_object_get_string(get(p, "name")), project)) {
                        usage = get_double(p, "usage");
                        if (ret_fairshare)
                                *ret_fairshare = get_double(p, "fairshare");
                }
        }
        json_object_put(r);
        return usage;
}

/* A run's charge: CPUs × running time without the suspension, × the queue's factor;
 * shown to the owner; in fair-share usage at the queue's factor too, never below 1:
 * express's runs count three times (they were left out, so express was free to the user
 * whose jobs suspend others'), bonus's once. */
static void test_charge_at_end(void **state) {
        Tree *t = *state;
        Manager *m;
        JobCharge c;
        json_object *ch;
        uint64_t a, b, start = (uint64_t) time(NULL) - 100;
        double usage, fs;

        uint64_t bo;
        double hl = 168 * 3600, was;

        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        put(t->dir, "projects.d/astro.conf", "[Project]\nMembers=root\n");
        put(t->dir, "corral.conf", "[Queue]\nName=express\nAllowGroups=\n");
        m = manager_for_test(t->dir);

        a = submit(m, NOBODY, ",\"cpus\":2");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, a)->state, JOB_RUNNING);
        finish(m, a, start, 10, 2, 4);
        assert_int_equal(manager_find_job(m, a)->state, JOB_COMPLETED);

        assert_int_equal(store_load_charge(m->store, a, &c), 0);
        assert_int_equal(c.cpus, 2);
        assert_int_equal(c.run_usec, 8 * USEC);
        assert_close(c.charge_factor, 1.0, 0);
        assert_close(c.service_units, 16.0 / 3600, 1e-12);

        /* The owner's view has it; somebody else's does not. */
        ch = show_charge(m, NOBODY, a);
        assert_non_null(ch);
        assert_close(get_double(ch, "core_hours"), 16.0 / 3600, 1e-12);
        assert_close(get_double(ch, "service_units"), 16.0 / 3600, 1e-12);
        assert_close(get_double(ch, "efficiency"), 0.25, 1e-12);
        assert_int_equal(json_object_get_int64(get(ch, "io_write_ops")), 2);
        assert_false(json_object_get_boolean(get(ch, "live")));
        json_object_put(ch);
        /* corral queue --long -a: the finished job's stored charge in List too. */
        {
                json_object *r = call(m, NOBODY, CORRAL_METHOD_LIST, "{\"states\":[\"COMPLETED\"],\"charges\":true}");
                json_object *jobs = get(params_of(r), "jobs"), *lc;
                assert_int_equal(json_object_array_length(jobs), 1);
                assert_true(json_object_object_get_ex(json_object_array_get_idx(jobs, 0), "charge", &lc));
                assert_close(get_double(lc, "service_units"), 16.0 / 3600, 1e-12);
                json_object_put(r);
        }
        assert_null(show_charge(m, NOBODY - 1, a));

        /* An outcome seen twice charges once. */
        {
                Job *j = manager_find_job(m, a);
                JobOutcome o = { .id = a, .start_usec = start * USEC, .end_usec = (start + 10) * USEC };
                assert_int_equal(accounting_charge_run(m->acct, j, &o, start + 10), 0);
        }

        /* Fair-share: geo has all the usage; the credit of 16 CPU-seconds over 10 s. */
        usage = share_usage(m, "geo", &fs);
        assert_close(usage, acct_decay_credit(16.0 / 3600, 10, 168 * 3600) *
                                    acct_decay_factor((uint64_t) time(NULL) - (start + 10), 168 * 3600),
                     1e-7);
        assert_close(fs, 0.0, 1e-6);
        assert_close(share_usage(m, "astro", &fs), 0.0, 0);
        assert_close(fs, 1e6, 0);

        /* express: charged at 3, and 3 core-hours of fair-share usage for its one. */
        b = submit(m, NOBODY, ",\"queue\":\"express\"");
        assert_int_equal(manager_schedule(m), 0);
        finish(m, b, start - 3600, 3600, 0, 0);
        assert_int_equal(store_load_charge(m->store, b, &c), 0);
        assert_close(c.service_units, 3.0, 1e-12);
        was = usage;
        usage = share_usage(m, "geo", NULL);
        assert_close(usage - was,
                     acct_decay_credit(3.0, 3600, hl) * acct_decay_factor((uint64_t) time(NULL) - start, hl), 1e-4);

        /* bonus: free on the grant, but its CPU-hour counts once in fair-share. */
        bo = submit(m, NOBODY, ",\"queue\":\"bonus\"");
        assert_int_equal(manager_schedule(m), 0);
        finish(m, bo, start - 3600, 3600, 0, 0);
        assert_int_equal(store_load_charge(m->store, bo, &c), 0);
        assert_close(c.service_units, 0.0, 0);
        was = usage;
        usage = share_usage(m, "geo", NULL);
        assert_close(usage - was,
                     acct_decay_credit(1.0, 3600, hl) * acct_decay_factor((uint64_t) time(NULL) - start, hl), 1e-4);

        /* Decayed usage survives a restart. */
        assert_int_equal(store_commit(m->store), 0);
        manager_free(m);
        m = manager_for_test(t->dir);
        /* Decayed to the second it is read: allow for the clock having moved on by up to
         * two seconds since (a week's half-life takes 1.1e-6 of it per second). */
        assert_close(share_usage(m, "geo", NULL), usage, usage * (1 - acct_decay_factor(2, hl)) + 1e-9);
        manager_free(m);
}

/* A running job: its charge so far, its counters read from its scope's cgroup. */
static void test_running_job(void **state) {
        Tree *t = *state;
        Manager *m;
        json_object *ch, *st;
        uint64_t a;

        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        mkdir_in(t->dir, "corral.slice");
        mkdir_in(t->dir, "corral.slice/corral-geo.slice");
        mkdir_in(t->dir, "corral.slice/corral-geo.slice/corral-job-1.scope");
        put(t->dir, "corral.slice/corral-geo.slice/corral-job-1.scope/cpu.stat",
            "usage_usec 7000000\nuser_usec 6000000\nsystem_usec 1000000\n");
        put(t->dir, "corral.slice/corral-geo.slice/corral-job-1.scope/memory.peak", "123456\n");
        put(t->dir, "corral.slice/corral-geo.slice/corral-job-1.scope/io.stat",
            "8:0 rbytes=100 wbytes=200 rios=3 wios=4 dbytes=0 dios=0\n");
        put(t->dir, "corral.slice/corral-geo.slice/corral-job-1.scope/memory.pressure",
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=5000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=2500\n");
        m = manager_for_test_cgroup(t->dir, t->dir);

        a = submit(m, NOBODY, ",\"cpus\":3");
        assert_int_equal(a, 1);
        assert_int_equal(manager_schedule(m), 0);
        manager_find_job(m, a)->start_time -= 60; /* a minute ago */
        ch = show_charge(m, NOBODY, a);
        assert_non_null(ch);
        assert_true(json_object_get_boolean(get(ch, "live")));
        assert_int_equal(json_object_get_int64(get(ch, "cpus")), 3);
        assert_close(get_double(ch, "core_hours"), 3 * 60 / 3600.0, 3 * 2 / 3600.0);
        assert_int_equal(json_object_get_int64(get(ch, "cpu_usec")), 7000000);
        assert_int_equal(json_object_get_int64(get(ch, "memory_peak")), 123456);
        assert_int_equal(json_object_get_int64(get(ch, "io_write_bytes")), 200);
        assert_int_equal(json_object_get_int64(get(ch, "io_read_ops")), 3);
        st = get(ch, "stall_usec");
        assert_int_equal(json_object_get_int64(get(st, "memory_some")), 5000);
        assert_int_equal(json_object_get_int64(get(st, "memory_full")), 2500);
        json_object_put(ch);

        /* Its usage counts as it runs: the project's fair-share usage is not 0. */
        assert_true(share_usage(m, "geo", NULL) > 0.9 * 3 * 60 / 3600.0 * acct_decay_credit(1, 60, 168 * 3600));
        manager_free(m);
}

static JobCharge charge(uint64_t id, uid_t uid, const char *user, const char *project, const char *queue,
                        uint64_t end, unsigned cpus, uint64_t run_sec, double factor) {
        JobCharge c = { .job_id = id, .uid = uid, .user = user, .project = project, .queue = queue,
                        .start_time = end - run_sec, .end_time = end, .cpus = cpus, .run_usec = run_sec * USEC,
                        .charge_factor = factor, .cpu_usec = run_sec * USEC, .memory_peak = id * 1000,
                        .io_read_ops = 1, .has_pressure = true };
        c.stall_usec[ACCT_STALL_IO_SOME] = USEC;
        acct_charge_compute(&c);
        return c;
}

static json_object *find_row(json_object *rows, const char *key) {
        for (size_t i = 0; i < json_object_array_length(rows); i++)
                if (streq(json_object_get_string(get(json_object_array_get_idx(rows, i), "key")), key))
                        return json_object_array_get_idx(rows, i);
        return NULL;
}

/* Reports sum the per-day summary by key; a user sees their own rows and their projects'. */
static void test_report(void **state) {
        Tree *t = *state;
        const uint64_t day = 1717200000; /* 2024-06-01 00:00 UTC */
        Manager *m;
        json_object *r, *p, *rows, *row;
        uint64_t id = 1;

        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody daemon\n");
        put(t->dir, "projects.d/astro.conf", "[Project]\nMembers=daemon root\n");
        m = manager_for_test(t->dir);

        /* Three days; nobody in geo; daemon (uid 1) in geo and astro; root in astro. */
        for (unsigned d = 0; d < 3; d++)
                for (unsigned k = 0; k < 4; k++) {
                        uint64_t end = day + d * 86400 + 3600 + k;
                        JobCharge cs[] = {
                                charge(id, NOBODY, "nobody", "geo", "normal", end, 2, 3600, 1.0),
                                charge(id + 1, 1, "daemon", "geo", "express", end, 1, 1800, 3.0),
                                charge(id + 2, 1, "daemon", "astro", "normal", end, 4, 900, 1.0),
                                charge(id + 3, 0, "root", "astro", "normal", end, 1, 3600, 1.0),
                        };
                        id += ELEMENTSOF(cs);
                        for (size_t i = 0; i < ELEMENTSOF(cs); i++)
                                assert_int_equal(store_record_charge(m->store, &cs[i]), 0);
                }
        assert_int_equal(store_record_charge(m->store, &(JobCharge) { .job_id = 1, .user = "x", .project = "y",
                                                                     .queue = "z" }),
                         -EEXIST);

        /* Admin, by project, all days: geo = 12 × (2 + 0.5) core-hours, SU 12 × (2 + 1.5). */
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"project\"}");
        p = params_of(r);
        assert_true(json_object_get_boolean(get(p, "all")));
        rows = get(p, "rows");
        assert_int_equal(json_object_array_length(rows), 2);
        row = find_row(rows, "geo");
        assert_non_null(row);
        assert_int_equal(json_object_get_int64(get(row, "jobs")), 24);
        assert_close(get_double(row, "core_hours"), 30.0, 1e-9);
        assert_close(get_double(row, "service_units"), 42.0, 1e-9);
        assert_close(get_double(row, "efficiency"), 12 * (2.0 / 2 + 0.5) / 30.0, 1e-9);
        assert_close(get_double(get(row, "stall_sec"), "io_some"), 24.0, 1e-9);
        assert_int_equal(json_object_get_int64(get(row, "memory_peak")), 46 * 1000); /* the largest */
        row = find_row(rows, "astro");
        assert_close(get_double(row, "core_hours"), 12 * (1.0 + 1.0), 1e-9);
        assert_close(get_double(get(p, "total"), "core_hours"), 54.0, 1e-9);
        json_object_put(r);

        /* By day, one day only; by queue. */
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"day\",\"since\":\"2024-06-02\",\"until\":\"2024-06-02\"}");
        rows = get(params_of(r), "rows");
        assert_int_equal(json_object_array_length(rows), 1);
        row = find_row(rows, "2024-06-02");
        assert_non_null(row);
        assert_int_equal(json_object_get_int64(get(row, "jobs")), 16);
        assert_close(get_double(row, "core_hours"), 4 * (2 + 0.5 + 1 + 1), 1e-9);
        json_object_put(r);
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"queue\"}");
        rows = get(params_of(r), "rows");
        assert_close(get_double(find_row(rows, "express"), "service_units"), 12 * 1.5, 1e-9);
        json_object_put(r);

        /* nobody: their own rows and geo's (daemon's express runs there), not astro's. */
        r = call(m, NOBODY, CORRAL_METHOD_USAGE, "{\"by\":\"user\"}");
        p = params_of(r);
        assert_false(json_object_get_boolean(get(p, "all")));
        rows = get(p, "rows");
        assert_int_equal(json_object_array_length(rows), 2);
        assert_close(get_double(find_row(rows, "nobody"), "core_hours"), 24.0, 1e-9);
        assert_close(get_double(find_row(rows, "daemon"), "core_hours"), 6.0, 1e-9);
        assert_null(find_row(rows, "root"));
        json_object_put(r);

        /* Bad parameters are named. */
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"color\"}");
        assert_non_null(strstr(json_object_to_json_string(r), "InvalidParameter"));
        json_object_put(r);
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"since\":\"June\"}");
        assert_non_null(strstr(json_object_to_json_string(r), "since"));
        json_object_put(r);
        manager_free(m);
}

/* A spent grant: the next job goes to the bonus queue, or, with OnGrantSpent=refuse, is refused. */
static void test_grant(void **state) {
        Tree *t = *state;
        Manager *m;
        json_object *r;
        char *err = NULL;
        uint64_t a, b, now = (uint64_t) time(NULL);

        put(t->dir, "corral.conf",
            "[Queue]\nName=normal\nPriority=1\nChargeFactor=1000\n\n[Queue]\nName=bonus\nPriority=0\nChargeFactor=0\n");
        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\nGrant=1\nGrantPeriod=30d\n");
        m = manager_for_test(t->dir);

        a = submit(m, NOBODY, "");
        assert_string_equal(job_queue(manager_find_job(m, a)), "normal");
        assert_int_equal(manager_schedule(m), 0);
        finish(m, a, now - 20, 10, 0, 10); /* 10 s × 1000 = 2.8 SU of 1 */

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\"}");
        b = (uint64_t) json_object_get_int64(get(params_of(r), "job_id"));
        assert_non_null(strstr(json_object_get_string(get(params_of(r), "notice")), "spent its grant"));
        json_object_put(r);
        assert_string_equal(job_queue(manager_find_job(m, b)), "bonus");

        /* Share says so. */
        r = call(m, NOBODY, CORRAL_METHOD_SHARE, "{}");
        {
                json_object *g = json_object_array_get_idx(get(params_of(r), "projects"), 0);
                assert_string_equal(json_object_get_string(get(g, "name")), "geo");
                assert_close(get_double(g, "grant_used"), 10.0 / 3600 * 1000, 1e-9);
                assert_close(get_double(g, "grant_left"), 0.0, 0);
        }
        json_object_put(r);

        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\nGrant=1\nGrantPeriod=30d\nOnGrantSpent=refuse\n");
        assert_int_equal(manager_reload(m, &err), 0);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\"}");
        if (!strstr(json_object_to_json_string(r), "QuotaExceeded") ||
            !strstr(json_object_to_json_string(r), "spent its grant"))
                fail_msg("expected a refusal: %s", json_object_to_json_string(r));
        json_object_put(r);
        /* The bonus queue, asked for by name, still takes it: it charges nothing. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\",\"queue\":\"bonus\"}");
        params_of(r);
        json_object_put(r);
        manager_free(m);
}

static JobState state_of(Manager *m, uint64_t id) {
        Job *j = manager_find_job(m, id);
        assert_non_null(j);
        return j->state;
}

static json_object *call_job(Manager *m, uid_t uid, CorralMethod method, uint64_t id) {
        char params[64];

        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);
        return call(m, uid, method, params);
}

/* A grant spent after the jobs were submitted: tasks held from before, then released,
 * and a finished job requeued, do not start in the charging queue: they wait BLOCKED
 * with the grant's numbers (OnGrantSpent=refuse), shown by Show and Why; with
 * OnGrantSpent=bonus they go to the bonus queue and start there, as a submission would. */
static void test_grant_after_submission(void **state) {
        Tree *t = *state;
        Manager *m;
        json_object *r;
        char *err = NULL;
        const char *why;
        uint64_t a, arr, now = (uint64_t) time(NULL);

        put(t->dir, "corral.conf",
            "[Queue]\nName=normal\nPriority=1\nChargeFactor=1000\n\n"
            "[Queue]\nName=bonus\nPriority=0\nChargeFactor=0\n");
        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf",
            "[Project]\nMembers=nobody\nGrant=1\nGrantPeriod=30d\nOnGrantSpent=refuse\n");
        m = manager_for_test(t->dir);

        /* Submitted while the grant was whole: a job that runs, three held tasks. */
        a = submit(m, NOBODY, "");
        arr = submit(m, NOBODY, ",\"hold\":true,\"array\":\"1-3\"");
        assert_string_equal(job_queue(manager_find_job(m, arr)), "normal");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(state_of(m, a), JOB_RUNNING);
        finish(m, a, now - 20, 10, 0, 10); /* 10 s × 1000 = 2.78 SU of 1 */
        m->n_to_launch = 0;

        for (uint64_t id = arr; id < arr + 3; id++) {
                r = call_job(m, NOBODY, CORRAL_METHOD_RELEASE, id);
                params_of(r);
                json_object_put(r);
        }
        r = call_job(m, NOBODY, CORRAL_METHOD_REQUEUE, a);
        params_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(m->n_to_launch, 0);
        for (uint64_t id = arr; id < arr + 3; id++) {
                Job *j = manager_find_job(m, id);
                assert_int_equal(j->state, JOB_BLOCKED);
                assert_string_equal(job_reason(j), "Grant");
                assert_string_equal(job_queue(j), "normal");
                assert_int_equal(j->limit_value, 100);
                assert_int_equal(j->limit_wanted, 278);
        }
        assert_int_equal(state_of(m, a), JOB_BLOCKED);
        assert_string_equal(job_reason(manager_find_job(m, a)), "Grant");

        /* corral show and corral why say so, with the numbers. */
        r = call_job(m, NOBODY, CORRAL_METHOD_SHOW, arr);
        assert_string_equal(json_object_get_string(get(get(params_of(r), "job"), "reason")),
                            "Grant (used 2.78 of 1 SU)");
        json_object_put(r);
        r = call_job(m, NOBODY, CORRAL_METHOD_WHY, arr);
        why = json_object_to_json_string(get(params_of(r), "why"));
        if (!strstr(why, "has spent its grant: 2.78 of 1 service units") ||
            !strstr(why, "OnGrantSpent=refuse"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* Still spent: still blocked, pass after pass. */
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(state_of(m, a), JOB_BLOCKED);
        assert_int_equal(m->n_to_launch, 0);

        /* OnGrantSpent=bonus: they go where a new submission would, and start there. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\nGrant=1\nGrantPeriod=30d\n");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_int_equal(manager_schedule(m), 0);
        for (uint64_t id = arr; id < arr + 3; id++) {
                assert_int_equal(state_of(m, id), JOB_RUNNING);
                assert_string_equal(job_queue(manager_find_job(m, id)), "bonus");
        }
        assert_int_equal(state_of(m, a), JOB_RUNNING);
        assert_string_equal(job_queue(manager_find_job(m, a)), "bonus");
        m->n_to_launch = 0;
        manager_free(m);
}

/* The textfile: written whole, renamed into place, in the exposition format. */
static void test_metrics(void **state) {
        Tree *t = *state;
        _cleanup_free_ char *text = NULL;
        char path[256], conf[320];
        Manager *m;
        uint64_t a;

        snprintf(path, sizeof path, "%s/metrics/corral.prom", t->dir);
        mkdir_in(t->dir, "metrics");
        snprintf(conf, sizeof conf, "[Manager]\nMetricsFile=%s\n", path);
        put(t->dir, "corral.conf", conf);
        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        m = manager_for_test(t->dir);
        a = submit(m, NOBODY, ",\"cpus\":2");
        (void) submit(m, NOBODY, ",\"hold\":true");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, a)->state, JOB_RUNNING);

        assert_string_equal(manager_metrics_path(m), path);
        assert_int_equal(manager_write_metrics(m), 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "# TYPE corral_jobs gauge\n"));
        assert_non_null(strstr(text, "corral_jobs{state=\"RUNNING\"} 1\n"));
        assert_non_null(strstr(text, "corral_jobs{state=\"HELD\"} 1\n"));
        assert_non_null(strstr(text, "corral_cpus_in_use 2\n"));
        assert_non_null(strstr(text, "corral_cpus 8\n"));
        assert_non_null(strstr(text, "corral_project_usage_core_hours{project=\"geo\"} "));
        assert_non_null(strstr(text, "# TYPE corral_project_core_hours_total counter\n"));
        /* Nothing left behind but the file. */
        {
                char cmd[400];
                snprintf(cmd, sizeof cmd, "test $(ls '%s/metrics' | wc -l) = 1", t->dir);
                assert_int_equal(system(cmd), 0);
        }
        manager_free(m);
}

/* Shard runs: each charged K/N of its GPU's hours (a quarter of an hour per hour for 1 of
 * 4 shards), in service units, the Usage report and Show; a GPU two shard jobs share is
 * one GPU in use in the metrics. */
static void test_shard_charge(void **state) {
        Tree *t = *state;
        static Device devs[1] = { { .name = (char *) "gpu0", .numa_node = 0 } };
        static const SchedGpu sgpus[1] = { { .node = 0, .shards = 4 } };
        DeviceSet ds = { .devices = devs, .n_devices = 1 };
        _cleanup_free_ char *text = NULL;
        char path[256], conf[400];
        uint64_t a, b, start = (uint64_t) time(NULL) - 7200;
        json_object *r, *ch;
        JobCharge c;
        Manager *m;

        snprintf(path, sizeof path, "%s/metrics/corral.prom", t->dir);
        mkdir_in(t->dir, "metrics");
        snprintf(conf, sizeof conf, "[Manager]\nMetricsFile=%s\nChargePerGPUHour=4\n", path);
        put(t->dir, "corral.conf", conf);
        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        m = manager_for_test(t->dir);
        m->devices = &ds;
        m->machine.gpus = sgpus;
        m->machine.n_gpus = 1;

        a = submit(m, NOBODY, ",\"cpus\":1,\"shards\":1");
        b = submit(m, NOBODY, ",\"cpus\":1,\"shards\":2");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, a)->state, JOB_RUNNING);
        assert_int_equal(manager_find_job(m, b)->state, JOB_RUNNING);
        assert_int_equal(manager_write_metrics(m), 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "corral_gpus_in_use 1\n"));
        text = mfree(text);

        finish(m, a, start, 3600, 0, 0);
        assert_int_equal(store_load_charge(m->store, a, &c), 0);
        assert_int_equal(c.gpus, 1);
        assert_close(c.gpu_hours, 0.25, 1e-12);
        /* (1 core-hour + 0.25 GPU-hours x 4) x 1 */
        assert_close(c.service_units, 2.0, 1e-12);
        ch = show_charge(m, NOBODY, a);
        assert_non_null(ch);
        assert_close(get_double(ch, "gpu_hours"), 0.25, 1e-12);
        assert_close(get_double(ch, "service_units"), 2.0, 1e-12);
        json_object_put(ch);

        finish(m, b, start, 3600, 0, 0);
        assert_int_equal(store_load_charge(m->store, b, &c), 0);
        assert_close(c.gpu_hours, 0.5, 1e-12);
        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"project\"}");
        assert_close(get_double(get(params_of(r), "total"), "gpu_hours"), 0.75, 1e-9);
        json_object_put(r);

        m->devices = NULL; /* not the manager's */
        manager_free(m);
}

/* A GPU run: its GPUs and GPU-hours recorded, charged at ChargePerGPUHour= core-hours
 * each (times the queue's factor), counted so in fair-share, summed per project in the
 * Usage report and the metrics; its utilisation "not recorded" (no vendor library). */
static void test_gpu_charge(void **state) {
        Tree *t = *state;
        static Device devs[2] = { { .name = (char *) "gpu0", .numa_node = 0 }, { .name = (char *) "gpu1", .numa_node = 1 } };
        static const SchedGpu sgpus[2] = { { .node = 0 }, { .node = 1 } };
        DeviceSet ds = { .devices = devs, .n_devices = 2 };
        _cleanup_free_ char *text = NULL;
        char path[256], conf[400];
        uint64_t a, start = (uint64_t) time(NULL) - 7200;
        json_object *r, *ch, *row;
        JobCharge c;
        Manager *m;
        double before;

        snprintf(path, sizeof path, "%s/metrics/corral.prom", t->dir);
        mkdir_in(t->dir, "metrics");
        snprintf(conf, sizeof conf, "[Manager]\nMetricsFile=%s\nChargePerGPUHour=4\n", path);
        put(t->dir, "corral.conf", conf);
        mkdir_in(t->dir, "projects.d");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        m = manager_for_test(t->dir);
        m->devices = &ds;
        m->machine.gpus = sgpus;
        m->machine.n_gpus = 2;
        before = share_usage(m, "geo", NULL);

        a = submit(m, NOBODY, ",\"cpus\":1,\"gpus\":2");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, a)->state, JOB_RUNNING);
        assert_int_equal(manager_write_metrics(m), 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "corral_gpus_in_use 2\n"));
        assert_non_null(strstr(text, "corral_gpus 2\n"));
        text = mfree(text);

        finish(m, a, start, 3600, 0, 0);
        assert_int_equal(store_load_charge(m->store, a, &c), 0);
        assert_int_equal(c.gpus, 2);
        assert_close(c.charge_per_gpu_hour, 4.0, 0);
        assert_close(c.gpu_hours, 2.0, 1e-12);
        /* (1 core-hour + 2 GPU-hours x 4) x 1 */
        assert_close(c.service_units, 9.0, 1e-12);

        ch = show_charge(m, NOBODY, a);
        assert_non_null(ch);
        assert_int_equal(json_object_get_int64(get(ch, "gpus")), 2);
        assert_close(get_double(ch, "gpu_hours"), 2.0, 1e-12);
        assert_close(get_double(ch, "service_units"), 9.0, 1e-12);
        assert_string_equal(json_object_get_string(get(ch, "gpu_utilization")), "not recorded");
        json_object_put(ch);

        /* Fair-share counts the GPU-hours at their weight: 9 hours' worth, not 1. */
        assert_close(share_usage(m, "geo", NULL) - before,
                     acct_decay_credit(9.0, 3600, 168 * 3600) *
                             acct_decay_factor((uint64_t) time(NULL) - (start + 3600), 168 * 3600),
                     1e-4);

        r = call(m, 0, CORRAL_METHOD_USAGE, "{\"by\":\"project\"}");
        row = json_object_array_get_idx(get(params_of(r), "rows"), 0);
        assert_string_equal(json_object_get_string(get(row, "key")), "geo");
        assert_close(get_double(row, "gpu_hours"), 2.0, 1e-9);
        assert_close(get_double(row, "core_hours"), 1.0, 1e-9);
        assert_close(get_double(get(params_of(r), "total"), "gpu_hours"), 2.0, 1e-9);
        json_object_put(r);

        assert_int_equal(manager_write_metrics(m), 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "corral_gpus_in_use 0\n"));
        assert_non_null(strstr(text, "corral_project_gpu_hours_total{project=\"geo\"} 2.000000\n"));

        m->devices = NULL; /* not the manager's */
        manager_free(m);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "corral-usage");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_charge_at_end, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_running_job, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_report, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_grant, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_grant_after_submission, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_metrics, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_shard_charge, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_gpu_charge, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
