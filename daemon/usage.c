/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The accounting state: decayed usage per project and user, each project's grant
 * period, its all-time totals for the metrics; what a job is charged, at its end and so
 * far while it runs (from the executor); fair-share factors for the scheduler; the grant
 * check at submission. It knows the store, the executor and the configuration it is
 * given, never the manager. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices-mig.h"
#include "json-util.h"
#include "log.h"
#include "message.h"
#include "strv.h"
#include "time-util.h"
#include "usage.h"

typedef struct AcctEntry {
        const char *name;       /* interned, the key (entries are sorted by its address) */
        AcctDecayed decayed;    /* ended runs */
        double running;         /* running jobs' decayed credit, at the last refresh */
        double running_su;      /* projects: running jobs' service units so far */
        double usage, fairshare; /* at the last refresh */
        uint64_t grant_begin;   /* projects: the period grant_su is for */
        double grant_su;
        double all_core_hours, all_gpu_hours, all_su;
} AcctEntry;

typedef struct AcctTable {
        AcctEntry *entries;
        size_t n, allocated;
} AcctTable;

struct Accounting {
        Store *store;           /* borrowed, as the next two */
        Executor *executor;     /* running jobs' usage so far; NULL: their time alone */
        const Config *config;
        const DeviceSet *devices; /* the MIG devices' shares of their GPUs; NULL: none */
        bool loaded;
        AcctTable tables[2]; /* StoreUsageKind: projects, users */
        double total;        /* every project's usage at the last refresh */
};

static AcctEntry *entry_find(AcctTable *t, const char *name) {
        size_t lo = 0, hi = t->n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if ((uintptr_t) t->entries[mid].name < (uintptr_t) name)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < t->n && t->entries[lo].name == name ? &t->entries[lo] : NULL;
}

/* name must be interned. A pointer into the table, valid until the next entry_get(). */
static AcctEntry *entry_get(AcctTable *t, const char *name) {
        AcctEntry *e = entry_find(t, name);
        size_t at = 0;

        if (e || !name)
                return e;
        if (!GREEDY_REALLOC(t->entries, t->allocated, t->n + 1))
                return NULL;
        while (at < t->n && (uintptr_t) t->entries[at].name < (uintptr_t) name)
                at++;
        memmove(t->entries + at + 1, t->entries + at, (t->n - at) * sizeof *t->entries);
        t->entries[at] = (AcctEntry) { .name = name };
        t->n++;
        return &t->entries[at];
}

int accounting_new(Store *store, Executor *executor, const Config *config, Accounting **ret) {
        Accounting *a = new0(Accounting, 1);

        if (!a)
                return -ENOMEM;
        a->store = store;
        a->executor = executor;
        a->config = config;
        *ret = a;
        return 0;
}

void accounting_set_config(Accounting *a, const Config *config) {
        a->config = config;
}

void accounting_set_devices(Accounting *a, const DeviceSet *devices) {
        a->devices = devices;
}

Accounting *accounting_free(Accounting *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(a->tables); i++)
                free(a->tables[i].entries);
        free(a);
        return NULL;
}

static int load_decayed(StoreUsageKind kind, const char *name, const AcctDecayed *d, void *userdata) {
        Accounting *a = userdata;
        AcctEntry *e;

        if ((size_t) kind >= ELEMENTSOF(a->tables))
                return 0; /* a newer corrald's kind */
        e = entry_get(&a->tables[kind], intern(name));
        if (!e)
                return -ENOMEM;
        e->decayed = *d;
        return 0;
}

static int load_grant(const char *project, uint64_t begin, double su, void *userdata) {
        Accounting *a = userdata;
        AcctEntry *e = entry_get(&a->tables[STORE_USAGE_PROJECT], intern(project));

        if (!e)
                return -ENOMEM;
        e->grant_begin = begin;
        e->grant_su = su;
        return 0;
}

static int load_totals(const StoreUsageRow *row, void *userdata) {
        Accounting *a = userdata;
        AcctEntry *e = entry_get(&a->tables[STORE_USAGE_PROJECT], intern(row->key));

        if (!e)
                return -ENOMEM;
        e->all_core_hours += (double) row->totals.core_usec / ACCT_USEC_PER_HOUR;
        e->all_gpu_hours += (double) row->totals.gpu_usec / ACCT_USEC_PER_HOUR;
        e->all_su += row->totals.service_units;
        return 0;
}

