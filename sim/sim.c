/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting/accounting.h"
#include "job-request.h"
#include "parse-util.h"
#include "sim.h"
#include "strv.h"

/* One job to simulate, in submission order. */
typedef struct SimJob {
        uint64_t submit, run, estimate, start;
        uint64_t end;           /* while running: when it ends (its event) */
        uint64_t left;          /* while suspended: the run time it still needs */
        uint64_t suspend_start; /* while suspended: since when */
        uint64_t suspended;     /* seconds suspended in all */
        unsigned procs;
        unsigned gpus;          /* field 19 */
        uint32_t suspensions;
        uint32_t user;          /* field 12, the uid sched/ sees */
        uint32_t queue;         /* into Sim.queues */
        uint32_t project;       /* into Sim.projects */
        size_t active;          /* index in the active array while pending, running or suspended */
        size_t trace_index;     /* into the trace's jobs */
} SimJob;

/* A termination: end time, then seq for ties: submission order in Corral's semantics
 * (all of an instant's events are applied before its one pass, so any order would do);
 * the order the jobs started in the published ones, as their simulators make a job's
 * termination event when it starts and break ties by creation. */
typedef struct Event {
        uint64_t end;
        uint64_t seq;
        size_t job;
        bool silent;            /* published: ended at its requested time, already released */
} Event;

/* The flat engine's view of a waiting job: what a pass reads, packed. */
typedef struct FlatCand {
        uint64_t walltime;      /* as sched_job_walltime() gives it */
        uint32_t job;           /* into Sim.jobs */
        uint32_t cpus;
} FlatCand;

/* A running job's CPUs, back at its requested end (the profile a reservation reads). */
typedef struct FlatRelease {
        uint64_t end;
        uint32_t job;
        uint32_t cpus;
} FlatRelease;

/* Running sums of the jobs of a queue or a project. */
typedef struct SimGroup {
        size_t jobs, suspensions, suspended_jobs, xfactor_ok;
        double sum_wait, max_wait, sum_bsld, max_bsld, sum_xfactor, max_xfactor, cpu_seconds, gpu_seconds;
} SimGroup;

typedef struct SimQueue {
        SimGroup g;
        const QueueConfig *config; /* NULL without a configuration */
        bool fairshare_excluded;   /* FairShareExcludeQueues= */
        double fairshare_weight;   /* acct_fairshare_weight() of its ChargeFactor= */
} SimQueue;

typedef struct SimProject {
        SimGroup g;
        char *name;
        uint32_t sched_id;         /* SchedJob.project_id: its index in the configuration + 1, or 0 */
        /* Fair-share, as corrald's accounting keeps it (usage.c): ended runs decayed,
         * running jobs' credit, the factor for the pass. */
        AcctDecayed ended;
        double running, fairshare;
} SimProject;

typedef struct Sim {
        SimJob *jobs;
        size_t n_jobs;
        SchedJob *active;    /* pending, running and suspended jobs, as sched/ sees them */
        size_t *active_job;  /* active[i] is jobs[active_job[i]] */
        size_t n_active;
        size_t n_done;       /* DONE entries among them */
        Event *heap;         /* one event per running job */
        size_t n_heap;
        SchedAllocation *allocs; /* one per running or suspended job */
        size_t n_allocs;
        size_t *free_allocs;
        size_t n_free_allocs;
        Event *ending;       /* SIM_SEMANTICS_PUBLISHED: the terminations of one instant */
        uint64_t starts;     /* jobs started or resumed so far: Event.seq in published semantics */
        uint64_t busy;       /* CPUs held by running jobs */
        size_t n_pending;
        unsigned machine_cpus;
        bool dirty;          /* published: something changed since the last pass */
        SimQueue *queues;
        size_t n_queues;
        SimProject *projects;
        size_t n_projects;
        SchedProject *sched_projects;
        SchedUserLimits *sched_users;

        /* SIM_ENGINE_FLAT: the waiting jobs in priority order (submission order), the same
         * in shortest-walltime order for SJF (both with holes where jobs started, squeezed
         * out now and then), and the running jobs' releases sorted by end. */
        bool flat;
        FlatCand *fifo, *sjf;
        size_t n_fifo, n_sjf, fifo_holes, sjf_holes;
        size_t fifo_head;       /* fifo[0, fifo_head) are all holes */
        FlatRelease *rel;
        size_t n_rel;
        uint8_t *started;       /* per job: its entries in fifo and sjf are holes */

        /* what one pass needs */
        SchedContext *ctx;
        const SchedConfig *cfg;
        const SchedMachine *machine;
        const SimOptions *o;
        SimStats *st;
        char **ret_error;

        /* running sums */
        size_t finished;
        uint64_t first_submit, last_end;
        double sum_wait, sum_bsld, sum_flow, sum_xfactor, work, gpu_work;
        size_t xfactor_ok;
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

void sim_map_free(SimMap *m, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(m[i].name);
        free(m);
}

int sim_map_parse(const char *s, SimMap **ret, size_t *ret_n, char **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        SimMap *m = NULL;
        size_t n = 0;

        if (strv_split(s ?: "", ",", &l) < 0)
                return -ENOMEM;
        m = new0(SimMap, MAX(strv_length(l), (size_t) 1));
        if (!m)
                return -ENOMEM;
        STRV_FOREACH(e, l) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *num = NULL;
                char *end;
                long long v;

                if (!eq || eq == *e || !ident_is_valid(eq + 1)) {
                        sim_map_free(m, n);
                        return error(ret_error, "\"%s\" is no NUMBER=NAME", *e);
                }
                num = strndup(*e, (size_t) (eq - *e));
                if (!num) {
                        sim_map_free(m, n);
                        return -ENOMEM;
                }
                errno = 0;
                v = strtoll(num, &end, 10);
                if (errno != 0 || *end || end == num) {
                        sim_map_free(m, n);
                        return error(ret_error, "\"%s\": %s is no integer", *e, num);
                }
                for (size_t k = 0; k < n; k++)
                        if (m[k].number == v) {
                                sim_map_free(m, n);
                                return error(ret_error, "\"%s\": %lld is mapped twice", *e, v);
                        }
                m[n].number = v;
                m[n].name = strdup(eq + 1);
                if (!m[n++].name) {
                        sim_map_free(m, n);
                        return -ENOMEM;
                }
        }
        if (n == 0) {
                free(m);
                return error(ret_error, "an empty map");
        }
        *ret = m;
        *ret_n = n;
        return 0;
}

static const char *map_find(const SimMap *m, size_t n, int64_t number) {
        for (size_t i = 0; i < n; i++)
                if (m[i].number == number)
                        return m[i].name;
        return NULL;
}

static bool event_less(const Event *a, const Event *b) {
        return a->end != b->end ? a->end < b->end : a->seq < b->seq;
}

static void heap_sift_up(Sim *s, size_t i, Event e) {
        while (i > 0 && event_less(&e, &s->heap[(i - 1) / 2])) {
                s->heap[i] = s->heap[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        s->heap[i] = e;
}

static void heap_sift_down(Sim *s, size_t i, Event e) {
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= s->n_heap)
                        break;
                if (c + 1 < s->n_heap && event_less(&s->heap[c + 1], &s->heap[c]))
                        c++;
                if (!event_less(&s->heap[c], &e))
                        break;
                s->heap[i] = s->heap[c];
                i = c;
        }
        s->heap[i] = e;
}

