/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Preemption by suspension: NCI's priority-run and parallel-run with its suspension score,
 * and the resumption of what a pass suspended. The formula and the order of a pass are in
 * sched.h (SchedPreempt). */
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

typedef struct VictimScore {
        double score;
        uint32_t job;   /* into jobs[] */
        uint32_t slot;  /* into ctx->victims */
        bool use;
} VictimScore;

static inline bool eligible(const Cand *c) {
        return !c->started && c->reason == SCHED_REASON_NONE;
}

/* Seconds it has run, its suspensions left out. */
static uint64_t run_time(const SchedJob *j, uint64_t now) {
        uint64_t t = now > j->start_time ? now - j->start_time : 0;
        return t > j->suspended_time ? t - j->suspended_time : 0;
}

double sched_suspend_score(const SchedPreempt *c, const SchedJob *preemptor, uint32_t running_p,
                           const SchedJob *victim, uint32_t running_v, uint64_t now, SchedSuspendScore *ret) {
        uint64_t wv = sched_job_walltime(victim), wp = sched_job_walltime(preemptor);
        double cp = MAX(preemptor->cpus, 1u), cv = MAX(victim->cpus, 1u), f;
        SchedSuspendScore s = {};

        if (wp == SCHED_TIME_INFINITY)
                s.xfactor = 1e300; /* a suspension without end */
        else if (wv == SCHED_TIME_INFINITY || wv == 0)
                s.xfactor = 1.0;
        else
                s.xfactor = ((double) wv + (double) victim->suspended_time + (double) wp) / (double) wv;

        if (s.xfactor <= c->max_xfactor) {
                s.x = c->max_xfactor > 1.0 ? 1.0 - (s.xfactor - 1.0) / (2.0 * (c->max_xfactor - 1.0)) : 1.0;
                s.s = cp / (cp + cv);
                s.n = 2.0 * (1.0 + running_v) / (2.0 + running_v + running_p);
                f = wv == SCHED_TIME_INFINITY || wv == 0 ? 0.0 : MIN((double) run_time(victim, now) / (double) wv, 1.0);
                s.d = 1.0 - f * f;
                s.score = s.x * s.s * s.n * s.d;
        }
        if (ret)
                *ret = s;
        return s.score;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

/* Running jobs of a user: an equal range of the sorted ids. */
static uint32_t running_of(const SchedPass *p, size_t n, uint32_t user) {
        const uint32_t *u = p->ctx->run_users;
        size_t lo = 0, hi = n, first;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (u[mid] < user)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        first = lo;
        hi = n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (u[mid] <= user)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return (uint32_t) (lo - first);
}

static const CpuSet *job_allowed_cpus(const SchedPass *p, const SchedJob *j) {
        int32_t i = project_index(p->config, j->project_id);
        return i >= 0 ? p->config->projects[i].allowed_cpus : NULL;
}

/* Gives node k's CPUs of a back to free (node k's free CPUs, a subset of the node's):
 * free | (node & a) as (free | a) & node, without a copy of the node's set (a CpuSet is a
 * kilobyte, and this runs for every victim tried). */
static void free_add_cpus(const SchedPass *p, CpuSet *free, size_t k, const CpuSet *a) {
        cpu_set_or(free, a);
        cpu_set_and(free, &p->machine->nodes[k].cpus);
}

static int add_decision(SchedPass *p, SchedDecisionType type, size_t idx, SchedDecision **ret) {
        SchedContext *ctx = p->ctx;

        if (!GROW(ctx->decisions, ctx->n_decisions_alloc, p->n_decisions + 1))
                return -ENOMEM;
        *ret = &ctx->decisions[p->n_decisions++];
        **ret = (SchedDecision) { .type = type, .job_index = idx, .job_id = p->jobs[idx].id };
        return 0;
}

static void recount_cpus(SchedPass *p) {
        p->now_cpus = 0;
        for (size_t k = 0; k < p->n_nodes; k++)
                p->now_cpus += p->avail_now[k].cpus;
}

/* Resumes j (a job a pass suspended) if it fits now: on its own CPUs when they are all
 * free, else on any free CPUs that hold it. */
static int try_resume(SchedPass *p, size_t idx) {
        const SchedJob *j = &p->jobs[idx];
        const SchedAllocation *a = j->alloc;
        const CpuSet *allowed = job_allowed_cpus(p, j);
        Avail st[SCHED_NODES_MAX];
        SchedAllocation to;
        SchedDecision *d;
        SchedJob want;
        Avail *rel;
        bool in_place = true;
        uint64_t mem = 0;
        Plan pl = {};
        int r;

        /* What it needs is all of its allocation; what it still holds counts as free. */
        memcpy(st, p->avail_now, sizeof(Avail) * p->n_nodes);
        for (size_t k = 0; k < p->n_nodes; k++) {
                CpuSet on = p->machine->nodes[k].cpus, busy;

                st[k].mem = MIN(time_add(st[k].mem, preempted_mem(p, j, k)), p->node_mem[k]);
                cpu_set_and(&on, &a->cpus);
                busy = on;
                cpu_set_andnot(&busy, &p->free_cpus[k]);
                if (!cpu_set_is_empty(&busy) || ((a->node_mask >> k) & 1 && st[k].mem < a->mem[k]))
                        in_place = false;
                pl.cpus[k] = cpu_set_count(&on);
                if ((a->node_mask >> k) & 1)
                        mem = time_add(mem, a->mem[k]);
        }
        if (in_place) {
                to = *a;
                pl.node_mask = a->node_mask;
                pl.gpus = a->gpu_mask;
                for (size_t k = 0; k < p->n_nodes; k++) {
                        pl.mem[k] = (a->node_mask >> k) & 1 ? a->mem[k] : 0;
                        if (pl.cpus[k] > 0)
                                pl.node_mask |= UINT64_C(1) << k;
                }
        } else {
                Avail capped[SCHED_NODES_MAX];

                /* Its GPUs it never gave up: elsewhere it goes with exactly those (and, with
                 * binding, near them). */
                want = *j;
                want.cpus = cpu_set_count(&a->cpus);
                want.memory = mem;
                want.gpus = popcount64(a->gpu_mask);
                want.gpu_allowed = a->gpu_mask;
                memcpy(capped, st, sizeof(Avail) * p->n_nodes);
                avail_add_gpus(p, capped, a->gpu_mask);
                if (allowed && !j->exclusive)
                        for (size_t k = 0; k < p->n_nodes; k++) {
                                CpuSet f = p->free_cpus[k];
                                cpu_set_and(&f, allowed);
                                capped[k].cpus = MIN(capped[k].cpus, cpu_set_count(&f));
                        }
                if (!plan_fit(p, capped, &want, &pl) || pl.gpus != a->gpu_mask)
                        return 0;
                if (!pick_cpus(p, p->free_cpus, allowed && !j->exclusive ? allowed : NULL, &pl, &to))
                        return 0;
                to.gpu_mask = a->gpu_mask;
                to.shards = a->shards;
        }

        r = add_decision(p, SCHED_DECISION_RESUME, idx, &d);
        if (r < 0)
                return r;
        d->alloc = to;

        /* Its memory-only release becomes what it now holds, from now to its new end. */
        rel = p->ctx->release_avail + p->ctx->job_release[idx];
        for (size_t k = 0; k < p->n_nodes; k++) {
                CpuSet on = p->machine->nodes[k].cpus;

                p->avail_now[k].mem = MIN(time_add(p->avail_now[k].mem, preempted_mem(p, j, k)), p->node_mem[k]);
                p->avail_now[k].mem -= MIN(p->avail_now[k].mem, to.mem[k]);
                cpu_set_and(&on, &to.cpus);
                cpu_set_andnot(&p->free_cpus[k], &on);
                p->avail_now[k].cpus = cpu_set_count(&p->free_cpus[k]);
                /* A shard job's GPU comes back with its last holder, as it did. */
                rel[k] = (Avail) { .cpus = cpu_set_count(&on), .mem = to.mem[k],
                                   .gpus = to.shards ? rel[k].gpus : gpus_local(p, k, to.gpu_mask) };
        }
        recount_cpus(p);
        return 1;
}

static inline bool resume_before(const SchedJob *a, const SchedJob *b) {
        if (a->queue_priority != b->queue_priority)
                return a->queue_priority > b->queue_priority;
        if (a->start_time != b->start_time)
                return a->start_time < b->start_time;
        return a->id < b->id;
}

/* Resumes, in order, the suspended jobs of queue priority >= min_queue_priority. */
static int resume_phase(SchedPass *p, size_t n, int64_t min_queue_priority) {
        SchedContext *ctx = p->ctx;
        int r;

        for (size_t i = 0; i < n; i++) {
                uint32_t idx = ctx->resumes[i];

                if (idx == UINT32_MAX || p->jobs[idx].queue_priority < min_queue_priority)
                        continue;
                if (p->now_cpus == 0)
                        break;
                if (cpu_set_count(&p->jobs[idx].alloc->cpus) > p->now_cpus)
                        continue;
                r = try_resume(p, idx);
                if (r < 0)
                        return r;
                if (r > 0)
                        ctx->resumes[i] = UINT32_MAX;
        }
        return 0;
}

/* Victims best first: the higher score, then the lower job index. A total order (scores
 * are finite, a job is a victim once), so any way of ordering them gives the same. */
static inline bool victim_better(const VictimScore *a, const VictimScore *b) {
        if (a->score != b->score)
                return a->score > b->score;
        return a->job < b->job;
}

static void victims_sift_down(VictimScore *h, size_t n, size_t i) {
        VictimScore v = h[i];

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= n)
                        break;
                if (c + 1 < n && victim_better(&h[c + 1], &h[c]))
                        c++;
                if (!victim_better(&h[c], &v))
                        break;
                h[i] = h[c];
                i = c;
        }
        h[i] = v;
}

