/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Job mail (job-mail.c): the kind a state change calls for under the job's --mail-type
 * (0: none), the message for it. manager_job_mail() only queues (the transition calls
 * it); manager_commit() sends the queue once the store has committed the states it speaks
 * of, and drops it when the commit fails. Each user gets at most JOB_MAIL_USER_BUDGET
 * messages per JOB_MAIL_WINDOW_SEC, the rest in one digest; an array with ARRAY_TASKS at
 * most JOB_MAIL_ARRAY_TASKS_CAP, then its summary. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

typedef struct Manager Manager;

#define JOB_MAIL_USER_BUDGET 50U
#define JOB_MAIL_WINDOW_SEC 3600U
#define JOB_MAIL_ARRAY_TASKS_CAP 20U
MailEvent job_mail_event(const Job *j, JobEvent event);
int job_mail_compose(const Job *j, MailEvent what, uint64_t now, char **ret);
void manager_job_mail(Manager *m, const Job *j, JobEvent event);
/* GPUIdleAction=mail: a mail to job j's address (or its user), whatever its --mail-type,
 * that text ("its GPU (gpu0) has been below 5 % for 30 min") is so; sent now (no state
 * to commit first), within the user's budget. */
int manager_job_mail_gpu_idle(Manager *m, const Job *j, const char *text);
size_t manager_mail_queued(Manager *m);
void manager_mail_flush(Manager *m, uint64_t now);
size_t manager_mail_discard(Manager *m);
/* The TIME_LIMIT_50/80/90 warnings and the digests due by now (the mail timer). */
void manager_mail_tick(Manager *m, uint64_t now);
/* When a run reaches percent of its walltime (seconds since the epoch; time suspended
 * does not count); UINT64_MAX while suspended or without a walltime. */
uint64_t job_mail_time_limit_due(const Job *j, uint64_t walltime, unsigned percent);
/* Where the messages go (default: the executor, to MailProg=); for tests. */
typedef int (*JobMailSender)(void *userdata, uint64_t job_id, uid_t uid, const char *message);
void job_mail_set_sender(Manager *m, JobMailSender sender, void *userdata);
/* More of a job's END/FAIL mail, after its reason, from a feature above (GPU telemetry's
 * figures): a malloc'ed text, NULL for none. */
typedef char *(*JobMailEndText)(Manager *m, const Job *j);
void job_mail_set_end_text(Manager *m, JobMailEndText end_text);
struct JobMail *job_mail_free(struct JobMail *q);
