/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job mail: which state changes a job's --mail-type asks mail for, and the message, in
 * the words of Slurm's (so that mail filters written for Slurm's subjects keep working);
 * the executor hands it to sendmail. Array tasks send mail only with ARRAY_TASKS. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "manager.h"

static char *format_duration(char *buf, size_t size, uint64_t sec) {
        if (sec >= 86400)
                snprintf(buf, size, "%" PRIu64 "-%02u:%02u:%02u", sec / 86400, (unsigned) (sec / 3600 % 24),
                         (unsigned) (sec / 60 % 60), (unsigned) (sec % 60));
        else
                snprintf(buf, size, "%02u:%02u:%02u", (unsigned) (sec / 3600), (unsigned) (sec / 60 % 60),
                         (unsigned) (sec % 60));
        return buf;
}

MailEvent job_mail_event(const Job *j, JobEvent event) {
        unsigned want = j->req.mail_events;
        MailEvent what;

        if (!want || (j->array_job_id && !(want & MAIL_ARRAY_TASKS)))
                return 0;
        switch (event) {
        case JOB_EVENT_START:
                what = MAIL_BEGIN;
                break;
        case JOB_EVENT_REQUEUE:
                what = MAIL_REQUEUE;
                break;
        case JOB_EVENT_END:
        case JOB_EVENT_CANCEL:
        case JOB_EVENT_NODE_FAIL:
                if (!job_state_is_final(j->state))
                        return 0;
                /* An unsuccessful end is a FAIL mail when one is wanted, else an END one. */
                what = j->state != JOB_COMPLETED && (want & MAIL_FAIL) ? MAIL_FAIL : MAIL_END;
                break;
        default:
                return 0;
        }
        return want & what ? what : 0;
}

int job_mail_compose(const Job *j, MailEvent what, uint64_t now, char **ret) {
        uint64_t run_end = j->end_time ?: now, suspended = j->suspended_usec / 1000000;
        char id[64], t[64], subject[512];
        const char *name = j->req.name ?: "(none)";

        if (j->array_job_id)
                snprintf(id, sizeof id, "%" PRIu64 "_%" PRIu32 " (%" PRIu64 ")", j->array_job_id, j->array_task_id,
                         j->id);
        else
                snprintf(id, sizeof id, "%" PRIu64, j->id);

        switch (what) {
        case MAIL_BEGIN:
                snprintf(subject, sizeof subject, "Corral Job_id=%s Name=%s Began, Queued time %s", id, name,
                         format_duration(t, sizeof t, j->start_time > j->submit_time ? j->start_time - j->submit_time : 0));
                break;
        case MAIL_END:
        case MAIL_FAIL:
        case MAIL_REQUEUE: {
                uint64_t run = j->start_time && run_end > j->start_time ? run_end - j->start_time : 0;
                run -= MIN(run, suspended);
                snprintf(subject, sizeof subject, "Corral Job_id=%s Name=%s %s, Run time %s, %s, ExitCode %d", id,
                         name, what == MAIL_END ? "Ended" : what == MAIL_FAIL ? "Failed" : "Requeued",
                         format_duration(t, sizeof t, run), job_state_to_string(j->state),
                         MAX(j->exit_code, 0));
                break;
        }
        default:
                return -EINVAL;
        }
        /* mail_user and the name are validated (no line breaks, no second recipient). */
        if (asprintf(ret,
                     "To: %s\n"
                     "Subject: %s\n"
                     "Auto-Submitted: auto-generated\n"
                     "X-Corral-Job-Id: %" PRIu64 "\n"
                     "\n"
                     "%s\n"
                     "%s%s%s",
                     j->req.mail_user ?: j->user, subject, j->id, subject, j->reason ? "Reason: " : "",
                     strempty(j->reason), j->reason ? "\n" : "") < 0)
                return -ENOMEM;
        return 0;
}

void manager_job_mail(Manager *m, const Job *j, JobEvent event) {
        _cleanup_free_ char *msg = NULL;
        MailEvent what = job_mail_event(j, event);
        const char *prog = m->config->mail_prog ?: CORRAL_SENDMAIL_PATH;
        int r;

        if (!what || !m->executor)
                return;
        r = job_mail_compose(j, what, (uint64_t) time(NULL), &msg);
        if (r >= 0)
                r = executor_send_mail(m->executor, j->id, j->uid, prog, msg);
        /* No mail program at all is a machine without mail; one that is there but may not
         * be run (its mode, an SELinux denial) is a fault the admin must hear of. */
        if (r == -ENOENT)
                log_debug("Job %" PRIu64 ": no mail sent, %s does not exist", j->id, prog);
        else if (r == -EACCES)
                log_warning_errno(r, "Job %" PRIu64 ": no mail sent, %s may not be run: %m", j->id, prog);
        else if (r < 0)
                log_warning_errno(r, "Job %" PRIu64 ": cannot send mail: %m", j->id);
}
