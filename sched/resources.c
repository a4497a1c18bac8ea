/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "sched-internal.h"
#include "sort.h"

unsigned sched_machine_cpus(const SchedMachine *m) {
        unsigned n = 0;
        for (size_t k = 0; k < m->n_nodes; k++)
                n += cpu_set_count(&m->nodes[k].cpus);
        return n;
}

uint64_t sched_machine_memory(const SchedMachine *m) {
        uint64_t n = 0;
        for (size_t k = 0; k < m->n_nodes; k++)
                n = time_add(n, m->nodes[k].memory);
        return n;
}

static bool node_before(const SchedPass *p, size_t a, size_t b) {
        const SchedNode *x = &p->machine->nodes[a], *y = &p->machine->nodes[b];

        switch (p->config->node_order) {
        case SCHED_NODE_ORDER_MEMORY_SPEED:
                if (x->memory != y->memory)
                        return x->memory > y->memory;
                if (x->speed != y->speed)
                        return x->speed > y->speed;
                break;
        case SCHED_NODE_ORDER_SPEED_MEMORY:
                if (x->speed != y->speed)
                        return x->speed > y->speed;
                if (x->memory != y->memory)
                        return x->memory > y->memory;
                break;
        default:
                break;
        }
        return a < b;
}

int pass_setup_machine(SchedPass *p) {
        const SchedMachine *m = p->machine;
        CpuSet seen = {};

        if (m->n_nodes == 0 || m->n_nodes > SCHED_NODES_MAX || !m->nodes)
                return -EINVAL;
        if ((unsigned) p->config->node_order >= _SCHED_NODE_ORDER_MAX)
                return -EINVAL;

        p->n_nodes = m->n_nodes;
        if (p->ctx->n_free_cpus < m->n_nodes) {
                CpuSet *f = reallocarray(p->ctx->free_cpus, m->n_nodes, sizeof(CpuSet));
                if (!f)
                        return -ENOMEM;
                memset(f + p->ctx->n_free_cpus, 0, sizeof(CpuSet) * (m->n_nodes - p->ctx->n_free_cpus));
                p->ctx->free_cpus = f;
                p->ctx->n_free_cpus = m->n_nodes;
        }
        p->free_cpus = p->ctx->free_cpus;
        for (size_t k = 0; k < m->n_nodes; k++) {
                /* Overlapping nodes would let two jobs share a CPU. */
                if (cpu_set_intersects(&seen, &m->nodes[k].cpus))
                        return -EINVAL;
                cpu_set_or(&seen, &m->nodes[k].cpus);
                p->node_cpus[k] = cpu_set_count(&m->nodes[k].cpus);
                p->node_mem[k] = m->nodes[k].memory;
        }

        /* GPUs: a mask each, so at most SCHED_GPUS_MAX, and 32 kept at a node. One of no
         * known node is local to none, kept at the node that keeps fewest. */
        if (m->n_gpus > SCHED_GPUS_MAX || (m->n_gpus > 0 && !m->gpus))
                return -EINVAL;
        p->n_gpus = m->n_gpus;
        for (size_t g = 0; g < m->n_gpus; g++) {
                int node = m->gpus[g].node;

                if (node < -1 || node >= (int) m->n_nodes)
                        return -EINVAL;
                if (m->gpus[g].offline)
                        continue;
                p->all_gpus |= UINT64_C(1) << g;
                if (m->gpus[g].shards > 0) {
                        p->shard_gpus |= UINT64_C(1) << g;
                        p->gpu_shards[g] = m->gpus[g].shards;
                }
                if (node < 0)
                        p->loose_gpus |= UINT64_C(1) << g;
                else
                        p->node_gpus[node] |= UINT64_C(1) << g;
        }
        p->any_links = false;
        for (size_t g = 0; g < m->n_gpus; g++) {
                p->gpu_links[g] = m->gpus[g].links & p->all_gpus & ~(UINT64_C(1) << g);
                p->any_links = p->any_links || p->gpu_links[g];
        }
        for (size_t k = 0; k < m->n_nodes && p->n_gpus > 0; k++)
                p->home_gpus[k] = p->node_gpus[k];
        for (uint64_t x = p->loose_gpus; x; x &= x - 1) {
                size_t best = 0;
                for (size_t k = 1; k < m->n_nodes; k++)
                        if (popcount64(p->home_gpus[k]) < popcount64(p->home_gpus[best]))
                                best = k;
                p->home_gpus[best] |= x & -x;
        }
        for (size_t k = 0; k < m->n_nodes && p->n_gpus > 0; k++) {
                uint8_t slot = 0;

                if (popcount64(p->home_gpus[k]) > SCHED_GPUS_NODE_MAX)
                        return -EINVAL;
                for (uint64_t x = p->home_gpus[k]; x; x &= x - 1)
                        p->gpu_slot[__builtin_ctzll(x)] = slot++;
                p->node_slots[k] = gpus_local(p, k, p->node_gpus[k]);
        }

        /* Insertion sort: at most SCHED_NODES_MAX entries. */
        for (size_t k = 0; k < m->n_nodes; k++) {
                size_t i = k;
                while (i > 0 && node_before(p, k, p->node_order[i - 1])) {
                        p->node_order[i] = p->node_order[i - 1];
                        i--;
                }
                p->node_order[i] = (uint8_t) k;
        }
        return 0;
}

