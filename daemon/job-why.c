/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral why: what holds a job back, in words with numbers, and what its priority is
 * made of. Built from the last scheduling pass (its reason, its estimate) and the state
 * now: the priority's terms from sched/, its place among the eligible jobs, and per
 * reason the facts behind it (which job it depends on and in which state, who holds
 * it, which limit and how far over, which CPUs and memory are free against what it
 * needs, which job's reservation it waits behind). */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpu-jobs.h"
#include "job-backend.h"
#include "job-table.h"
#include "job-why.h"
#include "json-util.h"
#include "manager.h"
#include "sched-driver.h"
#include "usage.h"

/* One sentence of the answer. */
#define say json_array_add_printf

static bool reason_is(const Job *j, const char *r) {
        return job_reason(j) && streq(job_reason(j), r);
}

static void say_time(char *buf, size_t size, uint64_t t) {
        struct tm tm;
        time_t tt = (time_t) t;

        if (t == 0 || t == SCHED_TIME_INFINITY || !localtime_r(&tt, &tm) ||
            strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, size, "unknown");
}

/* What is free now on each node, against what the job asks. */
static void explain_resources(Manager *m, const Job *j, json_object *why) {
        uint32_t busy[SCHED_NODES_MAX] = {};
        uint64_t mem_busy[SCHED_NODES_MAX] = {};
        char line[512];
        size_t n = 0;

        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *r = m->jobs[i];
                if (!job_state_is_active(r->state) || !job_alloc(r))
                        continue;
                for (size_t k = 0; k < m->machine.n_nodes; k++) {
                        busy[k] += cpu_set_count_and(&job_alloc(r)->cpus, &m->machine.nodes[k].cpus);
                        if (job_alloc(r)->node_mask & (UINT64_C(1) << k))
                                mem_busy[k] += job_alloc(r)->mem[k];
                }
        }
        n = (size_t) snprintf(line, sizeof line, "it needs %u CPUs%s and %" PRIu64 " MiB; free now:", j->req.cpus ?: 1,
                              j->req.exclusive ? " on whole nodes" : "", job_shared(j)->memory >> 20);
        for (size_t k = 0; k < m->machine.n_nodes && n < sizeof line; k++) {
                uint32_t total = cpu_set_count(&m->machine.nodes[k].cpus);
                uint64_t mem = m->machine.nodes[k].memory;
                n += (size_t) snprintf(line + n, sizeof line - n, "%s node %zu %u of %u CPUs, %" PRIu64 " MiB", k ? "," : "",
                                       k, total - MIN(busy[k], total), total,
                                       (mem - MIN(mem_busy[k], mem)) >> 20);
        }
        say(why, "%s", line);
}

/* The GPUs it waits for: how many of those it may have are free, and who holds the rest
 * (suspended jobs too: a frozen job keeps its GPUs). */
/* A shard job (--gres=shard:K): K shards of one GPU whose Shards= is at least K, a GPU held
 * whole by none; each such GPU with its shards free and who holds it. */
static void explain_shards(Manager *m, Job *j, json_object *why) {
        const SchedMachine *mc = &m->machine;
        uint64_t all = mc->n_gpus >= 64 ? UINT64_MAX : (UINT64_C(1) << mc->n_gpus) - 1, allowed, whole = 0;
        unsigned used[SCHED_GPUS_MAX] = {};
        uint64_t whole_by[SCHED_GPUS_MAX] = {};
        char line[512];
        size_t n;
        SchedJob s;

        if (j->req_shards == 0)
                return;
        manager_sched_job(m, j, &s);
        allowed = (s.gpu_allowed ?: UINT64_MAX) & all;
        for (size_t g = 0; g < mc->n_gpus; g++)
                if (mc->gpus[g].offline || mc->gpus[g].shards < j->req_shards)
                        allowed &= ~(UINT64_C(1) << g);
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *r = m->jobs[i];
                if (!job_state_is_active(r->state) || !job_alloc(r) || !(job_alloc(r)->gpu_mask & allowed))
                        continue;
                for (uint64_t x = job_alloc(r)->gpu_mask & allowed; x; x &= x - 1) {
                        size_t g = __builtin_ctzll(x);
                        if (job_alloc(r)->shards)
                                used[g] += job_alloc(r)->shards;
                        else {
                                whole |= x & -x;
                                whole_by[g] = r->id;
                        }
                }
        }
        n = (size_t) snprintf(line, sizeof line, "it waits for %u shard%s of one GPU", j->req_shards,
                              j->req_shards == 1 ? "" : "s");
        for (size_t g = 0, first = 1; g < mc->n_gpus && n < sizeof line; g++) {
                const char *name = m->devices && g < m->devices->n_devices ? m->devices->devices[g].name : "GPU";

                if (!(allowed >> g & 1))
                        continue;
                if (whole >> g & 1)
                        n += (size_t) snprintf(line + n, sizeof line - n, "%s%s held whole by job %" PRIu64,
                                               first ? ": " : "; ", name, whole_by[g]);
                else
                        n += (size_t) snprintf(line + n, sizeof line - n, "%s%s has %u of %u free", first ? ": " : "; ",
                                               name, used[g] >= mc->gpus[g].shards ? 0 : mc->gpus[g].shards - used[g],
                                               (unsigned) mc->gpus[g].shards);
                first = 0;
        }
        if (allowed == 0 && n < sizeof line)
                (void) snprintf(line + n, sizeof line - n, ": no GPU it may have has %u shards (Shards=)",
                                j->req_shards);
        say(why, "%s", line);
}

