/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The manager's accounting: what each job is charged (at its end, and so far while it
 * runs, from its scope's cgroup), the decayed usage per project and user that fair-share
 * reads, each project's grant in its current period, and the methods that report them
 * (usage-report.c) and the Prometheus textfile (metrics.c). The arithmetic is
 * accounting.c's.
 *
 * Running jobs count toward the decayed usage without being ticked: a reading adds each
 * running job's core-hours so far, decayed as if spread evenly over its run
 * (acct_decay_credit()); its end adds the same amount for the whole run, so the value is
 * continuous across the end and nothing is rescanned. */

#include <json-c/json.h>

#include "accounting.h"
#include "config/config.h"
#include "job.h"
#include "server.h"
#include "spec-json.h"

typedef struct Manager Manager;
typedef struct Accounting Accounting;

/* The accounting state, loaded from the store on first use. NULL on failure (logged). */
Accounting *manager_accounting(Manager *m);
Accounting *accounting_free(Accounting *a);

/* What the job was charged (its latest run, from the store), or, running, so far (its
 * cgroup read now). -ENOENT for a job that never ran. */
int manager_job_charge(Manager *m, const Job *j, uint64_t now, JobCharge *ret);
/* The same as the "charge" object of the owner's view; NULL when it never ran. */
json_object *manager_job_charge_json(Manager *m, const Job *j);
json_object *job_charge_to_json(const JobCharge *c);

/* A run ended (o: the executor's outcome): its charge is stored with the day's summary,
 * and added to its project's and user's decayed usage (unless its queue is in
 * FairShareExcludeQueues=) and to its project's grant period. In the open transaction,
 * before the job's transition. */
int manager_account_run(Manager *m, const Job *j, const JobOutcome *o, uint64_t now);

/* Before a scheduling pass: every project's usage as of now, running jobs included. */
void manager_fairshare_refresh(Manager *m, uint64_t now);
/* The job's project's factor from the last refresh: 1e6 × (1 − usage / total). */
double manager_job_fairshare(Manager *m, const Job *j);

/* A project whose grant is spent: *q becomes the bonus queue (*ret_notice says so,
 * malloc'ed), or, with OnGrantSpent=refuse, the error reply is returned. NULL: go on. */
json_object *manager_grant_check(Manager *m, const char *project, const SubmitRequest *req, const QueueConfig **q,
                                 char **ret_notice);

/* The methods Usage and Share (usage-report.c). */
json_object *manager_method_usage(Manager *m, const Peer *peer, json_object *params);
json_object *manager_method_share(Manager *m, const Peer *peer, json_object *params);

/* Per project, for Share and the metrics: decayed usage (core-hours) as of the last
 * refresh, the factor, the grant's period and service units spent in it. */
typedef struct ProjectUsage {
        const char *name;
        double usage, fairshare;
        uint64_t share;
        uint64_t grant;                 /* 0: none */
        uint64_t period_begin, period_end;
        double grant_used;              /* service units: runs ended in the period + running so far */
        double all_core_hours, all_service_units; /* since the daemon's records began */
} ProjectUsage;
/* Every configured project, then every other one with usage. *ret malloc'ed. */
int manager_project_usage(Manager *m, uint64_t now, ProjectUsage **ret, size_t *ret_n, double *ret_total);
double manager_user_usage(Manager *m, const char *user, uint64_t now);

/* Writes the metrics (metrics.c) to MetricsFile=, else to the node exporter's textfile
 * directory when it exists; 0 when there is nowhere to write. Atomic: temp + rename. */
int manager_write_metrics(Manager *m);
/* The textfile's path now, or NULL. */
const char *manager_metrics_path(Manager *m);
