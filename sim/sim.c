/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
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
        size_t trace_index;  /* into the trace's jobs */
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
        Event *ending;       /* SIM_SEMANTICS_PUBLISHED: the early ends of one instant */

        /* what one pass needs */
        SchedContext *ctx;
        const SchedConfig *cfg;
        const SchedMachine *machine;
        SimStats *st;

        /* running sums */
        size_t finished;
        uint64_t first_submit, last_end;
        double sum_wait, sum_bsld, sum_flow, work;
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
        free(s->ending);
}

static void sim_submit(Sim *s, size_t next) {
        SimJob *j = &s->jobs[next];

        j->active = s->n_active;
        s->active_job[s->n_active] = next;
        s->active[s->n_active++] = (SchedJob) {
                .id = next + 1,
                .state = SCHED_JOB_PENDING,
                .submit_time = j->submit,
                .cpus = j->procs,
                .walltime = j->estimate,
        };
        s->first_submit = MIN(s->first_submit, j->submit);
}

static void sim_terminate(Sim *s, const Event *e) {
        SimJob *j = &s->jobs[e->job];
        size_t a = (size_t) (s->active[j->active].alloc - s->allocs);
        double wait = (double) (j->start - j->submit), flow = wait + (double) j->run;
        double bsld = MAX(1.0, flow / (double) MAX(j->run, (uint64_t) 10));

        s->free_allocs[s->n_free_allocs++] = a;
        active_remove(s, j->active);
        s->finished++;
        s->sum_wait += wait;
        s->sum_flow += flow;
        s->sum_bsld += bsld;
        s->st->max_bsld = MAX(s->st->max_bsld, bsld);
        s->st->max_flow = MAX(s->st->max_flow, flow);
        s->work += (double) j->run * j->procs;
        s->last_end = MAX(s->last_end, e->end);
}

/* One scheduling pass at now; starts what it decides. */
static int sim_pass(Sim *s, uint64_t now) {
        SchedResult res;
        int r;

        r = sched_pass(s->ctx, s->cfg, s->machine, s->active, s->n_active, now, &res);
        if (r < 0)
                return r;
        s->st->passes++;

        for (size_t i = 0; i < res.n_decisions; i++) {
                const SchedDecision *d = &res.decisions[i];
                SchedJob *sj = &s->active[d->job_index];
                SimJob *j = &s->jobs[s->active_job[d->job_index]];
                size_t a;

                if (d->type != SCHED_DECISION_START)
                        continue;
                assert(s->n_free_allocs > 0);
                a = s->free_allocs[--s->n_free_allocs];
                s->allocs[a] = d->alloc;
                sj->state = SCHED_JOB_RUNNING;
                sj->start_time = now;
                sj->alloc = &s->allocs[a];
                j->start = now;
                heap_push(s, (Event) { .end = now + j->run, .job = s->active_job[d->job_index] });
        }
        return 0;
}

