/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SWF parsing, the simulator on hand-made traces, and a smoke run on the shared traces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "swf.h"

static int parse_string(const char *text, SwfTrace *t, char **err) {
        FILE *f = fmemopen((void *) text, strlen(text), "r");
        int r;

        assert_non_null(f);
        r = swf_parse(f, "mem.swf", t, err);
        fclose(f);
        return r;
}

/* sim_run() after freeing what the last run left in st. */
static int run_sim(const SwfTrace *t, const SimOptions *o, SimStats *st, char **err) {
        sim_stats_done(st);
        return sim_run(t, o, st, err);
}

static void test_parse(void **state) {
        SwfTrace t;
        char *err = NULL;

        assert_int_equal(parse_string("; Version: 2.2\n"
                                      "; MaxNodes: 128\n"
                                      ";   MaxProcs: 256\n"
                                      "\n"
                                      "1 0 5 100 4 100.5 -1 8 200 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "   2 10 -1 50 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 1 -1 -1   \n", &t, &err), 0);
        assert_null(err);
        assert_int_equal(t.max_procs, 256);
        assert_int_equal(t.max_nodes, 128);
        assert_int_equal(t.n_jobs, 2);
        assert_int_equal(t.jobs[0].procs_req, 8);
        assert_int_equal(t.jobs[0].time_req, 200);
        assert_int_equal(t.jobs[1].procs_req, -1);
        assert_int_equal(t.jobs[1].run, 50);
        assert_int_equal(t.jobs[1].line, 6);
        swf_trace_done(&t);

        assert_int_equal(parse_string("; x\n1 0 5 100 4\n", &t, &err), -EINVAL);
        assert_string_equal(err, "mem.swf:2: fewer than 18 fields");
        free(err);
        err = NULL;
        assert_int_equal(parse_string("1 0 5 100 4 1 1 1 1 1 1 1 1 1 1 1 1 x\n", &t, &err), -EINVAL);
        assert_string_equal(err, "mem.swf:1: field is not a number");
        free(err);
        err = NULL;
        /* A NUL after the 18th field hid the rest of the line (the fuzzing tier's find). */
        {
                static const char nul_line[] = "1 0 5 100 4 1 1 1 1 1 1 1 1 1 1 1 1 1\0 garbage\n";
                FILE *f = fmemopen((void *) nul_line, sizeof nul_line - 1, "r");

                assert_non_null(f);
                assert_int_equal(swf_parse(f, "mem.swf", &t, &err), -EINVAL);
                fclose(f);
                assert_string_equal(err, "mem.swf:1: NUL byte in the line");
                free(err);
                err = NULL;
        }
        assert_int_equal(swf_load("/nonexistent/trace.swf", &t, &err), -ENOENT);
        assert_non_null(strstr(err, "/nonexistent/trace.swf"));
        free(err);
}

/* Two jobs on 4 processors: job 1 (4 procs, 100 s) blocks job 2 (2 procs) for 100 s;
 * job 3 (2 procs, requests 50 s but its run is clipped from 80 to 50) is skipped for
 * lack of a request unless planned with its runtime. */
static const char small_trace[] =
        "; MaxProcs: 4\n"
        "1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 -1 1 -1 -1\n"
        "2 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"
        "3 5 -1 80 -1 -1 -1 2 50 -1 1 1 1 -1 -1 1 -1 -1\n"
        "4 5 -1 -1 2 -1 -1 2 50 -1 1 1 1 -1 -1 1 -1 -1\n"
        "5 5 -1 10 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 1 -1 -1\n"
        "6 5 -1 10 8 -1 -1 8 10 -1 1 1 1 -1 -1 1 -1 -1\n";

static void test_small(void **state) {
        SimOptions o = { .policy = &sched_policy_easy };
        SimStats st = {};
        SwfTrace t;
        char *err = NULL;

        assert_int_equal(parse_string(small_trace, &t, &err), 0);
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.procs, 4);
        assert_int_equal(st.simulated, 3);
        assert_int_equal(st.skipped_unknown, 1);
        assert_int_equal(st.skipped_no_estimate, 1);
        assert_int_equal(st.skipped_too_big, 1);
        /* job 1 [0,100); job 2 [100,110); job 3 [100,150) (clipped to its 50 s). */
        assert_float_equal(st.avg_wait, (0 + 100 + 95) / 3.0, 1e-9);
        assert_float_equal(st.max_flow, 145, 1e-9);
        assert_int_equal(st.makespan, 150);
        assert_float_equal(st.utilization, (100.0 * 4 + 10 * 2 + 50 * 2) / (4 * 150.0), 1e-9);
        /* bsld: 1, 110/10 = 11, 145/50 = 2.9 */
        assert_float_equal(st.avg_bsld, (1 + 11 + 2.9) / 3, 1e-9);
        assert_float_equal(st.max_bsld, 11, 1e-9);

        o.missing_estimate_runtime = true;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 4);

        /* The core: up to CPU_SET_MAX processors (8192) and SCHED_NODES_MAX NUMA nodes
         * (64); more is refused by name, not truncated. */
        o.procs = 8192;
        o.numa_nodes = 64;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 5); /* the job too big for 4 fits now */
        assert_int_equal(st.skipped_too_big, 0);
        assert_int_equal(st.numa_nodes, 64);
        o.numa_nodes = 65;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "at most 64"));
        err = mfree(err);
        o.numa_nodes = 0;
        o.procs = 8193;
        o.engine = SIM_ENGINE_CORE;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "at most 8192"));
        err = mfree(err);
        /* The flat engine takes any count (CEA Curie's 93,312), by itself and by default. */
        o.procs = 93312;
        for (SimEngine e = SIM_ENGINE_AUTO; e <= SIM_ENGINE_FLAT; e += SIM_ENGINE_FLAT) {
                o.engine = e;
                assert_int_equal(run_sim(&t, &o, &st, &err), 0);
                assert_int_equal(st.engine, SIM_ENGINE_FLAT);
                assert_int_equal(st.procs, 93312);
                assert_int_equal(st.simulated, 5);
                assert_float_equal(st.avg_wait, 0.0, 1e-9);
        }
        /* Not where it would need the core: NUMA nodes. */
        o.engine = SIM_ENGINE_AUTO;
        o.numa_nodes = 2;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "at most 8192"));
        err = mfree(err);
        o.engine = SIM_ENGINE_FLAT;
        o.procs = 4;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "flat engine"));
        free(err);
        sim_stats_done(&st);
        swf_trace_done(&t);
}

