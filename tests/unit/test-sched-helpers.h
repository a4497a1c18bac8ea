/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Builders shared by the sched tests. */

#include "sched.h"

#define GIB (UINT64_C(1) << 30)

/* The random workloads' generator (xorshift64*): seeded, the same everywhere. */
typedef struct Rng {
        uint64_t s;
} Rng;

static inline uint64_t rng(Rng *r, uint64_t n) {
        r->s ^= r->s >> 12;
        r->s ^= r->s << 25;
        r->s ^= r->s >> 27;
        return (r->s * UINT64_C(2685821657736338717)) % n;
}

/* n nodes of cpus CPUs each, numbered consecutively. */
static inline void machine_uniform(SchedNode *nodes, size_t n, unsigned cpus, uint64_t mem, SchedMachine *ret) {
        for (size_t k = 0; k < n; k++) {
                nodes[k] = (SchedNode) { .memory = mem, .speed = 1 };
                for (unsigned i = 0; i < cpus; i++)
                        cpu_set_add(&nodes[k].cpus, (unsigned) (k * cpus + i));
        }
        *ret = (SchedMachine) { .nodes = nodes, .n_nodes = n };
}

static inline SchedJob job_pending(uint64_t id, uint64_t submit, unsigned cpus, uint64_t walltime) {
        return (SchedJob) {
                .id = id,
                .state = SCHED_JOB_PENDING,
                .submit_time = submit,
                .cpus = cpus,
                .walltime = walltime,
        };
}
