/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral-sim's engine: first a synthetic year on 8,192 processors (450,000 jobs, EASY)
 * with its wall time and peak memory, then a busy year (448,000 jobs arriving in waves
 * above what the machine can do, thousands waiting at once) under both semantics through
 * the scheduling core and the flat engine side by side, then the shared traces, and a
 * 30,000-job trace made by laying lublin_256 three times end to end: wall time and jobs/s
 * per policy. Then the policies: the traces with fair-share on (a configuration read by
 * the daemon's parsers), and the simulation tests' express-over-normal mix, larger, with
 * and without preemption. Not run by `meson test`.
 * Usage: bench-sim [TRACES_DIR] (default $CORRAL_SRCDIR/../shared/traces)
 *        bench-sim --busy               the busy year only
 *        bench-sim --write-busy FILE    the busy year as an SWF trace, for corral-sim */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim.h"
#include "bench-util.h"
#include "swf.h"
#include "tests/unit/sim-mix.h"

/* One simulation, its wall time in *ret_wall; a failure is said on stderr. */
static int run_timed(const char *label, const SwfTrace *t, const SimOptions *o, SimStats *st, double *ret_wall) {
        char *err = NULL;
        double t0 = now_sec();

        if (sim_run(t, o, st, &err) < 0) {
                fprintf(stderr, "%s: %s\n", label, err ?: "failed");
                free(err);
                return -EIO;
        }
        *ret_wall = now_sec() - t0;
        return 0;
}

static int run(const char *label, const SwfTrace *t, bool runtime) {
        static const SchedPolicyOps *const policies[] = {
                &sched_policy_fcfs, &sched_policy_easy, &sched_policy_conservative,
        };

        for (size_t i = 0; i < ELEMENTSOF(policies); i++) {
                SimOptions o = { .policy = policies[i], .missing_estimate_runtime = runtime };
                SimStats st;
                double wall;

                if (run_timed(label, t, &o, &st, &wall) < 0)
                        return -EIO;
                printf("%-26s %-12s jobs %6zu passes %6zu  %8.3f s  %10.0f jobs/s\n",
                       label, policies[i]->name, st.simulated, st.passes, wall, (double) st.simulated / wall);
                sim_stats_done(&st);
        }
        return 0;
}

static int run_policies(const char *label, const SwfTrace *t, const Config *c, bool fairshare, bool runtime) {
        SimOptions o = {
                .config = c,
                .missing_estimate_runtime = runtime,
                .queue_map = mix_queue_map,
                .n_queue_map = ELEMENTSOF(mix_queue_map),
                .project_map = mix_project_map,
                .n_project_map = ELEMENTSOF(mix_project_map),
                .fairshare = fairshare,
        };
        const SimGroupStats *ex, *no;
        SimStats st;
        double wall;

        if (run_timed(label, t, &o, &st, &wall) < 0)
                return -EIO;
        ex = mix_group(st.queues, st.n_queues, "express");
        no = mix_group(st.queues, st.n_queues, "normal");
        printf("%-34s jobs %6zu passes %6zu  %8.3f s  %10.0f jobs/s  wait %8.0f s  bsld %7.2f  Jain %.4f  "
               "suspensions %zu\n", label, st.simulated, st.passes, wall, (double) st.simulated / wall, st.avg_wait,
               st.avg_bsld, st.jain_bsld, st.suspensions);
        if (ex && no)
                printf("%-34s express wait %.1f s, normal wait %.0f s, normal xf mean %.3f max %.3f, %.1f%% <= %.2f\n",
                       "", ex->avg_wait, no->avg_wait, no->avg_xfactor, no->max_xfactor, 100.0 * no->xfactor_ok,
                       SIM_XFACTOR_OK);
        sim_stats_done(&st);
        return 0;
}

static const char conf_fair[] =
        "[Manager]\nFairShareHalfLife=4h\n"
        "[Queue]\nName=express\nPriority=2\nPreempts=\n" /* the built-in's Preempts=normal, off */
        "[Queue]\nName=normal\nPriority=1\n";
static const char conf_preempt[] =
        "[Manager]\nFairShareHalfLife=4h\n"
        "[Queue]\nName=express\nPriority=2\nPreempts=normal\n"
        "[Queue]\nName=normal\nPriority=1\n";

static int policies(const SwfTrace *h, const SwfTrace *year) {
        static const MixStream streams[] = {
                { MIX_HEAVY, MIX_QUEUE_NORMAL, 16, 1800, 3600, 400, 1000, 1.2 },
                { MIX_LIGHT, MIX_QUEUE_NORMAL, 4, 60, 600, 600, 1800, 1.0 },
                { MIX_LIGHT, MIX_QUEUE_EXPRESS, 4, 60, 300, 600, 1800, 1.0 },
        };
        _cleanup_(config_freep) Config *fair = NULL, *preempt = NULL;
        _cleanup_free_ char *err = NULL, *perr = NULL;
        SwfTrace mix = {};
        int r;

        if (mix_config(conf_fair, NULL, &fair, &err) < 0) {
                fprintf(stderr, "%s\n", err);
                return -EINVAL;
        }
        (void) mix_config(conf_preempt, NULL, &preempt, &perr);
        r = mix_make(streams, ELEMENTSOF(streams), 30 * 86400, 1, &mix);
        if (r < 0)
                return r;
        printf("\npolicies (easy; the mix: %zu jobs over 30 days on %d CPUs, express over normal)\n", mix.n_jobs,
               MIX_PROCS);
        if (run_policies("hpc2n-2002-first3170 fair-share", h, fair, true, false) < 0 ||
            run_policies("hpc2n x100 fair-share", year, fair, true, false) < 0 ||
            run_policies("mix fair-share off", &mix, fair, false, false) < 0 ||
            run_policies("mix fair-share on", &mix, fair, true, false) < 0)
                r = -EIO;
        else if (!preempt)
                printf("%-34s not in the scheduling core yet: %s\n", "mix preemption", perr ?: "?");
        else if (run_policies("mix fair-share on, preemption on", &mix, preempt, true, false) < 0)
                r = -EIO;
        swf_trace_done(&mix);
        return r;
}

/* t laid end to end n times: the 30,000-job case from lublin_256, and from the hpc2n
 * excerpt (real requested times) about 315,000 jobs over some 17 years, for "hundreds of
 * thousands of jobs". */
static int repeat(const SwfTrace *t, size_t n, SwfTrace *ret) {
        int64_t span = 0;

        *ret = *t;
        ret->n_jobs = n * t->n_jobs;
        ret->jobs = calloc(ret->n_jobs, sizeof(SwfJob));
        if (!ret->jobs)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_jobs; i++)
                span = MAX(span, t->jobs[i].submit);
        for (size_t c = 0; c < n; c++)
                for (size_t i = 0; i < t->n_jobs; i++) {
                        ret->jobs[c * t->n_jobs + i] = t->jobs[i];
                        ret->jobs[c * t->n_jobs + i].submit += (int64_t) c * (span + 1);
                }
        return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15;
static double rnd01(void) {
        return (double) (rng_next(&rng_state) >> 11) / 9007199254740992.0;
}

#define YEAR_PROCS 8192
#define YEAR_JOBS 450000
#define YEAR_SEC (365 * 86400)

/* A year of a large machine, shaped as the workload models of the archive are: a quarter
 * of the jobs serial, the rest of 2^U processors (U uniform in [1, 13), so up to 4096),
 * run times log-uniform from 10 s to a day, scaled so the machine is 70 % loaded,
 * requested times 1-4 x the run time, Poisson arrivals. Deterministic. */
static int synthetic_year(SwfTrace *ret) {
        double work = 0, t = 0, scale;

        *ret = (SwfTrace) { .max_procs = YEAR_PROCS, .max_nodes = -1 };
        ret->jobs = calloc(YEAR_JOBS, sizeof(SwfJob));
        if (!ret->jobs)
                return -ENOMEM;
        ret->n_jobs = YEAR_JOBS;
        for (size_t i = 0; i < YEAR_JOBS; i++) {
                SwfJob *j = &ret->jobs[i];
                int64_t procs = rnd01() < 0.25 ? 1 : (int64_t) exp2(1.0 + 12.0 * rnd01());

                t += -log(1.0 - rnd01()) * YEAR_SEC / YEAR_JOBS;
                *j = (SwfJob) {
                        .id = (int64_t) i + 1,
                        .submit = (int64_t) t,
                        .wait = -1,
                        .run = (int64_t) (10.0 * pow(8640.0, rnd01())),
                        .procs_alloc = MIN(procs, (int64_t) YEAR_PROCS),
                        .procs_req = MIN(procs, (int64_t) YEAR_PROCS),
                        .line = (unsigned) i + 1,
                };
                work += (double) j->run * (double) j->procs_req;
        }
        scale = 0.7 * YEAR_PROCS * YEAR_SEC / work;
        for (size_t i = 0; i < YEAR_JOBS; i++) {
                SwfJob *j = &ret->jobs[i];
                j->run = MAX((int64_t) ((double) j->run * scale), (int64_t) 1);
                j->time_req = (int64_t) ceil((double) j->run * (1.0 + 3.0 * rnd01()));
        }
        return 0;
}

#define BUSY_JOBS 448000

/* A busy year: the same machine and job shapes, but arrivals that come in waves (six
 * weeks at 1.3 times what the machine can do, then two at 0.06), so thousands of
 * jobs wait at once, as in the archive's busiest logs; a third of the jobs come in the
 * same second as the one before, a quarter request exactly their run time (they end at
 * their limit), one in a thousand is as wide as the machine. Deterministic. */
static int busy_year(SwfTrace *ret) {
        double work = 0, t = 0, scale;

        rng_state = 0x2545f4914f6cdd1d; /* the same year whatever ran before */
        *ret = (SwfTrace) { .max_procs = YEAR_PROCS, .max_nodes = -1 };
        ret->jobs = calloc(BUSY_JOBS, sizeof(SwfJob));
        if (!ret->jobs)
                return -ENOMEM;
        ret->n_jobs = BUSY_JOBS;
        for (size_t i = 0; i < BUSY_JOBS; i++) {
                SwfJob *j = &ret->jobs[i];
                double u = rnd01();
                int64_t procs = u < 0.001 ? YEAR_PROCS : u < 0.3 ? 1 : (int64_t) exp2(1.0 + 12.0 * rnd01());

                *j = (SwfJob) {
                        .id = (int64_t) i + 1,
                        .wait = -1,
                        .run = (int64_t) (10.0 * pow(8640.0, rnd01())),
                        .procs_alloc = MIN(procs, (int64_t) YEAR_PROCS),
                        .procs_req = MIN(procs, (int64_t) YEAR_PROCS),
                        .line = (unsigned) i + 1,
                };
                work += (double) j->run * (double) j->procs_req;
        }
        /* The work of the year at 99 % of the machine on average. */
        scale = 0.99 * YEAR_PROCS * YEAR_SEC / work;
        for (size_t i = 0; i < BUSY_JOBS; i++) {
                SwfJob *j = &ret->jobs[i];
                /* Arrivals relative to the mean: six weeks that bring 1.3 times what
                 * the machine can do, then two that bring 0.06 times. */
                double rate = ((uint64_t) (t / (7 * 86400)) % 8) < 6 ? 1.3 / 0.99 : 0.06 / 0.99;

                j->submit = (int64_t) t;
                j->run = MAX((int64_t) ((double) j->run * scale), (int64_t) 1);
                j->time_req = rnd01() < 0.25 ? j->run : (int64_t) ceil((double) j->run * (1.0 + 3.0 * rnd01()));
                /* Two gaps in three, each half as long again, keep the mean rate. */
                if (rnd01() >= 1.0 / 3.0)
                        t += -log(1.0 - rnd01()) * 1.5 * YEAR_SEC / BUSY_JOBS / rate;
        }
        return 0;
}

static long peak_rss_kib(void) {
        struct rusage ru;

        return getrusage(RUSAGE_SELF, &ru) < 0 ? -1 : ru.ru_maxrss;
}

static int bench_year(void) {
        SimOptions o = { .policy = &sched_policy_easy };
        SwfTrace y = {};
        SimStats st;
        char *err = NULL;
        long rss0;
        double t0, wall;

        if (synthetic_year(&y) < 0)
                return -ENOMEM;
        rss0 = peak_rss_kib();
        t0 = now_sec();
        if (sim_run(&y, &o, &st, &err) < 0) {
                fprintf(stderr, "synthetic year: %s\n", err ?: "failed");
                free(err);
                swf_trace_done(&y);
                return -EIO;
        }
        wall = now_sec() - t0;
        printf("%-26s %-12s jobs %6zu passes %6zu  %8.3f s  %10.0f jobs/s\n", "synthetic year 8192p",
               "easy", st.simulated, st.passes, wall, (double) st.simulated / wall);
        printf("  %u processors, utilization %.3f, avg wait %.0f s, avg bsld %.2f; peak RSS %ld MiB "
               "(%ld MiB with the trace in memory before the run)\n",
               st.procs, st.utilization, st.avg_wait, st.avg_bsld, peak_rss_kib() / 1024, rss0 / 1024);
        fflush(stdout);
        swf_trace_done(&y);
        return 0;
}

/* The busy year under both semantics, as corral-sim runs it by default (the flat
 * engine) and through the scheduling core as before (--engine=core): the ratio is the
 * speed-up, the figures must be the same. */
static int bench_busy(void) {
        SwfTrace y = {};

        if (busy_year(&y) < 0)
                return -ENOMEM;
        for (SimSemantics m = 0; m < _SIM_SEMANTICS_MAX; m++) {
                double wall[_SIM_ENGINE_MAX] = {};
                double bsld[_SIM_ENGINE_MAX] = {};

                for (SimEngine e = SIM_ENGINE_CORE; e < _SIM_ENGINE_MAX; e++) {
                        SimOptions o = { .policy = &sched_policy_easy, .semantics = m, .engine = e };
                        SimStats st;

                        if (run_timed("busy year", &y, &o, &st, &wall[e]) < 0) {
                                swf_trace_done(&y);
                                return -EIO;
                        }
                        bsld[e] = st.avg_bsld;
                        printf("%-26s %-12s jobs %6zu passes %7zu  %8.3f s  %10.0f jobs/s  (%s semantics, %s engine)\n",
                               "busy year 8192p", "easy", st.simulated, st.passes, wall[e],
                               (double) st.simulated / wall[e], sim_semantics_to_string(m), sim_engine_to_string(e));
                        printf("  utilization %.3f, avg wait %.0f s, avg bsld %.6f, at most %zu jobs waiting at once\n",
                               st.utilization, st.avg_wait, st.avg_bsld, st.max_pending);
                        fflush(stdout);
                        sim_stats_done(&st);
                }
                printf("  %s semantics: flat %.3f s against core %.3f s: %.1fx faster, figures %s\n",
                       sim_semantics_to_string(m), wall[SIM_ENGINE_FLAT], wall[SIM_ENGINE_CORE],
                       wall[SIM_ENGINE_CORE] / wall[SIM_ENGINE_FLAT],
                       bsld[SIM_ENGINE_FLAT] == bsld[SIM_ENGINE_CORE] ? "the same" : "DIFFERENT");
        }
        swf_trace_done(&y);
        return 0;
}

/* The busy year as an SWF file, to try corral-sim on it. */
static int write_busy(const char *path) {
        SwfTrace y = {};
        FILE *f;

        if (busy_year(&y) < 0)
                return -ENOMEM;
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "; Synthetic busy year (bench-sim --write-busy): long queues\n; MaxProcs: %d\n", YEAR_PROCS);
        for (size_t i = 0; i < y.n_jobs; i++) {
                const SwfJob *j = &y.jobs[i];
                fprintf(f, "%" PRIi64 " %" PRIi64 " -1 %" PRIi64 " %" PRIi64 " -1 -1 %" PRIi64 " %" PRIi64
                        " -1 1 %d %d -1 -1 -1 -1 -1\n", j->id, j->submit, j->run, j->procs_alloc, j->procs_req,
                        j->time_req, (int) (i % 97) + 1, (int) (i % 13) + 1);
        }
        swf_trace_done(&y);
        return fclose(f) == 0 ? 0 : -errno;
}

