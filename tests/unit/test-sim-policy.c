/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The simulator's policies: queues, projects and their limits from a configuration read
 * by the daemon's parsers, fair-share reckoned as the daemon's accounting does, and the
 * suspensions a scheduling core decides (here a stand-in policy). On a synthetic mix:
 * every job runs, and with fair-share a heavy project no longer takes the machine from a
 * light one. Preemption by the real core: test-sim-preempt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "sim-mix.h"

static int parse_string(const char *text, SwfTrace *t) {
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        int r;

        assert_non_null(f);
        r = swf_parse(f, "mem.swf", t, NULL);
        fclose(f);
        return r;
}

static void test_map_parse(void **state) {
        SimMap *m = NULL;
        size_t n = 0;
        char *err = NULL;

        assert_int_equal(sim_map_parse("1=express,2=normal,-1=bonus", &m, &n, &err), 0);
        assert_int_equal(n, 3);
        assert_int_equal(m[0].number, 1);
        assert_string_equal(m[0].name, "express");
        assert_int_equal(m[2].number, -1);
        assert_string_equal(m[2].name, "bonus");
        sim_map_free(m, n);

        static const char *const bad[] = { "1", "=normal", "x=normal", "1=", "1=a b", "1=a,1=b", "" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(sim_map_parse(bad[i], &m, &n, &err), -EINVAL);
                assert_non_null(err);
                free(err);
                err = NULL;
        }
}

static const char conf_queues[] =
        "[Manager]\n"
        "FairShareHalfLife=4h\n"
        "[Queue]\n"
        "Name=express\n"
        "Priority=2\n"
        "Preempts=\n" /* the built-in express's Preempts=normal, off */
        "[Queue]\n"
        "Name=normal\n"
        "Priority=1\n"
        "MaxWalltime=2h\n";

/* Queues from field 15 through the map, their priority and walltime limit; projects
 * named from field 13; a job over its queue's limit is refused, not left to wait forever. */
static void test_queues(void **state) {
        static const char trace[] =
                "; MaxProcs: 4\n"
                "1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 2 -1 -1 -1\n"    /* normal */
                "2 10 -1 100 4 -1 -1 4 100 -1 1 2 2 -1 2 -1 -1 -1\n"   /* normal */
                "3 20 -1 50 4 -1 -1 4 50 -1 1 3 3 -1 1 -1 -1 -1\n"     /* express: before 2 */
                "4 30 -1 50 4 -1 -1 4 9000 -1 1 3 3 -1 2 -1 -1 -1\n"   /* over 2h: refused */
                "5 40 -1 10 1 -1 -1 1 10 -1 1 3 3 -1 7 -1 -1 -1\n";    /* unmapped: normal */
        _cleanup_(config_freep) Config *c = NULL;
        SimJobResult res[5];
        SimOptions o = {
                .results = res,
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
                .project_map = mix_project_map,
                .n_project_map = ELEMENTSOF(mix_project_map),
        };
        char *err = NULL;
        SimStats st;
        SwfTrace t;

        assert_int_equal(parse_string(trace, &t), 0);
        /* A map needs a configuration. */
        assert_int_equal(sim_run(&t, &o, &st, &err), -EINVAL);
        free(err);
        err = NULL;
        assert_int_equal(mix_config(conf_queues, NULL, &c, &err), 0);
        o.config = c;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 4);
        assert_int_equal(st.skipped_refused, 1);
        assert_int_equal(res[0].wait, 0);
        assert_int_equal(res[2].wait, 100 - 20);         /* express first, at 100 */
        assert_int_equal(res[1].wait, 150 - 10);
        assert_int_equal(res[3].wait, -1);
        assert_int_equal(res[4].wait, 250 - 40);
        assert_int_equal(st.n_queues, 2);
        assert_string_equal(st.queues[0].name, "express");
        assert_int_equal(st.queues[0].jobs, 1);
        assert_string_equal(st.queues[1].name, "normal");
        assert_int_equal(st.queues[1].jobs, 3);
        assert_float_equal(st.queues[1].avg_wait, (0 + 140 + 210) / 3.0, 1e-9);
        assert_int_equal(st.n_projects, 3);
        assert_non_null(mix_group(st.projects, st.n_projects, "heavy"));
        assert_non_null(mix_group(st.projects, st.n_projects, "light"));
        assert_int_equal(mix_group(st.projects, st.n_projects, "g3")->jobs, 2);
        sim_stats_done(&st);

        /* A map naming no queue of the configuration. */
        static const SimMap bad[] = { { 1, (char *) "nosuch" } };
        o.queue_map = bad;
        o.n_queue_map = 1;
        assert_int_equal(sim_run(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "nosuch"));
        free(err);
        swf_trace_done(&t);
}