/* Appends "; what: gpu0, gpu2 (note)" for the GPUs in mask to line (n bytes in it);
 * returns its new length. */
static size_t list_gpus(Manager *m, char *line, size_t size, size_t n, uint64_t mask, const char *what,
                        const char *note) {
        for (size_t g = 0, first = 1; mask && g < m->machine.n_gpus && n < size; g++)
                if (mask >> g & 1) {
                        n += (size_t) snprintf(line + n, size - n, "%s%s%s%s", first ? "; " : ", ", first ? what : "",
                                               first ? ": " : "",
                                               m->devices && g < m->devices->n_devices ? m->devices->devices[g].name : "?");
                        first = 0;
                }
        if (mask && n < size)
                n += (size_t) snprintf(line + n, size - n, " (%s)", note);
        return n;
}

/* The most GPUs of mask all NVLinked to each other (greedy, as the pass picks them). */
static unsigned linked_most(const SchedMachine *mc, uint64_t mask) {
        unsigned most = 0;

        for (uint64_t x = mask; x; x &= x - 1) {
                size_t g = (size_t) __builtin_ctzll(x);
                uint64_t set = UINT64_C(1) << g, cand = mask & mc->gpus[g].links;

                while (cand) {
                        size_t h = (size_t) __builtin_ctzll(cand);
                        set |= UINT64_C(1) << h;
                        cand &= mc->gpus[h].links;
                }
                most = MAX(most, (unsigned) __builtin_popcountll(set));
        }
        return most;
}