/* Two jobs end early at the same instant (10) and the top job H needs both's CPUs. Corral
 * decides once, knowing both ends: H starts at 10, C after it. The published simulators
 * decide after each end: after A's, B still holds its CPUs until its requested time (100),
 * so C (done by then) is backfilled into A's, and H waits for C. */
static const char semantics_trace[] =
        "; MaxProcs: 4\n"
        "1 0 -1 10 2 -1 -1 2 100 -1 1 1 1 -1 -1 1 -1 -1\n"  /* A */
        "2 0 -1 10 2 -1 -1 2 100 -1 1 1 1 -1 -1 1 -1 -1\n"  /* B */
        "3 1 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 -1 1 -1 -1\n"   /* H */
        "4 2 -1 20 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n";  /* C */

static void test_semantics(void **state) {
        SimJobResult res[4];
        SimOptions o = { .policy = &sched_policy_easy, .results = res };
        SimStats st = {};
        SwfTrace t;
        char *err = NULL;

        assert_int_equal(parse_string(semantics_trace, &t, &err), 0);

        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(res[0].wait, 0);
        assert_int_equal(res[1].wait, 0);
        assert_int_equal(res[2].wait, 9);       /* H at 10 */
        assert_int_equal(res[3].wait, 58);      /* C at 60 */

        o.semantics = SIM_SEMANTICS_PUBLISHED;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(res[2].wait, 29);      /* H at 30 */
        assert_int_equal(res[3].wait, 8);       /* C at 10 */
        assert_float_equal(st.avg_wait, (0 + 0 + 29 + 8) / 4.0, 1e-9);

        /* Ending at the requested time is over at that instant, before any decision; in
         * the published semantics its termination still has its own pass, in the order the
         * jobs started. A (ends at its request) started before B (ends early): A's pass
         * comes first, with B still counted until 100, so C is backfilled and H waits. */
        sim_stats_done(&st);
        swf_trace_done(&t);
        assert_int_equal(parse_string("; MaxProcs: 4\n"
                                      "1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "2 0 -1 10 2 -1 -1 2 100 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "3 1 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "4 2 -1 20 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n", &t, &err), 0);
        for (SimSemantics m = 0; m < _SIM_SEMANTICS_MAX; m++) {
                o.semantics = m;
                assert_int_equal(run_sim(&t, &o, &st, &err), 0);
                assert_int_equal(res[2].wait, m == SIM_SEMANTICS_PUBLISHED ? 29 : 9);
                assert_int_equal(res[3].wait, m == SIM_SEMANTICS_PUBLISHED ? 8 : 58);
        }
        sim_stats_done(&st);
        swf_trace_done(&t);
        /* B started first: its early end's pass comes first and sees both ends. */
        assert_int_equal(parse_string("; MaxProcs: 4\n"
                                      "2 0 -1 10 2 -1 -1 2 100 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "3 1 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 -1 1 -1 -1\n"
                                      "4 2 -1 20 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n", &t, &err), 0);
        for (SimSemantics m = 0; m < _SIM_SEMANTICS_MAX; m++) {
                o.semantics = m;
                assert_int_equal(run_sim(&t, &o, &st, &err), 0);
                assert_int_equal(res[2].wait, 9);
                assert_int_equal(res[3].wait, 58);
        }
        sim_stats_done(&st);
        swf_trace_done(&t);

        assert_int_equal(sim_semantics_from_string("published"), SIM_SEMANTICS_PUBLISHED);
        assert_int_equal(sim_semantics_from_string("corral"), SIM_SEMANTICS_CORRAL);
        assert_int_equal(sim_semantics_from_string("pyss"), -EINVAL);
        assert_string_equal(sim_semantics_to_string(SIM_SEMANTICS_PUBLISHED), "published");
}

/* The published studies' filter against the default one, job by job. */
static const char filter_trace[] =
        "; MaxProcs: 4\n"
        "1 0 -1 100 4 -1 -1 4 50 -1 1 1 1 -1 -1 1 -1 -1\n"  /* kept by both, run clipped to 50 */
        "2 0 -1 10 8 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"   /* field 5 over the machine: strong drops */
        "3 0 -1 0 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"    /* run time 0: strong drops */
        "4 0 -1 10 2 -1 -1 2 0 -1 1 1 1 -1 -1 1 -1 -1\n"    /* requested time 0: strong drops */
        "5 0 -1 10 2 -1 -1 -1 20 -1 1 1 1 -1 -1 1 -1 -1\n"  /* field 8 unknown: field 5 */
        "6 0 -1 10 -1 -1 -1 -1 20 -1 1 1 1 -1 -1 1 -1 -1\n" /* no processors: both drop */
        "7 0 -1 10 2 -1 -1 8 20 -1 1 1 1 -1 -1 1 -1 -1\n";  /* field 8 over the machine: both drop */

static void test_filter(void **state) {
        SimJobResult res[7];
        SimOptions o = { .policy = &sched_policy_fcfs, .results = res };
        SimStats st = {};
        SwfTrace t;
        char *err = NULL;

        assert_int_equal(parse_string(filter_trace, &t, &err), 0);

        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 5);
        assert_int_equal(st.skipped_unknown, 1);
        assert_int_equal(st.skipped_too_big, 1);
        assert_int_equal(res[0].run, 50);
        assert_true(res[1].wait >= 0 && res[2].wait >= 0 && res[3].wait >= 0 && res[4].wait >= 0);
        assert_int_equal(res[5].wait, -1);
        assert_int_equal(res[6].wait, -1);

        o.filter = SIM_FILTER_STRONG;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 2);
        assert_int_equal(st.skipped_unknown, 2);        /* 3, 6 */
        assert_int_equal(st.skipped_no_estimate, 1);    /* 4 */
        assert_int_equal(st.skipped_too_big, 2);        /* 2, 7 */
        assert_int_equal(res[0].wait, 0);
        assert_int_equal(res[0].run, 50);
        assert_int_equal(res[4].wait, 50);
        for (size_t i = 1; i < 4; i++)
                assert_int_equal(res[i].wait, -1);

        /* It drops jobs without a request: it cannot also plan them with their run time. */
        o.missing_estimate_runtime = true;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "strong"));
        free(err);
        sim_stats_done(&st);
        swf_trace_done(&t);

        assert_int_equal(sim_filter_from_string("strong"), SIM_FILTER_STRONG);
        assert_int_equal(sim_filter_from_string("weak"), -EINVAL);
}