/* What the stand-in pass saw: the fair-share factor of jobs 3 and 4 at 3600. */
static double seen_fairshare[2];

static int record_pass(void *userdata, SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                       const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        for (size_t i = 0; i < n_jobs; i++)
                if (now == 3600 && jobs[i].state == SCHED_JOB_PENDING && (jobs[i].id == 3 || jobs[i].id == 4))
                        seen_fairshare[jobs[i].id - 3] = jobs[i].fairshare;
        return sched_pass(ctx, config, machine, jobs, n_jobs, now, ret);
}

/* acct_decay_credit() in closed form: amount spread over s seconds ending now, decayed. */
static double credit(double amount, double s, double h) {
        return amount * (1.0 - exp2(-s / h)) / (s / h * M_LN2);
}

/* The daemon's fair-share, by hand: project g1 ran 1 CPU over [0, 3600), g2 1 CPU over
 * [0, 1800); half-life 1 h. At 3600 both wait with 2 CPUs each; g2, the lighter, goes
 * first though submitted second. */
static void test_fairshare_formula(void **state) {
        static const char trace[] =
                "; MaxProcs: 2\n"
                "1 0 -1 3600 1 -1 -1 1 3600 -1 1 1 1 -1 2 -1 -1 -1\n"
                "2 0 -1 1800 1 -1 -1 1 1800 -1 1 2 2 -1 2 -1 -1 -1\n"
                "3 1800 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 2 -1 -1 -1\n"
                "4 1801 -1 100 2 -1 -1 2 100 -1 1 2 2 -1 2 -1 -1 -1\n";
        _cleanup_(config_freep) Config *c = NULL;
        SimJobResult res[4];
        SimOptions o = { .results = res, .pass = record_pass, .fairshare = true };
        double u1 = credit(1.0, 3600, 3600), u2 = credit(0.5, 1800, 3600) * exp2(-0.5);
        char *err = NULL;
        SimStats st;
        SwfTrace t;

        assert_int_equal(parse_string(trace, &t), 0);
        assert_int_equal(mix_config("[Manager]\nFairShareHalfLife=1h\n", NULL, &c, &err), 0);
        o.config = c;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        print_message("fair-share at 3600: g1 %.3f (want %.3f), g2 %.3f (want %.3f)\n", seen_fairshare[0],
                      1e6 * (1 - u1 / (u1 + u2)), seen_fairshare[1], 1e6 * (1 - u2 / (u1 + u2)));
        assert_float_equal(seen_fairshare[0], 1e6 * (1 - u1 / (u1 + u2)), 1e-3);
        assert_float_equal(seen_fairshare[1], 1e6 * (1 - u2 / (u1 + u2)), 1e-3);
        assert_int_equal(res[3].wait, 3600 - 1801);
        assert_int_equal(res[2].wait, 3700 - 1800);
        sim_stats_done(&st);

        /* Off: submission order. */
        o.fairshare = false;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        assert_int_equal(res[2].wait, 3600 - 1800);
        assert_int_equal(res[3].wait, 3700 - 1801);
        sim_stats_done(&st);
        swf_trace_done(&t);
}