static void explain_gpus(Manager *m, Job *j, json_object *why) {
        const SchedMachine *mc = &m->machine;
        uint64_t all = mc->n_gpus >= 64 ? UINT64_MAX : (UINT64_C(1) << mc->n_gpus) - 1, held = 0, allowed;
        char line[512], holders[256] = "";
        size_t n, h = 0;
        SchedJob s;

        if (j->req.gpus == 0)
                return explain_shards(m, j, why);
        manager_sched_job(m, j, &s);
        allowed = (s.gpu_allowed ?: UINT64_MAX) & all;
        uint64_t outside = m->config->unmanaged_gpu_avoid ? manager_gpu_jobs_unmanaged(m) & allowed : 0,
                 mig = manager_gpu_jobs_mig(m) & allowed, unsettled = manager_gpu_jobs_mig_unsettled(m) & allowed;

        for (size_t g = 0; g < mc->n_gpus; g++)
                if (mc->gpus[g].offline)
                        allowed &= ~(UINT64_C(1) << g);
        held |= outside | mig | unsettled;
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *r = m->jobs[i];
                if (!job_state_is_active(r->state) || !job_alloc(r) || !(job_alloc(r)->gpu_mask & allowed))
                        continue;
                held |= job_alloc(r)->gpu_mask;
                if (h < sizeof holders)
                        h += (size_t) snprintf(holders + h, sizeof holders - h, "%s%" PRIu64 "%s", h ? ", " : "", r->id,
                                               job_alloc(r)->shards ? " (shards)" : "");
        }
        n = (size_t) snprintf(line, sizeof line, "it waits for %u GPUs%s: %u of %u free", j->req.gpus,
                              j->req.gpu_binding ? " with its CPUs on their nodes" : "",
                              (unsigned) __builtin_popcountll(allowed & ~held), (unsigned) __builtin_popcountll(allowed));
        for (size_t g = 0, first = 1; g < mc->n_gpus && n < sizeof line; g++)
                if ((allowed & ~held) >> g & 1) {
                        /* As admins name them ([Device] Name=) and the kernel numbers nodes,
                         * not the scheduler's indexes. */
                        if (m->devices && g < m->devices->n_devices)
                                n += (size_t) snprintf(line + n, sizeof line - n, "%s%s", first ? " (" : ", ",
                                                       m->devices->devices[g].name);
                        else
                                n += (size_t) snprintf(line + n, sizeof line - n, "%sGPU %zu", first ? " (" : ", ", g);
                        if (n < sizeof line && mc->gpus[g].node >= 0)
                                n += (size_t) snprintf(line + n, sizeof line - n, " on node %u",
                                                       m->numa_ids ? m->numa_ids[mc->gpus[g].node]
                                                                   : (unsigned) mc->gpus[g].node);
                        first = 0;
                }
        if (n < sizeof line && (allowed & ~held))
                n += (size_t) snprintf(line + n, sizeof line - n, ")");
        if (n < sizeof line && h > 0)
                n += (size_t) snprintf(line + n, sizeof line - n, "; held by job%s %s", strchr(holders, ',') ? "s" : "",
                                       holders);
        /* UnmanagedGPU=avoid: the ones work outside Corral uses (corral info says whose). */
        n = list_gpus(m, line, sizeof line, n, outside, "in use outside Corral", "a process in no job; corral info");
        n = list_gpus(m, line, sizeof line, n, mig, "in MIG mode",
                      "not given whole; its MIG devices are GPUs of their own once `corral reload` reads them");
        n = list_gpus(m, line, sizeof line, n, unsettled, "MIG devices of a GPU re-sliced under a running job",
                      "given to no new job until the job holding the one gone ends");
        /* NVLink is a preference: free GPUs not linked to each other are given all the
         * same, but a job of several is better told. */
        if (j->req.gpus >= 2 && n < sizeof line) {
                uint64_t free = allowed & ~held;
                bool any_links = false;

                for (size_t g = 0; g < mc->n_gpus; g++)
                        any_links = any_links || mc->gpus[g].links != 0;
                if (any_links && (unsigned) __builtin_popcountll(free) >= j->req.gpus &&
                    linked_most(mc, free) < j->req.gpus)
                        (void) snprintf(line + n, sizeof line - n,
                                        "; %u GPUs free but not linked (at most %u of them NVLinked to each other): "
                                        "it is given them when it starts, linked ones being preferred, not required",
                                        (unsigned) __builtin_popcountll(free), linked_most(mc, free));
        }
        say(why, "%s", line);
}

static void explain_priority_wait(Manager *m, const Job *j, json_object *why) {
        const Job *top = NULL;
        char when[64];

        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *o = m->jobs[i];
                if (o->state == JOB_QUEUED && reason_is(o, "Resources") && (!top || o->priority > top->priority))
                        top = o;
        }
        if (top && top != j) {
                say_time(when, sizeof when, top->est_start);
                say(why, "job %" PRIu64 " (priority %.3f) comes first and holds a reservation from %s; this job may "
                    "start before that only if it ends by then or fits beside it", top->id, top->priority, when);
        } else
                say(why, "jobs of higher priority come first");
}

static void explain_dependencies(Manager *m, const Job *j, json_object *why) {
        for (size_t i = 0; i < j->req.n_dependencies; i++) {
                const SchedDep *d = &j->req.dependencies[i];
                const Job *o = manager_find_job(m, d->job_id);
                say(why, "it waits for job %" PRIu64 " (%s): that job is %s", d->job_id,
                    dependency_type_to_string((DependencyType) d->type), o ? job_state_to_string(o->state) : "gone");
        }
}

static void explain_limit(const Job *j, json_object *why) {
        if (j->limit_wanted)
                say(why, "a limit of its project holds it back: %s, which it would take to %" PRIu64 " (limit %" PRIu64
                    "); it starts when the limit allows, nothing to do", strempty(job_reason(j)), j->limit_wanted,
                    j->limit_value);
        else
                say(why, "a limit of its project holds it back: %s=%" PRIu64 "; it starts when the limit allows",
                    strempty(job_reason(j)), j->limit_value);
        if (reason_is(j, "MaxPSSoft"))
                say(why, "processor-seconds: this job's walltime x CPUs plus the remaining walltime x CPUs of your "
                    "running jobs in the project; between the soft and the hard limit it starts only when no other "
                    "job is eligible");
}