/* The state, loaded from the store on first use; a failure is logged, and tried again
 * at the next use. */
static int accounting_load(Accounting *a) {
        int r;

        if (a->loaded)
                return 0;
        /* The all-time totals read the per-day summary once, at start-up; from then on
         * each run's end adds to them. */
        if ((r = store_load_decayed(a->store, load_decayed, a)) < 0 || (r = store_load_grants(a->store, load_grant, a)) < 0 ||
            (r = store_usage_rows(a->store, &(StoreUsageQuery) { .by = STORE_USAGE_BY_PROJECT }, load_totals, a)) < 0) {
                log_error_errno(r, "Cannot load the accounting state: %s", store_error(a->store));
                for (size_t i = 0; i < ELEMENTSOF(a->tables); i++)
                        a->tables[i].n = 0;
                return r;
        }
        a->loaded = true;
        return 0;
}

static bool queue_excluded(Accounting *a, const char *queue) {
        return queue && strv_contains(a->config->fairshare_exclude_queues, queue);
}

static double queue_charge_factor(Accounting *a, const char *queue) {
        const QueueConfig *q = queue ? config_find_queue(a->config, queue) : NULL;

        /* A queue removed from the configuration since: charged as normal. */
        return q ? q->charge_factor : 1.0;
}

/* Fair-share counts core-hours, and GPU-hours at ChargePerGPUHour=, at the queue's charge
 * factor, never below 1. */
static double fairshare_core_hours(const JobCharge *c) {
        return acct_fairshare_hours(c);
}

static unsigned job_cpus(const Job *j) {
        unsigned n = job_alloc(j) ? cpu_set_count(&job_alloc(j)->cpus) : 0;
        return n ?: (j->req.cpus ?: 1);
}

/* The GPUs it holds; those it asked for when its allocation names none (one made before
 * GPUs were allocated). */
static unsigned job_gpus(const Job *j) {
        unsigned n = job_alloc(j) ? (unsigned) __builtin_popcountll(job_alloc(j)->gpu_mask) : 0;
        return n ?: j->req.gpus;
}

/* A job holding MIG devices is charged their compute slices of their GPUs (1g of an
 * A100: 1/7 of its hours), as a shard job its K/N: as K of N with N = 420 × its GPUs, 420
 * being a multiple of every GPU's slice count (4, 7). Whole GPUs count 420 of 420. */
static void charge_mig_share(const DeviceSet *ds, const Job *j, JobCharge *c) {
        uint64_t k = 0;
        bool part = false;

        if (!ds || !job_alloc(j) || job_alloc(j)->shards > 0 || job_alloc(j)->gpu_mask == 0 || c->gpus == 0)
                return;
        for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1) {
                size_t g = (size_t) __builtin_ctzll(mask);
                unsigned slices = 1, total = 1;

                if (g < ds->n_devices)
                        device_compute_share(&ds->devices[g], &slices, &total);
                k += (uint64_t) slices * 420 / total;
                part = part || slices < total;
        }
        if (!part)
                return;
        c->shards = (uint32_t) k;
        c->shards_of = 420 * c->gpus;
}

/* From the job's own record: its times, suspension and the usage its outcome gave. */
static void charge_from_job(Accounting *a, const Job *j, uint64_t now, JobCharge *c) {
        const JobRun *run = job_run(j);
        bool active = job_state_is_active(j->state);
        uint64_t end = active ? now : j->end_time, suspended = run->suspended_usec;

        if (j->state == JOB_SUSPENDED && run->suspend_start && now > run->suspend_start)
                suspended += (now - run->suspend_start) * USEC_PER_SEC; /* the open suspension */
        *c = (JobCharge) {
                .job_id = j->id,
                .run = j->requeue_count,
                .uid = j->uid,
                .user = job_user(j),
                .project = job_project(j),
                .queue = job_queue(j),
                .start_time = j->start_time,
                .end_time = active ? 0 : j->end_time,
                .cpus = job_cpus(j),
                .gpus = job_gpus(j),
                .shards = job_alloc(j) ? job_alloc(j)->shards : 0,
                .shards_of = job_alloc(j) ? job_alloc(j)->shards_of : 0,
                .run_usec = acct_run_usec(j->start_time * USEC_PER_SEC, end * USEC_PER_SEC, suspended),
                .charge_factor = queue_charge_factor(a, job_queue(j)),
                .charge_per_gpu_hour = a->config->charge_per_gpu_hour,
                .cpu_usec = run->usage.cpu_usec,
                .memory_peak = run->usage.memory_peak,
                .io_read_bytes = run->usage.io_read_bytes,
                .io_write_bytes = run->usage.io_write_bytes,
                .live = active,
        };
        charge_mig_share(a->devices, j, c);
        acct_charge_compute(c);
}