/* --schedule: the trace again with the simulated waits in field 3, read back. */
static void test_schedule(void **state) {
        char path[] = "/tmp/test-sim-XXXXXX";
        _cleanup_free_ char *text = NULL;
        SimJobResult res[6];
        SimOptions o = { .policy = &sched_policy_easy, .results = res };
        SwfTrace t, back;
        SimStats st = {};
        size_t size = 0;
        char *err = NULL;
        FILE *in, *out;
        int fd;

        fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, small_trace, strlen(small_trace)), (ssize_t) strlen(small_trace));
        close(fd);

        assert_int_equal(swf_load(path, &t, &err), 0);
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        in = fopen(path, "re");
        assert_non_null(in);
        out = open_memstream(&text, &size);
        assert_non_null(out);
        assert_int_equal(sim_write_schedule(in, path, &t, res, "; Note: simulated\n", out, &err), 0);
        fclose(in);
        fclose(out);

        /* The header first, then the note, then the simulated jobs (1, 2, 3; the others
         * were skipped), field 3 their wait, field 4 the run simulated. */
        assert_string_equal(text,
                            "; MaxProcs: 4\n"
                            "; Note: simulated\n"
                            "1 0 0 100 4 -1 -1 4 100 -1 1 1 1 -1 -1 1 -1 -1\n"
                            "2 0 100 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 1 -1 -1\n"
                            "3 5 95 50 -1 -1 -1 2 50 -1 1 1 1 -1 -1 1 -1 -1\n");
        assert_int_equal(parse_string(text, &back, &err), 0);
        assert_int_equal(back.max_procs, 4);
        assert_int_equal(back.n_jobs, st.simulated);
        {
                double sum = 0;
                for (size_t i = 0; i < back.n_jobs; i++)
                        sum += (double) back.jobs[i].wait;
                assert_float_equal(sum / (double) back.n_jobs, st.avg_wait, 1e-9);
        }
        swf_trace_done(&back);

        /* A file that is not the trace simulated is refused, not half written over. */
        in = fmemopen((void *) semantics_trace, strlen(semantics_trace), "r");
        assert_non_null(in);
        out = fopen("/dev/null", "we");
        assert_non_null(out);
        assert_int_equal(sim_write_schedule(in, "other.swf", &t, res, NULL, out, &err), -EINVAL);
        assert_non_null(strstr(err, "the trace changed"));
        free(err);
        fclose(in);
        fclose(out);

        sim_stats_done(&st);
        swf_trace_done(&t);
        assert_int_equal(unlink(path), 0);
}

