/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* One job to simulate, in submission order. */
typedef struct SimJob {
        uint64_t submit, run, estimate, start;
        unsigned procs;
        size_t active;       /* index in the active array while pending or running */
} SimJob;

/* A termination: end time, then submission order for ties. */
typedef struct Event {
        uint64_t end;
        size_t job;
} Event;

typedef struct Sim {
        SimJob *jobs;
        size_t n_jobs;
        SchedJob *active;    /* pending and running jobs, as sched/ sees them */
        size_t *active_job;  /* active[i] is jobs[active_job[i]] */
        size_t n_active;
        size_t n_done;       /* DONE entries among them */
        Event *heap;
        size_t n_heap;
        SchedAllocation *allocs; /* one per CPU at most: each running job holds one */
        size_t *free_allocs;
        size_t n_free_allocs;
} Sim;

_printf_(2, 3)
static int error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EINVAL;
}

static bool event_less(const Event *a, const Event *b) {
        return a->end != b->end ? a->end < b->end : a->job < b->job;
}

static void heap_push(Sim *s, Event e) {
        size_t i = s->n_heap++;

        while (i > 0 && event_less(&e, &s->heap[(i - 1) / 2])) {
                s->heap[i] = s->heap[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        s->heap[i] = e;
}

static Event heap_pop(Sim *s) {
        Event top = s->heap[0], last = s->heap[--s->n_heap];
        size_t i = 0;

        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= s->n_heap)
                        break;
                if (c + 1 < s->n_heap && event_less(&s->heap[c + 1], &s->heap[c]))
                        c++;
                if (!event_less(&s->heap[c], &last))
                        break;
                s->heap[i] = s->heap[c];
                i = c;
        }
        if (s->n_heap > 0)
                s->heap[i] = last;
        return top;
}

/* Finished jobs stay in place as DONE (sched/ skips them) and are squeezed out once they
 * are half the array: the array stays in submission order, which is nearly priority order,
 * so a pass's sort has little to do; swapping the last job in would scramble it. */
static void active_remove(Sim *s, size_t i) {
        size_t n = 0;

        s->active[i].state = SCHED_JOB_DONE;
        if (++s->n_done * 2 < s->n_active)
                return;
        for (size_t k = 0; k < s->n_active; k++) {
                if (s->active[k].state == SCHED_JOB_DONE)
                        continue;
                s->active[n] = s->active[k];
                s->active_job[n] = s->active_job[k];
                s->jobs[s->active_job[n]].active = n;
                n++;
        }
        s->n_active = n;
        s->n_done = 0;
}

static void sim_done(Sim *s) {
        free(s->jobs);
        free(s->active);
        free(s->active_job);
        free(s->heap);
        free(s->allocs);
        free(s->free_allocs);
}

static int machine_size(const SwfTrace *t, const SimOptions *o, unsigned *ret, char **ret_error) {
        int64_t procs = o->procs > 0 ? (int64_t) o->procs : t->max_procs > 0 ? t->max_procs : t->max_nodes;

        if (procs <= 0)
                return error(ret_error, "no machine size: the trace has neither \"; MaxProcs:\" nor \"; MaxNodes:\", use --procs");
        if (procs > CPU_SET_MAX)
                return error(ret_error, "machine of %" PRIi64 " processors too large: at most %d supported", procs, CPU_SET_MAX);
        *ret = (unsigned) procs;
        return 0;
}