/* What a run used, as the supervisor's outcome reports it at the end or the executor
 * reads it so far (the same fields, read the same way): the one place they become a
 * charge's. */
static void charge_set_usage(JobCharge *c, const JobOutcome *u) {
        c->cpu_usec = u->cpu_usage_usec;
        c->memory_peak = u->memory_peak;
        c->io_read_bytes = u->io_read_bytes;
        c->io_write_bytes = u->io_write_bytes;
        c->io_read_ops = u->io_read_ios;
        c->io_write_ops = u->io_write_ios;
        c->has_pressure = u->has_pressure;
        c->stall_usec[ACCT_STALL_CPU_SOME] = u->cpu_some_usec;
        c->stall_usec[ACCT_STALL_CPU_FULL] = u->cpu_full_usec;
        c->stall_usec[ACCT_STALL_MEMORY_SOME] = u->memory_some_usec;
        c->stall_usec[ACCT_STALL_MEMORY_FULL] = u->memory_full_usec;
        c->stall_usec[ACCT_STALL_IO_SOME] = u->io_some_usec;
        c->stall_usec[ACCT_STALL_IO_FULL] = u->io_full_usec;
}

/* The run's usage so far, from the executor. The scope may be gone (ended, or not started
 * yet): -ENOENT. */
static int job_usage_now(Accounting *a, const Job *j, JobOutcome *ret) {
        if (!a->executor)
                return -ENOENT;
        return executor_job_usage(a->executor, j->id, job_project(j), ret);
}

int accounting_job_charge(Accounting *a, const Job *j, uint64_t now, JobCharge *ret) {
        JobOutcome u;

        if (j->start_time == 0)
                return -ENOENT;
        if (job_state_is_active(j->state)) {
                charge_from_job(a, j, now, ret);
                if (job_usage_now(a, j, &u) >= 0)
                        charge_set_usage(ret, &u);
                return 0;
        }
        /* Nothing stored: it never ran (a failed launch), was lost with the machine, or
         * ended under a corrald that did not charge yet. */
        if (store_load_charge(a->store, j->id, ret) < 0 || ret->run != j->requeue_count)
                return -ENOENT;
        ret->user = job_user(j);
        ret->project = job_project(j);
        ret->queue = job_queue(j);
        acct_charge_compute(ret);
        return 0;
}

json_object *job_charge_to_json(const JobCharge *c) {
        json_object *o = json_object_new_object(), *st;

        if (!o)
                return NULL;
        json_add_u64(o, "cpus", c->cpus);
        json_add_u64(o, "run_usec", c->run_usec);
        json_add(o, "core_hours", json_object_new_double(c->core_hours));
        if (c->gpus > 0) {
                json_add_u64(o, "gpus", c->gpus);
                json_add(o, "gpu_hours", json_object_new_double(c->gpu_hours));
                json_add(o, "charge_per_gpu_hour", json_object_new_double(c->charge_per_gpu_hour));
                /* No vendor library is read here: utilisation is not known. */
                json_add_string(o, "gpu_utilization", "not recorded");
        }
        json_add(o, "charge_factor", json_object_new_double(c->charge_factor));
        json_add(o, "service_units", json_object_new_double(c->service_units));
        json_add_u64(o, "cpu_usec", c->cpu_usec);
        json_add(o, "efficiency",
                 json_object_new_double(acct_efficiency(c->cpu_usec, (uint64_t) c->cpus * c->run_usec)));
        json_add_u64(o, "memory_peak", c->memory_peak);
        json_add_u64(o, "io_read_bytes", c->io_read_bytes);
        json_add_u64(o, "io_write_bytes", c->io_write_bytes);
        json_add_u64(o, "io_read_ops", c->io_read_ops);
        json_add_u64(o, "io_write_ops", c->io_write_ops);
        if (c->has_pressure) {
                st = json_object_new_object();
                for (AcctStall s = 0; s < _ACCT_STALL_MAX; s++)
                        json_add_u64(st, acct_stall_to_string(s), c->stall_usec[s]);
                json_add(o, "stall_usec", st);
        }
        json_add_bool(o, "live", c->live);
        return o;
}