/* The victims best first, as many as are taken: a heap of them (best at the root) and
 * each taken off it in turn, where sorting all of them (a thousand on a busy machine, for
 * each of up to max_tries preemptors) was a tenth of a pass that preempts. */
static void victims_heapify(VictimScore *h, size_t n) {
        for (size_t i = n / 2; i-- > 0;)
                victims_sift_down(h, n, i);
}

static VictimScore victims_pop(VictimScore *h, size_t *n) {
        VictimScore best = h[0];

        h[0] = h[--*n];
        victims_sift_down(h, *n, 0);
        return best;
}

/* Whether c fits now with the CPUs of victims v[0..n) (only those marked use, if
 * only_used) added to what is free. */
static bool fits_with(SchedPass *p, const Cand *c, const VictimScore *v, size_t n, bool only_used, Plan *ret) {
        CpuSet saved[SCHED_NODES_MAX];
        Avail st[SCHED_NODES_MAX];
        bool ok;

        memcpy(saved, p->free_cpus, sizeof(CpuSet) * p->n_nodes);
        memcpy(st, p->avail_now, sizeof(Avail) * p->n_nodes);
        for (size_t i = 0; i < n; i++) {
                const SchedAllocation *a = p->jobs[v[i].job].alloc;
                if (only_used && !v[i].use)
                        continue;
                for (size_t k = 0; k < p->n_nodes; k++)
                        free_add_cpus(p, &p->free_cpus[k], k, &a->cpus);
        }
        for (size_t k = 0; k < p->n_nodes; k++)
                st[k].cpus = cpu_set_count(&p->free_cpus[k]);
        ok = plan_fit_now(p, st, c, ret);
        memcpy(p->free_cpus, saved, sizeof(CpuSet) * p->n_nodes);
        return ok;
}