static bool strict(void) {
        const char *e = getenv("CORRAL_TEST_STRICT");
        return e && streq(e, "1");
}

static void groups_equal(const SimGroupStats *a, const SimGroupStats *b, size_t n) {
        for (size_t i = 0; i < n; i++) {
                SimGroupStats x = a[i], y = b[i];

                assert_string_equal(x.name, y.name);
                x.name = y.name = NULL;
                assert_memory_equal(&x, &y, sizeof x);
        }
}

static void stats_equal(const SimStats *a, const SimStats *b) {
        SimStats x = *a, y = *b;

        /* Everything but wall time is in SimStats: runs must agree exactly. */
        assert_int_equal(a->n_queues, b->n_queues);
        assert_int_equal(a->n_projects, b->n_projects);
        groups_equal(a->queues, b->queues, a->n_queues);
        groups_equal(a->projects, b->projects, a->n_projects);
        x.queues = y.queues = x.projects = y.projects = NULL;
        assert_memory_equal(&x, &y, sizeof x);
}

/* A trace with long queues, made here: arrivals at 1.6 times what 64 CPUs can do for the
 * first half, half of them in the same second as the one before, run times and requests
 * on a minute grid (jobs end together, early and at their request), jobs as wide as the
 * machine. */
static void long_queues(uint64_t seed, size_t n, SwfTrace *ret) {
        uint64_t x = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
        int64_t t = 0;

        *ret = (SwfTrace) { .max_procs = 64, .max_nodes = -1, .n_jobs = n };
        ret->jobs = calloc(n, sizeof(SwfJob));
        assert_non_null(ret->jobs);
        for (size_t i = 0; i < n; i++) {
#define RND(k) ((x ^= x >> 12, x ^= x << 25, x ^= x >> 27, x * UINT64_C(2685821657736338717)) % (k))
                uint64_t u = RND(100);
                int64_t procs = u < 3 ? 64 : u < 30 ? 1 : INT64_C(1) << RND(7);
                int64_t run = 60 * (1 + (int64_t) RND(59)), req = RND(4) == 0 ? run : run + 60 * (int64_t) RND(90);

                if (RND(5) == 0)
                        run -= (int64_t) RND(60);
                ret->jobs[i] = (SwfJob) { .id = (int64_t) i + 1, .submit = t, .wait = -1, .run = MAX(run, INT64_C(1)),
                                          .procs_alloc = procs, .procs_req = procs, .time_req = req,
                                          .user = 1 + (int64_t) (i % 7), .group = 1, .queue = -1,
                                          .line = (unsigned) i + 1 };
                if (RND(2))
                        t += (int64_t) RND((uint64_t) (run * procs / (i < n / 2 ? 51 : 19)) + 1) / 30 * 30;
#undef RND
        }
}