json_object *accounting_job_charge_json(Accounting *a, const Job *j) {
        JobCharge c;

        if (accounting_job_charge(a, j, (uint64_t) time(NULL), &c) < 0)
                return NULL;
        return job_charge_to_json(&c);
}

int accounting_charge_run(Accounting *a, const Job *j, const JobOutcome *o, uint64_t now) {
        uint64_t half_life = a->config->fairshare_half_life, suspended = MAX(o->suspended_usec, job_run(j)->suspended_usec);
        const ProjectConfig *pc = config_find_project(a->config, job_project(j));
        const char *project = job_project(j) ?: intern("");
        AcctEntry *e, *eu = NULL;
        AcctDecayed decayed, user_decayed;
        uint64_t grant_begin = 0;
        double grant_su = 0;
        bool grant = false;
        JobCharge c;
        JobOutcome live;
        double credit;
        int r;

        if (!project)
                return -ENOMEM;
        r = accounting_load(a);
        if (r < 0)
                return r;
        /* What can fail without a write comes first: the entries of the project and the
         * user (separate tables, so neither moves the other). */
        e = entry_get(&a->tables[STORE_USAGE_PROJECT], project);
        if (!e || (job_user(j) && !(eu = entry_get(&a->tables[STORE_USAGE_USER], job_user(j)))))
                return -ENOMEM;
        charge_from_job(a, j, now, &c);
        c.live = false;
        /* The supervisor's clock brackets the job's own processes: more exact than the
         * scheduler's start, which precedes the launch. */
        if (o->start_usec > 0 && o->end_usec >= o->start_usec) {
                c.start_time = o->start_usec / USEC_PER_SEC;
                c.end_time = o->end_usec / USEC_PER_SEC;
                c.run_usec = acct_run_usec(o->start_usec, o->end_usec, suspended);
        } else {
                c.end_time = now;
                c.run_usec = acct_run_usec(j->start_time * USEC_PER_SEC, now * USEC_PER_SEC, suspended);
        }
        charge_set_usage(&c, o);
        /* The stall totals the supervisor read as the job ended; from a supervisor too old to
         * report them, the scope as it is now, if it is still there. */
        if (!o->has_pressure && job_usage_now(a, j, &live) >= 0 && live.has_pressure) {
                JobCharge now_c = {};
                charge_set_usage(&now_c, &live);
                c.has_pressure = true;
                memcpy(c.stall_usec, now_c.stall_usec, sizeof c.stall_usec);
        }
        acct_charge_compute(&c);

        r = store_record_charge(a->store, &c);
        if (r == -EEXIST)
                return 0; /* charged before */
        if (r < 0) /* nothing written, or the store made unfit to commit (store.h) */
                return log_error_errno(r, "Cannot record the charge of job %" PRIu64 ": %s", j->id,
                                       store_error(a->store));

        credit = acct_decay_credit(fairshare_core_hours(&c), c.end_time > c.start_time ? c.end_time - c.start_time : 0,
                                   half_life);
        /* Written first, kept in memory once all of it is: a failure half way leaves the
         * transaction unfit to commit (store_fail(): corrald exits, and the outcome, not
         * removed, is read again after the restart) and memory as it was. */
        if (pc && pc->grant &&
            (grant = acct_grant_period(pc->grant_start, pc->grant_period, c.end_time, &grant_begin, &(uint64_t) { 0 }))) {
                grant_su = (e->grant_begin == grant_begin ? e->grant_su : 0) + c.service_units;
                if ((r = store_save_grant(a->store, project, grant_begin, grant_su)) < 0)
                        goto fail;
        }
        decayed = e->decayed;
        if (eu)
                user_decayed = eu->decayed;
        if (!queue_excluded(a, job_queue(j))) {
                acct_decayed_add(&decayed, credit, c.end_time, half_life);
                if ((r = store_save_decayed(a->store, STORE_USAGE_PROJECT, project, &decayed)) < 0)
                        goto fail;
                if (eu) {
                        acct_decayed_add(&user_decayed, credit, c.end_time, half_life);
                        if ((r = store_save_decayed(a->store, STORE_USAGE_USER, job_user(j), &user_decayed)) < 0)
                                goto fail;
                }
        }
        e->all_core_hours += c.core_hours;
        e->all_gpu_hours += c.gpu_hours;
        e->all_su += c.service_units;
        if (grant) {
                e->grant_begin = grant_begin;
                e->grant_su = grant_su;
        }
        e->decayed = decayed;
        if (eu)
                eu->decayed = user_decayed;
        log_debug("Job %" PRIu64 " charged %.4f core-hours, %.4f service units.", j->id, c.core_hours,
                  c.service_units);
        return 0;

fail:
        store_fail(a->store, r);
        return log_error_errno(r, "Cannot record the charge of job %" PRIu64 ": %s", j->id, store_error(a->store));
}