/* A project's [Limits]: heavy may hold 32 CPUs at once, whatever is free. */
static void test_limits(void **state) {
        static const MixStream streams[] = {
                { MIX_HEAVY, MIX_QUEUE_NORMAL, 16, 600, 1800, 100, 300, 1.0 },
                { MIX_LIGHT, MIX_QUEUE_NORMAL, 8, 300, 900, 600, 1800, 1.0 },
        };
        static const char *const projects[] = {
                "heavy", "[Project]\nMembers=u1\n[Limits]\nMaxCPUs=32\n",
                NULL,
        };
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ SimJobResult *res = NULL;
        SimOptions o = {
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
                .project_map = mix_project_map,
                .n_project_map = ELEMENTSOF(mix_project_map),
        };
        unsigned peak = 0;
        char *err = NULL;
        SimStats st;
        SwfTrace t;

        assert_int_equal(mix_make(streams, ELEMENTSOF(streams), 20000, 7, &t), 0);
        assert_int_equal(mix_config(conf_queues, projects, &c, &err), 0);
        assert_non_null(res = calloc(t.n_jobs, sizeof *res));
        o.config = c;
        o.results = res;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, t.n_jobs);
        /* Heavy's CPUs in use at each of its starts. */
        for (size_t i = 0; i < t.n_jobs; i++) {
                int64_t at = t.jobs[i].submit + res[i].wait;
                unsigned cpus = 0;

                if (t.jobs[i].group != MIX_HEAVY)
                        continue;
                for (size_t k = 0; k < t.n_jobs; k++) {
                        int64_t start = t.jobs[k].submit + res[k].wait;
                        if (t.jobs[k].group == MIX_HEAVY && start <= at && at < start + res[k].run)
                                cpus += (unsigned) t.jobs[k].procs_req;
                }
                peak = MAX(peak, cpus);
        }
        print_message("heavy's peak CPUs under MaxCPUs=32: %u\n", peak);
        assert_int_equal(peak, 32);
        sim_stats_done(&st);
        swf_trace_done(&t);
}

/* A heavy project keeps a 64-CPU machine full with long jobs; a light one submits short
 * small jobs now and then. */
static const MixStream fair_streams[] = {
        { MIX_HEAVY, MIX_QUEUE_NORMAL, 16, 1200, 3600, 220, 660, 1.0 },
        { MIX_LIGHT, MIX_QUEUE_NORMAL, 4, 60, 600, 600, 1800, 1.0 },
};

static void run_mix(const SwfTrace *t, const Config *c, bool fairshare, SimStats *ret) {
        SimOptions o = {
                .config = c,
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
                .project_map = mix_project_map,
                .n_project_map = ELEMENTSOF(mix_project_map),
                .fairshare = fairshare,
        };
        char *err = NULL;

        if (sim_run(t, &o, ret, &err) < 0)
                fail_msg("%s", err);
}

/* Every job runs, with fair-share on or off, and with it on the light project is no
 * longer starved by the heavy one: Jain's index of the projects' mean slowdowns rises and
 * the light project's mean wait falls several times. Over several seeds: not one lucky
 * mix. */