static Avail *release_new(SchedPass *p, uint64_t end) {
        SchedContext *ctx = p->ctx;
        Avail *a;

        if (!GROW(ctx->releases, ctx->n_releases_alloc, p->n_releases + 1))
                return NULL;
        if (!GROW(ctx->release_avail, ctx->n_release_avail_alloc, p->n_release_avail + p->n_nodes))
                return NULL;

        /* A job past its limit is about to be killed: treat it as ending right after now. */
        ctx->releases[p->n_releases++] = (Release) {
                .end = MAX(end, p->now + 1),
                .avail_off = p->n_release_avail,
        };
        a = ctx->release_avail + p->n_release_avail;
        p->n_release_avail += p->n_nodes;
        memset(a, 0, sizeof(Avail) * p->n_nodes);
        p->releases_sorted = false;
        return a;
}

uint64_t preempted_mem(const SchedPass *p, const SchedJob *j, size_t k) {
        const SchedAllocation *a = j->alloc;
        uint64_t total = 0;

        if (!(a->node_mask & (UINT64_C(1) << k)))
                return 0;
        if (!p->config->preempt.reclaim)
                return a->mem[k];
        for (size_t i = 0; i < p->n_nodes; i++)
                if (a->node_mask & (UINT64_C(1) << i))
                        total = time_add(total, a->mem[i]);
        if (total == 0 || j->resident_memory >= total)
                return a->mem[k];
        /* resident/total of this node's share, without overflowing the product. */
        return (uint64_t) ((double) a->mem[k] * ((double) j->resident_memory / (double) total));
}

/* A's shards of its one GPU, or 0: it holds whole GPUs. */
static unsigned alloc_shards(const SchedAllocation *a) {
        return a->shards > 0 && a->gpu_mask && (a->gpu_mask & (a->gpu_mask - 1)) == 0 ? a->shards : 0;
}

/* Records shards of GPU g held until end, by the release at rel_off (whose Avail gives
 * g back): the GPU comes back with the holder that ends last, so the release of every
 * other holder gives back no GPU. */
static void shard_hold(SchedPass *p, size_t g, unsigned shards, uint64_t end, size_t rel_off) {
        uint64_t bit = UINT64_C(1) << g;
        Avail *mine = p->ctx->release_avail + rel_off, *other;
        uint64_t *prev_end = &p->shard_end[g];

        if (!(p->shard_open & bit) || end > *prev_end) {
                if (p->shard_open & bit) {
                        other = p->ctx->release_avail + p->shard_rel[g];
                        for (size_t k = 0; k < p->n_nodes; k++)
                                other[k].gpus &= ~gpus_local(p, k, bit);
                }
                *prev_end = end;
                p->shard_rel[g] = rel_off;
        } else
                for (size_t k = 0; k < p->n_nodes; k++)
                        mine[k].gpus &= ~gpus_local(p, k, bit);
        if (!(p->shard_open & bit))
                p->shard_used[g] = 0;
        p->shard_open |= bit;
        p->shard_used[g] += shards;
}