void accounting_refresh(Accounting *a, Job *const *jobs, size_t n_jobs, uint64_t now) {
        uint64_t half_life = a->config->fairshare_half_life;
        AcctTable *projects, *users;

        if (accounting_load(a) < 0)
                return;
        projects = &a->tables[STORE_USAGE_PROJECT];
        users = &a->tables[STORE_USAGE_USER];
        for (size_t k = 0; k < ELEMENTSOF(a->tables); k++)
                for (size_t i = 0; i < a->tables[k].n; i++)
                        a->tables[k].entries[i].running = a->tables[k].entries[i].running_su = 0;
        for (size_t i = 0; i < n_jobs; i++) {
                const Job *j = jobs[i];
                AcctEntry *e;
                JobCharge c;
                double credit;

                if (!job_state_is_active(j->state) || !j->project)
                        continue;
                charge_from_job(a, j, now, &c);
                e = entry_get(projects, job_project(j));
                if (!e)
                        return;
                e->running_su += c.service_units;
                if (queue_excluded(a, job_queue(j)))
                        continue;
                credit = acct_decay_credit(fairshare_core_hours(&c), now > j->start_time ? now - j->start_time : 0,
                                           half_life);
                e->running += credit;
                if (job_user(j) && (e = entry_get(users, job_user(j))))
                        e->running += credit;
        }
        a->total = 0;
        for (size_t i = 0; i < projects->n; i++) {
                AcctEntry *e = &projects->entries[i];
                e->usage = acct_decayed_value(&e->decayed, now, half_life) + e->running;
                a->total += e->usage;
        }
        for (size_t i = 0; i < projects->n; i++)
                projects->entries[i].fairshare = acct_fairshare(projects->entries[i].usage, a->total);
}

double accounting_job_fairshare(Accounting *a, const Job *j) {
        AcctEntry *e = job_project(j) ? entry_find(&a->tables[STORE_USAGE_PROJECT], job_project(j)) : NULL;

        return e ? e->fairshare : ACCT_FAIRSHARE_MAX;
}

double accounting_user_usage(Accounting *a, const char *user, uint64_t now) {
        AcctEntry *e = accounting_load(a) >= 0 && user ? entry_find(&a->tables[STORE_USAGE_USER], intern(user)) : NULL;

        return e ? acct_decayed_value(&e->decayed, now, a->config->fairshare_half_life) + e->running : 0.0;
}

static void project_usage_fill(const ProjectConfig *pc, const AcctEntry *e, uint64_t now,
                               double total, ProjectUsage *u) {
        *u = (ProjectUsage) {
                .name = e ? e->name : pc->name,
                .usage = e ? e->usage : 0.0,
                .fairshare = e ? e->fairshare : acct_fairshare(0.0, total),
                .share = pc ? pc->share : 0,
                .all_core_hours = e ? e->all_core_hours : 0.0,
                .all_gpu_hours = e ? e->all_gpu_hours : 0.0,
                .all_service_units = e ? e->all_su : 0.0,
        };
        if (pc && pc->grant &&
            acct_grant_period(pc->grant_start, pc->grant_period, now, &u->period_begin, &u->period_end)) {
                u->grant = pc->grant;
                u->grant_used = (e && e->grant_begin == u->period_begin ? e->grant_su : 0.0) + (e ? e->running_su : 0.0);
        }
}