/* Blocked by the pass (sched-driver.c): its project's grant is spent and its queue charges. */
static void explain_grant(Manager *m, const Job *j, uint64_t now, json_object *why) {
        const ProjectConfig *pc = job_project(j) ? config_find_project(m->config, job_project(j)) : NULL;
        const QueueConfig *q = config_find_queue(m->config, job_queue(j));
        const QueueConfig *bonus;
        const char *stays = NULL;
        uint64_t begin, end;
        char from[16], to[16], next[16];

        say(why, "its project %s has spent its grant: %.2f of %" PRIu64
            " service units used, and its queue %s charges (ChargeFactor=%g)", strna(job_project(j)),
            (double) j->limit_wanted / JOB_GRANT_SCALE,
            j->limit_value / JOB_GRANT_SCALE, strna(job_queue(j)), q ? q->charge_factor : 1.0);
        if (pc && acct_grant_period(pc->grant_start, pc->grant_period, now, &begin, &end)) {
                if (end == UINT64_MAX)
                        say(why, "the grant's period runs since %s and has no end: it starts when an "
                            "administrator raises Grant=", acct_day(from, sizeof from, begin));
                else
                        say(why, "the period runs from %s to %s: it starts when the next one begins, on %s, "
                            "or when an administrator raises Grant=", acct_day(from, sizeof from, begin),
                            acct_day(to, sizeof to, end - 1), acct_day(next, sizeof next, end));
        }
        bonus = accounting_grant_bonus_queue(m->acct, j, &stays);
        if (!bonus && stays)
                say(why, "it does not go to the bonus queue: %s", stays);
}