int main(int argc, char *argv[]) {
        const char *src = getenv("CORRAL_SRCDIR");
        char dir[4096], path[8192];
        SwfTrace h = {}, l = {}, big = {}, year = {};
        char *err = NULL;

        if (argc > 2 && streq(argv[1], "--write-busy"))
                return write_busy(argv[2]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc > 1 && streq(argv[1], "--busy"))
                return bench_busy() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc > 1)
                snprintf(dir, sizeof dir, "%s", argv[1]);
        else
                snprintf(dir, sizeof dir, "%s/../shared/traces", src ?: ".");

        if (bench_year() < 0 || bench_busy() < 0)
                return EXIT_FAILURE;

        snprintf(path, sizeof path, "%s/hpc2n-2002-first3170.swf", dir);
        if (swf_load(path, &h, &err) < 0) {
                fprintf(stderr, "%s\n", err);
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof path, "%s/lublin_256.swf", dir);
        if (swf_load(path, &l, &err) < 0) {
                fprintf(stderr, "%s\n", err);
                return EXIT_FAILURE;
        }

        if (repeat(&l, 3, &big) < 0 || repeat(&h, 100, &year) < 0)
                return EXIT_FAILURE;

        if (run("hpc2n-2002-first3170", &h, false) < 0 ||
            run("lublin_256 (est=run)", &l, true) < 0 ||
            run("lublin_256 x3 (est=run)", &big, true) < 0 ||
            run("hpc2n x100", &year, false) < 0 ||
            policies(&h, &year) < 0)
                return EXIT_FAILURE;

        swf_trace_done(&h);
        swf_trace_done(&l);
        swf_trace_done(&big);
        swf_trace_done(&year);
        return EXIT_SUCCESS;
}