static void test_fairshare_mix(void **state) {
        _cleanup_(config_freep) Config *c = NULL;
        char *err = NULL;

        assert_int_equal(mix_config(conf_queues, NULL, &c, &err), 0);
        for (uint64_t seed = 1; seed <= 4; seed++) {
                const SimGroupStats *h[2], *l[2];
                SimStats st[2];
                SwfTrace t;

                assert_int_equal(mix_make(fair_streams, ELEMENTSOF(fair_streams), 40000, seed, &t), 0);
                for (int fs = 0; fs < 2; fs++) {
                        run_mix(&t, c, fs, &st[fs]);
                        /* No starvation: every job of the trace ran. */
                        assert_int_equal(st[fs].simulated, t.n_jobs);
                        assert_int_equal(st[fs].skipped, 0);
                        assert_non_null(h[fs] = mix_group(st[fs].projects, st[fs].n_projects, "heavy"));
                        assert_non_null(l[fs] = mix_group(st[fs].projects, st[fs].n_projects, "light"));
                        assert_int_equal(h[fs]->jobs + l[fs]->jobs, t.n_jobs);
                        print_message("seed %d fair-share %-3s: utilization %.3f, heavy wait %.0f s bsld %.2f, "
                                      "light wait %.0f s bsld %.2f, Jain %.4f\n", (int) seed, fs ? "on" : "off",
                                      st[fs].utilization, h[fs]->avg_wait, h[fs]->avg_bsld, l[fs]->avg_wait,
                                      l[fs]->avg_bsld, st[fs].jain_bsld);
                }
                /* The machine was kept full: the heavy project is a real competitor. */
                assert_true(st[0].utilization > 0.9);
                assert_true(st[1].jain_bsld > st[0].jain_bsld);
                assert_true(l[1]->avg_wait * 3 < l[0]->avg_wait);
                sim_stats_done(&st[0]);
                sim_stats_done(&st[1]);
                swf_trace_done(&t);
        }
}

/* The stand-in policies below decide suspensions themselves: the core under them must
 * not resume on its own what they suspended, so it sees their suspended jobs as a
 * person's suspensions (not preempted: holding their CPUs until told otherwise). */
static int core_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                     const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        static SchedJob copy[16];

        assert_true(n_jobs <= ELEMENTSOF(copy));
        for (size_t i = 0; i < n_jobs; i++) {
                copy[i] = jobs[i];
                copy[i].preempted = false;
        }
        return sched_pass(ctx, config, machine, copy, n_jobs, now, ret);
}

/* A stand-in preemption policy, to check what the simulator does with SUSPEND and
 * RESUME: job 2 (express) suspends job 1 and takes its CPUs; job 1 resumes once job 2
 * is done. */
static SchedDecision fake[4];

static int suspending_pass(void *userdata, SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                           const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        bool bad = userdata != NULL;
        ssize_t victim = -1, express = -1;
        bool express_done = true;
        size_t n = 0;
        int r;

        r = core_pass(ctx, config, machine, jobs, n_jobs, now, ret);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_jobs; i++) {
                if (jobs[i].id == 1)
                        victim = (ssize_t) i;
                if (jobs[i].id == 2 && jobs[i].state != SCHED_JOB_DONE) {
                        express = (ssize_t) i;
                        express_done = false;
                }
        }
        for (size_t i = 0; i < ret->n_decisions && n < ELEMENTSOF(fake) - 2; i++)
                fake[n++] = ret->decisions[i];
        if (victim >= 0 && express >= 0 && jobs[express].state == SCHED_JOB_PENDING &&
            (jobs[victim].state == SCHED_JOB_RUNNING || bad)) {
                fake[n++] = (SchedDecision) { .type = SCHED_DECISION_SUSPEND, .job_index = (size_t) victim,
                                              .job_id = 1 };
                fake[n++] = (SchedDecision) { .type = SCHED_DECISION_START, .job_index = (size_t) express,
                                              .job_id = 2,
                                              .alloc = jobs[victim].alloc ? *jobs[victim].alloc : (SchedAllocation) {} };
        } else if (victim >= 0 && express_done && jobs[victim].state == SCHED_JOB_SUSPENDED)
                fake[n++] = (SchedDecision) { .type = SCHED_DECISION_RESUME, .job_index = (size_t) victim,
                                              .job_id = 1 };
        ret->decisions = fake;
        ret->n_decisions = n;
        return 0;
}