int pass_build_now(SchedPass *p) {
        const SchedMachine *m = p->machine;
        CpuSet free_all = {};

        uint64_t gpus_held = m->gpus_busy;

        for (size_t k = 0; k < p->n_nodes; k++) {
                cpu_set_or(&free_all, &m->nodes[k].cpus);
                p->avail_now[k] = (Avail) { .cpus = p->node_cpus[k], .mem = p->node_mem[k] };
        }
        /* Which release is whose: preempt.c moves a victim's CPUs out of its release. */
        if (!GROW(p->ctx->job_release, p->ctx->n_job_release_alloc, p->n_jobs))
                return -ENOMEM;
        p->n_preempted = 0;

        for (size_t x = 0; x < p->n_active; x++) {
                size_t i = p->active[x];
                const SchedJob *j = &p->jobs[i];
                const SchedAllocation *a = j->alloc;
                bool preempted = j->state == SCHED_JOB_SUSPENDED && j->preempted;
                uint64_t end;
                Avail *rel;

                if (!a)
                        return -EINVAL;

                /* Its clock stood still while it was suspended (suspended_time counts the
                 * suspension under way up to now). A job a pass suspended holds no CPUs,
                 * only memory. */
                end = time_add(time_add(j->start_time, sched_job_walltime(j)), j->suspended_time);
                if (!preempted)
                        cpu_set_andnot(&free_all, &a->cpus);

                p->ctx->job_release[i] = p->n_release_avail;
                p->n_preempted += preempted;
                rel = release_new(p, end);
                if (!rel)
                        return -ENOMEM;
                /* Its GPUs, suspended or not: a frozen job keeps its GPU memory. */
                if (p->n_gpus > 0 && a->gpu_mask) {
                        gpus_held |= a->gpu_mask;
                        for (size_t k = 0; k < p->n_nodes; k++)
                                rel[k].gpus = gpus_local(p, k, a->gpu_mask);
                        if (alloc_shards(a))
                                shard_hold(p, __builtin_ctzll(a->gpu_mask), alloc_shards(a),
                                           MAX(end, p->now + 1), p->ctx->job_release[i]);
                }
                for (size_t k = 0; k < p->n_nodes; k++) {
                        uint64_t mem;

                        rel[k].cpus = preempted ? 0 : cpu_set_count_and(&m->nodes[k].cpus, &a->cpus);
                        if (a->node_mask & (UINT64_C(1) << k)) {
                                mem = preempted ? preempted_mem(p, j, k) : a->mem[k];
                                rel[k].mem = mem;
                                p->avail_now[k].mem -= MIN(p->avail_now[k].mem, mem);
                        }
                }
        }

        p->now_cpus = 0;
        for (size_t k = 0; k < p->n_nodes; k++) {
                /* Cleared and refilled within the words in use, not copied whole. */
                cpu_set_andnot(&p->free_cpus[k], &p->free_cpus[k]);
                cpu_set_or(&p->free_cpus[k], &m->nodes[k].cpus);
                cpu_set_and(&p->free_cpus[k], &free_all);
                p->avail_now[k].cpus = cpu_set_count(&p->free_cpus[k]);
                p->avail_now[k].gpus = p->n_gpus > 0 ? gpus_local(p, k, p->home_gpus[k] & ~gpus_held) : 0;
                p->now_cpus += p->avail_now[k].cpus;
        }
        return 0;
}

static unsigned job_cpus(const SchedJob *j) {
        return MAX(j->cpus, 1u);
}

/* Nothing of it taken: CPUs, memory and the GPUs attached to it. */
static bool node_idle(const SchedPass *p, const Avail *st, size_t k) {
        return st[k].cpus == p->node_cpus[k] && st[k].mem == p->node_mem[k] &&
               (st[k].gpus & p->node_slots[k]) == p->node_slots[k];
}

/* The n lowest GPUs of mask (all of them if fewer). */
static uint64_t lowest_gpus(uint64_t mask, unsigned n) {
        uint64_t r = 0;

        for (; n > 0 && mask; n--) {
                uint64_t bit = mask & -mask;
                r |= bit;
                mask &= ~bit;
        }
        return r;
}

/* The n GPUs of mask to add to chosen: the lowest where the machine has no NVLink; else
 * one by one the GPU with most links to those chosen so far (a multi-GPU job's collective
 * traffic goes over them), and before any is chosen, for a job of several GPUs (job_gpus)
 * the one with most links among mask, for a job of one the one with fewest (linked sets
 * stay whole for the jobs that want them); ties: the lowest. */
static uint64_t pick_gpus(const SchedPass *p, uint64_t mask, unsigned n, uint64_t chosen, unsigned job_gpus) {
        uint64_t r = 0;

        if (!p->any_links)
                return lowest_gpus(mask, n);
        for (; n > 0 && (mask & ~r); n--) {
                uint64_t have = chosen | r;
                int best = -1, best_to = -1, best_among = 0;

                for (uint64_t x = mask & ~r; x; x &= x - 1) {
                        int g = __builtin_ctzll(x), to = popcount64(p->gpu_links[g] & have),
                            among = popcount64(p->gpu_links[g] & mask & ~have);

                        if (have == 0 && job_gpus <= 1)
                                among = -among;
                        if (to > best_to || (to == best_to && among > best_among)) {
                                best = g;
                                best_to = to;
                                best_among = among;
                        }
                }
                r |= UINT64_C(1) << best;
        }
        return r;
}

/* Adds to *into up to left of the GPUs in from it does not hold yet (pick_gpus());
 * returns how many are still wanted. */
static unsigned take_gpus(const SchedPass *p, unsigned job_gpus, uint64_t *into, uint64_t from, unsigned left) {
        uint64_t g = pick_gpus(p, from & ~*into, left, *into, job_gpus);

        *into |= g;
        return left - (unsigned) popcount64(g);
}

static bool plan_fit_cpus(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret);

/* Spreads what j needs over the nodes s[0..n) in that order, CPUs and memory from them,
 * GPUs from them or of no known node; local: every node that gives CPUs gives a GPU too
 * (one of no known node, which is bound to none, counts for any). */