/* The flat engine against the scheduling core, job by job: both semantics, EASY, EASY-SJBF
 * and FCFS, without a configuration and with the daemon's defaults, on traces with long
 * queues and on the shared ones when present. */
static void engines_agree(const SwfTrace *t, const char *name) {
        static const SchedPolicyOps *const policies[] = { &sched_policy_fcfs, &sched_policy_easy };
        _cleanup_(config_freep) Config *dflt = NULL;
        _cleanup_free_ SimJobResult *a = new(SimJobResult, t->n_jobs), *b = new(SimJobResult, t->n_jobs);
        char *err = NULL;

        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(config_load_paths(NULL, NULL, NULL, &dflt, &err), 0);
        for (size_t c = 0; c < 2; c++)
                for (SimSemantics m = 0; m < _SIM_SEMANTICS_MAX; m++)
                        for (size_t p = 0; p < ELEMENTSOF(policies); p++)
                                for (SchedBackfillOrder bo = 0; bo < _SCHED_BACKFILL_ORDER_MAX; bo++) {
                                        SimOptions o = { .policy = policies[p], .backfill_order = bo, .semantics = m,
                                                         .config = c ? dflt : NULL, .missing_estimate_runtime = true };
                                        SimStats sa = {}, sb = {};
                                        size_t differ = 0;

                                        o.engine = SIM_ENGINE_CORE;
                                        o.results = a;
                                        assert_int_equal(sim_run(t, &o, &sa, &err), 0);
                                        o.engine = SIM_ENGINE_AUTO;
                                        o.results = b;
                                        assert_int_equal(sim_run(t, &o, &sb, &err), 0);
                                        assert_int_equal(sa.engine, SIM_ENGINE_CORE);
                                        assert_int_equal(sb.engine, SIM_ENGINE_FLAT);
                                        for (size_t i = 0; i < t->n_jobs; i++)
                                                differ += a[i].wait != b[i].wait;
                                        print_message("%s %s%s %s semantics%s: up to %zu waiting, core bsld %.6f, "
                                                      "flat %.6f, %zu jobs start elsewhere\n", name, policies[p]->name,
                                                      bo == SCHED_BACKFILL_SJF ? " sjbf" : "",
                                                      sim_semantics_to_string(m), c ? ", default config" : "",
                                                      sa.max_pending, sa.avg_bsld, sb.avg_bsld, differ);
                                        assert_int_equal(differ, 0);
                                        assert_true(sa.avg_bsld == sb.avg_bsld && sa.avg_wait == sb.avg_wait);
                                        assert_int_equal(sa.passes, sb.passes);
                                        sim_stats_done(&sa);
                                        sim_stats_done(&sb);
                                }
}