json_object *manager_job_why(Manager *m, Job *j) {
        json_object *o = json_object_new_object(), *why = json_object_new_array(), *terms = json_object_new_array();
        uint64_t now = (uint64_t) time(NULL);
        SchedPriorityTerm t[_SCHED_TERM_MAX];
        size_t ahead = 0, eligible = 0;
        SchedJob s;
        char when[64];

        if (!o || !why || !terms) {
                json_object_put(o);
                json_object_put(why);
                json_object_put(terms);
                return NULL;
        }
        json_add_u64(o, "job_id", j->id);
        json_add_string(o, "state", job_state_to_string(j->state));
        if (j->reason)
                json_add_string(o, "reason", job_reason(j));

        manager_sched_job(m, j, &s);
        json_add(o, "priority", json_object_new_double(sched_priority_terms(&m->sched_config, &s, now, t)));
        for (int k = 0; k < _SCHED_TERM_MAX; k++) {
                json_object *e = json_object_new_object();
                json_add_string(e, "name", t[k].name);
                json_add(e, "input", json_object_new_double(t[k].input));
                json_add(e, "weight", json_object_new_double(t[k].weight));
                json_add(e, "value", json_object_new_double(t[k].value));
                json_object_array_add(terms, e);
        }
        json_add(o, "terms", terms);

        if (j->state == JOB_QUEUED) {
                for (size_t i = 0; i < m->n_jobs; i++) {
                        const Job *x = m->jobs[i];
                        if (x->state != JOB_QUEUED)
                                continue;
                        eligible++;
                        if (x != j && (x->priority > j->priority || (x->priority == j->priority && x->id < j->id)))
                                ahead++;
                }
                json_add_u64(o, "position", ahead + 1);
                json_add_u64(o, "eligible", eligible);
        }

        /* What its backend says of it; where that is all there is to say of its state (a
         * Slurm cluster decides, not this machine's passes), the passes' words do not follow. */
        const JobBackendOps *b = manager_job_backend(m, j);
        bool backend_said = b->why && b->why(m, j, o, why) > 0;

        switch (backend_said ? _JOB_STATE_INVALID : j->state) {
        case _JOB_STATE_INVALID:
                break;
        case JOB_HELD:
                say(why, "it is held %s; corral release %" PRIu64 " lets it go%s",
                    j->held_by_admin ? "by an administrator" : "by its owner", j->id,
                    j->held_by_admin ? " (an administrator's hold only an administrator releases)" : "");
                break;
        case JOB_BLOCKED:
                if (reason_is(j, "Grant"))
                        explain_grant(m, j, now, why);
                else
                        explain_limit(j, why);
                break;
        case JOB_QUEUED:
                if (reason_is(j, "Dependency") || reason_is(j, "DependencyNeverSatisfied"))
                        explain_dependencies(m, j, why);
                else if (reason_is(j, "BeginTime")) {
                        say_time(when, sizeof when, job_shared(j)->begin_time);
                        say(why, "it was submitted to start no earlier than %s", when);
                } else if (reason_is(j, "Resources")) {
                        say(why, "it is the first job the scheduler will start, when its resources are free");
                        explain_resources(m, j, why);
                        explain_gpus(m, j, why);
                } else if (reason_is(j, "Priority")) {
                        explain_priority_wait(m, j, why);
                        explain_resources(m, j, why);
                        explain_gpus(m, j, why);
                } else if (reason_is(j, "JobArrayTaskLimit"))
                        say(why, "its array already runs as many tasks as its %%%u allows", job_shared(j)->array.max_concurrent);
                else if (reason_is(j, "TooBig"))
                        say(why, "it asks for more CPUs, memory or GPUs (of the kinds it asks for) than this machine has: it can "
                            "never start");
                else if (reason_is(j, "TimeLimit"))
                        say(why, "it asks for more time than its queue allows");
                else
                        say(why, "the scheduler has not considered it yet");
                break;
        case JOB_RUNNING: {
                _cleanup_free_ char *idle = manager_gpu_jobs_idle_text(m, j), *share = manager_gpu_jobs_share_text(m, j);

                say(why, "it is running");
                if (idle)
                        say(why, "%s (GPUIdlePercent=, GPUIdleSec=)%s", idle,
                            m->config->gpu_idle_action == GPU_IDLE_ACTION_CANCEL ? "; corrald cancels it"
                            : m->config->gpu_idle_action == GPU_IDLE_ACTION_MAIL ? "; its user is mailed once" : "");
                if (share)
                        say(why, "%s (ShardMemoryPolicy=%s)", share, m->config->shard_memory_cancel ? "cancel" : "report");
                break;
        }
        case JOB_SUSPENDED:
                if (!j->suspended_by_sched) {
                        say(why, "it is suspended %s", j->suspended_by_admin ? "by an administrator" : "by a person");
                        break;
                }
                say_time(when, sizeof when, job_run(j)->suspend_start);
                json_add_u64(o, "suspended_since", job_run(j)->suspend_start);
                if (job_run(j)->preempted_by) {
                        json_add_u64(o, "preempted_by", job_run(j)->preempted_by);
                        say(why, "the scheduler suspended it at %s to let job %" PRIu64 " of a higher priority "
                            "queue (or a larger job of its own, where ParallelRun=yes) start (preemption)",
                            when, job_run(j)->preempted_by);
                } else
                        say(why, "the scheduler suspended it at %s to let a higher priority job start (preemption)",
                            when);
                if (j->suspended_by_person) {
                        json_add_bool(o, "suspended_by_person", true);
                        say(why, "%s suspended it too: the scheduler does not resume it until they resume it "
                            "(corral resume %" PRIu64 ")", j->suspended_by_admin ? "an administrator" : "a person",
                            j->id);
                }
                say(why, "its walltime clock stands still while it is suspended, and its charge leaves that "
                    "time out; it holds its memory%s and its GPUs but not its CPUs, and resumes by itself as soon as %u CPUs "
                    "are free, on whichever CPUs they are", job_run(j)->reclaimed ? " (what stays resident of it)" : "",
                    job_alloc(j) ? cpu_set_count(&job_alloc(j)->cpus) : j->req.cpus);
                break;
        default:
                say(why, "it has ended: %s%s%s", job_state_to_string(j->state), j->reason ? ", " : "",
                    strempty(job_reason(j)));
                break;
        }
        if (b->scheduled_here && job_state_is_pending(j->state) && j->est_start && j->est_start != SCHED_TIME_INFINITY) {
                say_time(when, sizeof when, j->est_start);
                json_add_u64(o, "est_start", j->est_start);
                say(why, "estimated start: %s%s", when,
                    reason_is(j, "Resources") ? " (a reservation: no job started later delays it)" : "");
        }
        json_add(o, "why", why);
        return o;
}