static bool plan_on_nodes(const SchedPass *p, const Avail *st, const SchedJob *j, const uint8_t *s, size_t n,
                          uint64_t free, bool local, Plan *ret) {
        uint64_t need_cpus = MAX(j->cpus, 1u), need_mem = j->memory, loose = free & p->loose_gpus;
        unsigned left = j->gpus;

        ret->node_mask = 0;
        ret->gpus = 0;
        memset(ret->cpus, 0, sizeof(ret->cpus[0]) * p->n_nodes);
        memset(ret->mem, 0, sizeof(ret->mem[0]) * p->n_nodes);

        for (size_t i = 0; i < n; i++) {
                size_t k = s[i];
                uint64_t c = MIN(need_cpus, (uint64_t) st[k].cpus), mm = MIN(need_mem, st[k].mem);

                /* A node it takes only GPUs from is not one of its nodes. */
                if (j->exclusive || c > 0 || mm > 0)
                        ret->node_mask |= UINT64_C(1) << k;
                ret->cpus[k] = j->exclusive ? st[k].cpus : (uint32_t) c;
                ret->mem[k] = j->exclusive ? st[k].mem : mm;
                need_cpus -= c;
                need_mem -= mm;
                if (j->exclusive) {
                        /* All its GPUs are the job's; the allowed ones count. */
                        ret->gpus |= p->node_gpus[k];
                        left -= MIN(left, popcount64(p->node_gpus[k] & free));
                }
        }
        if (need_cpus > 0 || need_mem > 0)
                return false;

        /* One GPU for each node the CPUs come from, then the rest in node order. */
        for (size_t i = 0; i < n && j->gpus > 0; i++) {
                size_t k = s[i];
                uint64_t mine = free & p->node_gpus[k] & ~ret->gpus;

                if (ret->cpus[k] == 0 || (ret->gpus & p->node_gpus[k] & free))
                        continue;
                if (left > 0 && mine) {
                        ret->gpus |= pick_gpus(p, mine, 1, ret->gpus, j->gpus);
                        left--;
                } else if ((left > 0 || j->exclusive) && (loose & ~ret->gpus)) {
                        /* An exclusive job's own nodes' GPUs may have used up its
                         * count: it holds more than it asked for anyway. */
                        ret->gpus |= pick_gpus(p, loose & ~ret->gpus, 1, ret->gpus, j->gpus);
                        left -= left > 0;
                } else if (local)
                        return false;
        }
        for (size_t i = 0; i < n && left > 0; i++)
                left = take_gpus(p, j->gpus, &ret->gpus, free & p->node_gpus[s[i]], left);
        if (left > 0)
                left = take_gpus(p, j->gpus, &ret->gpus, loose, left);
        return left == 0;
}

/* Whether every GPU of set is NVLinked to every other. */
static bool gpus_linked(const SchedPass *p, uint64_t set) {
        for (uint64_t x = set; x; x &= x - 1) {
                int g = __builtin_ctzll(x);
                if (((p->gpu_links[g] | (UINT64_C(1) << g)) & set) != set)
                        return false;
        }
        return true;
}

/* n GPUs of free all linked to each other, 0 when there are none: from each GPU in turn,
 * the GPUs linked to all those taken so far, the one with most links among them first
 * (ties: the lowest). Greedy: it may miss a set a search would find, never returns a
 * set that is not linked. */
static uint64_t linked_set(const SchedPass *p, uint64_t free, unsigned n) {
        for (uint64_t x = free; x; x &= x - 1) {
                int g = __builtin_ctzll(x);
                uint64_t set = UINT64_C(1) << g, cand = free & p->gpu_links[g];

                while ((unsigned) popcount64(set) < n && cand) {
                        int best = -1, best_among = -1;

                        for (uint64_t y = cand; y; y &= y - 1) {
                                int h = __builtin_ctzll(y), among = popcount64(p->gpu_links[h] & cand);
                                if (among > best_among) {
                                        best = h;
                                        best_among = among;
                                }
                        }
                        set |= UINT64_C(1) << best;
                        cand &= p->gpu_links[best];
                }
                if ((unsigned) popcount64(set) == n)
                        return set;
        }
        return 0;
}

static bool plan_fit_gpu_near(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret);

/* A job of several GPUs whose placement near its CPUs would give it GPUs not all NVLinked
 * gets a linked set where one is free, its CPUs and memory from those GPUs' nodes first,
 * then from the others (its collective traffic goes over the links: they come first),
 * unless it asks for its CPUs on its GPUs' nodes (gpu_binding), which only the placements
 * near them give. */
