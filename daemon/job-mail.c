/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job mail: which state changes a job's --mail-type asks mail for, and the message, in
 * the words of Slurm's (so that mail filters written for Slurm's subjects keep working);
 * the executor hands it to sendmail.
 *
 * A transition only queues its mail: the queue is sent by manager_commit() once the
 * store has the state the mail speaks of, and dropped if the commit fails (corrald then
 * exits), so that a crash never mails about a state the store did not record.
 *
 * Mail is bounded, since every message is a transient unit and a sendmail run:
 *   - an array sends one summary (Slurm's "Array Summary"): BEGIN when its first task
 *     starts, END or FAIL when its last one ends; with ARRAY_TASKS each task's own mail,
 *     up to JOB_MAIL_ARRAY_TASKS_CAP per array, then the summary at the end;
 *   - each user gets at most JOB_MAIL_USER_BUDGET messages per JOB_MAIL_WINDOW_SEC; the
 *     rest are counted, logged at warning and coalesced into one digest at the end of the
 *     window.
 * The counts are kept in memory only: a restart starts them afresh.
 *
 * TIME_LIMIT_50/80/90 are due at those fractions of the walltime the job has run (the
 * time it spent suspended does not count, as the supervisor's walltime does not count
 * it); a timer on the event loop is armed at the next one due. TIME_LIMIT is sent when a
 * job ends in TIMEOUT. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job-backend.h"
#include "job-mail.h"
#include "job-table.h"
#include "log.h"
#include "manager.h"
#include "time-util.h"

#define DIGEST_LINES 20U

typedef struct MailItem {
        uint64_t job_id;
        uid_t uid;
        const char *user; /* interned */
        char *to, *subject, *message;
} MailItem;

typedef struct MailUser {
        uid_t uid;
        const char *user;
        uint64_t window_start;
        unsigned sent, over;
        char *to;
        char *lines[DIGEST_LINES];
} MailUser;

typedef struct MailArray {
        uint64_t array_job_id;
        unsigned sent;
        bool capped;
} MailArray;

typedef struct MailWatch {
        uint64_t job_id;
        unsigned sent; /* the MAIL_TIME_LIMIT_* already sent for this run */
        uint64_t start_time;
} MailWatch;

typedef struct JobMail {
        MailItem *queue;
        size_t n_queue, allocated_queue;
        MailUser *users;
        size_t n_users, allocated_users;
        MailArray *arrays;
        size_t n_arrays, allocated_arrays;
        MailWatch *watch;
        size_t n_watch, allocated_watch;
        bool watch_loaded;
        sd_event_source *timer;
        JobMailSender sender;
        void *sender_userdata;
        JobMailEndText end_text;
} JobMail;

static const struct {
        MailEvent what;
        unsigned percent;
} time_limit_fractions[] = {
        { MAIL_TIME_LIMIT_50, 50 },
        { MAIL_TIME_LIMIT_80, 80 },
        { MAIL_TIME_LIMIT_90, 90 },
};

static char *format_duration(char *buf, size_t size, uint64_t sec) {
        if (sec >= 86400)
                snprintf(buf, size, "%" PRIu64 "-%02u:%02u:%02u", sec / 86400, (unsigned) (sec / 3600 % 24),
                         (unsigned) (sec / 60 % 60), (unsigned) (sec % 60));
        else
                snprintf(buf, size, "%02u:%02u:%02u", (unsigned) (sec / 3600), (unsigned) (sec / 60 % 60),
                         (unsigned) (sec % 60));
        return buf;
}

static void mail_item_done(MailItem *i) {
        free(i->to);
        free(i->subject);
        free(i->message);
        *i = (MailItem) {};
}

static void mail_user_done(MailUser *u) {
        free(u->to);
        for (size_t k = 0; k < DIGEST_LINES; k++)
                free(u->lines[k]);
        *u = (MailUser) {};
}

JobMail *job_mail_free(JobMail *q) {
        if (!q)
                return NULL;
        for (size_t i = 0; i < q->n_queue; i++)
                mail_item_done(&q->queue[i]);
        for (size_t i = 0; i < q->n_users; i++)
                mail_user_done(&q->users[i]);
        free(q->queue);
        free(q->users);
        free(q->arrays);
        free(q->watch);
        sd_event_source_disable_unref(q->timer);
        free(q);
        return NULL;
}

static JobMail *job_mail_get(Manager *m) {
        if (!m->mail)
                m->mail = calloc(1, sizeof *m->mail);
        return m->mail;
}

void job_mail_set_sender(Manager *m, JobMailSender sender, void *userdata) {
        JobMail *q = job_mail_get(m);
        if (!q)
                return;
        q->sender = sender;
        q->sender_userdata = userdata;
}

void job_mail_set_end_text(Manager *m, JobMailEndText end_text) {
        JobMail *q = job_mail_get(m);
        if (q)
                q->end_text = end_text;
}

MailEvent job_mail_event(const Job *j, JobEvent event) {
        unsigned want = job_shared(j)->mail_events;
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

uint64_t job_mail_time_limit_due(const Job *j, uint64_t walltime, unsigned percent) {
        /* Suspended, the walltime is paused and so is the due time: RESUME re-arms it. */
        if (j->state != JOB_RUNNING || !j->start_time || walltime == 0 || walltime >= SCHED_TIME_INFINITY)
                return UINT64_MAX;
        return j->start_time + job_run(j)->suspended_usec / USEC_PER_SEC + walltime * percent / 100;
}

static const char *mail_words(MailEvent what) {
        switch (what) {
        case MAIL_BEGIN:
                return "Began";
        case MAIL_END:
                return "Ended";
        case MAIL_FAIL:
                return "Failed";
        case MAIL_REQUEUE:
                return "Requeued";
        case MAIL_TIME_LIMIT:
                return "Reached time limit";
        case MAIL_TIME_LIMIT_90:
                return "Reached 90% of time limit";
        case MAIL_TIME_LIMIT_80:
                return "Reached 80% of time limit";
        case MAIL_TIME_LIMIT_50:
                return "Reached 50% of time limit";
        default:
                return NULL;
        }
}

static uint64_t run_seconds(const Job *j, uint64_t now) {
        const JobRun *jr = job_run(j);
        uint64_t end = j->end_time ?: now, run, paused = jr->suspended_usec / USEC_PER_SEC;

        if (j->state == JOB_SUSPENDED && jr->suspend_start && now > jr->suspend_start)
                paused += now - jr->suspend_start;
        run = j->start_time && end > j->start_time ? end - j->start_time : 0;
        return run - MIN(run, paused);
}

static int mail_message(const char *to, uint64_t job_id, const char *subject, const char *body, char **ret) {
        /* The recipient and the job's name are validated at submission (no line breaks,
         * no second recipient). */
        if (asprintf(ret,
                     "To: %s\n"
                     "Subject: %s\n"
                     "Auto-Submitted: auto-generated\n"
                     "X-Corral-Job-Id: %" PRIu64 "\n"
                     "\n"
                     "%s\n"
                     "%s",
                     to, subject, job_id, subject, strempty(body)) < 0)
                return -ENOMEM;
        return 0;
}

/* The job as its mail's subject names it: "42", or an array task's "42_3 (45)". */
static void mail_job_id(const Job *j, char *buf, size_t size) {
        if (j->array_job_id)
                snprintf(buf, size, "%" PRIu64 "_%" PRIu32 " (%" PRIu64 ")", j->array_job_id, j->array_task_id, j->id);
        else
                snprintf(buf, size, "%" PRIu64, j->id);
}

static int compose_subject(const Job *j, MailEvent what, uint64_t now, char **ret) {
        char id[64], t[64];
        const char *name = job_str(j, JOB_NAME) ?: "(none)", *words = mail_words(what);

        if (!words)
                return -EINVAL;
        mail_job_id(j, id, sizeof id);

        switch (what) {
        case MAIL_BEGIN:
                return asprintf(ret, "Corral Job_id=%s Name=%s Began, Queued time %s", id, name,
                                format_duration(t, sizeof t,
                                                j->start_time > j->submit_time ? j->start_time - j->submit_time : 0)) < 0
                               ? -ENOMEM
                               : 0;
        case MAIL_END:
        case MAIL_FAIL:
        case MAIL_REQUEUE:
                return asprintf(ret, "Corral Job_id=%s Name=%s %s, Run time %s, %s, ExitCode %d", id, name, words,
                                format_duration(t, sizeof t, run_seconds(j, now)), job_state_to_string(j->state),
                                MAX(job_run(j)->exit_code, 0)) < 0
                               ? -ENOMEM
                               : 0;
        default:
                return asprintf(ret, "Corral Job_id=%s Name=%s %s, Run time %s", id, name, words,
                                format_duration(t, sizeof t, run_seconds(j, now))) < 0
                               ? -ENOMEM
                               : 0;
        }
}

/* extra: more of the body, after the reason (what the job did with its GPUs). */
static int compose(const Job *j, MailEvent what, uint64_t now, const char *extra, char **ret_subject,
                   char **ret_message) {
        _cleanup_free_ char *subject = NULL, *body = NULL;
        int r;

        r = compose_subject(j, what, now, &subject);
        if (r < 0)
                return r;
        if ((j->reason || extra) && asprintf(&body, "%s%s%s%s", j->reason ? "Reason: " : "", strempty(job_reason(j)),
                                             j->reason ? "\n" : "", strempty(extra)) < 0)
                return -ENOMEM;
        r = mail_message(job_str(j, JOB_MAIL_USER) ?: job_user(j), j->id, subject, body, ret_message);
        if (r < 0)
                return r;
        if (ret_subject)
                *ret_subject = TAKE_PTR(subject);
        return 0;
}

int job_mail_compose(const Job *j, MailEvent what, uint64_t now, char **ret) {
        return compose(j, what, now, NULL, NULL, ret);
}

static int queue_item(JobMail *q, const Job *j, char *subject, char *message) {
        _cleanup_free_ char *s = subject, *msg = message, *to = strdup(job_str(j, JOB_MAIL_USER) ?: job_user(j));

        if (!to || !GREEDY_REALLOC(q->queue, q->allocated_queue, q->n_queue + 1))
                return -ENOMEM;
        q->queue[q->n_queue++] = (MailItem) {
                .job_id = j->id, .uid = j->uid, .user = job_user(j),
                .to = TAKE_PTR(to), .subject = TAKE_PTR(s), .message = TAKE_PTR(msg),
        };
        return 0;
}

static int queue_job_mail(JobMail *q, const Job *j, MailEvent what, uint64_t now, const char *extra) {
        _cleanup_free_ char *subject = NULL, *msg = NULL;
        int r;

        r = compose(j, what, now, extra, &subject, &msg);
        if (r < 0)
                return r;
        return queue_item(q, j, TAKE_PTR(subject), TAKE_PTR(msg));
}

/* The array's tasks: consecutive in the job table (their ids are consecutive, from the
 * array's id), [*first, *last); some may have been forgotten already (final ones, after a
 * day). Two binary searches: no job outside the array has its array id. */
static void array_range(Manager *m, uint64_t array_job_id, size_t *first, size_t *last) {
        size_t lo = manager_job_index(m, array_job_id), hi = m->n_jobs;

        *first = lo;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (m->jobs[mid]->array_job_id == array_job_id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *last = lo;
}

typedef struct ArrayView {
        bool other_started; /* a task other than the one at hand has started */
        bool all_final;
        bool mixed;
        bool any_unsuccessful;
        JobState state;
        int exit_min, exit_max;
} ArrayView;

/* What the array's mail depends on. Each task's transition asks, so each question stops
 * as soon as it is answered: a start looks for an earlier start from the first task
 * (started first, as a rule), an end for a task still going at either end, then from
 * the last one (ending last); only the end of the last task reads them all, once per
 * array. Tasks ending in random order cost O(tasks) each: 0.3 s for 10,000 in all. */
static void array_view(Manager *m, const Job *j, bool starting, ArrayView *ret) {
        ArrayView v = { .all_final = true, .state = j->state, .exit_min = INT32_MAX, .exit_max = INT32_MIN };
        size_t first, last;

        array_range(m, j->array_job_id, &first, &last);
        if (starting) {
                for (size_t i = first; i < last && !v.other_started; i++)
                        if (m->jobs[i] != j && m->jobs[i]->start_time)
                                v.other_started = true;
                v.all_final = false;
                *ret = v;
                return;
        }
        /* Cancelled from either end, the other end is still going. */
        if (first < last && !job_state_is_final(m->jobs[first]->state)) {
                v.all_final = false;
                *ret = v;
                return;
        }
        for (size_t i = last; i > first; i--) {
                const Job *t = m->jobs[i - 1];

                if (!job_state_is_final(t->state)) {
                        v.all_final = false;
                        break;
                }
                if (t->state != v.state)
                        v.mixed = true;
                if (t->state != JOB_COMPLETED)
                        v.any_unsuccessful = true;
                v.exit_min = MIN(v.exit_min, MAX(job_run(t)->exit_code, 0));
                v.exit_max = MAX(v.exit_max, MAX(job_run(t)->exit_code, 0));
        }
        if (v.exit_min > v.exit_max)
                v.exit_min = v.exit_max = 0;
        *ret = v;
}

/* Slurm's "Array Summary" subject: "Began", or "Ended"/"Failed" with the tasks' state
 * (or Mixed) and the range of their exit codes. */
static int queue_array_summary(JobMail *q, const Job *j, MailEvent what, const ArrayView *v) {
        _cleanup_free_ char *subject = NULL, *msg = NULL;
        const char *name = job_str(j, JOB_NAME) ?: "(none)";
        int r;

        if (what == MAIL_BEGIN)
                r = asprintf(&subject, "Corral Array Summary Job_id=%" PRIu64 "_* (%" PRIu64 ") Name=%s Began",
                             j->array_job_id, j->array_job_id, name);
        else
                r = asprintf(&subject,
                             "Corral Array Summary Job_id=%" PRIu64 "_* (%" PRIu64 ") Name=%s %s, %s, ExitCode [%d-%d]",
                             j->array_job_id, j->array_job_id, name, mail_words(what),
                             v->mixed ? "Mixed" : job_state_to_string(v->state), v->exit_min, v->exit_max);
        if (r < 0)
                return -ENOMEM;
        r = mail_message(job_str(j, JOB_MAIL_USER) ?: job_user(j), j->array_job_id, subject, NULL, &msg);
        if (r < 0)
                return r;
        return queue_item(q, j, TAKE_PTR(subject), TAKE_PTR(msg));
}

static MailArray *array_entry(JobMail *q, uint64_t array_job_id, bool create) {
        for (size_t i = 0; i < q->n_arrays; i++)
                if (q->arrays[i].array_job_id == array_job_id)
                        return &q->arrays[i];
        if (!create || !GREEDY_REALLOC(q->arrays, q->allocated_arrays, q->n_arrays + 1))
                return NULL;
        q->arrays[q->n_arrays] = (MailArray) { .array_job_id = array_job_id };
        return &q->arrays[q->n_arrays++];
}

static void array_forget(JobMail *q, MailArray *a) {
        *a = q->arrays[--q->n_arrays];
}

static void watch_add(JobMail *q, const Job *j, unsigned sent) {
        for (size_t i = 0; i < q->n_watch; i++)
                if (q->watch[i].job_id == j->id) {
                        q->watch[i] = (MailWatch) { .job_id = j->id, .sent = sent, .start_time = j->start_time };
                        return;
                }
        if (!GREEDY_REALLOC(q->watch, q->allocated_watch, q->n_watch + 1))
                return; /* no warnings for this job: best effort, as all mail */
        q->watch[q->n_watch++] = (MailWatch) { .job_id = j->id, .sent = sent, .start_time = j->start_time };
}

static bool wants_time_limit_mail(const Job *j) {
        unsigned want = job_shared(j)->mail_events;
        return (want & (MAIL_TIME_LIMIT_50 | MAIL_TIME_LIMIT_80 | MAIL_TIME_LIMIT_90)) &&
                (!j->array_job_id || (want & MAIL_ARRAY_TASKS));
}

/* Whether a task's own mail stays within its array's cap. Once over it, the array gets
 * its summary when its last task ends. */
static bool array_task_allowed(JobMail *q, const Job *j) {
        MailArray *a;

        if (!j->array_job_id)
                return true;
        a = array_entry(q, j->array_job_id, true);
        if (!a)
                return false;
        if (a->sent >= JOB_MAIL_ARRAY_TASKS_CAP) {
                if (!a->capped)
                        log_info("Array %" PRIu64 ": over %u mails for its tasks; the rest are left out, "
                                 "a summary follows when the array ends.",
                                 j->array_job_id, JOB_MAIL_ARRAY_TASKS_CAP);
                a->capped = true;
                return false;
        }
        a->sent++;
        return true;
}

void manager_job_mail(Manager *m, const Job *j, JobEvent event) {
        _cleanup_free_ char *gpus = NULL;
        unsigned want = job_shared(j)->mail_events;
        uint64_t now = (uint64_t) time(NULL);
        MailEvent what;
        JobMail *q;
        int r = 0;

        /* A forwarded job's mail is the cluster's (sbatch --mail-type): not twice. */
        if (!want || !manager_job_backend(m, j)->sends_mail)
                return;
        q = job_mail_get(m);
        if (!q)
                return (void) log_oom();
        /* Its end's mail says what it did with the GPUs it held. */
        if (job_state_is_final(j->state) && q->end_text)
                gpus = q->end_text(m, j);

        if (event == JOB_EVENT_START && wants_time_limit_mail(j))
                watch_add(q, j, 0);

        if (j->array_job_id) {
                ArrayView v;
                bool final = job_state_is_final(j->state);
                MailArray *a;

                if (event != JOB_EVENT_START && !final && !(want & MAIL_ARRAY_TASKS))
                        return;
                array_view(m, j, event == JOB_EVENT_START, &v);
                a = array_entry(q, j->array_job_id, false);
                if (!(want & MAIL_ARRAY_TASKS)) {
                        /* Slurm's one mail per array: BEGIN as the first task starts, END or
                         * FAIL as the last one ends. */
                        if (event == JOB_EVENT_START && !v.other_started && (want & MAIL_BEGIN))
                                r = queue_array_summary(q, j, MAIL_BEGIN, &v);
                        else if (final && v.all_final && (want & (MAIL_END | MAIL_FAIL)))
                                r = queue_array_summary(q, j,
                                                        v.any_unsuccessful && (want & MAIL_FAIL) ? MAIL_FAIL
                                                                                                 : MAIL_END,
                                                        &v);
                } else {
                        what = job_mail_event(j, event);
                        if (what && array_task_allowed(q, j))
                                r = queue_job_mail(q, j, what, now, gpus);
                        if (r >= 0 && j->state == JOB_TIMEOUT && (want & MAIL_TIME_LIMIT) &&
                            array_task_allowed(q, j))
                                r = queue_job_mail(q, j, MAIL_TIME_LIMIT, now, NULL);
                        a = array_entry(q, j->array_job_id, false);
                        if (r >= 0 && final && v.all_final && a && a->capped)
                                r = queue_array_summary(q, j,
                                                        v.any_unsuccessful && (want & MAIL_FAIL) ? MAIL_FAIL
                                                                                                 : MAIL_END,
                                                        &v);
                }
                if (final && v.all_final && a)
                        array_forget(q, a);
        } else {
                what = job_mail_event(j, event);
                if (what)
                        r = queue_job_mail(q, j, what, now, gpus);
                if (r >= 0 && j->state == JOB_TIMEOUT && (want & MAIL_TIME_LIMIT) && job_state_is_final(j->state))
                        r = queue_job_mail(q, j, MAIL_TIME_LIMIT, now, NULL);
        }
        if (r < 0)
                log_warning_errno(r, "Job %" PRIu64 ": cannot queue its mail: %m", j->id);
}

static int send_default(void *userdata, uint64_t job_id, uid_t uid, const char *message) {
        Manager *m = userdata;
        const char *prog = m->config && m->config->mail_prog ? m->config->mail_prog : CORRAL_SENDMAIL_PATH;
        int r;

        if (!m->executor)
                return 0;
        r = executor_send_mail(m->executor, job_id, uid, prog, message);
        if (r == -ENOENT || r == -EACCES)
                /* Mail asked for and never sent is worth an admin's notice (a missing MTA,
                 * or a security policy that stops corrald from running it). */
                return log_warning_errno(r, "Job %" PRIu64 ": no mail sent, %s cannot be run: %m", job_id, prog);
        if (r < 0)
                return log_warning_errno(r, "Job %" PRIu64 ": cannot send mail: %m", job_id);
        return 0;
}

static void send_one(Manager *m, JobMail *q, uint64_t job_id, uid_t uid, const char *message) {
        if (q->sender)
                (void) q->sender(q->sender_userdata, job_id, uid, message);
        else
                (void) send_default(m, job_id, uid, message);
}

static MailUser *user_entry(JobMail *q, uid_t uid, const char *user) {
        for (size_t i = 0; i < q->n_users; i++)
                if (q->users[i].uid == uid)
                        return &q->users[i];
        if (!GREEDY_REALLOC(q->users, q->allocated_users, q->n_users + 1))
                return NULL;
        q->users[q->n_users] = (MailUser) { .uid = uid, .user = user };
        return &q->users[q->n_users++];
}

/* The mails over a user's budget in the window that just closed, as one message. */
static void send_digest(Manager *m, JobMail *q, MailUser *u) {
        _cleanup_free_ char *subject = NULL, *body = NULL, *msg = NULL;
        size_t len = 0;
        FILE *f;

        log_warning("User %s: %u job mails over the budget of %u an hour were not sent one by one; "
                    "they go as one digest.",
                    strna(u->user), u->over, JOB_MAIL_USER_BUDGET);
        f = open_memstream(&body, &len);
        if (!f)
                return (void) log_oom();
        fprintf(f, "Corral sends each user at most %u job mails an hour. These %u were held back:\n\n",
                JOB_MAIL_USER_BUDGET, u->over);
        for (size_t k = 0; k < DIGEST_LINES && u->lines[k]; k++)
                fprintf(f, "%s\n", u->lines[k]);
        if (u->over > DIGEST_LINES)
                fprintf(f, "... and %u more.\n", u->over - DIGEST_LINES);
        if (fclose(f) != 0)
                return (void) log_oom();
        if (asprintf(&subject, "Corral: %u job mails held back for %s", u->over, strna(u->user)) < 0 ||
            mail_message(u->to ?: strna(u->user), 0, subject, body, &msg) < 0)
                return (void) log_oom();
        send_one(m, q, 0, u->uid, msg);
}

static void user_roll(Manager *m, JobMail *q, MailUser *u, uint64_t now) {
        if (now < u->window_start + JOB_MAIL_WINDOW_SEC)
                return;
        if (u->over > 0)
                send_digest(m, q, u);
        for (size_t k = 0; k < DIGEST_LINES; k++)
                u->lines[k] = mfree(u->lines[k]);
        u->window_start = now;
        u->sent = u->over = 0;
}

static void send_budgeted(Manager *m, JobMail *q, MailItem *i, uint64_t now) {
        MailUser *u = user_entry(q, i->uid, i->user);

        if (!u)
                return (void) log_oom();
        user_roll(m, q, u, now);
        if (u->sent < JOB_MAIL_USER_BUDGET) {
                u->sent++;
                send_one(m, q, i->job_id, i->uid, i->message);
                return;
        }
        if (u->over == 0)
                log_warning("User %s: over %u job mails this hour; the rest are held back for one digest.",
                            strna(u->user), JOB_MAIL_USER_BUDGET);
        if (u->over < DIGEST_LINES)
                u->lines[u->over] = TAKE_PTR(i->subject);
        free(u->to);
        u->to = TAKE_PTR(i->to);
        u->over++;
}

static uint64_t walltime_of(Manager *m, const Job *j) {
        return m->config ? manager_job_walltime(m, j) : job_shared(j)->walltime_sec;
}

/* After a restart: running jobs that want warnings are watched again, those already due
 * are counted as sent (a warning that fell due while corrald was down is lost). */
static void watch_load(Manager *m, JobMail *q, uint64_t now) {
        if (q->watch_loaded)
                return;
        q->watch_loaded = true;
        for (size_t i = 0; i < m->n_jobs; i++) {
                const Job *j = m->jobs[i];
                unsigned sent = 0;

                if (!job_state_is_active(j->state) || !wants_time_limit_mail(j))
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(time_limit_fractions); k++)
                        if (job_mail_time_limit_due(j, walltime_of(m, j), time_limit_fractions[k].percent) <= now)
                                sent |= time_limit_fractions[k].what;
                watch_add(q, j, sent);
        }
}

static uint64_t next_due(Manager *m, JobMail *q) {
        uint64_t due = UINT64_MAX;

        for (size_t i = 0; i < q->n_users; i++)
                if (q->users[i].over > 0)
                        due = MIN(due, q->users[i].window_start + JOB_MAIL_WINDOW_SEC);
        for (size_t i = 0; i < q->n_watch; i++) {
                const Job *j = manager_find_job(m, q->watch[i].job_id);
                if (!j)
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(time_limit_fractions); k++)
                        if ((job_shared(j)->mail_events & time_limit_fractions[k].what) &&
                            !(q->watch[i].sent & time_limit_fractions[k].what))
                                due = MIN(due, job_mail_time_limit_due(j, walltime_of(m, j),
                                                                      time_limit_fractions[k].percent));
        }
        return due;
}

static int on_mail_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_mail_tick(userdata, (uint64_t) time(NULL));
        return 0;
}