static void test_engines(void **state) {
        const char *src = getenv("CORRAL_SRCDIR");
        _cleanup_free_ char *path = NULL;
        SwfTrace t;
        char *err = NULL;

        for (uint64_t seed = 1; seed <= 2; seed++) {
                long_queues(seed, 3000, &t);
                engines_agree(&t, "long queues");
                swf_trace_done(&t);
        }
        if (src && asprintf(&path, "%s/../shared/traces/hpc2n-2002-first3170.swf", src) >= 0 &&
            swf_load(path, &t, &err) >= 0) {
                engines_agree(&t, "hpc2n");
                swf_trace_done(&t);
        } else
                print_message("note: the HPC2N trace is absent: the synthetic traces only\n");
}

static void smoke(const char *name, bool runtime, size_t want_jobs) {
        static const SchedPolicyOps *const policies[] = {
                &sched_policy_fcfs, &sched_policy_easy, &sched_policy_conservative,
        };
        const char *src = getenv("CORRAL_SRCDIR");
        _cleanup_free_ char *path = NULL;
        SwfTrace t;
        char *err = NULL;

        if (!src || asprintf(&path, "%s/../shared/traces/%s", src, name) < 0 || access(path, R_OK) < 0) {
                if (strict())
                        fail_msg("trace %s not found (CORRAL_SRCDIR=%s) and CORRAL_TEST_STRICT=1", name, strna(src));
                print_message("SKIP: trace %s not found under $CORRAL_SRCDIR/../shared/traces\n", name);
                skip();
        }
        if (swf_load(path, &t, &err) < 0)
                fail_msg("%s", err);

        for (size_t i = 0; i < ELEMENTSOF(policies); i++) {
                SimOptions o = { .policy = policies[i], .missing_estimate_runtime = runtime };
                SimStats a, b;

                assert_int_equal(sim_run(&t, &o, &a, &err), 0);
                assert_int_equal(sim_run(&t, &o, &b, &err), 0);
                stats_equal(&a, &b);
                assert_int_equal(a.simulated + a.skipped, t.n_jobs);
                assert_int_equal(a.simulated, want_jobs);
                assert_true(a.avg_wait >= 0);
                assert_true(a.avg_bsld >= 1 && a.max_bsld >= a.avg_bsld);
                assert_true(a.max_flow >= a.avg_flow);
                assert_true(a.utilization > 0 && a.utilization <= 1);
                print_message("%s %s: jobs %zu wait %.0f bsld %.2f util %.3f\n", name, policies[i]->name,
                              a.simulated, a.avg_wait, a.avg_bsld, a.utilization);
                sim_stats_done(&a);
                sim_stats_done(&b);
        }
        swf_trace_done(&t);
}

static void test_trace_hpc2n(void **state) {
        smoke("hpc2n-2002-first3170.swf", false, 3145);
}

static void test_trace_lublin(void **state) {
        smoke("lublin_256.swf", true, 10000);
}
/* Three jobs of 1 CPU and 2 GPUs for 100 s on 4 GPUs: two run at once, the third waits
 * for GPUs though CPUs are free. Field 19 is Corral's; an 18-field line asks for none. */
static const char gpu_trace[] =
        "; MaxProcs: 8\n"
        "1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1 2\n"
        "2 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1 2\n"
        "3 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1 2\n"
        "4 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1\n"
        "5 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1 -1\n";