static bool plan_fit_gpu(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        bool ok = plan_fit_gpu_near(p, st, j, ret);
        uint64_t linked;
        uint8_t s[SCHED_NODES_MAX];
        unsigned count[SCHED_NODES_MAX];
        size_t n = 0;

        if (_likely_(!p->any_links) || j->gpus < 2 || j->gpu_binding || j->exclusive || (ok && gpus_linked(p, ret->gpus)))
                return ok;
        linked = linked_set(p, avail_gpus(p, st) & job_gpu_allowed(p, j), j->gpus);
        if (linked == 0)
                return ok;
        /* The nodes of the linked GPUs, most of them first, then the others, each group in
         * the preferred order. */
        for (size_t i = 0; i < p->n_nodes; i++) {
                size_t k = p->node_order[i];
                count[k] = (unsigned) popcount64(linked & p->node_gpus[k]);
        }
        for (unsigned want = SCHED_GPUS_MAX + 1; want-- > 0;)
                for (size_t i = 0; i < p->n_nodes; i++)
                        if (count[p->node_order[i]] == want)
                                s[n++] = (uint8_t) p->node_order[i];
        if (plan_on_nodes(p, st, j, s, n, linked, false, ret))
                return true;
        return ok && plan_fit_gpu_near(p, st, j, ret);
}

/* A job with GPUs, or an exclusive one on a machine with GPUs. Placements, best first:
 *   1. one node with its CPUs, memory and GPUs: of those whose own GPUs suffice, the one
 *      with the fewest free (best fit: nodes with many stay free for jobs that want
 *      many); an exclusive job without GPUs takes the node with the fewest GPUs;
 *   2. several nodes, those with the most free GPUs first, each node that gives CPUs
 *      giving a GPU too;
 *   3. without gpu_binding: the CPUs and memory as a job without GPUs gets them, and
 *      GPUs from those nodes first, then from any.
 * A GPU of no known node is local to none and bound to none: it is taken after local
 * ones, and binding does not exclude it. */
static bool plan_fit_gpu_near(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        uint64_t need_cpus = MAX(j->cpus, 1u), need_mem = j->memory, sum_cpus = 0, sum_mem = 0;
        uint64_t free = avail_gpus(p, st) & job_gpu_allowed(p, j), loose = free & p->loose_gpus;
        unsigned n_local[SCHED_NODES_MAX], n_loose = popcount64(loose), sum_gpus = n_loose;
        uint8_t cand[SCHED_NODES_MAX];
        size_t n = 0, best = SIZE_MAX;

        if (popcount64(free) < j->gpus)
                return false;

        for (size_t i = 0; i < p->n_nodes; i++) {
                size_t k = p->node_order[i];

                if (j->exclusive ? !node_idle(p, st, k) : st[k].cpus == 0 && st[k].mem == 0 && !(free & p->node_gpus[k]))
                        continue;
                n_local[k] = popcount64(free & p->node_gpus[k]);
                cand[n++] = (uint8_t) k;
                sum_cpus += st[k].cpus;
                sum_mem += st[k].mem;
                sum_gpus += n_local[k];
        }
        if (sum_cpus < need_cpus || sum_mem < need_mem || sum_gpus < j->gpus)
                return false;

        /* 1. One node. */
        for (size_t i = 0; i < n; i++) {
                size_t k = cand[i];

                if (st[k].cpus < need_cpus || st[k].mem < need_mem || n_local[k] + n_loose < j->gpus)
                        continue;
                if (best == SIZE_MAX)
                        best = k;
                else if (j->gpus == 0) {
                        if (popcount64(p->node_gpus[k]) < popcount64(p->node_gpus[best]))
                                best = k;
                } else if (n_local[best] < j->gpus ? n_local[k] > n_local[best]
                                                   : n_local[k] >= j->gpus && n_local[k] < n_local[best])
                        best = k;
        }
        if (best != SIZE_MAX) {
                uint8_t one = (uint8_t) best;
                if (plan_on_nodes(p, st, j, &one, 1, free, true, ret))
                        return true;
        }

        /* 2. Several nodes, the most free GPUs first (stable: preferred order breaks
         * ties); an exclusive job without GPUs, the fewest GPUs first. */
        for (size_t i = 1; i < n; i++) {
                uint8_t v = cand[i];
                size_t x = i;
                while (x > 0 && (j->gpus == 0 ? popcount64(p->node_gpus[v]) < popcount64(p->node_gpus[cand[x - 1]])
                                              : n_local[v] > n_local[cand[x - 1]])) {
                        cand[x] = cand[x - 1];
                        x--;
                }
                cand[x] = v;
        }
        {
                uint64_t c = 0, mm = 0;
                unsigned g = n_loose;
                size_t used = 0;

                while (used < n && (c < need_cpus || mm < need_mem || g < j->gpus)) {
                        size_t k = cand[used++];
                        c += st[k].cpus;
                        mm += st[k].mem;
                        g += n_local[k];
                }
                if (plan_on_nodes(p, st, j, cand, used, free, true, ret))
                        return true;
        }
        if (j->gpu_binding)
                return false;

        /* 3. CPUs wherever they are, GPUs near them if possible. */
        {
                SchedJob cpu_only = *j;
                uint64_t near = 0, left_mask;
                unsigned left = j->gpus;

                cpu_only.gpus = 0;
                if (!plan_fit_cpus(p, st, &cpu_only, ret))
                        return false;
                ret->gpus = 0;
                for (size_t k = 0; k < p->n_nodes; k++)
                        if (ret->node_mask & (UINT64_C(1) << k)) {
                                if (j->exclusive) {
                                        ret->gpus |= p->node_gpus[k];
                                        left -= MIN(left, popcount64(p->node_gpus[k] & free));
                                } else
                                        near |= free & p->node_gpus[k];
                        }
                left_mask = free & ~ret->gpus;
                near = pick_gpus(p, near & left_mask, left, ret->gpus, j->gpus);
                ret->gpus |= near;
                left -= popcount64(near);
                /* Then the nodes with most free GPUs (cand is in that order), loose last. */
                for (size_t i = 0; i < n && left > 0; i++)
                        left = take_gpus(p, j->gpus, &ret->gpus, free & p->node_gpus[cand[i]], left);
                if (left > 0)
                        left = take_gpus(p, j->gpus, &ret->gpus, loose, left);
                return left == 0;
        }
}