/* Priority-run or parallel-run of c: the fewest best-scored victims that let it start
 * now, all suspended and c started, or nothing at all. */
static int try_preempt(SchedPass *p, Cand *c, size_t n_victims, size_t n_run_users) {
        SchedContext *ctx = p->ctx;
        const SchedPreempt *cfg = &p->config->preempt;
        const SchedJob *pj = cand_job(p, c);
        uint32_t running_p = running_of(p, n_run_users, pj->user_id);
        size_t n = 0, used = 0;
        VictimScore *vs = NULL;
        Plan pl;
        int r;

        if (!GROW(ctx->vscores, ctx->n_vscores_alloc, n_victims))
                return -ENOMEM;
        for (size_t i = 0; i < n_victims; i++) {
                const SchedJob *v = &p->jobs[ctx->victims[i]];
                bool same = v->queue_id == pj->queue_id;
                uint64_t wp = sched_job_walltime(pj);
                double score;

                if (ctx->victim_taken[i])
                        continue;
                if (same ? !pj->parallel_run || MAX(v->cpus, 1u) >= MAX(pj->cpus, 1u)
                         : v->queue_id >= 64 || !((pj->preempts >> v->queue_id) & 1))
                        continue;
                if (v->last_resume_time && p->now < time_add(v->last_resume_time, cfg->suspend_window))
                        continue;
                if (cfg->max_suspend_time && time_add(v->suspended_time, wp) > cfg->max_suspend_time)
                        continue;
                score = sched_suspend_score(cfg, pj, running_p, v, ctx->victim_running[i], p->now, NULL);
                if (score <= 0.0 || (same && score < SCHED_PARALLEL_RUN_MIN_SCORE))
                        continue;
                ctx->vscores[n++] = (VictimScore) { .score = score, .job = ctx->victims[i], .slot = (uint32_t) i };
        }
        if (n == 0)
                return 0;
        if (!GROW(ctx->vbest, ctx->n_vbest_alloc, n))
                return -ENOMEM;
        victims_heapify(ctx->vscores, n);

        /* Best first until it fits; none of it if it never does. One victim more at a
         * time on a copy of what is free: linear in the victims. */
        {
                CpuSet saved[SCHED_NODES_MAX];
                Avail st[SCHED_NODES_MAX];
                size_t left = n;
                bool ok = false;

                memcpy(saved, p->free_cpus, sizeof(CpuSet) * p->n_nodes);
                memcpy(st, p->avail_now, sizeof(Avail) * p->n_nodes);
                for (used = 0; used < n && !ok;) {
                        const SchedAllocation *a;

                        ctx->vbest[used] = victims_pop(ctx->vscores, &left);
                        a = p->jobs[ctx->vbest[used++].job].alloc;
                        for (size_t k = 0; k < p->n_nodes; k++) {
                                if (!cpu_set_intersects(&a->cpus, &p->machine->nodes[k].cpus))
                                        continue;
                                free_add_cpus(p, &p->free_cpus[k], k, &a->cpus);
                                st[k].cpus = cpu_set_count(&p->free_cpus[k]);
                        }
                        ok = plan_fit_now(p, st, c, &pl);
                }
                memcpy(p->free_cpus, saved, sizeof(CpuSet) * p->n_nodes);
                if (!ok)
                        return 0;
        }

        /* Then spare every one it can do without, the lowest scored first: a victim on
         * the wrong node, or one a later better placed victim made needless. */
        vs = ctx->vbest;
        for (size_t i = 0; i < used; i++)
                vs[i].use = true;
        for (size_t i = used; i-- > 0;) {
                vs[i].use = false;
                if (!fits_with(p, c, vs, used, true, &pl))
                        vs[i].use = true;
        }
        if (!fits_with(p, c, vs, used, true, &pl))
                return 0; /* cannot happen: the last check kept what it needed */

        for (size_t i = 0; i < used; i++) {
                const SchedJob *v = &p->jobs[vs[i].job];
                SchedDecision *d;
                Avail *rel;

                if (!vs[i].use)
                        continue;
                r = add_decision(p, SCHED_DECISION_SUSPEND, vs[i].job, &d);
                if (r < 0)
                        return r;
                d->alloc = *v->alloc;
                d->by_job_id = pj->id;
                d->score = vs[i].score;
                ctx->victim_taken[vs[i].slot] = true;
                p->n_victims_taken++;
                /* It keeps its memory (reclaim or not: what is pushed out is only known
                 * once it is frozen) and gives its CPUs now. */
                rel = ctx->release_avail + ctx->job_release[vs[i].job];
                for (size_t k = 0; k < p->n_nodes; k++) {
                        free_add_cpus(p, &p->free_cpus[k], k, &v->alloc->cpus);
                        p->avail_now[k].cpus = cpu_set_count(&p->free_cpus[k]);
                        rel[k].cpus = 0;
                }
        }
        recount_cpus(p);
        return pass_start(p, c, &pl);
}