int accounting_project_usage(Accounting *a, Job *const *jobs, size_t n_jobs, uint64_t now, ProjectUsage **ret,
                             size_t *ret_n, double *ret_total) {
        _cleanup_free_ ProjectUsage *l = NULL;
        const Config *c = a->config;
        AcctTable *t;
        size_t n = 0;
        int r;

        r = accounting_load(a);
        if (r < 0)
                return r;
        accounting_refresh(a, jobs, n_jobs, now);
        t = &a->tables[STORE_USAGE_PROJECT];
        l = new0(ProjectUsage, c->n_projects + t->n + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_projects; i++) {
                const char *name = intern(c->projects[i].name);
                project_usage_fill(&c->projects[i], name ? entry_find(t, name) : NULL, now, a->total, &l[n++]);
        }
        for (size_t i = 0; i < t->n; i++)
                if (!config_find_project(c, t->entries[i].name) && !isempty(t->entries[i].name))
                        project_usage_fill(NULL, &t->entries[i], now, a->total, &l[n++]);
        *ret = TAKE_PTR(l);
        *ret_n = n;
        *ret_total = a->total;
        return 0;
}

static const QueueConfig *find_bonus_queue(const Config *c) {
        const QueueConfig *q = config_find_queue(c, "bonus");

        if (q && q->charge_factor == 0.0)
                return q;
        for (size_t i = 0; i < c->n_queues; i++)
                if (c->queues[i].charge_factor == 0.0)
                        return &c->queues[i];
        return NULL;
}

/* Service units the project has used of its grant in the period now is in (runs ended
 * in it, and running jobs so far as of the last refresh). false: no grant, no current
 * period, or no accounting (not knowing is no reason to hold work back). */
static bool project_grant_used(Accounting *a, const ProjectConfig *pc, uint64_t now, uint64_t *ret_begin,
                               uint64_t *ret_end, double *ret_used) {
        const AcctEntry *e;

        if (!pc || pc->grant == 0 ||
            !acct_grant_period(pc->grant_start, pc->grant_period, now, ret_begin, ret_end))
                return false;
        if (accounting_load(a) < 0)
                return false;
        e = entry_find(&a->tables[STORE_USAGE_PROJECT], intern(pc->name));
        *ret_used = (e && e->grant_begin == *ret_begin ? e->grant_su : 0.0) + (e ? e->running_su : 0.0);
        return true;
}

bool accounting_project_grant_spent(Accounting *a, const ProjectConfig *pc, uint64_t now, double *ret_used) {
        uint64_t begin, end;
        double used;

        if (!project_grant_used(a, pc, now, &begin, &end, &used))
                return false;
        if (ret_used)
                *ret_used = used;
        return used >= (double) pc->grant;
}

/* Why the bonus queue cannot take the job (a static string), NULL when it can. */
static const char *bonus_refuses(const ProjectConfig *pc, const QueueConfig *bonus, uint64_t walltime_sec,
                                 unsigned cpus) {
        if (!project_allows_queue(pc, bonus->name))
                return "its Queues= does not include the bonus queue";
        if (bonus->max_walltime && walltime_sec > bonus->max_walltime)
                return "the job asks for more time than the bonus queue allows (its MaxWalltime=)";
        if (bonus->max_cpus_per_job && (cpus ?: 1) > bonus->max_cpus_per_job)
                return "the job asks for more CPUs than the bonus queue allows (its MaxCPUsPerJob=)";
        if (bonus->allow_projects && !strv_contains(bonus->allow_projects, pc->name))
                return "the bonus queue's AllowProjects= does not include the project";
        return NULL;
}