bool plan_fit(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        /* GPU work only where there are GPUs: CPU-only machines take the path below alone. */
        if (p->n_gpus > 0 && (j->gpus > 0 || j->exclusive))
                return plan_fit_gpu(p, st, j, ret);
        if (j->gpus > 0)
                return false;
        return plan_fit_cpus(p, st, j, ret);
}

static bool plan_fit_cpus(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        uint64_t need_cpus = job_cpus(j), need_mem = j->memory, sum_cpus = 0, sum_mem = 0;
        uint8_t cand[SCHED_NODES_MAX];
        size_t n = 0;

        /* Usable nodes in preferred order, and whether they can hold the job at all. */
        for (size_t i = 0; i < p->n_nodes; i++) {
                size_t k = p->node_order[i];

                if (j->exclusive ? !node_idle(p, st, k) : st[k].cpus == 0 && st[k].mem == 0)
                        continue;
                cand[n++] = (uint8_t) k;
                sum_cpus += st[k].cpus;
                sum_mem += st[k].mem;
        }
        if (sum_cpus < need_cpus || sum_mem < need_mem)
                return false;

        /* Only the pass's nodes are ever read: clearing all SCHED_NODES_MAX would cost
         * more than the search on a small machine. */
        ret->node_mask = 0;
        ret->gpus = 0;
        memset(ret->cpus, 0, sizeof(ret->cpus[0]) * p->n_nodes);
        memset(ret->mem, 0, sizeof(ret->mem[0]) * p->n_nodes);

        /* One node is best: the first in preferred order that holds it all. */
        for (size_t i = 0; i < n; i++) {
                size_t k = cand[i];

                if (st[k].cpus >= need_cpus && st[k].mem >= need_mem) {
                        ret->node_mask = UINT64_C(1) << k;
                        ret->cpus[k] = j->exclusive ? st[k].cpus : (uint32_t) need_cpus;
                        ret->mem[k] = j->exclusive ? st[k].mem : need_mem;
                        return true;
                }
        }

        /* Otherwise spread: the nodes with most free CPUs first (stable, so preferred
         * order breaks ties) make the fewest nodes for the CPUs, which are usually the
         * scarce part. Always succeeds, as the sums above suffice. */
        for (size_t i = 1; i < n; i++) {
                uint8_t v = cand[i];
                size_t x = i;
                while (x > 0 && st[v].cpus > st[cand[x - 1]].cpus) {
                        cand[x] = cand[x - 1];
                        x--;
                }
                cand[x] = v;
        }
        for (size_t i = 0; i < n && (need_cpus > 0 || need_mem > 0); i++) {
                size_t k = cand[i];
                uint64_t c = MIN(need_cpus, (uint64_t) st[k].cpus), mm = MIN(need_mem, st[k].mem);

                if (c == 0 && mm == 0)
                        continue;
                ret->node_mask |= UINT64_C(1) << k;
                ret->cpus[k] = j->exclusive ? st[k].cpus : (uint32_t) c;
                ret->mem[k] = j->exclusive ? st[k].mem : mm;
                need_cpus -= c;
                need_mem -= mm;
        }
        return true;
}

const CpuSet *cand_allowed_cpus(const SchedPass *p, const Cand *c) {
        return p->limits && cand_group(p, c)->proj >= 0 ? p->config->projects[cand_group(p, c)->proj].allowed_cpus : NULL;
}