static int cmp_resume(const void *x, const void *y, void *userdata) {
        const SchedJob *jobs = userdata, *a = &jobs[*(const uint32_t *) x], *b = &jobs[*(const uint32_t *) y];

        return resume_before(a, b) ? -1 : resume_before(b, a) ? 1 : 0;
}

int pass_preempt(SchedPass *p) {
        SchedContext *ctx = p->ctx;
        const SchedPreempt *cfg = &p->config->preempt;
        size_t n_resumes = 0, n_victims = 0, n_run = 0, n_preemptors = 0, tries = 0, max_tries;
        int64_t top_queue = INT64_MIN;
        uint32_t victim_cpus = 0;
        int r;

        if (!cfg->enabled && p->n_preempted == 0)
                return 0;

        /* What may resume, the victims and the running jobs' owners, from the running
         * and suspended jobs pass_collect() found; the waiting jobs that may preempt it
         * marked and counted too, so no scan of every job is needed here. */
        if (!GROW(ctx->resumes, ctx->n_resumes_alloc, p->n_preempted) ||
            (cfg->enabled && (!GROW(ctx->victims, ctx->n_victims_alloc, p->n_active) ||
                              !GROW(ctx->victim_taken, ctx->n_victim_taken_alloc, p->n_active) ||
                              !GROW(ctx->run_users, ctx->n_run_users_alloc, p->n_active))))
                return -ENOMEM;
        for (size_t x = 0; x < p->n_active; x++) {
                size_t i = p->active[x];
                const SchedJob *j = &p->jobs[i];

                if (j->state == SCHED_JOB_SUSPENDED && j->preempted) {
                        if (n_resumes < p->n_preempted && !j->held)
                                ctx->resumes[n_resumes++] = (uint32_t) i;
                        continue;
                }
                if (!cfg->enabled)
                        continue;
                if (j->state == SCHED_JOB_RUNNING) {
                        ctx->run_users[n_run++] = j->user_id;
                        if (j->preemptable && j->alloc) {
                                ctx->victim_taken[n_victims] = false;
                                ctx->victims[n_victims++] = (uint32_t) i;
                                victim_cpus += cpu_set_count(&j->alloc->cpus);
                        }
                }
        }
        /* Eligible or not: an ineligible preemptor only delays resumptions to step 3 of
         * this same pass. */
        n_preemptors = cfg->enabled ? p->n_preemptors : 0;
        top_queue = n_preemptors > 0 ? p->top_preemptor_queue : INT64_MIN;
        qsort_r(ctx->resumes, n_resumes, sizeof(uint32_t), cmp_resume, (void *) p->jobs);

        /* 1. What no waiting preemptor outranks resumes first. */
        r = resume_phase(p, n_resumes, top_queue);
        if (r < 0)
                return r;
        if (!cfg->enabled || n_preemptors == 0)
                goto rest;

        /* 2. Preemptors in priority order. Each victim's owner's running jobs, once. */
        qsort(ctx->run_users, n_run, sizeof(uint32_t), cmp_u32);
        if (!GROW(ctx->victim_running, ctx->n_victim_running_alloc, n_victims))
                return -ENOMEM;
        for (size_t i = 0; i < n_victims; i++)
                ctx->victim_running[i] = running_of(p, n_run, p->jobs[ctx->victims[i]].user_id);
        max_tries = cfg->max_tries ?: SCHED_PREEMPT_MAX_TRIES;
        for (size_t i = 0, seen = 0; i < p->n_cands && seen < n_preemptors && tries < max_tries; i++) {
                Cand *c = &p->cands[i];
                const SchedJob *j;
                Plan pl;

                if (!c->preemptor)
                        continue;
                seen++;
                /* No CPU free and none to take: the rest cannot start either. */
                if (p->now_cpus == 0 && p->n_victims_taken >= n_victims)
                        break;
                j = cand_job(p, c);
                if (!eligible(c) || limits_block(p, c))
                        continue;
                /* Fewer CPUs free than it needs: plan_fit_now() would say no. */
                if (c->cpus <= p->now_cpus && plan_fit_now(p, p->avail_now, c, &pl)) {
                        r = pass_start(p, c, &pl);
                        if (r < 0)
                                return r;
                        continue;
                }
                /* No victims could ever make room: not worth a try. Suspending gives
                 * CPUs only (a frozen job keeps its GPU memory, so its GPUs): one that
                 * waits for GPUs waits until they are free. */
                if (n_victims == 0 || c->cpus > p->now_cpus + victim_cpus)
                        continue;
                if (j->gpus > 0 && popcount64(avail_gpus(p, p->avail_now) & job_gpu_allowed(p, j)) < j->gpus)
                        continue;
                tries++;
                r = try_preempt(p, c, n_victims, n_run);
                if (r < 0)
                        return r;
        }

rest:
        /* 3. The rest, before the policy starts anything new. */
        r = resume_phase(p, n_resumes, INT64_MIN);
        if (r < 0)
                return r;
        /* The conservative policy's shortcut (nothing freed since its last profile, so
         * nothing to move) assumes running jobs only ever end sooner. Suspended jobs end
         * later with every pass, and CPUs change hands outside its plan: it replans. */
        ctx->n_prev = 0;
        return 0;
}