const QueueConfig *accounting_grant_bonus_queue(Accounting *a, const Job *j, const char **ret_why) {
        const ProjectConfig *pc = job_project(j) ? config_find_project(a->config, job_project(j)) : NULL;
        const QueueConfig *bonus;

        *ret_why = NULL;
        if (!pc || pc->grant_refuse) {
                *ret_why = "OnGrantSpent=refuse";
                return NULL;
        }
        bonus = find_bonus_queue(a->config);
        if (!bonus) {
                *ret_why = "no queue has ChargeFactor=0";
                return NULL;
        }
        *ret_why = bonus_refuses(pc, bonus, job_shared(j)->walltime_sec, j->req.cpus);
        /* Its owner's groups are known for sure only from a connection: no group database
         * lookups for each waiting job in each pass. Resubmitted, it would go there. */
        if (!*ret_why && bonus->allow_groups)
                *ret_why = "the bonus queue has AllowGroups=, checked only when a job is submitted; "
                           "cancel and resubmit the job to have it go there";
        return *ret_why ? NULL : bonus;
}

json_object *accounting_grant_check(Accounting *a, const char *project, const SubmitRequest *req,
                                    const QueueConfig **q, char **ret_notice) {
        const ProjectConfig *pc = project ? config_find_project(a->config, project) : NULL;
        uint64_t now = (uint64_t) time(NULL), begin, end;
        const QueueConfig *bonus = NULL;
        char msg[512], from[16], to[16], period[48];
        json_object *p;
        double used;

        *ret_notice = NULL;
        if (!pc || pc->grant == 0 || (*q)->charge_factor == 0.0)
                return NULL; /* no grant, or a queue that charges nothing */
        if (!project_grant_used(a, pc, now, &begin, &end, &used))
                return NULL;
        if (used < (double) pc->grant)
                return NULL;

        /* The period's last day, inclusive. */
        if (end == UINT64_MAX)
                snprintf(period, sizeof period, "since %s", acct_day(from, sizeof from, begin));
        else
                snprintf(period, sizeof period, "from %s to %s", acct_day(from, sizeof from, begin),
                         acct_day(to, sizeof to, end - 1));
        if (!pc->grant_refuse)
                bonus = find_bonus_queue(a->config);
        if (bonus && !project_allows_queue(pc, bonus->name))
                snprintf(msg, sizeof msg,
                         "project %s has spent its grant (%.2f of %" PRIu64 " service units %s), "
                         "and its Queues= does not include the bonus queue %s",
                         project, used, pc->grant, period, bonus->name);
        else if (bonus && bonus->max_walltime && req->walltime_sec > bonus->max_walltime)
                snprintf(msg, sizeof msg,
                         "project %s has spent its grant (%.2f of %" PRIu64 " service units %s), "
                         "and the job asks for more time than the bonus queue %s allows (its MaxWalltime=)",
                         project, used, pc->grant, period, bonus->name);
        else if (bonus && bonus->max_cpus_per_job && (req->cpus ?: 1) > bonus->max_cpus_per_job)
                snprintf(msg, sizeof msg,
                         "project %s has spent its grant (%.2f of %" PRIu64 " service units %s), "
                         "and the job asks for more CPUs than the bonus queue %s allows (its MaxCPUsPerJob=)",
                         project, used, pc->grant, period, bonus->name);
        else if (bonus) {
                if (asprintf(ret_notice,
                             "project %s has spent its grant (%.2f of %" PRIu64 " service units %s): "
                             "the job goes to the bonus queue %s, which charges nothing and runs it when there is room",
                             project, used, pc->grant, period, bonus->name) < 0)
                        *ret_notice = NULL;
                log_info("Project %s has spent its grant: a job of it goes to queue %s.", project, bonus->name);
                *q = bonus;
                return NULL;
        } else
                snprintf(msg, sizeof msg,
                         "project %s has spent its grant: %.2f of %" PRIu64 " service units %s "
                         "(Grant=; OnGrantSpent=%s)%s%s",
                         project, used, pc->grant, period, pc->grant_refuse ? "refuse" : "bonus",
                         pc->grant_refuse ? "; new jobs are taken again from the next period" : "",
                         pc->grant_refuse ? "" : ", and no queue has ChargeFactor=0 to take its jobs");
        p = json_object_new_object();
        json_add_u64(p, CORRAL_FIELD_LIMIT, pc->grant);
        json_add_string(p, CORRAL_FIELD_MESSAGE, msg);
        return reply_error_new(CORRAL_ERROR_QUOTA_EXCEEDED, p);
}