uint64_t shards_joinable(const SchedPass *p, const SchedJob *j) {
        uint64_t r = 0, end = time_add(p->now, sched_job_walltime(j)), h = p->shard_horizon;
        unsigned k = job_shards(j);

        for (uint64_t x = p->shard_open & job_gpu_allowed(p, j); x; x &= x - 1) {
                size_t g = __builtin_ctzll(x);

                if (p->shard_used[g] + k <= p->gpu_shards[g] &&
                    (end <= p->shard_end[g] ||
                     (h != 0 && (end <= h || p->shard_end[g] > h || (p->shard_free_at_horizon >> g & 1)))))
                        r |= x & -x;
        }
        return r;
}

uint64_t shards_pick(const SchedPass *p, const SchedJob *j, uint64_t join, uint64_t node_mask) {
        uint64_t near = 0;

        for (size_t k = 0; k < p->n_nodes; k++)
                if (node_mask >> k & 1)
                        near |= join & p->node_gpus[k];
        /* A GPU of no known node is bound to none: allowed under binding. */
        near |= join & p->loose_gpus;
        if (near)
                return near & -near;
        return j->gpu_binding ? 0 : join & -join;
}

/* plan_fit() for a shard job now: a GPU whose shards are in use first, of those it may
 * join (they are not in st: held), so that free GPUs stay whole; else a free one. */
static bool plan_fit_shards(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        uint64_t join = shards_joinable(p, j);

        if (join) {
                Avail with[SCHED_NODES_MAX];
                SchedJob one = *j;

                one.gpu_allowed = join;
                for (size_t k = 0; k < p->n_nodes; k++) {
                        with[k] = st[k];
                        with[k].gpus = gpus_local(p, k, join);
                }
                if (plan_fit(p, with, &one, ret))
                        return true;
        }
        return plan_fit(p, st, j, ret);
}

static bool plan_fit_job_now(const SchedPass *p, const Avail *st, const SchedJob *j, Plan *ret) {
        if (_unlikely_(p->shard_open != 0) && job_shards(j) && j->gpus == 1)
                return plan_fit_shards(p, st, j, ret);
        return plan_fit(p, st, j, ret);
}

bool plan_fit_now(const SchedPass *p, const Avail *st, const Cand *c, Plan *ret) {
        const CpuSet *allowed = cand_allowed_cpus(p, c);
        Avail capped[SCHED_NODES_MAX];

        if (!allowed)
                return plan_fit_job_now(p, st, cand_job(p, c), ret);
        /* A node's CPUs outside the cap are not there for this job; an exclusive job then
         * finds the node not idle, as it should. */
        for (size_t k = 0; k < p->n_nodes; k++) {
                capped[k] = st[k];
                capped[k].cpus = MIN(st[k].cpus, cpu_set_count_and(&p->free_cpus[k], allowed));
        }
        return plan_fit_job_now(p, capped, cand_job(p, c), ret);
}

void avail_sub(const SchedPass *p, Avail *st, const Plan *pl) {
        for (size_t k = 0; k < p->n_nodes; k++) {
                st[k].cpus -= MIN(st[k].cpus, pl->cpus[k]);
                st[k].mem -= MIN(st[k].mem, pl->mem[k]);
        }
        if (pl->gpus)
                for (size_t k = 0; k < p->n_nodes; k++)
                        st[k].gpus &= ~gpus_local(p, k, pl->gpus);
}

void avail_add(const SchedPass *p, Avail *st, const Avail *add) {
        /* Clamped: overlapping allocations from a confused caller must not mint CPUs. */
        for (size_t k = 0; k < p->n_nodes; k++) {
                st[k].cpus = (uint32_t) MIN((uint64_t) st[k].cpus + add[k].cpus, (uint64_t) p->node_cpus[k]);
                st[k].mem = MIN(time_add(st[k].mem, add[k].mem), p->node_mem[k]);
                st[k].gpus |= add[k].gpus;
        }
}

void avail_add_gpus(const SchedPass *p, Avail *st, uint64_t mask) {
        if (mask == 0)
                return;
        for (size_t k = 0; k < p->n_nodes; k++)
                st[k].gpus |= gpus_local(p, k, mask);
}

void avail_min(const SchedPass *p, Avail *dst, const Avail *a, const Avail *b) {
        for (size_t k = 0; k < p->n_nodes; k++) {
                dst[k].cpus = MIN(a[k].cpus, b[k].cpus);
                dst[k].mem = MIN(a[k].mem, b[k].mem);
                dst[k].gpus = a[k].gpus & b[k].gpus;
        }
}