static void test_suspend_resume(void **state) {
        static const char trace[] =
                "; MaxProcs: 4\n"
                "1 0 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 2 -1 -1 -1\n"  /* normal, runs [0, 200) and [300, 1100) */
                "2 200 -1 100 4 -1 -1 4 100 -1 1 2 2 -1 1 -1 -1 -1\n"  /* express, [200, 300) */
                "3 250 -1 10 4 -1 -1 4 10 -1 1 2 2 -1 2 -1 -1 -1\n";   /* normal, after job 1 */
        _cleanup_(config_freep) Config *c = NULL;
        SimJobResult res[3];
        SimOptions o = {
                .results = res,
                .pass = suspending_pass,
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
        };
        const SimGroupStats *normal;
        char *err = NULL, *out = NULL;
        size_t size = 0;
        SimStats st;
        SwfTrace t;
        FILE *in, *f;

        assert_int_equal(parse_string(trace, &t), 0);
        assert_int_equal(mix_config(conf_queues, NULL, &c, &err), 0);
        o.config = c;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        assert_int_equal(st.suspensions, 1);
        assert_int_equal(st.resumes, 1);
        assert_int_equal(res[0].wait, 0);
        assert_int_equal(res[0].suspensions, 1);
        assert_int_equal(res[0].suspended, 100);
        assert_int_equal(res[1].wait, 0);
        /* Job 1 ends at 1100, its deadline moved by the 100 s it stood still: job 3 after it. */
        assert_int_equal(res[2].wait, 1100 - 250);
        assert_float_equal(st.max_xfactor, 1.1, 1e-9);
        assert_non_null(normal = mix_group(st.queues, st.n_queues, "normal"));
        assert_int_equal(normal->suspensions, 1);
        assert_int_equal(normal->suspended_jobs, 1);
        assert_float_equal(normal->avg_xfactor, (1.1 + 1.0) / 2, 1e-9);
        assert_float_equal(normal->xfactor_ok, 1.0, 1e-9);
        /* Bounded slowdown counts the time suspended: job 1's flow is 1100 s for 1000 s run. */
        assert_float_equal(normal->max_bsld, (850 + 10) / 10.0, 1e-9);
        assert_int_equal(mix_group(st.queues, st.n_queues, "express")->suspensions, 0);
        sim_stats_done(&st);

        /* The schedule's field 4 is from start to end: suspended time included. */
        in = fmemopen((void *) trace, strlen(trace), "r");
        f = open_memstream(&out, &size);
        assert_int_equal(sim_write_schedule(in, "mem.swf", &t, res, NULL, f, &err), 0);
        fclose(in);
        fclose(f);
        assert_non_null(strstr(out, "1 0 0 1100 4 "));
        assert_non_null(strstr(out, "3 250 850 10 4 "));
        free(out);

        /* A core that suspends what is not running is a bug the simulation reports. */
        o.pass_userdata = (void *) 1;
        o.results = NULL;
        fake[0] = (SchedDecision) {};
        {
                static const char trace2[] =
                        "; MaxProcs: 4\n"
                        "1 0 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 2 -1 -1 -1\n"
                        "2 0 -1 100 4 -1 -1 4 100 -1 1 2 2 -1 1 -1 -1 -1\n";
                SwfTrace t2;

                assert_int_equal(parse_string(trace2, &t2), 0);
                assert_int_equal(sim_run(&t2, &o, &st, &err), -EPROTO);
                print_message("%s\n", err);
                assert_non_null(strstr(err, "not running"));
                free(err);
                swf_trace_done(&t2);
        }
        swf_trace_done(&t);
}

/* Nested preemption: every express job that waits suspends the job that started last;
 * when nothing runs, the job suspended last resumes. On one CPU the suspended jobs hold
 * more allocations than there are CPUs. */
static SchedDecision nested[8];