static void arm_timer(Manager *m, JobMail *q) {
        uint64_t due = next_due(m, q);
        int r;

        if (!m->event)
                return;
        if (due == UINT64_MAX) {
                if (q->timer)
                        (void) sd_event_source_set_enabled(q->timer, SD_EVENT_OFF);
                return;
        }
        if (!q->timer) {
                r = sd_event_add_time(m->event, &q->timer, CLOCK_REALTIME, due * USEC_PER_SEC, USEC_PER_SEC,
                                      on_mail_timer, m);
                if (r < 0)
                        return (void) log_warning_errno(r, "Cannot arm the job mail timer: %m");
        } else
                (void) sd_event_source_set_time(q->timer, due * USEC_PER_SEC);
        (void) sd_event_source_set_enabled(q->timer, SD_EVENT_ONESHOT);
}

void manager_mail_tick(Manager *m, uint64_t now) {
        JobMail *q = job_mail_get(m);
        size_t k = 0;

        if (!q)
                return;
        watch_load(m, q, now);
        for (size_t i = 0; i < q->n_watch; i++) {
                MailWatch *w = &q->watch[i];
                const Job *j = manager_find_job(m, w->job_id);

                /* Ended, or a new run (requeued): this run's watch is over. */
                if (!j || !job_state_is_active(j->state) || j->start_time != w->start_time)
                        continue;
                for (size_t f = 0; f < ELEMENTSOF(time_limit_fractions); f++) {
                        MailEvent what = time_limit_fractions[f].what;
                        _cleanup_free_ char *subject = NULL, *msg = NULL;
                        MailItem item = {};

                        if (!(job_shared(j)->mail_events & what) || (w->sent & what) ||
                            job_mail_time_limit_due(j, walltime_of(m, j), time_limit_fractions[f].percent) > now)
                                continue;
                        w->sent |= what;
                        if (j->array_job_id && !array_task_allowed(q, j))
                                continue;
                        /* Not a state change: nothing to commit first. */
                        if (compose(j, what, now, NULL, &subject, &msg) < 0 ||
                            !(item.to = strdup(job_str(j, JOB_MAIL_USER) ?: job_user(j)))) {
                                log_oom();
                                continue;
                        }
                        item.job_id = j->id;
                        item.uid = j->uid;
                        item.user = job_user(j);
                        item.subject = TAKE_PTR(subject);
                        item.message = TAKE_PTR(msg);
                        send_budgeted(m, q, &item, now);
                        mail_item_done(&item);
                }
                q->watch[k++] = *w;
        }
        q->n_watch = k;

        for (size_t i = 0; i < q->n_users; i++)
                user_roll(m, q, &q->users[i], now);
        /* Users quiet for a whole window are forgotten: the table stays as small as the
         * number of users mailing now. */
        k = 0;
        for (size_t i = 0; i < q->n_users; i++)
                if (q->users[i].sent > 0 || q->users[i].over > 0)
                        q->users[k++] = q->users[i];
                else
                        mail_user_done(&q->users[i]);
        q->n_users = k;
        arm_timer(m, q);
}