static void test_gpus(void **state) {
        SimOptions o = { .policy = &sched_policy_easy, .numa_nodes = 2 };
        SimJobResult res[5];
        SimStats st = {};
        SwfTrace t;
        char *err = NULL;
        int *nodes = NULL;
        unsigned n;

        assert_int_equal(parse_string(gpu_trace, &t, &err), 0);
        assert_int_equal(t.jobs[0].gpus, 2);
        assert_int_equal(t.jobs[3].gpus, -1);
        assert_int_equal(t.jobs[4].gpus, -1);

        /* No GPUs: the GPU jobs are too big. */
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 2);
        assert_int_equal(st.skipped_too_big, 3);

        assert_int_equal(sim_gpus_parse("4:0,0,1,1", &n, &nodes, &err), 0);
        assert_int_equal(n, 4);
        assert_int_equal(nodes[2], 1);
        o.n_gpus = n;
        o.gpu_nodes = nodes;
        o.results = res;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 5);
        assert_int_equal(st.n_gpus, 4);
        assert_int_equal(res[0].wait, 0);
        assert_int_equal(res[1].wait, 0);
        assert_int_equal(res[2].wait, 100);
        assert_int_equal(res[3].wait, 0);
        assert_int_equal(res[4].wait, 0);
        assert_int_equal(st.makespan, 200);
        assert_float_equal(st.gpu_utilization, 3 * 2 * 100.0 / (4 * 200.0), 1e-9);

        /* A layout naming a node the machine lacks. */
        nodes[3] = 2;
        assert_int_equal(run_sim(&t, &o, &st, &err), -EINVAL);
        assert_non_null(strstr(err, "NUMA node 2"));
        err = mfree(err);
        free(nodes);
        nodes = NULL;

        /* Evenly spread (no layout). */
        assert_int_equal(sim_gpus_parse("4", &n, &nodes, &err), 0);
        assert_null(nodes);
        o.gpu_nodes = NULL;
        assert_int_equal(run_sim(&t, &o, &st, &err), 0);
        assert_int_equal(res[2].wait, 100);

        /* Bad --gpus. */
        assert_int_equal(sim_gpus_parse("4:0,1", &n, &nodes, &err), -EINVAL);
        err = mfree(err);
        assert_int_equal(sim_gpus_parse("2:0,1,1", &n, &nodes, &err), -EINVAL);
        err = mfree(err);
        assert_int_equal(sim_gpus_parse("65", &n, &nodes, &err), -EINVAL);
        err = mfree(err);
        assert_int_equal(sim_gpus_parse("2:0,x", &n, &nodes, &err), -EINVAL);
        err = mfree(err);
        assert_int_equal(sim_gpus_parse("2:-2,0", &n, &nodes, &err), -EINVAL);
        err = mfree(err);
        assert_int_equal(sim_gpus_parse("2:-1,0", &n, &nodes, &err), 0);
        assert_int_equal(nodes[0], -1);
        free(nodes);

        /* 20 fields: refused. */
        swf_trace_done(&t);
        assert_int_equal(parse_string("1 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 -1 1 -1 -1 2 3\n", &t, &err), -EINVAL);
        assert_non_null(strstr(err, "more than 19 fields"));
        free(err);
        sim_stats_done(&st);
}

/* What every pass of a GPU simulation must keep, checked around sched_pass(). */
typedef struct GpuCheck {
        bool binding;
        size_t starts, local, passes;
} GpuCheck;

static bool near(const SchedMachine *m, const SchedAllocation *a) {
        for (size_t k = 0; k < m->n_nodes; k++) {
                bool gpu_here = false;
                if (!cpu_set_intersects(&a->cpus, &m->nodes[k].cpus))
                        continue;
                for (size_t g = 0; g < m->n_gpus; g++)
                        if ((a->gpu_mask >> g & 1) && (m->gpus[g].node == (int) k || m->gpus[g].node < 0))
                                gpu_here = true;
                if (!gpu_here)
                        return false;
        }
        return true;
}

