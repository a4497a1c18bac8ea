/* SPDX-License-Identifier: GPL-2.0-or-later */
/* EASY as published: corral-sim under --semantics=published --filter=strong reproduces the
 * figures of the reference simulators (pyss/predictsim) on the shared HPC2N excerpt to every
 * digit they print, and Corral's own semantics keep their figures. The trace lives outside
 * the tree ($CORRAL_SRCDIR/../shared/traces): without it the test says why and exits 77
 * (skipped), or fails under CORRAL_TEST_STRICT=1. */
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

#define TRACE "hpc2n-2002-first3170.swf"

static SwfTrace trace;

typedef struct Figures {
        const SchedPolicyOps *policy;
        SchedBackfillOrder order;
        SimSemantics semantics;
        const char *bsld;   /* average bounded slowdown, %.6f */
        const char *wait;   /* average wait in seconds, %.3f */
} Figures;

static const Figures figures[] = {
        /* The published figures. */
        { &sched_policy_easy, SCHED_BACKFILL_PRIORITY, SIM_SEMANTICS_PUBLISHED, "16.213660", "3470.178" },
        { &sched_policy_easy, SCHED_BACKFILL_SJF,      SIM_SEMANTICS_PUBLISHED, "16.051249", "3316.780" },
        { &sched_policy_fcfs, SCHED_BACKFILL_PRIORITY, SIM_SEMANTICS_PUBLISHED, "47.038240", "5588.634" },
        /* Corral's: one pass per instant, all its events known (40 jobs start elsewhere). */
        { &sched_policy_easy, SCHED_BACKFILL_PRIORITY, SIM_SEMANTICS_CORRAL,    "16.213968", "3470.190" },
        { &sched_policy_easy, SCHED_BACKFILL_SJF,      SIM_SEMANTICS_CORRAL,    "16.054344", "3316.818" },
        { &sched_policy_fcfs, SCHED_BACKFILL_PRIORITY, SIM_SEMANTICS_CORRAL,    "47.038240", "5588.634" },
};

/* Both engines: the flat one (corral-sim's default here) and the scheduling core. */
static void test_figures(void **state) {
        for (size_t i = 0; i < 2 * ELEMENTSOF(figures); i++) {
                const Figures *f = &figures[i % ELEMENTSOF(figures)];
                SimOptions o = {
                        .policy = f->policy,
                        .backfill_order = f->order,
                        .semantics = f->semantics,
                        .filter = SIM_FILTER_STRONG,
                        .engine = i < ELEMENTSOF(figures) ? SIM_ENGINE_AUTO : SIM_ENGINE_CORE,
                };
                char bsld[64], wait[64], *err = NULL;
                SimStats st;

                assert_int_equal(sim_run(&trace, &o, &st, &err), 0);
                assert_int_equal(st.procs, 240);
                assert_int_equal(st.simulated, 3145);
                assert_int_equal(st.skipped, 25);
                snprintf(bsld, sizeof bsld, "%.6f", st.avg_bsld);
                snprintf(wait, sizeof wait, "%.3f", st.avg_wait);
                print_message("%s%s, %s semantics, %s engine: bsld %s wait %s s\n", f->policy->name,
                              f->order == SCHED_BACKFILL_SJF ? " (sjbf)" : "",
                              sim_semantics_to_string(f->semantics), sim_engine_to_string(st.engine), bsld, wait);
                assert_string_equal(bsld, f->bsld);
                assert_string_equal(wait, f->wait);
                sim_stats_done(&st);
        }
}

/* On this trace the default filter keeps the same jobs, so the figures do not hang on it. */
static void test_default_filter(void **state) {
        SimOptions o = { .policy = &sched_policy_easy, .semantics = SIM_SEMANTICS_PUBLISHED };
        char bsld[64], *err = NULL;
        SimStats st;

        assert_int_equal(sim_run(&trace, &o, &st, &err), 0);
        assert_int_equal(st.simulated, 3145);
        snprintf(bsld, sizeof bsld, "%.6f", st.avg_bsld);
        assert_string_equal(bsld, "16.213660");
        sim_stats_done(&st);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_figures),
                cmocka_unit_test(test_default_filter),
        };
        const char *src = getenv("CORRAL_SRCDIR"), *strict = getenv("CORRAL_TEST_STRICT");
        _cleanup_free_ char *path = NULL;
        char *err = NULL;
        int r;

        if (!src || asprintf(&path, "%s/../shared/traces/" TRACE, src) < 0 || access(path, R_OK) < 0) {
                bool fail = strict && streq(strict, "1");

                fprintf(stderr, "%s: the EASY parity test needs %s, not found (CORRAL_SRCDIR=%s)%s\n",
                        fail ? "FAIL" : "SKIP", path ?: TRACE, strna(src),
                        fail ? " and CORRAL_TEST_STRICT=1" : "");
                return fail ? EXIT_FAILURE : 77;
        }
        if (swf_load(path, &trace, &err) < 0) {
                fprintf(stderr, "FAIL: %s\n", err);
                free(err);
                return EXIT_FAILURE;
        }
        r = cmocka_run_group_tests(tests, NULL, NULL);
        swf_trace_done(&trace);
        return r;
}