void manager_mail_flush(Manager *m, uint64_t now) {
        JobMail *q = m->mail;

        if (!q)
                return;
        for (size_t i = 0; i < q->n_queue; i++) {
                send_budgeted(m, q, &q->queue[i], now);
                mail_item_done(&q->queue[i]);
        }
        q->n_queue = 0;
        watch_load(m, q, now);
        arm_timer(m, q);
}

size_t manager_mail_queued(Manager *m) {
        return m->mail ? m->mail->n_queue : 0;
}

size_t manager_mail_discard(Manager *m) {
        JobMail *q = m->mail;
        size_t n;

        if (!q)
                return 0;
        n = q->n_queue;
        for (size_t i = 0; i < q->n_queue; i++)
                mail_item_done(&q->queue[i]);
        q->n_queue = 0;
        return n;
}

int manager_job_mail_gpu_idle(Manager *m, const Job *j, const char *text) {
        _cleanup_free_ char *subject = NULL, *body = NULL, *msg = NULL;
        MailItem item;
        char id[64], t[64];
        JobMail *q;
        int r;

        if (!manager_job_backend(m, j)->sends_mail)
                return 0;
        q = job_mail_get(m);
        if (!q)
                return -ENOMEM;
        mail_job_id(j, id, sizeof id);
        if (asprintf(&subject, "Corral Job_id=%s Name=%s GPUs idle, Run time %s", id,
                     job_str(j, JOB_NAME) ?: "(none)",
                     format_duration(t, sizeof t, run_seconds(j, (uint64_t) time(NULL)))) < 0 ||
            asprintf(&body,
                     "While it runs, %s (GPUIdlePercent=, GPUIdleSec=).\n"
                     "No other job can use them meanwhile: if it no longer needs them, end it\n"
                     "(corral cancel %" PRIu64 ") and ask for fewer.\n",
                     text, j->id) < 0)
                return -ENOMEM;
        r = mail_message(job_str(j, JOB_MAIL_USER) ?: job_user(j), j->id, subject, body, &msg);
        if (r < 0)
                return r;
        item = (MailItem) {
                .job_id = j->id, .uid = j->uid, .user = job_user(j),
                .to = strdup(job_str(j, JOB_MAIL_USER) ?: job_user(j)),
                .subject = TAKE_PTR(subject), .message = TAKE_PTR(msg),
        };
        if (!item.to) {
                mail_item_done(&item);
                return -ENOMEM;
        }
        /* Not a state change: nothing to commit first. The user's budget holds. */
        send_budgeted(m, q, &item, (uint64_t) time(NULL));
        mail_item_done(&item);
        return 0;
}