int pass_start(SchedPass *p, Cand *c, const Plan *pl) {
        SchedContext *ctx = p->ctx;
        const SchedJob *j = cand_job(p, c);
        SchedDecision *d;
        Avail *rel;

        if (!GROW(ctx->decisions, ctx->n_decisions_alloc, p->n_decisions + 1))
                return -ENOMEM;
        rel = release_new(p, time_add(p->now, sched_job_walltime(j)));
        if (!rel)
                return -ENOMEM;

        d = &ctx->decisions[p->n_decisions++];
        *d = (SchedDecision) {
                .type = SCHED_DECISION_START,
                .job_index = c->idx,
                .job_id = j->id,
        };
        {
                const CpuSet *allowed = cand_allowed_cpus(p, c);
                bool ok = pick_cpus(p, p->free_cpus, allowed && !j->exclusive ? allowed : NULL, pl, &d->alloc);
                assert(ok);
                (void) ok;
        }
        d->alloc.gpu_mask = pl->gpus;
        for (size_t k = 0; k < p->n_nodes; k++) {
                /* GPUs of no known node are kept at node 0, which it may not use. */
                rel[k].gpus = gpus_local(p, k, pl->gpus);
                if (!(pl->node_mask & (UINT64_C(1) << k)))
                        continue;
                cpu_set_andnot(&p->free_cpus[k], &d->alloc.cpus);
                rel[k].cpus = pl->cpus[k];
                rel[k].mem = pl->mem[k];
        }
        if (_unlikely_(p->shard_gpus != 0) && job_shards(j) && pl->gpus && (pl->gpus & (pl->gpus - 1)) == 0) {
                d->alloc.shards = (uint16_t) job_shards(j);
                d->alloc.shards_of = p->gpu_shards[__builtin_ctzll(pl->gpus)];
                shard_hold(p, __builtin_ctzll(pl->gpus), job_shards(j), p->ctx->releases[p->n_releases - 1].end,
                           (size_t) (rel - p->ctx->release_avail));
        }

        avail_sub(p, p->avail_now, pl);
        p->now_cpus = 0;
        for (size_t k = 0; k < p->n_nodes; k++)
                p->now_cpus += p->avail_now[k].cpus;

        c->started = true;
        c->reason = SCHED_REASON_NONE;
        cand_set_est(p, c, p->now);
        limits_charge(p, c);
        return 0;
}

bool pick_cpus(const SchedPass *p, const CpuSet *free, const CpuSet *allowed, const Plan *pl,
               SchedAllocation *ret) {
        *ret = (SchedAllocation) { .node_mask = pl->node_mask };
        for (size_t k = 0; k < p->n_nodes; k++) {
                uint32_t want = pl->cpus[k];
                CpuSet from = free[k];

                if (!(pl->node_mask & (UINT64_C(1) << k)))
                        continue;
                if (allowed)
                        cpu_set_and(&from, allowed);
                /* Lowest free ids first: keeps the rest of the node contiguous. */
                for (int cpu = cpu_set_next(&from, 0); cpu >= 0 && want > 0; cpu = cpu_set_next(&from, (unsigned) cpu + 1)) {
                        cpu_set_add(&ret->cpus, (unsigned) cpu);
                        want--;
                }
                if (want > 0)
                        return false;
                ret->mem[k] = pl->mem[k];
        }
        return true;
}

static inline bool release_less(const void *ctx, const Release *a, const Release *b) {
        return a->end != b->end ? a->end < b->end : a->avail_off < b->avail_off;
}
DEFINE_MERGE_SORT(sort_releases, Release, release_less);

int pass_sort_releases(SchedPass *p) {
        SchedContext *ctx = p->ctx;

        if (p->releases_sorted)
                return 0;
        if (!GROW(ctx->releases_tmp, ctx->n_releases_tmp_alloc, p->n_releases))
                return -ENOMEM;
        sort_releases(ctx->releases, ctx->releases_tmp, p->n_releases, NULL);
        p->releases_sorted = true;
        return 0;
}

bool pass_reserve(SchedPass *p, const SchedJob *j, uint64_t *ret_time, Avail *ret_after) {
        SchedContext *ctx = p->ctx;
        Avail st[SCHED_NODES_MAX];
        Plan pl;

        assert(p->releases_sorted);

        memcpy(st, p->avail_now, sizeof(Avail) * p->n_nodes);
        if (plan_fit(p, st, j, &pl)) {
                *ret_time = p->now;
                goto found;
        }

        for (size_t i = 0; i < p->n_releases; ) {
                uint64_t end = ctx->releases[i].end;

                if (end == SCHED_TIME_INFINITY)
                        break;
                /* All that ends at the same moment is back at once. */
                for (; i < p->n_releases && ctx->releases[i].end == end; i++)
                        avail_add(p, st, ctx->release_avail + ctx->releases[i].avail_off);
                if (plan_fit(p, st, j, &pl)) {
                        *ret_time = end;
                        goto found;
                }
        }
        return false;

found:
        avail_sub(p, st, &pl);
        memcpy(ret_after, st, sizeof(Avail) * p->n_nodes);
        return true;
}