static void heap_push(Sim *s, Event e) {
        heap_sift_up(s, s->n_heap++, e);
}

static Event heap_pop(Sim *s) {
        Event top = s->heap[0], last = s->heap[--s->n_heap];

        if (s->n_heap > 0)
                heap_sift_down(s, 0, last);
        return top;
}

/* A suspended job's end is no longer known: its event goes. Linear, as suspensions are
 * few next to terminations. */
static void heap_remove(Sim *s, size_t job) {
        for (size_t i = 0; i < s->n_heap; i++) {
                Event last;

                if (s->heap[i].job != job)
                        continue;
                last = s->heap[--s->n_heap];
                if (i == s->n_heap)
                        return;
                if (i > 0 && event_less(&last, &s->heap[(i - 1) / 2]))
                        heap_sift_up(s, i, last);
                else
                        heap_sift_down(s, i, last);
                return;
        }
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

static void flat_submit(Sim *s, size_t job);
static void flat_end(Sim *s, size_t job);

static void sim_done(Sim *s) {
        free(s->jobs);
        free(s->active);
        free(s->active_job);
        free(s->heap);
        free(s->allocs);
        free(s->free_allocs);
        free(s->ending);
        free(s->fifo);
        free(s->sjf);
        free(s->rel);
        free(s->started);
        free(s->queues);
        for (size_t i = 0; i < s->n_projects; i++)
                free(s->projects[i].name);
        free(s->projects);
        free(s->sched_projects);
        free(s->sched_users);
}

/* An allocation slot. Suspended jobs keep theirs while others run on their CPUs, so the
 * pool may outgrow the processors: it grows, and the jobs' pointers follow it. */
static int alloc_get(Sim *s, size_t *ret) {
        if (s->n_free_allocs == 0) {
                size_t n = s->n_allocs * 2;
                SchedAllocation *a = new(SchedAllocation, n);
                size_t *f;

                if (!a)
                        return -ENOMEM;
                memcpy(a, s->allocs, s->n_allocs * sizeof *a);
                for (size_t i = 0; i < s->n_active; i++)
                        if (s->active[i].alloc)
                                s->active[i].alloc = a + (s->active[i].alloc - s->allocs);
                free(s->allocs);
                s->allocs = a;
                f = reallocarray(s->free_allocs, n, sizeof *f);
                if (!f)
                        return -ENOMEM;
                s->free_allocs = f;
                for (size_t i = n; i > s->n_allocs; i--)
                        s->free_allocs[s->n_free_allocs++] = i - 1;
                s->n_allocs = n;
        }
        *ret = s->free_allocs[--s->n_free_allocs];
        return 0;
}

static void sim_submit(Sim *s, size_t next) {
        SimJob *j = &s->jobs[next];
        const SimQueue *q = &s->queues[j->queue];
        const QueueConfig *qc = q->config;

        j->active = s->n_active;
        s->active_job[s->n_active] = next;
        s->active[s->n_active++] = (SchedJob) {
                .id = next + 1,
                .state = SCHED_JOB_PENDING,
                .submit_time = j->submit,
                .cpus = j->procs,
                .gpus = j->gpus,
                .gpu_binding = j->gpus > 0 && s->o->gpu_binding,
                .walltime = j->estimate,
                .user_id = j->user,
                .project_id = s->projects[j->project].sched_id,
                /* As manager_sched_job() fills them from the queue. */
                .queue_priority = qc ? qc->priority : 0,
                .default_walltime = qc ? qc->default_walltime : 0,
                .max_walltime = qc ? qc->max_walltime : 0,
                .queue_id = qc ? j->queue : UINT32_MAX,
                .target_queue_time = qc ? qc->target_queue_time : 0,
                .preempts = qc ? qc->preempts_mask : 0,
                .parallel_run = qc && qc->parallel_run,
                .preemptable = !qc || qc->preemptable,
                .resident_memory = UINT64_MAX,
        };
        s->first_submit = MIN(s->first_submit, j->submit);
        s->n_pending++;
        s->st->max_pending = MAX(s->st->max_pending, s->n_pending);
        if (s->flat)
                flat_submit(s, next);
}

static void group_add(SimGroup *g, const SimJob *j, double wait, double bsld, double xfactor) {
        g->jobs++;
        g->sum_wait += wait;
        g->max_wait = MAX(g->max_wait, wait);
        g->sum_bsld += bsld;
        g->max_bsld = MAX(g->max_bsld, bsld);
        g->suspensions += j->suspensions;
        g->suspended_jobs += j->suspensions > 0;
        g->sum_xfactor += xfactor;
        g->max_xfactor = MAX(g->max_xfactor, xfactor);
        g->xfactor_ok += xfactor <= SIM_XFACTOR_OK;
        g->cpu_seconds += (double) j->run * j->procs;
        g->gpu_seconds += (double) j->run * j->gpus;
}

/* NCI's expansion factor: (requested walltime + time suspended) / requested walltime. */
static double xfactor(const SimJob *j) {
        return j->estimate > 0 ? (double) (j->estimate + j->suspended) / (double) j->estimate : 1.0;
}

/* What the job is charged, as accounting.c reckons it: core-hours over its running time. */
static double core_hours(const SimJob *j, uint64_t now, uint64_t suspended) {
        JobCharge c = {
                .cpus = j->procs,
                .run_usec = acct_run_usec(j->start * UINT64_C(1000000), now * UINT64_C(1000000),
                                          suspended * UINT64_C(1000000)),
        };

        acct_charge_compute(&c);
        return c.core_hours;
}

static void sim_terminate(Sim *s, const Event *e) {
        SimJob *j = &s->jobs[e->job];
        double wait = (double) (j->start - j->submit), flow = (double) (e->end - j->submit);
        double bsld = MAX(1.0, flow / (double) MAX(j->run, (uint64_t) 10)), xf = xfactor(j);
        SimProject *p = &s->projects[j->project];

        if (s->flat)
                flat_end(s, e->job);
        else
                s->free_allocs[s->n_free_allocs++] = (size_t) (s->active[j->active].alloc - s->allocs);
        s->busy -= MAX(j->procs, 1u);
        active_remove(s, j->active);
        s->finished++;
        s->sum_wait += wait;
        s->sum_flow += flow;
        s->sum_bsld += bsld;
        s->sum_xfactor += xf;
        s->xfactor_ok += xf <= SIM_XFACTOR_OK;
        s->st->max_bsld = MAX(s->st->max_bsld, bsld);
        s->st->max_flow = MAX(s->st->max_flow, flow);
        s->st->max_xfactor = MAX(s->st->max_xfactor, xf);
        s->work += (double) j->run * j->procs;
        s->gpu_work += (double) j->run * j->gpus;
        s->last_end = MAX(s->last_end, e->end);
        group_add(&s->queues[j->queue].g, j, wait, bsld, xf);
        group_add(&p->g, j, wait, bsld, xf);

        /* usage.c's manager_account_run(): the run's core-hours, credited as spread over
         * its span and decayed to its end. */
        if (s->o->fairshare && !s->queues[j->queue].fairshare_excluded) {
                uint64_t h = s->o->config->fairshare_half_life;
                double ch = core_hours(j, e->end, j->suspended) * s->queues[j->queue].fairshare_weight;
                acct_decayed_add(&p->ended, acct_decay_credit(ch, e->end - j->start, h), e->end, h);
        }
}

/* usage.c's manager_fairshare_refresh() and manager_job_fairshare(): each project's usage
 * now, running and suspended jobs included, and the factor every waiting job gets. */
static void fairshare_refresh(Sim *s, uint64_t now) {
        uint64_t h = s->o->config->fairshare_half_life;
        double total = 0.0;

        for (size_t i = 0; i < s->n_projects; i++)
                s->projects[i].running = 0.0;
        for (size_t i = 0; i < s->n_active; i++) {
                const SchedJob *sj = &s->active[i];
                const SimJob *j = &s->jobs[s->active_job[i]];
                uint64_t suspended = j->suspended;

                if ((sj->state != SCHED_JOB_RUNNING && sj->state != SCHED_JOB_SUSPENDED) ||
                    s->queues[j->queue].fairshare_excluded)
                        continue;
                if (sj->state == SCHED_JOB_SUSPENDED)
                        suspended += now - j->suspend_start; /* the open suspension */
                s->projects[j->project].running +=
                        acct_decay_credit(core_hours(j, now, suspended) * s->queues[j->queue].fairshare_weight,
                                          now > j->start ? now - j->start : 0, h);
        }
        for (size_t i = 0; i < s->n_projects; i++) {
                SimProject *p = &s->projects[i];
                p->fairshare = acct_decayed_value(&p->ended, now, h) + p->running; /* the usage, for now */
                total += p->fairshare;
        }
        for (size_t i = 0; i < s->n_projects; i++)
                s->projects[i].fairshare = acct_fairshare(s->projects[i].fairshare, total);
        for (size_t i = 0; i < s->n_active; i++)
                if (s->active[i].state == SCHED_JOB_PENDING)
                        s->active[i].fairshare = s->projects[s->jobs[s->active_job[i]].project].fairshare;
}

static uint64_t event_seq(Sim *s, size_t job) {
        s->starts++;
        return s->o->semantics == SIM_SEMANTICS_PUBLISHED ? s->starts : job;
}

static int apply_start(Sim *s, const SchedDecision *d, uint64_t now) {
        SchedJob *sj = &s->active[d->job_index];
        size_t job = s->active_job[d->job_index], a;
        SimJob *j = &s->jobs[job];
        int r;

        if (sj->state != SCHED_JOB_PENDING)
                return 0;
        r = alloc_get(s, &a);
        if (r < 0)
                return r;
        s->n_pending--;
        s->allocs[a] = d->alloc;
        sj->state = SCHED_JOB_RUNNING;
        sj->start_time = now;
        sj->alloc = &s->allocs[a];
        sj->blocked = false;
        j->start = now;
        j->end = now + j->run;
        s->busy += MAX(j->procs, 1u);
        heap_push(s, (Event) { .end = j->end, .seq = event_seq(s, job), .job = job });
        return 0;
}

/* The job keeps its allocation: sched/ decides what a suspended job holds. */
static int apply_suspend(Sim *s, const SchedDecision *d, uint64_t now) {
        SchedJob *sj = &s->active[d->job_index];
        size_t job = s->active_job[d->job_index];
        SimJob *j = &s->jobs[job];

        if (sj->state != SCHED_JOB_RUNNING) {
                error(s->ret_error, "at %" PRIu64 " the scheduling core suspended job %" PRIu64
                      ", which is not running", now, sj->id);
                return -EPROTO;
        }
        heap_remove(s, job);
        s->busy -= MAX(j->procs, 1u);
        j->left = j->end > now ? j->end - now : 0;
        j->suspend_start = now;
        j->suspensions++;
        sj->state = SCHED_JOB_SUSPENDED;
        sj->preempted = true; /* by the scheduler: it holds memory only, and a pass resumes it */
        s->st->suspensions++;
        return 0;
}

static int apply_resume(Sim *s, const SchedDecision *d, uint64_t now) {
        SchedJob *sj = &s->active[d->job_index];
        size_t job = s->active_job[d->job_index];
        SimJob *j = &s->jobs[job];

        if (sj->state != SCHED_JOB_SUSPENDED) {
                error(s->ret_error, "at %" PRIu64 " the scheduling core resumed job %" PRIu64
                      ", which is not suspended", now, sj->id);
                return -EPROTO;
        }
        j->suspended += now - j->suspend_start;
        /* Its walltime clock stood still: the core adds suspended_time to its end. */
        sj->suspended_time = j->suspended;
        sj->preempted = false;
        sj->last_resume_time = now;
        /* Moved to other CPUs (the daemon changes the scope's AllowedCPUs= before it thaws). */
        if (!cpu_set_is_empty(&d->alloc.cpus))
                *(SchedAllocation *) sj->alloc = d->alloc;
        sj->state = SCHED_JOB_RUNNING;
        j->end = now + j->left;
        s->busy += MAX(j->procs, 1u);
        heap_push(s, (Event) { .end = j->end, .seq = event_seq(s, job), .job = job });
        s->st->resumes++;
        return 0;
}


/* The flat engine: EASY and FCFS as sched/ decides them (policy-backfill.c) on one node
 * holding a plain count of CPUs, with nothing that needs the core (no configuration, so
 * every job has the same queue and no limits, and priority is submission order; no
 * suspension). It gives the same starts as the core, job by job (test-sim checks it),
 * takes machines of any size as it names no CPU, and its pass reads only the packed
 * waiting list and the sorted releases: no per-pass sort, no allocation, no CPU set. */

/* Whether the flat engine makes the core's decisions: every job in the default queue,
 * which preempts no job of its own queue; no project limits; priority that keeps the
 * queue in submission order (age, whatever weight, and terms alike for all), hence no
 * fair-share, no shuffle, no bypass or size or expansion factor terms; one node (the
 * caller's business); no pass of the caller's. */
static bool flat_applies(const SimOptions *o, const SchedConfig *cfg) {
        const QueueConfig *q;
        const SchedWeights *w = &cfg->weights;

        if (o->pass || (cfg->policy != &sched_policy_easy && cfg->policy != &sched_policy_fcfs))
                return false;
        if (!o->config)
                return true; /* SCHED_CONFIG_DEFAULT: age only, jobs without a queue */
        q = config_find_queue(o->config, o->config->default_queue);
        if (!q || o->n_queue_map > 0 || o->config->n_projects > 0 || cfg->max_walltime > 0 ||
            cfg->ordering != SCHED_ORDERING_PRIORITY)
                return false;
        if ((q->preempts_mask & (UINT64_C(1) << (q - o->config->queues))) || q->parallel_run)
                return false;
        if (cfg->priority == &sched_priority_fcfs)
                return true;
        return cfg->priority == &sched_priority_multifactor && w->age >= 0.0 && w->size == 0.0 &&
               w->xfactor == 0.0 && w->bypass == 0.0 && (w->target == 0.0 || q->target_queue_time == 0) &&
               (!o->fairshare || w->fairshare == 0.0);
}

static bool trace_has_gpus(const SwfTrace *t) {
        for (size_t i = 0; i < t->n_jobs; i++)
                if (t->jobs[i].gpus > 0)
                        return true;
        return false;
}

static uint64_t flat_walltime(const Sim *s, const SimJob *j) {
        const QueueConfig *qc = s->queues[j->queue].config;

        return sched_effective_walltime(j->estimate, qc ? qc->default_walltime : 0, qc ? qc->max_walltime : 0);
}

static uint64_t flat_time_add(uint64_t a, uint64_t b) {
        return a > SCHED_TIME_INFINITY - b ? SCHED_TIME_INFINITY : a + b;
}

static bool flat_sjf_less(const FlatCand *a, const FlatCand *b) {
        return a->walltime != b->walltime ? a->walltime < b->walltime : a->job < b->job;
}

/* Drops the started jobs' holes once they are half the list. */
static void flat_squeeze(const Sim *s, FlatCand *l, size_t *n, size_t *holes) {
        size_t k = 0;

        if (*holes * 2 < *n)
                return;
        for (size_t i = 0; i < *n; i++)
                if (!s->started[l[i].job])
                        l[k++] = l[i];
        *n = k;
        *holes = 0;
}

static void flat_submit(Sim *s, size_t job) {
        const SimJob *j = &s->jobs[job];
        FlatCand c = { .walltime = flat_walltime(s, j), .job = (uint32_t) job, .cpus = MAX(j->procs, 1u) };
        size_t lo = 0, hi = s->n_sjf;

        s->fifo[s->n_fifo++] = c;
        if (s->cfg->backfill_order != SCHED_BACKFILL_SJF)
                return;
        /* After every job it does not go before: a later job of the same walltime last. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (!flat_sjf_less(&c, &s->sjf[mid]))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Holes keep their place's walltime, so the order around them still holds. */
        memmove(s->sjf + lo + 1, s->sjf + lo, (s->n_sjf - lo) * sizeof(FlatCand));
        s->sjf[lo] = c;
        s->n_sjf++;
}

static size_t flat_release_find(const Sim *s, uint64_t end) {
        size_t lo = 0, hi = s->n_rel;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->rel[mid].end < end)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Starts a waiting job now: its release goes in the profile. */
static void flat_start(Sim *s, FlatCand *c, uint64_t now) {
        SimJob *j = &s->jobs[c->job];
        SchedJob *sj = &s->active[j->active];
        FlatRelease r = {
                /* As pass_build_now() counts a running job: back at start + walltime. */
                .end = MAX(flat_time_add(now, c->walltime), now + 1),
                .job = c->job,
                .cpus = c->cpus,
        };
        size_t at = flat_release_find(s, r.end);

        memmove(s->rel + at + 1, s->rel + at, (s->n_rel - at) * sizeof(FlatRelease));
        s->rel[at] = r;
        s->n_rel++;

        sj->state = SCHED_JOB_RUNNING;
        sj->start_time = now;
        j->start = now;
        j->end = now + j->run;
        s->n_pending--;
        s->busy += c->cpus;
        heap_push(s, (Event) { .end = j->end, .seq = event_seq(s, c->job), .job = c->job });
        s->started[c->job] = true;
        s->fifo_holes++;
        s->sjf_holes += s->n_sjf > 0;
}

static void flat_end(Sim *s, size_t job) {
        const SimJob *j = &s->jobs[job];
        size_t at = flat_release_find(s, MAX(flat_time_add(j->start, flat_walltime(s, j)), j->start + 1));

        while (at < s->n_rel && s->rel[at].job != job)
                at++;
        assert(at < s->n_rel);
        memmove(s->rel + at, s->rel + at + 1, (s->n_rel - at - 1) * sizeof(FlatRelease));
        s->n_rel--;
}

/* The top job's reservation, as pass_reserve() finds it: the first end at which what is
 * free now plus all that ends by then holds it; *ret_after: what is left then. */
static bool flat_reserve(const Sim *s, uint64_t free_now, uint64_t need, uint64_t *ret_shadow, uint64_t *ret_after) {
        uint64_t avail = free_now;

        for (size_t i = 0; i < s->n_rel; ) {
                uint64_t end = s->rel[i].end;

                if (end == SCHED_TIME_INFINITY)
                        return false;
                for (; i < s->n_rel && s->rel[i].end == end; i++)
                        avail += s->rel[i].cpus;
                if (avail >= need) {
                        *ret_shadow = end;
                        *ret_after = avail - need;
                        return true;
                }
        }
        return false;
}

static int flat_pass(Sim *s, uint64_t now) {
        bool easy = s->cfg->policy == &sched_policy_easy, sjf = s->cfg->backfill_order == SCHED_BACKFILL_SJF;
        uint64_t free_cpus = s->machine_cpus - s->busy, shadow = 0, after = 0, both;
        const FlatCand *top = NULL;
        FlatCand *l;
        size_t n, from;
        bool have;

        /* Start in order until one does not fit: that one is the top job. The holes
         * the head of the queue leaves are skipped once, not every pass. */
        while (s->fifo_head < s->n_fifo && s->started[s->fifo[s->fifo_head].job])
                s->fifo_head++;
        for (size_t i = s->fifo_head; i < s->n_fifo; i++) {
                FlatCand *c = &s->fifo[i];

                if (s->started[c->job])
                        continue;
                if (c->cpus > free_cpus) {
                        top = c;
                        break;
                }
                free_cpus -= c->cpus;
                flat_start(s, c, now);
        }
        if (!top || !easy)
                goto done;

        /* EASY: backfill what cannot delay the top job (plan_easy()). */
        have = flat_reserve(s, free_cpus, top->cpus, &shadow, &after);
        both = MIN(free_cpus, after);
        l = sjf ? s->sjf : s->fifo;
        n = sjf ? s->n_sjf : s->n_fifo;
        from = sjf ? 0 : (size_t) (top - s->fifo) + 1;
        for (size_t i = from; i < n && free_cpus > 0; i++) {
                FlatCand *c = &l[i];
                bool before_shadow;

                if (c->cpus > free_cpus || s->started[c->job] || c->job == top->job)
                        continue;
                before_shadow = !have || flat_time_add(now, c->walltime) <= shadow;
                if (!before_shadow && c->cpus > both)
                        continue;
                free_cpus -= c->cpus;
                if (have && !before_shadow)
                        after -= c->cpus;
                both = MIN(free_cpus, after);
                flat_start(s, c, now);
        }
done:
        if (s->fifo_holes * 2 >= s->n_fifo)
                s->fifo_head = 0; /* the squeeze moves what is left to the front */
        flat_squeeze(s, s->fifo, &s->n_fifo, &s->fifo_holes);
        if (sjf)
                flat_squeeze(s, s->sjf, &s->n_sjf, &s->sjf_holes);
        return 0;
}

/* One scheduling pass at now; applies what it decides, and what it says of the waiting
 * jobs as the daemon does (bypass counts, the blocked part of the queue). */
static int sim_pass(Sim *s, uint64_t now) {
        SchedResult res;
        int r;

        /* The flat engine reads neither fair-share (its weight is 0 there) nor
         * suspensions (there are none). */
        if (s->flat) {
                s->st->passes++;
                s->dirty = false;
                return flat_pass(s, now);
        }
        if (s->o->fairshare)
                fairshare_refresh(s, now);
        /* The suspension under way counts up to now, as the daemon gives it. */
        for (size_t i = 0; i < s->n_active; i++)
                if (s->active[i].state == SCHED_JOB_SUSPENDED) {
                        const SimJob *j = &s->jobs[s->active_job[i]];
                        s->active[i].suspended_time = j->suspended + (now - j->suspend_start);
                }
        if (s->o->pass)
                r = s->o->pass(s->o->pass_userdata, s->ctx, s->cfg, s->machine, s->active, s->n_active, now,
                               &res);
        else
                r = sched_pass(s->ctx, s->cfg, s->machine, s->active, s->n_active, now, &res);
        if (r < 0)
                return r;
        s->st->passes++;
        s->dirty = false;

        for (size_t i = 0; i < res.n_waiting; i++) {
                const SchedWait *w = &res.waiting[i];
                SchedJob *sj = &s->active[w->job_index];

                if (w->bypassed)
                        sj->bypass_count++;
                sj->blocked = sched_reason_is_limit(w->reason);
        }
        for (size_t i = 0; i < res.n_decisions; i++) {
                const SchedDecision *d = &res.decisions[i];

                assert(d->job_index < s->n_active);
                switch (d->type) {
                case SCHED_DECISION_START:
                        r = apply_start(s, d, now);
                        break;
                case SCHED_DECISION_SUSPEND:
                        r = apply_suspend(s, d, now);
                        break;
                case SCHED_DECISION_RESUME:
                        r = apply_resume(s, d, now);
                        break;
                default:
                        r = 0;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The events of one instant; *next: the next job to submit. */
static int sim_instant(Sim *s, const SimOptions *o, uint64_t now, size_t *next) {
        size_t n_ending = 0;
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
         * reference's profile its slices end here). Then the submissions, each with its
         * pass, but only when the CPUs free now could hold the new job (the reference's
         * shortcut: otherwise it cannot start, though another job might, and waits for the
         * next event's pass). Then the terminations, in the order their jobs started: an
         * early end gives its CPUs back and gets its pass; an end at the requested time
         * changed nothing since the instant began, so its pass has something to do only
         * when a change had none yet (a pass over an unchanged state starts nothing). */
        while (s->n_heap > 0 && s->heap[0].end == now) {
                Event e = heap_pop(s);
                const SimJob *j = &s->jobs[e.job];

                e.silent = j->run == j->estimate && j->suspensions == 0;
                if (e.silent) {
                        sim_terminate(s, &e);
                        s->dirty = true;
                }
                s->ending[n_ending++] = e;
        }
        for (; *next < s->n_jobs && s->jobs[*next].submit == now; (*next)++) {
                const SimJob *j = &s->jobs[*next];

                sim_submit(s, *next);
                if ((uint64_t) s->machine_cpus < s->busy + MAX(j->procs, 1u)) {
                        s->dirty = true;
                        continue;
                }
                r = sim_pass(s, now);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n_ending; i++) {
                const SimJob *j = &s->jobs[s->ending[i].job];

                if (s->ending[i].silent) {
                        if (!s->dirty)
                                continue;
                } else {
                        /* Suspended by a pass of this instant: it ends later. */
                        if (s->active[j->active].state != SCHED_JOB_RUNNING || j->end != now)
                                continue;
                        sim_terminate(s, &s->ending[i]);
                }
                r = sim_pass(s, now);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int machine_size(const SwfTrace *t, const SimOptions *o, unsigned *ret, char **ret_error) {
        int64_t procs = o->procs > 0 ? (int64_t) o->procs : t->max_procs > 0 ? t->max_procs : t->max_nodes;

        if (procs <= 0)
                return error(ret_error, "no machine size: the trace has neither \"; MaxProcs:\" nor \"; MaxNodes:\", use --procs");
        if (procs > INT32_MAX)
                return error(ret_error, "machine of %" PRIi64 " processors too large", procs);
        *ret = (unsigned) procs;
        return 0;
}

static const char *const filter_names[_SIM_FILTER_MAX] = {
        [SIM_FILTER_DEFAULT] = "default",
        [SIM_FILTER_STRONG] = "strong",
};

static const char *const engine_names[_SIM_ENGINE_MAX] = {
        [SIM_ENGINE_AUTO] = "auto",
        [SIM_ENGINE_CORE] = "core",
        [SIM_ENGINE_FLAT] = "flat",
};

const char *sim_engine_to_string(SimEngine e) {
        return (unsigned) e < _SIM_ENGINE_MAX ? engine_names[e] : NULL;
}

SimEngine sim_engine_from_string(const char *s) {
        for (int i = 0; s && i < _SIM_ENGINE_MAX; i++)
                if (streq(engine_names[i], s))
                        return (SimEngine) i;
        return _SIM_ENGINE_INVALID;
}

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

int sim_gpus_parse(const char *s, unsigned *ret_n, int **ret_nodes, char **ret_error) {
        _cleanup_free_ int *nodes = NULL;
        const char *colon = strchr(s, ':'), *p;
        _cleanup_free_ char *count = strndup(s, colon ? (size_t) (colon - s) : strlen(s));
        unsigned n, i = 0;

        if (!count)
                return -ENOMEM;
        if (safe_atou(count, &n) < 0 || n > SCHED_GPUS_MAX)
                return error(ret_error, "\"%s\": the number of GPUs is 0 to %d", count, SCHED_GPUS_MAX);
        if (!colon) {
                *ret_n = n;
                *ret_nodes = NULL;
                return 0;
        }
        nodes = new(int, MAX(n, 1u));
        if (!nodes)
                return -ENOMEM;
        for (p = colon + 1;; i++) {
                char *end;
                long v;

                errno = 0;
                v = strtol(p, &end, 10);
                if (end == p || errno != 0 || v < -1 || v >= SCHED_NODES_MAX || (*end && *end != ','))
                        return error(ret_error, "\"%s\": each GPU's NUMA node is a number from -1 (none) to %d",
                                     s, SCHED_NODES_MAX - 1);
                if (i >= n)
                        return error(ret_error, "\"%s\": more NUMA nodes than the %u GPUs", s, n);
                nodes[i] = (int) v;
                if (!*end)
                        break;
                p = end + 1;
        }
        if (i + 1 != n)
                return error(ret_error, "\"%s\": %u GPUs but %u NUMA nodes", s, n, i + 1);
        *ret_n = n;
        *ret_nodes = TAKE_PTR(nodes);
        return 0;
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
        if (w->gpus > (int64_t) o->n_gpus)
                return &st->skipped_too_big;
        *ret = (SimJob) {
                .submit = (uint64_t) w->submit,
                .run = (uint64_t) MIN(run, est),
                .estimate = (uint64_t) est,
                .procs = (unsigned) p,
                .gpus = w->gpus > 0 ? (unsigned) w->gpus : 0,
                .user = w->user >= 0 && w->user < UINT32_MAX ? (uint32_t) w->user : UINT32_MAX,
        };
        return NULL;
}

static int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

static int cmp_user_limits(const void *a, const void *b) {
        uint32_t x = ((const SchedUserLimits *) a)->user_id, y = ((const SchedUserLimits *) b)->user_id;
        return x < y ? -1 : x > y;
}

/* A trace user is "u<N>" (or "N"): uid N. */
static int user_id_parse(const char *name, uint32_t *ret) {
        unsigned u;

        if (name[0] == 'u')
                name++;
        if (safe_atou(name, &u) < 0 || u == UINT32_MAX)
                return -EINVAL;
        *ret = u;
        return 0;
}

/* Queues: the configuration's, or one without settings. */
static int setup_queues(Sim *s, const SimOptions *o, uint32_t *ret_default, char **ret_error) {
        const Config *c = o->config;

        if (!c) {
                if (o->n_queue_map > 0 || o->fairshare)
                        return error(ret_error, "a queue map and fair-share need a configuration");
                s->queues = new0(SimQueue, 1);
                if (!s->queues)
                        return -ENOMEM;
                s->n_queues = 1;
                s->queues[0].fairshare_weight = 1.0;
                *ret_default = 0;
                return 0;
        }
        for (size_t i = 0; i < o->n_queue_map; i++)
                if (!config_find_queue(c, o->queue_map[i].name))
                        return error(ret_error, "queue map: %" PRIi64 "=%s names no configured queue",
                                     o->queue_map[i].number, o->queue_map[i].name);
        s->queues = new0(SimQueue, c->n_queues);
        if (!s->queues)
                return -ENOMEM;
        s->n_queues = c->n_queues;
        for (size_t i = 0; i < c->n_queues; i++)
                s->queues[i] = (SimQueue) {
                        .config = &c->queues[i],
                        .fairshare_excluded = strv_contains(c->fairshare_exclude_queues, c->queues[i].name),
                        .fairshare_weight = acct_fairshare_weight(c->queues[i].charge_factor),
                };
        *ret_default = (uint32_t) (config_find_queue(c, c->default_queue) - c->queues);
        return 0;
}

static uint32_t job_queue(const SimOptions *o, const SwfJob *w, uint32_t dflt) {
        const char *name = map_find(o->queue_map, o->n_queue_map, w->queue);

        return name ? (uint32_t) (config_find_queue(o->config, name) - o->config->queues) : dflt;
}

/* Projects: one per name the trace's groups get, whether configured or not (each has its
 * fair-share); jobs[i].project set. */
static int setup_projects(Sim *s, const SwfTrace *t, const SimOptions *o) {
        _cleanup_free_ int64_t *keys = new(int64_t, MAX(s->n_jobs, (size_t) 1));
        _cleanup_free_ uint32_t *key_project = NULL;
        size_t n_keys = 0;

        if (!keys)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_jobs; i++)
                keys[i] = t->jobs[s->jobs[i].trace_index].group;
        if (s->n_jobs > 0)
                qsort(keys, s->n_jobs, sizeof *keys, cmp_i64);
        for (size_t i = 0; i < s->n_jobs; i++)
                if (n_keys == 0 || keys[n_keys - 1] != keys[i])
                        keys[n_keys++] = keys[i];
        key_project = new(uint32_t, MAX(n_keys, (size_t) 1));
        s->projects = new0(SimProject, MAX(n_keys, (size_t) 1));
        if (!key_project || !s->projects)
                return -ENOMEM;

        for (size_t k = 0; k < n_keys; k++) {
                const char *mapped = map_find(o->project_map, o->n_project_map, keys[k]);
                _cleanup_free_ char *name = NULL;
                size_t p;

                if (mapped)
                        name = strdup(mapped);
                else if (keys[k] < 0)
                        name = strdup("none");
                else if (asprintf(&name, "g%" PRIi64, keys[k]) < 0)
                        name = NULL;
                if (!name)
                        return -ENOMEM;
                for (p = 0; p < s->n_projects; p++)
                        if (streq(s->projects[p].name, name))
                                break;
                if (p == s->n_projects) {
                        const ProjectConfig *pc = o->config ? config_find_project(o->config, name) : NULL;
                        s->projects[p] = (SimProject) {
                                .name = TAKE_PTR(name),
                                .sched_id = pc ? (uint32_t) (pc - o->config->projects) + 1 : 0,
                        };
                        s->n_projects++;
                }
                key_project[k] = (uint32_t) p;
        }
        for (size_t i = 0; i < s->n_jobs; i++) {
                int64_t g = t->jobs[s->jobs[i].trace_index].group;
                const int64_t *k = bsearch(&g, keys, n_keys, sizeof *keys, cmp_i64);
                s->jobs[i].project = key_project[k - keys];
        }
        return 0;
}

/* The configured projects' limits for sched/, as corrald's build_sched_projects() makes
 * them, members' overrides by trace uid. */
static int setup_sched_projects(Sim *s, const Config *c, SchedConfig *cfg) {
        size_t n_users = 0, u = 0;

        if (!c || c->n_projects == 0)
                return 0;
        for (size_t i = 0; i < c->n_projects; i++)
                n_users += c->projects[i].n_users;
        s->sched_projects = new0(SchedProject, c->n_projects);
        s->sched_users = new0(SchedUserLimits, MAX(n_users, (size_t) 1));
        if (!s->sched_projects || !s->sched_users)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_projects; i++) {
                const ProjectConfig *pc = &c->projects[i];
                size_t first = u;

                for (size_t k = 0; k < pc->n_users; k++) {
                        uint32_t uid;
                        if (user_id_parse(pc->users[k].name, &uid) < 0)
                                continue; /* no trace user: as corrald skips a user unknown here */
                        s->sched_users[u++] = (SchedUserLimits) { .user_id = uid,
                                                                  .limits = pc->users[k].limits };
                }
                if (u > first)
                        qsort(s->sched_users + first, u - first, sizeof(SchedUserLimits), cmp_user_limits);
                s->sched_projects[i] = (SchedProject) {
                        .id = (uint32_t) i + 1,
                        .total = pc->total,
                        .per_user = pc->per_user,
                        .users = s->sched_users + first,
                        .n_users = u - first,
                        .allowed_cpus = pc->slice.have_allowed_cpus ? &pc->slice.allowed_cpus : NULL,
                };
        }
        cfg->projects = s->sched_projects;
        cfg->n_projects = c->n_projects;
        return 0;
}

/* A job that breaks a limit by itself waits forever. */
static bool never_fits(const SchedLimits *l, const SimJob *j, uint64_t walltime) {
        return (l->max_walltime && walltime > l->max_walltime) || (l->max_cpus && j->procs > l->max_cpus) ||
               (l->max_ps_hard && walltime != SCHED_TIME_INFINITY &&
                (double) walltime * j->procs > (double) l->max_ps_hard);
}

static bool job_refused(const Sim *s, const SimJob *j, const SchedConfig *cfg) {
        const QueueConfig *qc = s->queues[j->queue].config;
        uint32_t id = s->projects[j->project].sched_id;
        uint64_t w;

        if (!qc)
                return false;
        if ((qc->max_cpus_per_job && j->procs > qc->max_cpus_per_job) ||
            (qc->max_walltime && j->estimate > qc->max_walltime))
                return true;
        w = sched_effective_walltime(j->estimate, qc->default_walltime, qc->max_walltime);
        if (id > 0 && id <= cfg->n_projects) {
                const SchedProject *p = &cfg->projects[id - 1];
                const SchedLimits *ul = &p->per_user;

                for (size_t i = 0; i < p->n_users; i++)
                        if (p->users[i].user_id == j->user)
                                ul = &p->users[i].limits;
                if (never_fits(&p->total, j, w) || never_fits(ul, j, w))
                        return true;
        }
        return false;
}

static void group_stats(SimGroupStats *ret, const SimGroup *g) {
        double n = (double) MAX(g->jobs, (size_t) 1);

        *ret = (SimGroupStats) {
                .jobs = g->jobs,
                .avg_wait = g->sum_wait / n,
                .max_wait = g->max_wait,
                .avg_bsld = g->sum_bsld / n,
                .max_bsld = g->max_bsld,
                .suspensions = g->suspensions,
                .suspended_jobs = g->suspended_jobs,
                .avg_xfactor = g->sum_xfactor / n,
                .max_xfactor = g->max_xfactor,
                .xfactor_ok = (double) g->xfactor_ok / n,
                .cpu_seconds = g->cpu_seconds,
                .gpu_seconds = g->gpu_seconds,
        };
}

void sim_stats_done(SimStats *st) {
        for (size_t i = 0; i < st->n_queues; i++)
                free(st->queues[i].name);
        free(st->queues);
        for (size_t i = 0; i < st->n_projects; i++)
                free(st->projects[i].name);
        free(st->projects);
        st->queues = st->projects = NULL;
        st->n_queues = st->n_projects = 0;
}

static int stats_groups(const Sim *s, SimStats *st) {
        double sum = 0.0, sum2 = 0.0;

        st->queues = new0(SimGroupStats, MAX(s->n_queues, (size_t) 1));
        st->projects = new0(SimGroupStats, MAX(s->n_projects, (size_t) 1));
        if (!st->queues || !st->projects)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_queues; i++) {
                SimGroupStats *g = &st->queues[st->n_queues];

                if (s->queues[i].g.jobs == 0)
                        continue;
                group_stats(g, &s->queues[i].g);
                g->name = strdup(s->queues[i].config ? s->queues[i].config->name : "default");
                if (!g->name)
                        return -ENOMEM;
                st->n_queues++;
        }
        for (size_t i = 0; i < s->n_projects; i++) {
                SimGroupStats *g = &st->projects[st->n_projects];

                if (s->projects[i].g.jobs == 0)
                        continue; /* all its jobs refused */
                group_stats(g, &s->projects[i].g);
                g->name = strdup(s->projects[i].name);
                if (!g->name)
                        return -ENOMEM;
                st->n_projects++;
                sum += g->avg_bsld;
                sum2 += g->avg_bsld * g->avg_bsld;
        }
        st->jain_bsld = sum2 > 0.0 ? sum * sum / ((double) st->n_projects * sum2) : 0.0;
        return 0;
}

static int sim_run_setup(Sim *s, const SwfTrace *t, const SimOptions *o, unsigned procs, SchedConfig *cfg,
                         char **ret_error) {
        uint32_t dflt = 0;
        size_t n, slots = procs;
        int r;

        s->jobs = new(SimJob, MAX(t->n_jobs, (size_t) 1));
        s->active = new(SchedJob, MAX(t->n_jobs, (size_t) 1));
        s->active_job = new(size_t, MAX(t->n_jobs, (size_t) 1));
        s->heap = new(Event, t->n_jobs + 1);
        if (s->flat) {
                slots = 1; /* no allocation slots: it names no CPU */
                s->fifo = new(FlatCand, MAX(t->n_jobs, (size_t) 1));
                s->rel = new(FlatRelease, MAX(t->n_jobs, (size_t) 1));
                s->started = new0(uint8_t, MAX(t->n_jobs, (size_t) 1));
                if (!s->fifo || !s->rel || !s->started)
                        return -ENOMEM;
                if (o->backfill_order == SCHED_BACKFILL_SJF) {
                        s->sjf = new(FlatCand, MAX(t->n_jobs, (size_t) 1));
                        if (!s->sjf)
                                return -ENOMEM;
                }
        }
        s->allocs = new(SchedAllocation, slots);
        s->free_allocs = new(size_t, slots);
        if (o->semantics == SIM_SEMANTICS_PUBLISHED)
                s->ending = new(Event, t->n_jobs + 1);
        s->ctx = sched_context_new();
        if (!s->jobs || !s->active || !s->active_job || !s->heap || !s->allocs || !s->free_allocs || !s->ctx ||
            (o->semantics == SIM_SEMANTICS_PUBLISHED && !s->ending))
                return -ENOMEM;
        s->n_allocs = slots;
        for (size_t i = 0; i < slots; i++)
                s->free_allocs[s->n_free_allocs++] = slots - 1 - i;

        r = setup_queues(s, o, &dflt, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < t->n_jobs; i++) {
                size_t *skipped = job_filter(&t->jobs[i], o, procs, s->st, &s->jobs[s->n_jobs]);

                if (skipped) {
                        (*skipped)++;
                        continue;
                }
                s->jobs[s->n_jobs].trace_index = i;
                s->jobs[s->n_jobs++].queue = o->config ? job_queue(o, &t->jobs[i], dflt) : 0;
        }
        r = setup_projects(s, t, o);
        if (r < 0)
                return r;
        r = setup_sched_projects(s, o->config, cfg);
        if (r < 0)
                return r;
        n = 0;
        for (size_t i = 0; i < s->n_jobs; i++)
                if (job_refused(s, &s->jobs[i], cfg))
                        s->st->skipped_refused++;
                else
                        s->jobs[n++] = s->jobs[i];
        s->n_jobs = n;
        s->st->skipped = s->st->skipped_unknown + s->st->skipped_no_estimate + s->st->skipped_too_big +
                         s->st->skipped_refused;

        /* The archive's files are sorted by submission, but a trace need not be. */
        for (size_t i = 1; i < s->n_jobs; i++)
                if (s->jobs[i].submit < s->jobs[i - 1].submit) {
                        /* Stable insertion sort from here: rare and nearly sorted. */
                        SimJob v = s->jobs[i];
                        size_t x = i;
                        while (x > 0 && s->jobs[x - 1].submit > v.submit) {
                                s->jobs[x] = s->jobs[x - 1];
                                x--;
                        }
                        s->jobs[x] = v;
                }
        return 0;
}

int sim_run(const SwfTrace *t, const SimOptions *o, SimStats *ret, char **ret_error) {
        SchedNode nodes[SCHED_NODES_MAX] = {};
        SchedConfig cfg = SCHED_CONFIG_DEFAULT;
        SchedMachine machine = { .nodes = nodes };
        SchedGpu gpus[SCHED_GPUS_MAX] = {};
        SimStats st = {};
        Sim s = {
                .cfg = &cfg,
                .machine = &machine,
                .o = o,
                .st = &st,
                .ret_error = ret_error,
                .first_submit = UINT64_MAX,
        };
        unsigned procs = 0, n_nodes = MAX(o->numa_nodes, 1u);
        size_t next = 0;
        bool flat_ok;
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

        if (o->config)
                config_sched(o->config, &cfg);
        cfg.policy = o->policy ?: &sched_policy_easy;
        cfg.backfill_order = o->backfill_order;
        cfg.estimate_depth = 0; /* nobody reads the estimates of simulated jobs */

        /* The flat engine counts processors only: GPUs, asked for by the machine or by a
         * job, go through the core. */
        flat_ok = n_nodes == 1 && o->n_gpus == 0 && !trace_has_gpus(t) && flat_applies(o, &cfg);
        if ((unsigned) o->engine >= _SIM_ENGINE_MAX)
                return error(ret_error, "unknown engine");
        if (o->engine == SIM_ENGINE_FLAT && !flat_ok)
                return error(ret_error, "the flat engine simulates the fcfs and easy policies on one node, "
                             "every job in one queue that preempts nothing, without project limits, "
                             "fair-share or priority factors that reorder the queue");
        s.flat = o->engine == SIM_ENGINE_FLAT || (o->engine == SIM_ENGINE_AUTO && flat_ok);
        if (!s.flat && procs > CPU_SET_MAX)
                return error(ret_error, "machine of %u processors: the scheduling core places jobs on at most %d "
                             "CPUs; the flat engine (without --config, --numa-nodes or the conservative "
                             "policy) takes any number", procs, CPU_SET_MAX);
        st.engine = s.flat ? SIM_ENGINE_FLAT : SIM_ENGINE_CORE;

        /* Even split, the first nodes taking the remainder; memory never binds. The flat
         * engine names no CPU. */
        for (unsigned k = 0, cpu = 0; k < n_nodes && !s.flat; k++) {
                unsigned n = procs / n_nodes + (k < procs % n_nodes);
                for (unsigned i = 0; i < n; i++)
                        cpu_set_add(&nodes[k].cpus, cpu++);
                nodes[k].memory = UINT64_C(1) << 50;
                nodes[k].speed = 1;
        }
        machine.n_nodes = n_nodes;

        /* GPUs: on the nodes the layout names, else spread evenly in index order. */
        if (o->n_gpus > SCHED_GPUS_MAX)
                return error(ret_error, "%u GPUs: at most %d supported", o->n_gpus, SCHED_GPUS_MAX);
        for (unsigned g = 0; g < o->n_gpus; g++) {
                int node = o->gpu_nodes ? o->gpu_nodes[g] : -1;

                if (!o->gpu_nodes)
                        node = (int) ((uint64_t) g * n_nodes / o->n_gpus);
                else if (node < -1 || node >= (int) n_nodes)
                        return error(ret_error, "GPU %u on NUMA node %d: the machine has nodes 0 to %u", g, node,
                                     n_nodes - 1);
                gpus[g] = (SchedGpu) { .node = node };
        }
        machine.gpus = gpus;
        machine.n_gpus = o->n_gpus;
        st.n_gpus = o->n_gpus;
        st.procs = procs;
        st.numa_nodes = n_nodes;

        s.machine_cpus = procs;
        r = sim_run_setup(&s, t, o, procs, &cfg, ret_error);
        if (r < 0)
                goto finish;

        while (s.finished < s.n_jobs) {
                uint64_t now;

                if (next < s.n_jobs && (s.n_heap == 0 || s.jobs[next].submit <= s.heap[0].end))
                        now = s.jobs[next].submit;
                else if (s.n_heap > 0)
                        now = s.heap[0].end;
                else {
                        error(ret_error, "%zu jobs can never start", s.n_jobs - s.finished);
                        r = -EDEADLK;
                        goto finish;
                }

                r = sim_instant(&s, o, now, &next);
                if (r < 0)
                        goto finish;
        }

        st.simulated = s.n_jobs;
        if (s.n_jobs > 0) {
                st.avg_wait = s.sum_wait / (double) s.n_jobs;
                st.avg_bsld = s.sum_bsld / (double) s.n_jobs;
                st.avg_flow = s.sum_flow / (double) s.n_jobs;
                st.avg_xfactor = s.sum_xfactor / (double) s.n_jobs;
                st.xfactor_ok = (double) s.xfactor_ok / (double) s.n_jobs;
                st.makespan = s.last_end - s.first_submit;
                st.utilization = st.makespan > 0 ? s.work / ((double) procs * (double) st.makespan) : 0.0;
                st.gpu_utilization = st.makespan > 0 && o->n_gpus > 0
                        ? s.gpu_work / ((double) o->n_gpus * (double) st.makespan) : 0.0;
        }
        if (o->results) {
                for (size_t i = 0; i < t->n_jobs; i++)
                        o->results[i] = (SimJobResult) { .wait = -1, .run = -1 };
                for (size_t i = 0; i < s.n_jobs; i++)
                        o->results[s.jobs[i].trace_index] = (SimJobResult) {
                                .wait = (int64_t) (s.jobs[i].start - s.jobs[i].submit),
                                .run = (int64_t) s.jobs[i].run,
                                .suspended = (int64_t) s.jobs[i].suspended,
                                .suspensions = s.jobs[i].suspensions,
                        };
        }
        r = stats_groups(&s, &st);
        if (r < 0) {
                sim_stats_done(&st);
                goto finish;
        }
        *ret = st;
        r = 0;
finish:
        s.ctx = sched_context_free(s.ctx);
        sim_done(&s);
        return r;
}

/* The line's whitespace-separated fields, cut in place; false if not 18 or 19 (the
 * GPUs, Corral's extension); *ret_n: how many. */
static bool split_fields(char *line, char *f[19], size_t *ret_n) {
        size_t n = 0;

        for (char *p = line;;) {
                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                if (n >= 19)
                        return false;
                f[n++] = p;
                while (*p && !isspace((unsigned char) *p))
                        p++;
                if (*p)
                        *p++ = 0;
        }
        *ret_n = n;
        return n >= 18;
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
                char *f[19];
                size_t n_fields;

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
                    !split_fields(line, f, &n_fields) || !field_is(f[0], t->jobs[k].id) ||
                    !field_is(f[1], t->jobs[k].submit))
                        return error(ret_error, "%s:%u: the trace changed since it was simulated", name,
                                     lineno);
                if (results[k].wait >= 0) {
                        for (size_t i = 0; i < n_fields; i++) {
                                if (i > 0)
                                        fputc(' ', out);
                                if (i == 2 || i == 3)
                                        fprintf(out, "%" PRIi64,
                                                i == 2 ? results[k].wait : results[k].run + results[k].suspended);
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