int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error) {
        _cleanup_(sched_context_freep) SchedContext *ctx = NULL;
        SchedNode nodes[SCHED_NODES_MAX] = {};
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedMachine machine = { .nodes = nodes };
        SimStats st = {};
        Sim s = {};
        unsigned procs = 0, n_nodes = MAX(o->numa_nodes, 1u);
        size_t next = 0, finished = 0;
        uint64_t first_submit = UINT64_MAX, last_end = 0;
        double sum_wait = 0, sum_bsld = 0, sum_flow = 0, work = 0;
        int r;

        r = machine_size(t, o, &procs, ret_error);
        if (r < 0)
                return r;
        if (n_nodes > SCHED_NODES_MAX || n_nodes > procs)
                return error(ret_error, "cannot split %u processors over %u NUMA nodes (at most %d)",
                             procs, n_nodes, SCHED_NODES_MAX);

        /* Even split, the first nodes taking the remainder; memory never binds. */
        for (unsigned k = 0, cpu = 0; k < n_nodes; k++) {
                unsigned n = procs / n_nodes + (k < procs % n_nodes);
                for (unsigned i = 0; i < n; i++)
                        cpu_set_add(&nodes[k].cpus, cpu++);
                nodes[k].memory = UINT64_C(1) << 50;
                nodes[k].speed = 1;
        }
        machine.n_nodes = n_nodes;

        cfg.policy = o->policy ?: &sched_policy_easy;
        cfg.backfill_order = o->backfill_order;
        cfg.estimate_depth = 0; /* nobody reads the estimates of simulated jobs */
        st.procs = procs;
        st.numa_nodes = n_nodes;

        s.jobs = new(SimJob, MAX(t->n_jobs, (size_t) 1));
        s.active = new(SchedJob, MAX(t->n_jobs, (size_t) 1));
        s.active_job = new(size_t, MAX(t->n_jobs, (size_t) 1));
        s.heap = new(Event, procs + 1);
        s.allocs = new(SchedAllocation, procs);
        s.free_allocs = new(size_t, procs);
        ctx = sched_context_new();
        if (!s.jobs || !s.active || !s.active_job || !s.heap || !s.allocs || !s.free_allocs || !ctx) {
                sim_done(&s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < procs; i++)
                s.free_allocs[s.n_free_allocs++] = procs - 1 - i;

        for (size_t i = 0; i < t->n_jobs; i++) {
                const SwfJob *w = &t->jobs[i];
                int64_t p = w->procs_req > 0 ? w->procs_req : w->procs_alloc;
                int64_t est = o->exact_estimates ? w->run : w->time_req;

                if (w->run < 0 || p <= 0 || w->submit < 0) {
                        st.skipped_unknown++;
                        continue;
                }
                if (est < 0) {
                        if (!o->missing_estimate_runtime) {
                                st.skipped_no_estimate++;
                                continue;
                        }
                        est = w->run;
                }
                if (p > procs) {
                        st.skipped_too_big++;
                        continue;
                }
                s.jobs[s.n_jobs++] = (SimJob) {
                        .submit = (uint64_t) w->submit,
                        .run = (uint64_t) MIN(w->run, est),
                        .estimate = (uint64_t) est,
                        .procs = (unsigned) p,
                };
        }
        st.skipped = st.skipped_unknown + st.skipped_no_estimate + st.skipped_too_big;

        /* The archive's files are sorted by submission, but a trace need not be. */
        for (size_t i = 1; i < s.n_jobs; i++)
                if (s.jobs[i].submit < s.jobs[i - 1].submit) {
                        /* Stable insertion sort from here: rare and nearly sorted. */
                        SimJob v = s.jobs[i];
                        size_t x = i;
                        while (x > 0 && s.jobs[x - 1].submit > v.submit) {
                                s.jobs[x] = s.jobs[x - 1];
                                x--;
                        }
                        s.jobs[x] = v;
                }

        while (finished < s.n_jobs) {
                uint64_t now;
                SchedResult res;

                if (next < s.n_jobs && (s.n_heap == 0 || s.jobs[next].submit <= s.heap[0].end))
                        now = s.jobs[next].submit;
                else if (s.n_heap > 0)
                        now = s.heap[0].end;
                else {
                        sim_done(&s);
                        return error(ret_error, "%zu jobs can never start", s.n_jobs - finished);
                }

                for (; next < s.n_jobs && s.jobs[next].submit == now; next++) {
                        SimJob *j = &s.jobs[next];

                        j->active = s.n_active;
                        s.active_job[s.n_active] = next;
                        s.active[s.n_active++] = (SchedJob) {
                                .id = next + 1,
                                .state = SCHED_JOB_PENDING,
                                .submit_time = j->submit,
                                .cpus = j->procs,
                                .walltime = j->estimate,
                        };
                        first_submit = MIN(first_submit, j->submit);
                }

                while (s.n_heap > 0 && s.heap[0].end == now) {
                        Event e = heap_pop(&s);
                        SimJob *j = &s.jobs[e.job];
                        size_t a = (size_t) (s.active[j->active].alloc - s.allocs);
                        double wait = (double) (j->start - j->submit), flow = wait + (double) j->run;
                        double bsld = MAX(1.0, flow / (double) MAX(j->run, (uint64_t) 10));

                        s.free_allocs[s.n_free_allocs++] = a;
                        active_remove(&s, j->active);
                        finished++;
                        sum_wait += wait;
                        sum_flow += flow;
                        sum_bsld += bsld;
                        st.max_bsld = MAX(st.max_bsld, bsld);
                        st.max_flow = MAX(st.max_flow, flow);
                        work += (double) j->run * j->procs;
                        last_end = MAX(last_end, now);
                }

                r = sched_pass(ctx, &cfg, &machine, s.active, s.n_active, now, &res);
                if (r < 0) {
                        sim_done(&s);
                        return r;
                }
                st.passes++;

                for (size_t i = 0; i < res.n_decisions; i++) {
                        const SchedDecision *d = &res.decisions[i];
                        SchedJob *sj = &s.active[d->job_index];
                        SimJob *j = &s.jobs[s.active_job[d->job_index]];
                        size_t a;

                        if (d->type != SCHED_DECISION_START)
                                continue;
                        assert(s.n_free_allocs > 0);
                        a = s.free_allocs[--s.n_free_allocs];
                        s.allocs[a] = d->alloc;
                        sj->state = SCHED_JOB_RUNNING;
                        sj->start_time = now;
                        sj->alloc = &s.allocs[a];
                        j->start = now;
                        heap_push(&s, (Event) { .end = now + j->run, .job = s.active_job[d->job_index] });
                }
        }

        st.simulated = s.n_jobs;
        if (s.n_jobs > 0) {
                st.avg_wait = sum_wait / (double) s.n_jobs;
                st.avg_bsld = sum_bsld / (double) s.n_jobs;
                st.avg_flow = sum_flow / (double) s.n_jobs;
                st.makespan = last_end - first_submit;
                st.utilization = st.makespan > 0 ? work / ((double) procs * (double) st.makespan) : 0.0;
        }

        sim_done(&s);
        *ret = st;
        return 0;
}