static int nesting_pass(void *userdata, SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                        const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        ssize_t running = -1, waiting = -1, suspended = -1;
        size_t n = 0;
        int r;

        r = core_pass(ctx, config, machine, jobs, n_jobs, now, ret);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ret->n_decisions && n < 2; i++)
                nested[n++] = ret->decisions[i];
        for (size_t i = 0; i < n_jobs; i++) {
                if (jobs[i].state == SCHED_JOB_RUNNING &&
                    (running < 0 || jobs[i].start_time >= jobs[running].start_time))
                        running = (ssize_t) i;
                if (jobs[i].state == SCHED_JOB_PENDING && jobs[i].queue_priority == 2 && waiting < 0)
                        waiting = (ssize_t) i;
                if (jobs[i].state == SCHED_JOB_SUSPENDED && (suspended < 0 || jobs[i].id > jobs[suspended].id))
                        suspended = (ssize_t) i;
        }
        if (n == 0 && waiting >= 0 && running >= 0) {
                nested[n++] = (SchedDecision) { .type = SCHED_DECISION_SUSPEND, .job_index = (size_t) running,
                                                .job_id = jobs[running].id };
                nested[n++] = (SchedDecision) { .type = SCHED_DECISION_START, .job_index = (size_t) waiting,
                                                .job_id = jobs[waiting].id, .alloc = *jobs[running].alloc };
        } else if (n == 0 && running < 0 && suspended >= 0)
                nested[n++] = (SchedDecision) { .type = SCHED_DECISION_RESUME, .job_index = (size_t) suspended,
                                                .job_id = jobs[suspended].id };
        ret->decisions = nested;
        ret->n_decisions = n;
        return 0;
}

static void test_nested_suspensions(void **state) {
        static const char trace[] =
                "; MaxProcs: 1\n"
                "1 0 -1 1000 1 -1 -1 1 1000 -1 1 1 1 -1 2 -1 -1 -1\n"  /* [0,100) [310,1210) */
                "2 100 -1 100 1 -1 -1 1 100 -1 1 2 2 -1 1 -1 -1 -1\n"  /* [100,110) [220,310) */
                "3 110 -1 100 1 -1 -1 1 100 -1 1 2 2 -1 1 -1 -1 -1\n"  /* [110,120) [130,220) */
                "4 120 -1 10 1 -1 -1 1 10 -1 1 2 2 -1 1 -1 -1 -1\n"    /* [120,130) */
                "5 125 -1 100 1 -1 -1 1 100 -1 1 2 2 -1 2 -1 -1 -1\n"; /* normal: [1210,1310) */
        _cleanup_(config_freep) Config *c = NULL;
        SimJobResult res[5];
        SimOptions o = {
                .results = res,
                .pass = nesting_pass,
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
        };
        char *err = NULL;
        SimStats st;
        SwfTrace t;

        assert_int_equal(parse_string(trace, &t), 0);
        assert_int_equal(mix_config(conf_queues, NULL, &c, &err), 0);
        o.config = c;
        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
        assert_int_equal(st.suspensions, 3);
        assert_int_equal(st.resumes, 3);
        assert_int_equal(res[0].suspended, 210);
        assert_int_equal(res[1].suspended, 110);
        assert_int_equal(res[2].suspended, 10);
        assert_int_equal(res[3].suspensions, 0);
        assert_int_equal(res[4].wait, 1210 - 125); /* the CPU is held while jobs are suspended */
        assert_int_equal(st.makespan, 1310);
        assert_float_equal(st.max_xfactor, 2.1, 1e-9); /* job 2: (100 + 110) / 100 */
        assert_float_equal(mix_group(st.queues, st.n_queues, "normal")->max_xfactor, 1.21, 1e-9);
        sim_stats_done(&st);
        swf_trace_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_map_parse),
                cmocka_unit_test(test_queues),
                cmocka_unit_test(test_fairshare_formula),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_fairshare_mix),
                cmocka_unit_test(test_suspend_resume),
                cmocka_unit_test(test_nested_suspensions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