/* The events of one instant; *next: the next job to submit. */
static int sim_instant(Sim *s, const SimOptions *o, uint64_t now, size_t *next) {
        size_t n_ending = 0, passes = s->st->passes;
        int r;

        if (o->semantics == SIM_SEMANTICS_CORRAL) {
                for (; *next < s->n_jobs && s->jobs[*next].submit == now; (*next)++)
                        sim_submit(s, *next);
                while (s->n_heap > 0 && s->heap[0].end == now) {
                        Event e = heap_pop(s);
                        sim_terminate(s, &e);
                }
                return sim_pass(s, now);
        }

        /* Published: a job at its requested time has given its CPUs back by now (in the
         * reference's profile its slices end here); the early ends wait for their turn,
         * after the submissions, in the heap's order. */
        while (s->n_heap > 0 && s->heap[0].end == now) {
                Event e = heap_pop(s);
                const SimJob *j = &s->jobs[e.job];

                if (j->run == j->estimate)
                        sim_terminate(s, &e);
                else
                        s->ending[n_ending++] = e;
        }
        for (; *next < s->n_jobs && s->jobs[*next].submit == now; (*next)++) {
                sim_submit(s, *next);
                r = sim_pass(s, now);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_ending; i++) {
                sim_terminate(s, &s->ending[i]);
                r = sim_pass(s, now);
                if (r < 0)
                        return r;
        }
        /* Only ends at the requested time: the reference's pass after the first of them. */
        if (s->st->passes == passes)
                return sim_pass(s, now);
        return 0;
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

static const char *const filter_names[_SIM_FILTER_MAX] = {
        [SIM_FILTER_DEFAULT] = "default",
        [SIM_FILTER_STRONG] = "strong",
};

static const char *const semantics_names[_SIM_SEMANTICS_MAX] = {
        [SIM_SEMANTICS_CORRAL] = "corral",
        [SIM_SEMANTICS_PUBLISHED] = "published",
};

const char *sim_filter_to_string(SimFilter f) {
        return (unsigned) f < _SIM_FILTER_MAX ? filter_names[f] : NULL;
}

SimFilter sim_filter_from_string(const char *s) {
        for (int i = 0; s && i < _SIM_FILTER_MAX; i++)
                if (streq(filter_names[i], s))
                        return (SimFilter) i;
        return _SIM_FILTER_INVALID;
}

const char *sim_semantics_to_string(SimSemantics m) {
        return (unsigned) m < _SIM_SEMANTICS_MAX ? semantics_names[m] : NULL;
}

SimSemantics sim_semantics_from_string(const char *s) {
        for (int i = 0; s && i < _SIM_SEMANTICS_MAX; i++)
                if (streq(semantics_names[i], s))
                        return (SimSemantics) i;
        return _SIM_SEMANTICS_INVALID;
}

/* Whether trace job w is simulated, and how; else which count it adds to. */
static size_t *job_filter(const SwfJob *w, const SimOptions *o, unsigned procs, SimStats *st, SimJob *ret) {
        int64_t p = w->procs_req > 0 ? w->procs_req : w->procs_alloc;
        int64_t est = o->exact_estimates ? w->run : w->time_req, run = w->run;

        if (o->filter == SIM_FILTER_STRONG) {
                if (w->submit < 0 || w->run <= 0 || p <= 0)
                        return &st->skipped_unknown;
                if (w->time_req <= 0)
                        return &st->skipped_no_estimate;
                if (w->procs_alloc > (int64_t) procs || w->procs_req > (int64_t) procs)
                        return &st->skipped_too_big;
                run = MIN(w->run, w->time_req);
                est = o->exact_estimates ? run : w->time_req;
        } else {
                if (w->run < 0 || p <= 0 || w->submit < 0)
                        return &st->skipped_unknown;
                if (est < 0) {
                        if (!o->missing_estimate_runtime)
                                return &st->skipped_no_estimate;
                        est = w->run;
                }
                if (p > (int64_t) procs)
                        return &st->skipped_too_big;
        }
        *ret = (SimJob) {
                .submit = (uint64_t) w->submit,
                .run = (uint64_t) MIN(run, est),
                .estimate = (uint64_t) est,
                .procs = (unsigned) p,
        };
        return NULL;
}

int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error) {
        _cleanup_(sched_context_freep) SchedContext *ctx = NULL;
        SchedNode nodes[SCHED_NODES_MAX] = {};
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedMachine machine = { .nodes = nodes };
        SimStats st = {};
        Sim s = {
                .cfg = &cfg,
                .machine = &machine,
                .st = &st,
                .first_submit = UINT64_MAX,
        };
        unsigned procs = 0, n_nodes = MAX(o->numa_nodes, 1u);
        size_t next = 0;
        int r;

        if ((unsigned) o->filter >= _SIM_FILTER_MAX || (unsigned) o->semantics >= _SIM_SEMANTICS_MAX)
                return error(ret_error, "unknown input filter or event semantics");
        if (o->filter == SIM_FILTER_STRONG && o->missing_estimate_runtime)
                return error(ret_error, "the strong filter drops jobs without a requested time: "
                             "it cannot plan them with their run time");
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
        if (o->semantics == SIM_SEMANTICS_PUBLISHED)
                s.ending = new(Event, procs + 1);
        s.ctx = ctx = sched_context_new();
        if (!s.jobs || !s.active || !s.active_job || !s.heap || !s.allocs || !s.free_allocs || !ctx ||
            (o->semantics == SIM_SEMANTICS_PUBLISHED && !s.ending)) {
                sim_done(&s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < procs; i++)
                s.free_allocs[s.n_free_allocs++] = procs - 1 - i;

        for (size_t i = 0; i < t->n_jobs; i++) {
                size_t *skipped = job_filter(&t->jobs[i], o, procs, &st, &s.jobs[s.n_jobs]);

                if (skipped)
                        (*skipped)++;
                else
                        s.jobs[s.n_jobs++].trace_index = i;
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

        while (s.finished < s.n_jobs) {
                uint64_t now;

                if (next < s.n_jobs && (s.n_heap == 0 || s.jobs[next].submit <= s.heap[0].end))
                        now = s.jobs[next].submit;
                else if (s.n_heap > 0)
                        now = s.heap[0].end;
                else {
                        size_t left = s.n_jobs - s.finished;
                        sim_done(&s);
                        return error(ret_error, "%zu jobs can never start", left);
                }

                r = sim_instant(&s, o, now, &next);
                if (r < 0) {
                        sim_done(&s);
                        return r;
                }
        }

        st.simulated = s.n_jobs;
        if (s.n_jobs > 0) {
                st.avg_wait = s.sum_wait / (double) s.n_jobs;
                st.avg_bsld = s.sum_bsld / (double) s.n_jobs;
                st.avg_flow = s.sum_flow / (double) s.n_jobs;
                st.makespan = s.last_end - s.first_submit;
                st.utilization = st.makespan > 0 ? s.work / ((double) procs * (double) st.makespan) : 0.0;
        }
        if (o->results) {
                for (size_t i = 0; i < t->n_jobs; i++)
                        o->results[i] = (SimJobResult) { .wait = -1, .run = -1 };
                for (size_t i = 0; i < s.n_jobs; i++)
                        o->results[s.jobs[i].trace_index] = (SimJobResult) {
                                .wait = (int64_t) (s.jobs[i].start - s.jobs[i].submit),
                                .run = (int64_t) s.jobs[i].run,
                        };
        }

        sim_done(&s);
        *ret = st;
        return 0;
}

/* The line's whitespace-separated fields, cut in place; false if not 18. */
static bool split_fields(char *line, char *f[18]) {
        size_t n = 0;

        for (char *p = line;;) {
                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                if (n >= 18)
                        return false;
                f[n++] = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                if (*p)
                        *p++ = 0;
        }
        return n == 18;
}

static bool field_is(const char *f, int64_t want) {
        char *end;
        double v;

        errno = 0;
        v = strtod(f, &end);
        return errno == 0 && *end == 0 && isfinite(v) && v > -9.2e18 && v < 9.2e18 && llround(v) == want;
}

int sim_write_schedule(FILE *in, const char *name, const SwfTrace *t, const SimJobResult *results,
                       const char *note, FILE *out, char **ret_error) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0, k = 0;
        unsigned lineno = 0;
        bool noted = !note;
        ssize_t l;

        while ((l = getline(&line, &size, in)) >= 0) {
                const char *p = line;
                char *f[18];

                lineno++;
                while (isspace((unsigned char) *p))
                        p++;
                if (*p == ';' || !*p) {
                        fputs(line, out);
                        if (l > 0 && line[l - 1] != '\n')
                                fputc('\n', out);
                        continue;
                }
                if (!noted) {
                        fputs(note, out);
                        noted = true;
                }
                /* Read a second time: it must still be the trace that was simulated. */
                if (k >= t->n_jobs || t->jobs[k].line != lineno || memchr(line, 0, (size_t) l) ||
                    !split_fields(line, f) || !field_is(f[0], t->jobs[k].id) ||
                    !field_is(f[1], t->jobs[k].submit))
                        return error(ret_error, "%s:%u: the trace changed since it was simulated", name,
                                     lineno);
                if (results[k].wait >= 0) {
                        for (size_t i = 0; i < 18; i++) {
                                if (i > 0)
                                        fputc(' ', out);
                                if (i == 2 || i == 3)
                                        fprintf(out, "%" PRIi64, i == 2 ? results[k].wait : results[k].run);
                                else
                                        fputs(f[i], out);
                        }
                        fputc('\n', out);
                }
                k++;
        }
        if (ferror(in))
                return error(ret_error, "%s: read error", name);
        if (k != t->n_jobs)
                return error(ret_error, "%s: the trace changed since it was simulated", name);
        if (!noted)
                fputs(note, out);
        if (fflush(out) != 0 || ferror(out))
                return errno > 0 ? -errno : -EIO;
        return 0;
}
