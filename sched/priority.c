/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sched-internal.h"

static double priority_fcfs(const SchedConfig *c, const SchedJob *j, uint64_t now) {
        /* Groups by queue; submit order within a group comes from the tie-break. */
        return (double) j->queue_priority;
}

const SchedPriorityOps sched_priority_fcfs = {
        .name = "fcfs",
        .priority = priority_fcfs,
};

static double priority_multifactor(const SchedConfig *c, const SchedJob *j, uint64_t now) {
        return job_priority_multifactor(c, j, now);
}

const SchedPriorityOps sched_priority_multifactor = {
        .name = "multifactor",
        .priority = priority_multifactor,
};

double sched_priority_terms(const SchedConfig *c, const SchedJob *j, uint64_t now, SchedPriorityTerm *t) {
        const SchedWeights *w = &c->weights;
        uint64_t since = j->eligible_time ?: j->submit_time, limit = sched_job_walltime(j);
        double age = now > since ? (double) (now - since) : 0.0;
        double waited = now > j->submit_time ? (double) (now - j->submit_time) : 0.0;
        double wall = limit == SCHED_TIME_INFINITY ? 0.0 : (double) limit;
        bool fcfs = c->priority == &sched_priority_fcfs;
        double sum = 0.0;

        t[SCHED_TERM_QUEUE] = (SchedPriorityTerm) { "queue", (double) j->queue_priority, fcfs ? 1.0 : w->queue };
        t[SCHED_TERM_FAIRSHARE] = (SchedPriorityTerm) { "fairshare", j->fairshare, fcfs ? 0.0 : w->fairshare };
        t[SCHED_TERM_AGE] = (SchedPriorityTerm) { "age", age, fcfs ? 0.0 : w->age };
        t[SCHED_TERM_XFACTOR] = (SchedPriorityTerm) { "xfactor", wall > 0.0 ? (waited + wall) / wall : 1.0,
                                                      fcfs ? 0.0 : w->xfactor };
        t[SCHED_TERM_SIZE] = (SchedPriorityTerm) { "size", (double) MAX(j->cpus, 1u), fcfs ? 0.0 : w->size };
        t[SCHED_TERM_BYPASS] = (SchedPriorityTerm) { "bypass", (double) j->bypass_count, fcfs ? 0.0 : w->bypass };
        t[SCHED_TERM_TARGET] = (SchedPriorityTerm) {
                "target", j->target_queue_time > 0 ? age / (double) j->target_queue_time : 0.0,
                fcfs || j->target_queue_time == 0 ? 0.0 : w->target };
        t[SCHED_TERM_NICE] = (SchedPriorityTerm) { "nice", (double) j->nice, fcfs ? 0.0 : -1.0 };
        for (int k = 0; k < _SCHED_TERM_MAX; k++) {
                double x = t[k].input;
                if (k == SCHED_TERM_TARGET)
                        x = t[k].weight != 0.0 ? expm1_pos(MIN(x, 50.0)) : 0.0;
                t[k].value = t[k].weight * x;
                sum += t[k].value;
        }
        return sum;
}