static int checking_pass(void *userdata, SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                         const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        GpuCheck *c = userdata;
        uint64_t held = 0;
        int r;

        r = sched_pass(ctx, config, machine, jobs, n_jobs, now, ret);
        if (r < 0)
                return r;
        c->passes++;
        for (size_t d = 0; d < ret->n_decisions; d++) {
                const SchedDecision *x = &ret->decisions[d];
                const SchedJob *j = &jobs[x->job_index];

                if (x->type == SCHED_DECISION_SUSPEND)
                        continue;
                /* Never given twice within the pass. */
                assert_int_equal(held & x->alloc.gpu_mask, 0);
                held |= x->alloc.gpu_mask;
                if (x->type == SCHED_DECISION_RESUME)
                        assert_int_equal(x->alloc.gpu_mask, j->alloc->gpu_mask);
                if (j->gpus == 0)
                        continue;
                assert_int_equal(__builtin_popcountll(x->alloc.gpu_mask), j->gpus);
                if (x->type != SCHED_DECISION_START)
                        continue;
                c->starts++;
                if (near(machine, &x->alloc))
                        c->local++;
                else
                        assert_false(c->binding);
        }
        /* Nor to a job that holds it, running or suspended (a resumed one is above). */
        for (size_t i = 0; i < n_jobs; i++) {
                bool resumed = false;
                if ((jobs[i].state != SCHED_JOB_RUNNING && jobs[i].state != SCHED_JOB_SUSPENDED) || !jobs[i].alloc)
                        continue;
                for (size_t d = 0; d < ret->n_decisions; d++)
                        resumed = resumed || (ret->decisions[d].job_index == i &&
                                              ret->decisions[d].type == SCHED_DECISION_RESUME);
                if (resumed)
                        continue;
                assert_int_equal(held & jobs[i].alloc->gpu_mask, 0);
                held |= jobs[i].alloc->gpu_mask;
        }
        return 0;
}

/* A random mix of CPU and GPU jobs on 16 CPUs, 2 nodes, 4 GPUs, under each policy, with
 * and without binding: every pass is checked (checking_pass), and locality is the rule. */
static void test_gpu_property(void **state) {
        static const SchedPolicyOps *const policies[] = { &sched_policy_easy, &sched_policy_conservative,
                                                          &sched_policy_fcfs };
        static const int layout[] = { 0, 0, 1, 1 };
        char *text = NULL, *err = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        uint64_t x = 12345;
        SwfTrace t;

        assert_non_null(f);
        fprintf(f, "; MaxProcs: 16\n");
        for (int i = 1, submit = 0; i <= 400; i++) {
                unsigned procs, gpus, run, req;

                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                procs = 1 + (unsigned) (x % 8);
                gpus = (unsigned) ((x >> 8) % 5) > 2 ? 0 : (unsigned) ((x >> 12) % 4) + ((x >> 16) % 3 == 0);
                req = 60 + (unsigned) ((x >> 20) % 3600);
                run = 1 + (unsigned) ((x >> 32) % req);
                submit += (int) ((x >> 40) % 120);
                fprintf(f, "%d %d -1 %u %u -1 -1 %u %u -1 1 %d 1 -1 -1 1 -1 -1 %u\n", i, submit, run, procs, procs,
                        req, 1 + (int) ((x >> 48) % 5), MIN(gpus, 4u));
        }
        assert_int_equal(fclose(f), 0);
        assert_int_equal(parse_string(text, &t, &err), 0);

        for (size_t p = 0; p < ELEMENTSOF(policies); p++)
                for (int b = 0; b < 2; b++) {
                        GpuCheck c = { .binding = b };
                        SimOptions o = {
                                .policy = policies[p],
                                .numa_nodes = 2,
                                .n_gpus = 4,
                                .gpu_nodes = layout,
                                .gpu_binding = b,
                                .pass = checking_pass,
                                .pass_userdata = &c,
                        };
                        SimStats st = {};

                        assert_int_equal(sim_run(&t, &o, &st, &err), 0);
                        assert_int_equal(st.simulated, 400);
                        assert_true(st.gpu_utilization > 0.2);
                        assert_true(c.starts > 100);
                        /* Most GPU jobs (all with binding) get their CPUs beside their GPUs. */
                        assert_true(c.local * 4 >= c.starts * 3);
                        sim_stats_done(&st);
                }
        swf_trace_done(&t);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_small),
                cmocka_unit_test(test_semantics),
                cmocka_unit_test(test_filter),
                cmocka_unit_test(test_schedule),
                cmocka_unit_test(test_gpus),
                cmocka_unit_test(test_gpu_property),
                cmocka_unit_test(test_engines),
                cmocka_unit_test(test_trace_hpc2n),
                cmocka_unit_test(test_trace_lublin),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
