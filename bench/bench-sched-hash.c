/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A hash of every pass's decisions and waiting list, to show that a change to sched/
 * decides as the tree before it did: linked into bench-sched with --wrap=sched_pass, it
 * hashes each SchedResult field by field (no padding) and prints, at exit, on stderr:
 *   PASSHASH passes=N decisions=N waiting=N hash=H
 * Not built by meson. In each tree's root, its release build in build-rel, with the same
 * bench-sched.c for both:
 *   cc -O2 -std=gnu17 -D_GNU_SOURCE -Isched -Icommon -Ibench -Ibuild-rel \
 *      -include build-rel/config.h bench/bench-sched.c bench/bench-sched-hash.c \
 *      -Wl,--wrap=sched_pass build-rel/sched/libsched.a build-rel/common/libcommon-base.a \
 *      -lm -o /tmp/bench-sched-hash
 *   for a in "" easy pass "pass 100000 gpus0"; do /tmp/bench-sched-hash $a >/dev/null; done
 * and compare the lines. Compiling the sched/ sources in instead of the library, without
 * -DNDEBUG, also runs sched/'s asserts over those passes. */
#include <stdio.h>
#include <stdlib.h>

#include "sched.h"

int __real_sched_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                      const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret);
int __wrap_sched_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                      const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret);

static uint64_t hash = UINT64_C(1469598103934665603), n_passes, n_decisions, n_waiting;

/* FNV-1a over the bytes of one value. */
static void mix(const void *p, size_t n) {
        const unsigned char *c = p;

        for (size_t i = 0; i < n; i++) {
                hash ^= c[i];
                hash *= UINT64_C(1099511628211);
        }
}

#define MIX(x)                                  \
        do {                                    \
                __typeof__(x) _v = (x);         \
                mix(&_v, sizeof(_v));           \
        } while (0)

static void mix_alloc(const SchedAllocation *a) {
        MIX(a->cpus.lo);
        MIX(a->cpus.hi);
        for (unsigned w = a->cpus.lo; w < a->cpus.hi; w++)
                MIX(a->cpus.bits[w]);
        MIX(a->node_mask);
        for (size_t k = 0; k < SCHED_NODES_MAX; k++)
                MIX(a->mem[k]);
        MIX(a->gpu_mask);
        MIX(a->shards);
        MIX(a->shards_of);
}

static void print_hash(void) {
        fprintf(stderr, "PASSHASH passes=%llu decisions=%llu waiting=%llu hash=%016llx\n",
                (unsigned long long) n_passes, (unsigned long long) n_decisions,
                (unsigned long long) n_waiting, (unsigned long long) hash);
}

int __wrap_sched_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
                      const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret) {
        int r = __real_sched_pass(ctx, config, machine, jobs, n_jobs, now, ret);

        if (n_passes++ == 0)
                atexit(print_hash);
        MIX(r);
        if (r < 0)
                return r;
        MIX(ret->n_decisions);
        MIX(ret->n_waiting);
        for (size_t i = 0; i < ret->n_decisions; i++) {
                const SchedDecision *d = &ret->decisions[i];

                MIX(d->type);
                MIX(d->job_index);
                MIX(d->job_id);
                MIX(d->by_job_id);
                MIX(d->score);
                mix_alloc(&d->alloc);
        }
        for (size_t i = 0; i < ret->n_waiting; i++) {
                const SchedWait *w = &ret->waiting[i];

                MIX(w->job_index);
                MIX(w->job_id);
                MIX(w->est_start);
                MIX(w->priority);
                MIX(w->limit);
                MIX(w->wanted);
                MIX(w->reason);
                MIX(w->bypassed);
        }
        n_decisions += ret->n_decisions;
        n_waiting += ret->n_waiting;
        return r;
}
