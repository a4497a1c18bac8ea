/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The accounting: what each job is charged (at its end, and so far while it runs, from
 * its scope's cgroup as the executor reads it), the decayed usage per project and user
 * that fair-share reads, each project's grant in its current period; the methods that
 * report them (usage-report.c) and the Prometheus textfile (metrics.c) read it. The
 * arithmetic is accounting/'s, shared with corral-sim. It knows nothing of the manager,
 * which owns it and hands it the jobs where it needs them.
 *
 * Running jobs count toward the decayed usage without being ticked: a reading adds each
 * running job's core-hours so far, decayed as if spread evenly over its run
 * (acct_decay_credit()); its end adds the same amount for the whole run, so the value is
 * continuous across the end and nothing is rescanned. */

#include <json-c/json.h>

#include "accounting/accounting.h"
#include "config/config.h"
#include "devices.h"
#include "executor.h"
#include "job.h"
#include "spec-json.h"
#include "store.h"

typedef struct Accounting Accounting;

/* What it reads is borrowed: the store (its state is loaded from there on first use; a
 * failure is logged and tried again at the next use), the executor (running jobs' usage
 * so far; NULL: their time alone is charged) and the configuration in force, which
 * accounting_set_config() replaces at each reload. */
int accounting_new(Store *store, Executor *executor, const Config *config, Accounting **ret);
Accounting *accounting_free(Accounting *a);
void accounting_set_config(Accounting *a, const Config *config);
/* The machine's devices (borrowed; replaced at each reload): a MIG device is charged its
 * share of its GPU. */
void accounting_set_devices(Accounting *a, const DeviceSet *devices);

/* What the job was charged (its latest run, from the store), or, running, so far (its
 * cgroup read now). -ENOENT for a job that never ran. */
int accounting_job_charge(Accounting *a, const Job *j, uint64_t now, JobCharge *ret);
/* The same as the "charge" object of the owner's view; NULL when it never ran. */
json_object *accounting_job_charge_json(Accounting *a, const Job *j);
json_object *job_charge_to_json(const JobCharge *c);

/* A run ended (o: the executor's outcome): its charge is stored with the day's summary,
 * and added to its project's and user's decayed usage (unless its queue is in
 * FairShareExcludeQueues=) and to its project's grant period. In the open transaction,
 * before the job's transition. */
int accounting_charge_run(Accounting *a, const Job *j, const JobOutcome *o, uint64_t now);

/* Before a scheduling pass: every project's usage as of now, the running ones of jobs
 * included. */
void accounting_refresh(Accounting *a, Job *const *jobs, size_t n_jobs, uint64_t now);
/* The job's project's factor from the last refresh: 1e6 × (1 − usage / total). */
double accounting_job_fairshare(Accounting *a, const Job *j);

/* A project whose grant is spent: *q becomes the bonus queue (*ret_notice says so,
 * malloc'ed), or, with OnGrantSpent=refuse, the error reply is returned. NULL: go on. */
json_object *accounting_grant_check(Accounting *a, const char *project, const SubmitRequest *req,
                                    const QueueConfig **q, char **ret_notice);

/* The project's grant is spent in the period now is in (as of the last refresh);
 * *ret_used: its service units used. false too for a project without a grant. */
bool accounting_project_grant_spent(Accounting *a, const ProjectConfig *pc, uint64_t now, double *ret_used);
/* Where a waiting job of a project whose grant is spent goes, as a submission would: the
 * bonus queue, or NULL with *ret_why (static) saying why it stays (OnGrantSpent=refuse,
 * no bonus queue, or one that does not take it). */
const QueueConfig *accounting_grant_bonus_queue(Accounting *a, const Job *j, const char **ret_why);

/* Per project, for Share and the metrics: decayed usage (core-hours) as of the last
 * refresh, the factor, the grant's period and service units spent in it. */
typedef struct ProjectUsage {
        const char *name;
        double usage, fairshare;
        uint64_t share;
        uint64_t grant;                 /* 0: none */
        uint64_t period_begin, period_end;
        double grant_used;              /* service units: runs ended in the period + running so far */
        double all_core_hours, all_gpu_hours, all_service_units; /* since the daemon's records began */
} ProjectUsage;
/* Every configured project, then every other one with usage, after a refresh with jobs.
 * *ret malloc'ed. */
int accounting_project_usage(Accounting *a, Job *const *jobs, size_t n_jobs, uint64_t now, ProjectUsage **ret,
                             size_t *ret_n, double *ret_total);
double accounting_user_usage(Accounting *a, const char *user, uint64_t now);
