/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's methods and its state choke point, against a store in a tmpdir and a
 * manager with no executor, bus or socket: submit's validation and bounds, the
 * authorization rules the methods apply, List's pages, hold/release/requeue, and every
 * transition through manager_job_transition(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <inttypes.h>

#include "accounting/accounting.h"
#include "daemon/backend-local.h"
#include "daemon/commit.h"
#include "daemon/job-mail.h"
#include "daemon/job-spec-build.h"
#include "daemon/job-table.h"
#include "daemon/job-transition.h"
#include "daemon/manager.h"
#include "daemon/sched-driver.h"
#include "daemon/store.h"
#include "daemon/usage.h"
#include "device-info.h"
#include "devices-mig.h"
#include "json-util.h"
#include "strv.h"
#include "time-util.h"
#include "tmp-tree.h"
#include "test-manager-call.h"

#define NOBODY 65534

static SchedNode nodes[2];

static Manager *manager_for_test(const char *dir) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL;

        assert_non_null(m);
        manager_pick_backends(m);
        m->confdir = strdup(dir);
        assert_non_null(m->confdir);
        if (manager_reload(m, &err) < 0) /* no corral.conf: defaults */
                fail_msg("configuration: %s", strna(err));
        assert_int_equal(store_open(dir, &m->store), 0);
        assert_int_equal(accounting_new(m->store, NULL, m->config, &m->acct), 0);
        m->sched = sched_context_new();
        assert_non_null(m->sched);
        for (unsigned k = 0; k < 2; k++) {
                nodes[k] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
                for (unsigned c = 0; c < 4; c++)
                        cpu_set_add(&nodes[k].cpus, k * 4 + c);
        }
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 2 };
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        return m;
}

static void manager_for_test_free(Manager *m) {
        manager_free(m);
}

/* The job's GPU type and constraint replaced, the rest of what memory keeps of its
 * request as it was (its strings live in its JobShared: job_set_request() gives it
 * another). */
static void set_gpu_request(Job *j, const char *gpu_type, const char *constraint) {
        SubmitRequest r = SUBMIT_REQUEST_INIT; /* borrowed strings: not freed */
        /* Copies: the old block goes before the new one is filled. */
        _cleanup_free_ char *name = job_str(j, JOB_NAME) ? strdup(job_str(j, JOB_NAME)) : NULL;
        _cleanup_free_ char *workdir = job_str(j, JOB_WORKDIR) ? strdup(job_str(j, JOB_WORKDIR)) : NULL;

        assert_int_equal(j->req.n_dependencies, 0);
        r.name = name;
        r.workdir = workdir;
        r.cpus = j->req.cpus;
        r.gpus = j->req.gpus;
        r.memory = job_shared(j)->memory;
        r.walltime_sec = job_shared(j)->walltime_sec;
        r.gpu_type = (char *) gpu_type;
        r.constraint = (char *) constraint;
        assert_int_equal(job_set_request(j, &r), 0);
}

/* The job's mail events and address replaced, the rest of what memory keeps of its request
 * (here: its name and directory) as it was: a job's JobShared is never written, so
 * job_set_request() gives it another. */
static void set_mail_request(Job *j, unsigned events, const char *mail_user) {
        SubmitRequest r = SUBMIT_REQUEST_INIT; /* borrowed strings: not freed */
        _cleanup_free_ char *name = job_str(j, JOB_NAME) ? strdup(job_str(j, JOB_NAME)) : NULL;
        _cleanup_free_ char *workdir = job_str(j, JOB_WORKDIR) ? strdup(job_str(j, JOB_WORKDIR)) : NULL;
        _cleanup_free_ char *user = mail_user ? strdup(mail_user) : NULL;

        r.name = name;
        r.workdir = workdir;
        r.cpus = j->req.cpus;
        r.memory = job_shared(j)->memory;
        r.walltime_sec = job_shared(j)->walltime_sec;
        r.mail_events = events;
        r.mail_user = user;
        assert_int_equal(job_set_request(j, &r), 0);
}

static const char *error_of(json_object *reply) {
        json_object *e;
        return json_object_object_get_ex(reply, "error", &e) ? json_object_get_string(e) : NULL;
}

static const char *message_of(json_object *reply) {
        json_object *p, *v;
        if (json_object_object_get_ex(reply, "parameters", &p) && json_object_object_get_ex(p, "message", &v))
                return json_object_get_string(v);
        return "";
}

static uint64_t job_id_of(json_object *reply) {
        json_object *p, *v;
        assert_null(error_of(reply));
        assert_true(json_object_object_get_ex(reply, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job_id", &v));
        return (uint64_t) json_object_get_int64(v);
}

static void expect_error(json_object *reply, const char *error, const char *in_message) {
        if (!error_of(reply) || !strstr(error_of(reply), error))
                fail_msg("expected %s, got %s", error, json_object_to_json_string(reply));
        if (in_message && !strstr(message_of(reply), in_message))
                fail_msg("expected '%s' in the message: %s", in_message, json_object_to_json_string(reply));
        json_object_put(reply);
}

#define SUBMIT_TRUE "\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\""

static void test_submit_bounds(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r;

        /* A user may not raise a job's priority; root may. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"nice\":-10000}"),
                     "PermissionDenied", "administrators");
        r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"nice\":-10000,\"hold\":true}");
        assert_int_equal(job_id_of(r), 1);
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"nice\":100,\"hold\":true}");
        assert_int_equal(job_id_of(r), 2);
        json_object_put(r);

        /* Arrays: over MaxArraySize refused by name; within it, one stored request. */
        m->config->max_array_size = 10;
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"array\":\"1-11\"}"),
                     "QuotaExceeded", "MaxArraySize=10");
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"1-10\"}");
        assert_int_equal(job_id_of(r), 3);
        json_object_put(r);
        assert_int_equal(m->n_jobs, 12);
        assert_int_equal(job_request_id(m->jobs[11]), 3);
        assert_int_equal(m->jobs[11]->array_task_id, 10);
        assert_int_equal(m->jobs[11]->state, JOB_HELD);
        assert_int_equal(m->jobs[11]->request_bytes, m->jobs[2]->request_bytes);

        /* MaxJobsPerUser: 11 unfinished; the 12th is fine at 12, not at 11. */
        m->config->max_jobs_per_user = 11;
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}"), "QuotaExceeded", "MaxJobsPerUser=11");
        m->config->max_jobs_per_user = 0;

        /* MaxStoredBytesPerUser: the array counts once. */
        /* Room for one more request like job 2's (the next is smaller), not for two:
         * counted per task, the array alone would be over. */
        m->config->max_stored_bytes_per_user = 2 * m->jobs[1]->request_bytes + m->jobs[2]->request_bytes;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        json_object_put(r);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"longer\"}"),
                     "QuotaExceeded", "MaxStoredBytesPerUser");
        m->config->max_stored_bytes_per_user = 0;

        /* Root is not limited. */
        m->config->max_jobs_per_user = 1;
        r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_null(error_of(r));
        json_object_put(r);

        /* An output path that expands past PATH_MAX: the submitter's error, now. */
        {
                char params[8192];
                size_t n = (size_t) snprintf(params, sizeof params, "{" SUBMIT_TRUE ",\"name\":\"%0255d\",\"stdout_path\":\"", 0);
                for (int i = 0; i < 20; i++)
                        n += (size_t) snprintf(params + n, sizeof params - n, "%%x");
                snprintf(params + n, sizeof params - n, "\"}");
                expect_error(call(m, 0, CORRAL_METHOD_SUBMIT, params), "InvalidParameter", NULL);
        }

        /* A name that would command other users' terminals (U+009B, CSI), or a path of
         * invalid UTF-8: refused, saying what and where. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"name\":\"x\\u009b31m\"}"),
                     "InvalidParameter", "a control character at byte 1");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"stdout_path\":\"out\xc0\x80\"}"),
                     "InvalidParameter", "invalid UTF-8 at byte 3");
        manager_for_test_free(m);
}

static size_t page_len(json_object *reply, uint64_t *ret_next) {
        json_object *p, *jobs, *next;
        assert_null(error_of(reply));
        assert_true(json_object_object_get_ex(reply, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "jobs", &jobs));
        *ret_next = json_object_object_get_ex(p, "next_after_id", &next) ? (uint64_t) json_object_get_int64(next) : 0;
        return json_object_array_length(jobs);
}

/* List answers in pages that always fit a message, however many jobs there are. */
/* corral wait pipelines its Wait calls: an error must say which job it is about. */
static void test_wait_error_names_job(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r, *p, *v;
        char params[64];
        uint64_t id;

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        id = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        r = call(m, NOBODY - 1, CORRAL_METHOD_WAIT, params);
        assert_non_null(strstr(error_of(r), "PermissionDenied"));
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job_id", &v));
        assert_int_equal(json_object_get_int64(v), id);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id + 7);
        r = call(m, NOBODY, CORRAL_METHOD_WAIT, params);
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job_id", &v));
        assert_int_equal(json_object_get_int64(v), id + 7);
        json_object_put(r);
        manager_for_test_free(m);
}

static void test_list_pages(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r;
        uint64_t next = 0, seen = 0;
        char params[128];
        size_t pages = 0;

        m->config->max_array_size = 0;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"1-6000\"}");
        json_object_put(r);
        assert_int_equal(m->n_jobs, 6000);

        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{\"limit\":10}");
        assert_int_equal(page_len(r, &next), 10);
        assert_int_equal(next, 10);
        json_object_put(r);

        next = 0;
        do {
                size_t len;
                snprintf(params, sizeof params, "{\"after_id\":%llu}", (unsigned long long) next);
                r = call(m, NOBODY, CORRAL_METHOD_LIST, params);
                assert_true(strlen(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN)) < (1U << 20));
                len = page_len(r, &next);
                seen += len;
                pages++;
                json_object_put(r);
        } while (next);
        assert_int_equal(seen, 6000);
        assert_true(pages > 1);

        /* A filter nobody matches: pages (short of time, they may hold no job) move
         * forward and end. */
        next = 0;
        seen = 0;
        do {
                uint64_t prev = next;
                snprintf(params, sizeof params, "{\"user\":\"nobody-here\",\"after_id\":%llu}",
                         (unsigned long long) next);
                r = call(m, NOBODY, CORRAL_METHOD_LIST, params);
                seen += page_len(r, &next);
                assert_true(next == 0 || next > prev);
                json_object_put(r);
        } while (next);
        assert_int_equal(seen, 0);
        /* Asking for a name does not intern it: users cannot grow the table. */
        assert_null(intern_find("nobody-here"));

        /* The submitter's own, by name: all of them, over the pages. */
        next = 0;
        seen = 0;
        do {
                snprintf(params, sizeof params, "{\"user\":\"%s\",\"after_id\":%llu}", job_user(m->jobs[0]),
                         (unsigned long long) next);
                r = call(m, NOBODY, CORRAL_METHOD_LIST, params);
                seen += page_len(r, &next);
                json_object_put(r);
        } while (next);
        assert_int_equal(seen, 6000);
        manager_for_test_free(m);
}

static bool first_job_has_charge(json_object *reply) {
        json_object *p, *jobs, *v;
        assert_null(error_of(reply));
        assert_true(json_object_object_get_ex(reply, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "jobs", &jobs));
        assert_true(json_object_array_length(jobs) > 0);
        return json_object_object_get_ex(json_object_array_get_idx(jobs, 0), "charge", &v);
}

/* Job mail: which changes call for mail under --mail-type, and the message, in Slurm's
 * subject words; a bad address is refused at submission. */
static void test_job_mail(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r;
        char *msg = NULL;
        Job *j;

        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"mail_events\":2,\"mail_user\":\"a b\"}"),
                     "InvalidParameter", NULL);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT,
                 "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"sim\",\"mail_events\":6,\"mail_user\":\"ann@example.org\"}");
        json_object_put(r);
        j = m->jobs[0];
        assert_int_equal(job_shared(j)->mail_events, MAIL_END | MAIL_FAIL);
        assert_int_equal(job_mail_event(j, JOB_EVENT_START), 0); /* no BEGIN asked */

        j->submit_time = 1000;
        j->start_time = 1065;
        j->end_time = 1065 + 3725 + 10;
        job_run_ensure(j)->suspended_usec = 10 * UINT64_C(1000000);
        job_run_ensure(j)->exit_code = 3;
        j->state = JOB_FAILED;
        assert_true(job_set_reason(j, "NonZeroExitCode") >= 0);
        assert_int_equal(job_mail_event(j, JOB_EVENT_END), MAIL_FAIL);
        assert_int_equal(job_mail_compose(j, MAIL_FAIL, 0, &msg), 0);
        assert_string_equal(msg, "To: ann@example.org\n"
                                 "Subject: Corral Job_id=1 Name=sim Failed, Run time 01:02:05, FAILED, ExitCode 3\n"
                                 "Auto-Submitted: auto-generated\n"
                                 "X-Corral-Job-Id: 1\n"
                                 "\n"
                                 "Corral Job_id=1 Name=sim Failed, Run time 01:02:05, FAILED, ExitCode 3\n"
                                 "Reason: NonZeroExitCode\n");
        msg = mfree(msg);
        j->state = JOB_COMPLETED;
        job_run_ensure(j)->exit_code = 0;
        assert_int_equal(job_mail_event(j, JOB_EVENT_END), MAIL_END);
        set_mail_request(j, MAIL_BEGIN, job_str(j, JOB_MAIL_USER));
        assert_int_equal(job_mail_event(j, JOB_EVENT_END), 0);
        assert_int_equal(job_mail_event(j, JOB_EVENT_START), MAIL_BEGIN);
        set_mail_request(j, MAIL_BEGIN, NULL); /* none */
        assert_int_equal(job_mail_compose(j, MAIL_BEGIN, 0, &msg), 0);
        assert_non_null(strstr(msg, "To: nobody\nSubject: Corral Job_id=1 Name=sim Began, Queued time 00:01:05\n"));
        msg = mfree(msg);
        /* Array tasks: only with ARRAY_TASKS. */
        j->array_job_id = 1;
        assert_int_equal(job_mail_event(j, JOB_EVENT_START), 0);
        set_mail_request(j, job_shared(j)->mail_events | MAIL_ARRAY_TASKS, NULL);
        assert_int_equal(job_mail_event(j, JOB_EVENT_START), MAIL_BEGIN);
        manager_for_test_free(m);
}

/* What would have been handed to MailProg=, in order. */
typedef struct SentMail {
        unsigned n;
        char *msg[128];
} SentMail;

static int record_mail(void *userdata, uint64_t job_id, uid_t uid, const char *message) {
        SentMail *s = userdata;

        assert_true(s->n < ELEMENTSOF(s->msg));
        s->msg[s->n] = strdup(message);
        assert_non_null(s->msg[s->n]);
        s->n++;
        return 0;
}

static void sent_mail_done(SentMail *s) {
        for (unsigned i = 0; i < s->n; i++)
                free(s->msg[i]);
        *s = (SentMail) {};
}

static bool sent_has(const SentMail *s, unsigned i, const char *text) {
        return i < s->n && strstr(s->msg[i], text);
}

static uint64_t submit_ok(Manager *m, const char *params) {
        json_object *r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
        uint64_t id = job_id_of(r);
        json_object_put(r);
        return id;
}

/* A transition queues its mail; only a commit that succeeds sends it: a crash (or a
 * failed commit) between the two never mails about a state the store lacks. */
static void test_job_mail_after_commit(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        SentMail sent = {};
        struct rlimit saved, none;
        Job *a, *b;

        job_mail_set_sender(m, record_mail, &sent);
        a = manager_find_job(m, submit_ok(m, "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"a\",\"mail_events\":2}"));
        b = manager_find_job(m, submit_ok(m, "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"b\",\"mail_events\":2}"));
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 0);

        assert_int_equal(manager_job_transition(m, a, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled"), 0);
        assert_int_equal(sent.n, 0); /* not before the commit */
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 1);
        assert_true(sent_has(&sent, 0, "Subject: Corral Job_id=1 Name=a Ended, Run time 00:00:00, CANCELLED"));

        /* The store cannot write (a file size limit of 0 fails the WAL's append): the
         * commit fails, and b's mail is never sent. */
        assert_int_equal(manager_job_transition(m, b, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled"), 0);
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
        none = (struct rlimit) { .rlim_cur = 0, .rlim_max = saved.rlim_max };
        (void) signal(SIGXFSZ, SIG_IGN);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &none), 0);
        assert_true(manager_commit(m) < 0);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
        assert_int_equal(sent.n, 1);
        manager_mail_flush(m, (uint64_t) time(NULL));
        assert_int_equal(sent.n, 1); /* dropped, not kept for later */
        sent_mail_done(&sent);
        manager_for_test_free(m);
}

/* Bounds: each user gets JOB_MAIL_USER_BUDGET an hour, the rest as one digest at the end
 * of the hour. */
static void test_job_mail_user_budget(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        SentMail sent = {};
        uint64_t now = (uint64_t) time(NULL);

        job_mail_set_sender(m, record_mail, &sent);
        for (unsigned i = 0; i < JOB_MAIL_USER_BUDGET + 10; i++)
                (void) submit_ok(m, "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"many\",\"mail_events\":2}");
        for (size_t i = 0; i < m->n_jobs; i++)
                assert_int_equal(manager_job_transition(m, m->jobs[i], JOB_EVENT_CANCEL, JOB_CANCELLED, NULL), 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, JOB_MAIL_USER_BUDGET);
        manager_mail_tick(m, now + 60);
        assert_int_equal(sent.n, JOB_MAIL_USER_BUDGET); /* the digest waits for the hour's end */
        manager_mail_tick(m, now + JOB_MAIL_WINDOW_SEC + 1);
        assert_int_equal(sent.n, JOB_MAIL_USER_BUDGET + 1);
        assert_true(sent_has(&sent, JOB_MAIL_USER_BUDGET, "Subject: Corral: 10 job mails held back for nobody"));
        assert_true(sent_has(&sent, JOB_MAIL_USER_BUDGET, "Corral Job_id=51 Name=many Ended"));
        manager_mail_tick(m, now + 2 * JOB_MAIL_WINDOW_SEC + 2);
        assert_int_equal(sent.n, JOB_MAIL_USER_BUDGET + 1); /* once */
        sent_mail_done(&sent);
        manager_for_test_free(m);
}

/* Arrays: without ARRAY_TASKS one BEGIN as the first task starts and one END as the last
 * ends, in Slurm's "Array Summary" words; with it, each task's up to the cap, then the
 * summary. */
static void test_job_mail_array(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        SentMail sent = {};
        uint64_t first;
        Job *j;

        job_mail_set_sender(m, record_mail, &sent);
        first = submit_ok(m, "{" SUBMIT_TRUE ",\"name\":\"arr\",\"mail_events\":3,\"array\":\"1-3\"}");
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(manager_job_transition(m, manager_find_job(m, first), JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 1);
        assert_true(sent_has(&sent, 0, "Subject: Corral Array Summary Job_id=1_* (1) Name=arr Began\n"));
        assert_int_equal(manager_job_transition(m, manager_find_job(m, first + 1), JOB_EVENT_START, JOB_RUNNING, NULL),
                         0);
        j = manager_find_job(m, first);
        job_run_ensure(j)->exit_code = 0;
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        j = manager_find_job(m, first + 1);
        job_run_ensure(j)->exit_code = 2;
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_FAILED, "NonZeroExitCode"), 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 1); /* task 3 still pending */
        assert_int_equal(manager_job_transition(m, manager_find_job(m, first + 2), JOB_EVENT_CANCEL, JOB_CANCELLED,
                                                NULL),
                         0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 2);
        assert_true(sent_has(&sent, 1, "Subject: Corral Array Summary Job_id=1_* (1) Name=arr Ended, Mixed, "
                                       "ExitCode [0-2]\n"));

        /* 30 tasks with ARRAY_TASKS, all cancelled: the cap's worth, then the summary. */
        first = submit_ok(m, "{" SUBMIT_TRUE ",\"hold\":true,\"name\":\"big\",\"mail_events\":18,\"array\":\"0-29\"}");
        for (unsigned i = 0; i < 30; i++)
                assert_int_equal(manager_job_transition(m, manager_find_job(m, first + i), JOB_EVENT_CANCEL,
                                                        JOB_CANCELLED, NULL),
                                 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 2 + JOB_MAIL_ARRAY_TASKS_CAP + 1);
        assert_true(sent_has(&sent, 2, "Name=big Ended, Run time 00:00:00, CANCELLED"));
        assert_true(sent_has(&sent, sent.n - 1, "Subject: Corral Array Summary Job_id=4_* (4) Name=big Ended, "
                                                "CANCELLED, ExitCode [0-0]\n"));
        sent_mail_done(&sent);
        manager_for_test_free(m);
}

/* TIME_LIMIT_50: due at half the walltime the job has run, suspension not counted; sent
 * once by the mail timer's tick. TIME_LIMIT: as the job ends in TIMEOUT. */
static void test_job_mail_time_limit(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        SentMail sent = {};
        uint64_t due, s0;
        Job *j;

        job_mail_set_sender(m, record_mail, &sent);
        j = manager_find_job(m, submit_ok(m, "{" SUBMIT_TRUE ",\"name\":\"slow\",\"walltime_sec\":600,"
                                             "\"mail_events\":288}")); /* TIME_LIMIT_50 | TIME_LIMIT */
        assert_int_equal(job_shared(j)->mail_events, MAIL_TIME_LIMIT_50 | MAIL_TIME_LIMIT);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 0);

        s0 = j->start_time;
        assert_true(s0 > 0);
        assert_int_equal(job_mail_time_limit_due(j, 600, 50), s0 + 300);
        assert_int_equal(job_mail_time_limit_due(j, 600, 90), s0 + 540);
        assert_int_equal(job_mail_time_limit_due(j, 0, 50), UINT64_MAX); /* no walltime */
        job_run_ensure(j)->suspended_usec = 100 * UINT64_C(1000000);
        due = job_mail_time_limit_due(j, 600, 50);
        assert_int_equal(due, s0 + 400);
        j->state = JOB_SUSPENDED; /* paused: not due while suspended */
        assert_int_equal(job_mail_time_limit_due(j, 600, 50), UINT64_MAX);
        manager_mail_tick(m, due + 10);
        assert_int_equal(sent.n, 0);
        j->state = JOB_RUNNING;
        manager_mail_tick(m, due - 1);
        assert_int_equal(sent.n, 0);
        manager_mail_tick(m, due);
        assert_int_equal(sent.n, 1);
        assert_true(sent_has(&sent, 0, "Subject: Corral Job_id=1 Name=slow Reached 50% of time limit, Run time 00:05:00\n"));
        manager_mail_tick(m, due + 100);
        assert_int_equal(sent.n, 1); /* once */

        job_run_ensure(j)->exit_code = 0;
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_TIMEOUT, "TimeLimit"), 0);
        assert_int_equal(manager_commit(m), 0);
        assert_int_equal(sent.n, 2);
        assert_true(sent_has(&sent, 1, "Subject: Corral Job_id=1 Name=slow Reached time limit, Run time"));
        sent_mail_done(&sent);
        manager_for_test_free(m);
}

/* corral queue --long: List carries a charge when asked, and only where Show would. */
static void test_list_charges(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        JobCharge c = { .job_id = 1, .uid = NOBODY, .user = "nobody", .project = "p", .queue = "normal",
                        .start_time = 1000, .end_time = 1060, .cpus = 2, .run_usec = 60 * UINT64_C(1000000),
                        .charge_factor = 1 };
        json_object *r;

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        json_object_put(r);
        m->jobs[0]->start_time = 1000; /* it ran once, and was charged for it */
        acct_charge_compute(&c);
        assert_int_equal(store_record_charge(m->store, &c), 0);

        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{\"charges\":true}");
        assert_true(first_job_has_charge(r));
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{}");
        assert_false(first_job_has_charge(r));
        json_object_put(r);
        r = call(m, 1000, CORRAL_METHOD_LIST, "{\"charges\":true}");
        assert_false(first_job_has_charge(r));
        json_object_put(r);
        r = call(m, 0, CORRAL_METHOD_LIST, "{\"charges\":true}");
        assert_true(first_job_has_charge(r));
        json_object_put(r);
        expect_error(call(m, NOBODY, CORRAL_METHOD_LIST, "{\"charges\":1}"), "InvalidParameter", NULL);
        manager_for_test_free(m);
}

/* Every state change goes through the table: refused ones change nothing. */
static void test_transitions(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        Job *j = job_new();
        SubmitRequest full = SUBMIT_REQUEST_INIT, submitted = SUBMIT_REQUEST_INIT;

        j->id = m->next_id++;
        j->uid = NOBODY;
        j->user = intern_id("nobody");
        j->queue = intern_id("normal");
        j->project = intern_id("nogroup");
        submitted.workdir = strdup("/tmp");
        assert_int_equal(strv_extend(&submitted.argv, "/bin/true"), 0);
        assert_int_equal(job_set_request(j, &submitted), 0);
        assert_int_equal(job_set_submitted(j, &submitted), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_SUBMIT, JOB_QUEUED, NULL), 0);
        assert_int_equal(job_set_submitted(j, NULL), 0);
        submit_request_done(&submitted);
        assert_ptr_equal(manager_find_job(m, j->id), j);
        assert_string_equal(job_str(j, JOB_WORKDIR), "/tmp");
        assert_int_equal(store_load_request(m->store, j->id, &full), 0);
        assert_string_equal(full.argv[0], "/bin/true"); /* the store has what memory does not */
        submit_request_done(&full);

        /* Refused: nothing moves. */
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL), -EBUSY);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_COMPLETED, NULL), -EBUSY);
        assert_int_equal(j->state, JOB_QUEUED);

        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_HOLD, JOB_HELD, "JobHeldUser"), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_HOLD, JOB_HELD, "JobHeldUser"), -EALREADY);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RELEASE, JOB_QUEUED, NULL), 0);
        assert_true(j->eligible_time > 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        assert_int_equal(m->n_running, 1);
        assert_true(j->start_time > 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Suspended"), 0);
        assert_int_equal(m->n_running, 1); /* a suspended job keeps its resources */
        job_run_ensure(j)->suspend_start -= 5;             /* as if frozen for five seconds */
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL), 0);
        assert_true(job_run(j)->suspended_usec >= 5 * UINT64_C(1000000));
        job_run_ensure(j)->exit_code = 3;
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_FAILED, "NonZeroExitCode"), 0);
        assert_int_equal(m->n_running, 0);
        assert_true(j->end_time >= j->start_time);

        /* A requeue is a fresh run; the store has it. */
        j->requeue_count = 0;
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_REQUEUE, JOB_QUEUED, "Requeued"), 0);
        assert_int_equal(job_run(j)->exit_code, -1);
        assert_int_equal(j->start_time, 0);
        assert_int_equal(j->requeue_count, 1);
        assert_string_equal(job_reason(j), "Requeued");
        assert_int_equal(store_commit(m->store), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled"), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled"), -EALREADY);
        manager_for_test_free(m);
}

/* Hold, release, requeue as the methods apply the authorization table. */
static void test_hold_requeue_rules(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r;
        uint64_t id;
        char params[64];

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        id = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);

        /* An admin's hold binds the owner. */
        json_object_put(call(m, 0, CORRAL_METHOD_HOLD, params));
        assert_true(manager_find_job(m, id)->held_by_admin);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied", NULL);
        r = call(m, 0, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        /* The owner's own hold is theirs to release. */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_HOLD, params));
        assert_false(manager_find_job(m, id)->held_by_admin);
        r = call(m, NOBODY, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        /* Releasing a queued job is an invalid state, not a silent success. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "InvalidState", NULL);

        /* Cancel, then a requeue past the job limit is refused like a submission. */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_CANCEL, params));
        assert_int_equal(manager_find_job(m, id)->state, JOB_CANCELLED);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        json_object_put(r);
        m->config->max_jobs_per_user = 1;
        expect_error(call(m, NOBODY, CORRAL_METHOD_REQUEUE, params), "QuotaExceeded", "MaxJobsPerUser");
        m->config->max_jobs_per_user = 2;
        r = call(m, NOBODY, CORRAL_METHOD_REQUEUE, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(manager_find_job(m, id)->state, JOB_QUEUED);

        /* Another user may neither cancel nor hold it. */
        expect_error(call(m, NOBODY - 1, CORRAL_METHOD_CANCEL, params), "PermissionDenied", NULL);
        expect_error(call(m, NOBODY - 1, CORRAL_METHOD_HOLD, params), "PermissionDenied", NULL);
        manager_for_test_free(m);
}

static json_object *params_of(json_object *reply) {
        json_object *p;
        if (error_of(reply))
                fail_msg("error reply: %s", json_object_to_json_string(reply));
        assert_true(json_object_object_get_ex(reply, "parameters", &p));
        return p;
}

/* Show's "history": the submission, each recorded change with who made it, each run's
 * start and end, in the order they happened although all fall in one second; the changes
 * every job goes through are not recorded again (a trivial job writes no event row). */
static void expect_history(json_object *show, const char *const *want) {
        json_object *job, *h;
        size_t n = 0;

        assert_true(json_object_object_get_ex(show, "job", &job) || (job = show));
        assert_true(json_object_object_get_ex(job, "history", &h));
        for (; want[n]; n++) {
                json_object *e = json_object_array_get_idx(h, n), *v;
                char got[160];

                assert_non_null(e);
                snprintf(got, sizeof got, "%s %s%s%s",
                         json_object_object_get_ex(e, "event", &v) ? json_object_get_string(v) : "?",
                         json_object_object_get_ex(e, "state", &v) ? json_object_get_string(v) : "?",
                         json_object_object_get_ex(e, "by", &v) ? " by " : "",
                         json_object_object_get_ex(e, "by", &v) ? json_object_get_string(v) : "");
                assert_string_equal(got, want[n]);
                assert_true(json_object_object_get_ex(e, "time", &v) && json_object_get_int64(v) > 0);
        }
        assert_int_equal(json_object_array_length(h), n);
}

static void test_history(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        StoreJobEvent *ev = NULL;
        size_t n_ev = 0;
        json_object *r, *job;
        uint64_t id, plain;
        char params[64];
        Job *j;

        /* A job that only ran: no event of its own. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        plain = job_id_of(r);
        json_object_put(r);
        j = manager_find_job(m, plain);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        assert_int_equal(store_load_job_events(m->store, plain, 10, &ev, &n_ev), 0);
        assert_int_equal(n_ev, 0);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) plain);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        expect_history(params_of(r), (const char *const[]) { "submit PENDING", "start RUNNING", "end COMPLETED", NULL });
        json_object_put(r);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        id = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);
        json_object_put(call(m, NOBODY, CORRAL_METHOD_RELEASE, params));
        json_object_put(call(m, 0, CORRAL_METHOD_HOLD, params));
        json_object_put(call(m, 0, CORRAL_METHOD_RELEASE, params));
        j = manager_find_job(m, id);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        assert_int_equal(manager_job_transition_by(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Preempted", JOB_BY_SCHED), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL), 0);
        /* The run as accounting charges it when it ends, then a requeue of the ended job. */
        assert_int_equal(store_record_charge(m->store, &(JobCharge) { .job_id = id, .run = 0, .uid = NOBODY,
                                                                      .start_time = j->start_time,
                                                                      .end_time = j->start_time, .cpus = 1 }), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_END, JOB_FAILED, "NonZeroExitCode"), 0);
        json_object_put(call(m, NOBODY, CORRAL_METHOD_REQUEUE, params));
        assert_int_equal(j->state, JOB_QUEUED);
        json_object_put(call(m, NOBODY, CORRAL_METHOD_CANCEL, params));
        assert_int_equal(j->state, JOB_CANCELLED);
        assert_int_equal(store_commit(m->store), 0);

        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        expect_history(params_of(r), (const char *const[]) {
                "submit HELD", "release PENDING by owner", "hold HELD by admin", "release PENDING by admin",
                "start RUNNING", "suspend SUSPENDED by scheduler", "resume RUNNING", "end FAILED",
                "requeue PENDING by owner", "cancel CANCELLED by owner", NULL });
        json_object_put(r);
        /* A job held and released in a loop keeps its latest 256 changes, not all. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        j = manager_find_job(m, job_id_of(r));
        json_object_put(r);
        for (unsigned i = 0; i < 150; i++) {
                assert_int_equal(manager_job_transition(m, j, JOB_EVENT_HOLD, JOB_HELD, "JobHeldUser"), 0);
                assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RELEASE, JOB_QUEUED, NULL), 0);
        }
        assert_int_equal(store_load_job_events(m->store, j->id, 1000, &ev, &n_ev), 0);
        assert_int_equal(n_ev, 256);
        assert_string_equal(ev[n_ev - 1].event, "release");
        assert_string_equal(ev[0].event, "hold"); /* the 45th hold: 300 - 256 dropped, oldest first */
        store_job_events_free(ev, n_ev);
        ev = NULL;

        /* Another user sees the job, not its history. */
        r = call(m, NOBODY - 1, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(params_of(r), "job", &job));
        assert_false(json_object_object_get_ex(job, "history", NULL));
        json_object_put(r);
        manager_for_test_free(m);
}

static struct {
        int calls, sig, result;
        bool batch;
} signalled;

static int fake_signal(Manager *m, Job *j, int sig, bool batch_only, char **ret_refusal) {
        signalled.calls++;
        signalled.sig = sig;
        signalled.batch = batch_only;
        if (signalled.result == -EOPNOTSUPP)
                *ret_refusal = strdup("cannot here");
        return signalled.result;
}

/* scancel --signal: a running job's owner or an administrator, a signal in range; the job
 * goes on running (its state is not the method's to change). */
static void test_signal(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        JobBackendOps local = job_backend_local;
        json_object *r;
        uint64_t id;
        char params[128];
        Job *j;

        local.signal = fake_signal;
        m->backends[QUEUE_BACKEND_LOCAL] = &local;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        id = job_id_of(r);
        json_object_put(r);
        j = manager_find_job(m, id);

#define SIGNAL(uid, fmt, ...)                                                  \
        (snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "," fmt "}", id, ##__VA_ARGS__), \
         call(m, uid, CORRAL_METHOD_SIGNAL, params))

        /* Pending: nothing to signal, as Slurm refuses. */
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidState", NULL);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_START, JOB_RUNNING, NULL), 0);
        /* Its scope not started yet: nothing to signal either. */
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidState", NULL);
        assert_int_equal(manager_job_mark(m, j, JOB_MARK_LAUNCHED, JOB_BY_CORRALD), 0);
        expect_error(SIGNAL(NOBODY, "\"signal\":0"), "InvalidParameter", NULL);
        expect_error(SIGNAL(NOBODY, "\"signal\":65"), "InvalidParameter", NULL);
        expect_error(SIGNAL(NOBODY, "\"signal\":\"USR1\""), "InvalidParameter", NULL);
        expect_error(SIGNAL(NOBODY, "\"batch\":true"), "InvalidParameter", NULL);
        expect_error(SIGNAL(NOBODY, "\"signal\":10,\"batch\":1"), "InvalidParameter", NULL);
        /* Another user's job: refused before the backend hears of it. */
        expect_error(SIGNAL(NOBODY - 1, "\"signal\":10"), "PermissionDenied", NULL);
        assert_int_equal(signalled.calls, 0);

        r = SIGNAL(NOBODY, "\"signal\":10");
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(signalled.calls, 1);
        assert_int_equal(signalled.sig, 10);
        assert_false(signalled.batch);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_false(j->cancel_requested);
        r = SIGNAL(0, "\"signal\":15,\"batch\":true"); /* an administrator */
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(signalled.sig, 15);
        assert_true(signalled.batch);

        /* Its processes gone meanwhile; a backend that cannot. */
        signalled.result = -ESRCH;
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidState", NULL);
        signalled.result = -EOPNOTSUPP;
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidParameter", "cannot here");
        signalled.result = 0;

        /* Suspended (frozen: Slurm refuses too), and ended. */
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_SUSPEND, JOB_SUSPENDED, "Suspended"), 0);
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidState", NULL);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_RESUME, JOB_RUNNING, NULL), 0);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, "Cancelled"), 0);
        expect_error(SIGNAL(NOBODY, "\"signal\":10"), "InvalidState", NULL);
        assert_int_equal(signalled.calls, 4);
#undef SIGNAL
        manager_for_test_free(m);
}

static void put(const char *dir, const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, name);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static const char *project_of(Manager *m, uint64_t id) {
        Job *j = manager_find_job(m, id);
        assert_non_null(j);
        return job_project(j);
}

/* With project files: the default project, naming one, membership, queues, no project. */
static void test_projects_submit(void **state) {
        Tree *t = *state;
        char p[256];
        Manager *m;
        json_object *r;

        snprintf(p, sizeof p, "%s/projects.d", t->dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put(t->dir, "projects.d/astro.conf", "[Project]\nMembers=nobody\nQueues=normal\n");
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=@nogroup\n");
        put(t->dir, "projects.d/closed.conf", "[Project]\nMembers=root\n");
        m = manager_for_test(t->dir);

        /* In two projects, none the default, neither named like the primary group. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}"), "InvalidParameter",
                     "several projects (astro, geo)");
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"project\":\"geo\"}");
        assert_string_equal(project_of(m, job_id_of(r)), "geo");
        json_object_put(r);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"project\":\"closed\"}"),
                     "PermissionDenied", "Members=");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"project\":\"nope\"}"),
                     "InvalidParameter", NULL);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT,
                          "{" SUBMIT_TRUE ",\"project\":\"astro\",\"queue\":\"express\"}"),
                     "PermissionDenied", "may not use queue express");
        /* Root may charge any project. */
        r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"project\":\"astro\"}");
        assert_null(error_of(r));
        json_object_put(r);

        /* A default settles it; a user in no project is told what an admin does. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=@nogroup\nDefaultFor=nobody\n");
        put(t->dir, "projects.d/astro.conf", "[Project]\nMembers=daemon\n");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), 0);
        }
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_string_equal(project_of(m, job_id_of(r)), "geo");
        json_object_put(r);
        expect_error(call(m, 2, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}"), "NoProject",
                     "systemctl reload corrald");

        /* DefaultFor= alone lets its user in, the administrator having chosen the project
         * for them (authz.c, AUTHZ_USE_PROJECT), whether they name it or not. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=daemon\nDefaultFor=nobody\n");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), 0);
        }
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_string_equal(project_of(m, job_id_of(r)), "geo");
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"project\":\"geo\"}");
        assert_string_equal(project_of(m, job_id_of(r)), "geo");
        json_object_put(r);
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=@nogroup\nDefaultFor=nobody\n");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), 0);
        }

        /* A queue's own rules: MaxCPUsPerJob=, AllowProjects=, AllowGroups= (admins pass). */
        put(t->dir, "corral.conf", "[Queue]\nName=normal\nMaxCPUsPerJob=2\nAllowProjects=astro\n"
                                   "[Queue]\nName=staff\nAllowGroups=adm\n");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), 0);
        }
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":3}"), "InvalidParameter", NULL);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}"), "PermissionDenied",
                     "AllowProjects="); /* nobody's default, geo */
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"queue\":\"staff\"}"),
                     "PermissionDenied", "AllowGroups=");
        r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"queue\":\"staff\",\"project\":\"geo\"}");
        assert_null(error_of(r));
        json_object_put(r);
        r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"project\":\"geo\"}");
        assert_null(error_of(r)); /* root passes AllowProjects= */
        json_object_put(r);
        put(t->dir, "corral.conf", "");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), 0);
        }

        /* A broken file: the reload fails whole, the old configuration stays and says why. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=@nogroup\nShare=lots\n");
        {
                char *err = NULL;
                assert_int_equal(manager_reload(m, &err), -EINVAL);
                assert_non_null(strstr(err, "geo.conf:3: invalid value for Share="));
                free(err);
        }
        assert_non_null(m->config_error);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_string_equal(project_of(m, job_id_of(r)), "geo");
        json_object_put(r);
        manager_for_test_free(m);
}

static void reload_ok(Manager *m) {
        char *err = NULL;
        if (manager_reload(m, &err) < 0)
                fail_msg("reload: %s", strna(err));
}

/* Release and Requeue check again what Submit checked of the project and the queue: a
 * user removed from the project, a project's Queues= or a queue's AllowProjects= that
 * no longer take the job, a queue gone; each refusal names what changed, and the job
 * stays as it was. An administrator may still release (as they may submit to any
 * project), but not into a queue the project may no longer use. */
static void test_release_requeue_recheck(void **state) {
        Tree *t = *state;
        char p[256], params[64], params_done[64];
        Manager *m;
        json_object *r;
        uint64_t held, done;

        snprintf(p, sizeof p, "%s/projects.d", t->dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        m = manager_for_test(t->dir);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        held = job_id_of(r);
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        done = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) held);
        snprintf(params_done, sizeof params_done, "{\"job_id\":%llu}", (unsigned long long) done);
        r = call(m, NOBODY, CORRAL_METHOD_CANCEL, params_done);
        assert_null(error_of(r));
        json_object_put(r);

        /* Removed from the project. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=root\n");
        reload_ok(m);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied",
                     "nobody is no longer a member of project geo (its Members=)");
        assert_int_equal(manager_find_job(m, held)->state, JOB_HELD);
        expect_error(call(m, NOBODY, CORRAL_METHOD_REQUEUE, params_done), "PermissionDenied",
                     "no longer a member of project geo");
        assert_int_equal(manager_find_job(m, done)->state, JOB_CANCELLED);

        /* A member again, but the project may no longer use the job's queue: not even root. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\nQueues=express\n");
        reload_ok(m);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied",
                     "project geo may no longer use queue normal (its Queues=)");
        expect_error(call(m, 0, CORRAL_METHOD_REQUEUE, params_done), "PermissionDenied",
                     "may no longer use queue normal");

        /* The queue's own access changed. */
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n");
        put(t->dir, "corral.conf", "[Queue]\nName=normal\nAllowProjects=astro\n");
        reload_ok(m);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied",
                     "may no longer go back to its queue: queue normal takes only jobs of the projects astro");
        expect_error(call(m, NOBODY, CORRAL_METHOD_REQUEUE, params_done), "PermissionDenied",
                     "AllowProjects=");

        /* The queue is gone. */
        put(t->dir, "corral.conf", "[Queue]\nName=normal\nDisabled=yes\n");
        reload_ok(m);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied",
                     "queue normal no longer exists");

        /* As it was: both go through. */
        put(t->dir, "corral.conf", "");
        reload_ok(m);
        r = call(m, NOBODY, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(manager_find_job(m, held)->state, JOB_QUEUED);
        r = call(m, NOBODY, CORRAL_METHOD_REQUEUE, params_done);
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(manager_find_job(m, done)->state, JOB_QUEUED);

        /* Removed again: root still releases (an administrator may charge any project). */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_HOLD, params));
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=root\n");
        reload_ok(m);
        r = call(m, 0, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        manager_for_test_free(m);
}

/* A project limit blocks a job (BLOCKED, the limit named with its numbers) and lets it go
 * when the limit allows: through the scheduling pass and the transitions. */
static void test_blocked_by_limit(void **state) {
        Tree *t = *state;
        char p[256], params[64];
        Manager *m;
        json_object *r;
        uint64_t a, b;
        Job *ja, *jb;

        snprintf(p, sizeof p, "%s/projects.d", t->dir);
        assert_int_equal(mkdir(p, 0755), 0);
        put(t->dir, "projects.d/geo.conf", "[Project]\nMembers=nobody\n[Limits]\nMaxRunningJobs=1\n");
        m = manager_for_test(t->dir);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        a = job_id_of(r);
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        b = job_id_of(r);
        json_object_put(r);

        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a);
        jb = manager_find_job(m, b);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_BLOCKED);
        assert_string_equal(job_reason(jb), "MaxRunningJobs");
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) b);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        if (!strstr(json_object_to_json_string(r), "MaxRunningJobs (2 > 1)"))
                fail_msg("show: %s", json_object_to_json_string(r));
        assert_non_null(strstr(json_object_to_json_string(r), "BLOCKED"));
        {
                /* Its argv is not in memory (JobRequest): details read it back from the store. */
                json_object *pp, *job, *argv;
                assert_true(json_object_object_get_ex(r, "parameters", &pp));
                assert_true(json_object_object_get_ex(pp, "job", &job));
                assert_true(json_object_object_get_ex(job, "argv", &argv));
                assert_string_equal(json_object_get_string(json_object_array_get_idx(argv, 0)), "/bin/true");
        }
        json_object_put(r);

        /* corral why says which limit, with its numbers, and the priority's terms. */
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        if (!strstr(json_object_to_json_string(r), "MaxRunningJobs, which it would take to 2 (limit 1)") ||
            !strstr(json_object_to_json_string(r), "\"name\": \"queue\""))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);
        expect_error(call(m, NOBODY - 1, CORRAL_METHOD_WHY, params), "PermissionDenied", NULL);

        /* Passes stopped for a while: their memory is given back, and the next pass
         * decides as before. */
        manager_sched_trim(m);
        assert_null(m->sched_jobs);
        /* Still over the limit on the next pass: stays blocked, no transition. */
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(jb->state, JOB_BLOCKED);

        /* The first ends: the blocked one starts. */
        assert_int_equal(manager_job_transition(m, ja, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(jb->limit_value, 0);
        manager_for_test_free(m);
}


/* Dependencies through the pass: a job waits for its afterok one to end well and then
 * starts; one whose afternotok job ended well can never start and is cancelled; why
 * names what it waits for. (Memory keeps them as the pass takes them, their status
 * refreshed before each pass.) */
static void test_dependencies(void **state) {
        Tree *t = *state;
        char params[256];
        Manager *m;
        json_object *r;
        uint64_t a, b, c;
        Job *ja, *jb, *jc;

        m = manager_for_test(t->dir);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        a = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params,
                 "{" SUBMIT_TRUE ",\"dependencies\":[{\"type\":\"afterany\",\"job_id\":%llu},"
                 "{\"type\":\"afterok\",\"job_id\":%llu}]}",
                 (unsigned long long) a, (unsigned long long) a);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
        b = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params,
                 "{" SUBMIT_TRUE ",\"dependencies\":[{\"type\":\"afternotok\",\"job_id\":%llu}]}",
                 (unsigned long long) a);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
        c = job_id_of(r);
        json_object_put(r);

        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a);
        jb = manager_find_job(m, b);
        jc = manager_find_job(m, c);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_QUEUED);
        assert_string_equal(job_reason(jb), "Dependency");
        assert_int_equal(jb->req.n_dependencies, 2);
        assert_int_equal(jb->req.dependencies[1].job_id, a);
        assert_int_equal(jb->req.dependencies[1].type, SCHED_DEP_AFTEROK);
        /* As the pass found it (before it started a), then as the next one does. */
        assert_int_equal(jb->req.dependencies[1].status, SCHED_DEP_UNKNOWN);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(jb->req.dependencies[1].status, SCHED_DEP_STARTED);
        assert_int_equal(jb->state, JOB_QUEUED);
        assert_int_equal(jc->state, JOB_QUEUED);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) b);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        snprintf(params, sizeof params, "it waits for job %llu (afterok)", (unsigned long long) a);
        if (!strstr(json_object_to_json_string(r), params))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* It ends well: the afterok one starts, the afternotok one never can. */
        assert_int_equal(manager_job_transition(m, ja, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(jc->state, JOB_CANCELLED);
        assert_string_equal(job_reason(jc), "DependencyNeverSatisfied");
        manager_for_test_free(m);
}

static int count_stored(Job *j, void *userdata) {
        (*(size_t *) userdata)++;
        job_free(j);
        return 0;
}

/* Four GPUs on the two nodes, two models; built here as the gpu-node discovery would. */
static char *a100_features[] = { (char *) "a100", (char *) "nvlink", NULL };
static char *t4_features[] = { (char *) "t4", NULL };
static Device test_devices[] = {
        { .name = (char *) "gpu0", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
          .pci_address = (char *) "0000:3b:00.0", .numa_node = 0, .features = a100_features },
        { .name = (char *) "gpu1", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "NVIDIA A100-SXM4-40GB",
          .pci_address = (char *) "0000:5e:00.0", .numa_node = 0, .features = a100_features },
        { .name = (char *) "gpu2", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "Tesla T4",
          .pci_address = (char *) "0000:af:00.0", .numa_node = 1, .features = t4_features },
        { .name = (char *) "gpu3", .vendor = DEVICE_VENDOR_NVIDIA, .model = (char *) "Tesla T4",
          .pci_address = (char *) "0000:d8:00.0", .numa_node = 1, .features = t4_features },
};

/* corral why names the GPUs a job waits for: how many of those it may have are free,
 * which, and who holds the others. */
static void test_why_gpus(void **state) {
        static const SchedGpu gpus[4] = { { 0 }, { 0 }, { 1 }, { 1 } };
        Tree *t = *state;
        char params[64];
        Manager *m;
        json_object *r;
        uint64_t a, b;
        Job *ja;

        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };

        m = manager_for_test(t->dir);
        m->machine.gpus = gpus;
        m->machine.n_gpus = 4;
        m->devices = &ds;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":8}");
        a = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a);
        assert_int_equal(ja->state, JOB_RUNNING);
        job_alloc(ja)->gpu_mask = 0x7; /* as if it held GPUs 0-2 */

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":1,\"gpus\":2}");
        b = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, b)->state, JOB_QUEUED);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) b);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        snprintf(params, sizeof params, "1 of 4 free (gpu3 on node 1); held by job %llu", (unsigned long long) a);
        if (!strstr(json_object_to_json_string(r), "it waits for 2 GPUs: ") ||
            !strstr(json_object_to_json_string(r), params))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);
        m->devices = NULL; /* not the manager's to free */
        manager_for_test_free(m);
}

/* GPU requests the machine can never satisfy are refused with its numbers, by Submit and
 * TestSubmit alike; the info reply lists the devices and who holds them; a job's info
 * carries its GPUs. */
static void test_gpu_submit(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        json_object *r, *p, *v, *d;
        uint64_t id;

        /* No devices (m->devices NULL): any GPU, any constraint, is refused. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":1}"), "InvalidParameter",
                     "--gpus=1: this machine has no GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":1}"), "InvalidParameter",
                     "--gpus=1: this machine has no GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"constraint\":\"gpu\"}"),
                     "InvalidParameter", "--constraint=gpu: no device on this machine has these features (it has none)");
        r = call(m, NOBODY, CORRAL_METHOD_GET_INFO, "{}");
        assert_false(json_object_object_get_ex(params_of(r), "devices", &v));
        json_object_put(r);

        m->devices = &ds;
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":9}"), "InvalidParameter",
                     "--gpus=9: this machine has 4 GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":5}"), "InvalidParameter",
                     "--gpus=5: this machine has 4 GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":3,\"gpu_type\":\"a100\"}"),
                     "InvalidParameter",
                     "--gpus=3 of type a100: this machine has 2 such GPUs (it has: gpu0 NVIDIA A100-SXM4-40GB "
                     "(a100, nvlink); gpu1 NVIDIA A100-SXM4-40GB (a100, nvlink); gpu2 Tesla T4 (t4); gpu3 Tesla T4 (t4))");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":1,\"constraint\":\"h100|a10\"}"),
                     "InvalidParameter", "--gpus=1 with --constraint=h100|a10: this machine has 0 such GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":2,\"constraint\":\"t4&nvlink\"}"),
                     "InvalidParameter", "this machine has 0 such GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"constraint\":\"h100\"}"),
                     "InvalidParameter", "--constraint=h100: no device on this machine has these features (it has: gpu0");

        /* What the machine has is accepted: by type (a feature, the model, Slurm's type
         * name from the model, case aside), by constraint, or a constraint alone. */
        static const char *const good[] = {
                "\"gpus\":4", "\"gpus\":2,\"gpu_type\":\"A100\"", "\"gpus\":2,\"gpu_type\":\"tesla_t4\"",
                "\"gpus\":1,\"gpu_type\":\"NVIDIA_A100-SXM4-40GB\"", "\"gpus\":4,\"constraint\":\"a100|t4\"",
                "\"gpus\":2,\"constraint\":\"(a100|h100)&nvlink\"", "\"constraint\":\"t4\"",
                "\"gpus\":1,\"gpu_type\":\"gpu3\"",
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                char params[256];
                snprintf(params, sizeof params, "{" SUBMIT_TRUE ",\"hold\":true,%s}", good[i]);
                r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
                if (error_of(r))
                        fail_msg("%s refused: %s", good[i], json_object_to_json_string(r));
                json_object_put(r);
        }

        /* A job holding GPUs 1 and 3: its info, and the devices' holders. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":2,\"gpu_type\":\"gpu1\"}");
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":2}");
        id = job_id_of(r);
        json_object_put(r);
        Job *j = manager_find_job(m, id);
        job_run_ensure(j)->alloc = calloc(1, sizeof(SchedAllocation));
        assert_non_null(job_alloc(j));
        job_alloc(j)->gpu_mask = UINT64_C(0xa);
        JobState held_state = j->state;
        j->state = JOB_RUNNING; /* an ended job's allocation holds no GPU */
        {
                char params[64];
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                const char *bad;

                snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
                r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
                assert_true(json_object_object_get_ex(params_of(r), "job", &v));
                assert_int_equal(job_info_from_json(v, &info, &bad), 0);
                assert_int_equal(info.gpus, 2);
                assert_string_equal(info.gpus_allocated, "1,3");
                json_object_put(r);
        }
        r = call(m, NOBODY, CORRAL_METHOD_GET_INFO, "{}");
        p = params_of(r);
        assert_true(json_object_object_get_ex(p, "gpus", &v));
        assert_int_equal(json_object_get_int(v), 4);
        assert_true(json_object_object_get_ex(p, "devices", &d));
        {
                DeviceInfo *di = NULL;
                size_t n = 0;
                const char *bad = NULL;

                assert_int_equal(device_info_array_from_json(d, &di, &n, &bad), 0);
                assert_int_equal(n, 4);
                assert_string_equal(di[2].name, "gpu2");
                assert_string_equal(di[2].model, "Tesla T4");
                assert_string_equal(di[2].vendor, "nvidia");
                assert_string_equal(di[2].pci_address, "0000:af:00.0");
                assert_int_equal(di[2].numa_node, 1);
                assert_int_equal(di[0].job_id, 0);
                assert_int_equal(di[1].job_id, id);
                assert_int_equal(di[2].job_id, 0);
                assert_int_equal(di[3].job_id, id);
                assert_non_null(di[3].user);
                assert_string_equal(di[0].features[1], "nvlink");
                device_info_array_free(di, n);
        }
        json_object_put(r);
        j->state = held_state;

        m->devices = NULL; /* not the manager's to free */
        manager_for_test_free(m);
}

/* Shards: what no GPU can give is refused with the numbers; two shard:1 jobs run on one
 * GPU of 2 shards, a whole-GPU job of that type waits and why says whose; the info reply
 * lists the GPU's shards and holders; a job's info and environment carry its shards. */
static void test_shard_jobs(void **state) {
        /* gpu0 and gpu1 (a100) have 2 shards, the T4s none. */
        static const SchedGpu gpus[4] = { { .node = 0, .shards = 2 }, { .node = 0, .shards = 2 }, { 1 }, { 1 } };
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        DeviceSet ds = { .devices = test_devices, .n_devices = ELEMENTSOF(test_devices) };
        _cleanup_(job_spec_freep) JobSpec *spec = NULL;
        uint64_t a, b, w, x;
        char params[160];
        json_object *r, *v;
        Job *ja, *jb;

        static unsigned numa_ids[2] = { 0, 1 };

        m->devices = &ds;
        m->numa_ids = numa_ids;
        m->machine.gpus = gpus;
        m->machine.n_gpus = 4;
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":3}"), "InvalidParameter",
                     "--gres=shard:3: a GPU here has at most 2 shards");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":5}"), "InvalidParameter",
                     "--gres=shard:5: a GPU here has at most 2 shards");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1,\"gpu_type\":\"t4\"}"),
                     "InvalidParameter", "--gres=shard:1: no GPU of type t4 here is shared (Shards= is not set)");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1,\"gpus\":1}"),
                     "InvalidParameter", "a job takes whole GPUs or shards of one GPU");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1,\"exclusive\":true}"),
                     "InvalidParameter", "an exclusive job holds whole GPUs");

        a = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1,\"gpu_type\":\"gpu0\"}"));
        b = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1}"));
        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a), jb = manager_find_job(m, b);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(job_alloc(ja)->gpu_mask, 1);
        assert_int_equal(job_alloc(jb)->gpu_mask, 1); /* packed with a on gpu0, gpu1 left whole */
        assert_int_equal(job_alloc(ja)->shards, 1);
        assert_int_equal(job_alloc(jb)->shards, 1);
        assert_int_equal(job_alloc(jb)->shards_of, 2); /* charged 1/2 of the GPU's hours */

        /* A whole gpu0 waits for both; a third shard of it too, with the numbers. */
        w = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"gpus\":1,\"gpu_type\":\"gpu0\"}"));
        x = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"shards\":1,\"gpu_type\":\"gpu0\"}"));
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, w)->state, JOB_QUEUED);
        assert_int_equal(manager_find_job(m, x)->state, JOB_QUEUED);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) w);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        snprintf(params, sizeof params, "it waits for 1 GPUs: 0 of 1 free; held by jobs %llu (shards), %llu (shards)",
                 (unsigned long long) a, (unsigned long long) b);
        if (!strstr(json_object_to_json_string(r), params))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) x);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        if (!strstr(json_object_to_json_string(r), "it waits for 1 shard of one GPU: gpu0 has 0 of 2 free"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* The info reply: gpu0 shared by a and b, no one holder. */
        r = call(m, NOBODY, CORRAL_METHOD_GET_INFO, "{}");
        assert_true(json_object_object_get_ex(params_of(r), "devices", &v));
        {
                DeviceInfo *di = NULL;
                size_t n = 0;
                const char *bad = NULL;

                assert_int_equal(device_info_array_from_json(v, &di, &n, &bad), 0);
                assert_int_equal(di[0].job_id, 0);
                assert_int_equal(di[0].shards, 2);
                assert_int_equal(di[0].shards_used, 2);
                assert_int_equal(di[0].n_shard_holders, 2);
                assert_int_equal(di[0].shard_holders[0].job_id, a);
                assert_int_equal(di[0].shard_holders[1].shards, 1);
                assert_int_equal(di[1].shards_used, 0);
                assert_int_equal(di[2].shards, 0);
                device_info_array_free(di, n);
        }
        json_object_put(r);

        /* Show: its shards and GPU; its spec: that GPU, and SLURM_SHARDS_ON_NODE. */
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) b);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_true(json_object_object_get_ex(params_of(r), "job", &v));
        {
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                const char *bad;

                assert_int_equal(job_info_from_json(v, &info, &bad), 0);
                assert_int_equal(info.shards, 1);
                assert_int_equal(info.gpus, 0);
                assert_string_equal(info.gpus_allocated, "0");
        }
        json_object_put(r);
        assert_int_equal(manager_build_spec(m, jb, &spec), 0);
        assert_string_equal(strv_env_get(spec->device_environment, "CUDA_VISIBLE_DEVICES"), "0");
        assert_string_equal(strv_env_get(spec->device_environment, "SLURM_JOB_GPUS"), "0");
        assert_string_equal(strv_env_get(spec->device_environment, "SLURM_SHARDS_ON_NODE"), "1");

        m->numa_ids = NULL;
        m->devices = NULL; /* not the manager's to free */
        manager_for_test_free(m);
}

/* TestSubmit (--test-only): Submit's checks and errors, an estimate from a what-if pass,
 * and nothing queued, stored or numbered. */
static void test_test_submit(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r, *p, *v;
        uint64_t now, id, est;
        size_t stored = 0;

        /* An empty machine: it would start now. */
        now = (uint64_t) time(NULL);
        r = call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":4,\"walltime_sec\":60}");
        p = params_of(r);
        assert_true(json_object_object_get_ex(p, "accepted", &v) && json_object_get_boolean(v));
        assert_true(json_object_object_get_ex(p, "est_start", &v));
        assert_true((uint64_t) json_object_get_int64(v) >= now && (uint64_t) json_object_get_int64(v) <= now + 5);
        assert_false(json_object_object_get_ex(p, "reason", &v));
        assert_true(json_object_object_get_ex(p, "queue", &v));
        json_object_put(r);
        assert_int_equal(m->n_jobs, 0);
        assert_int_equal(m->next_id, 1);

        /* The machine full for an hour: it would wait for Resources until then. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":8,\"walltime_sec\":3600}");
        id = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, id)->state, JOB_RUNNING);
        m->last_estimate_end = 0;
        r = call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":2,\"walltime_sec\":60}");
        p = params_of(r);
        assert_true(json_object_object_get_ex(p, "reason", &v));
        assert_string_equal(json_object_get_string(v), "Resources");
        assert_true(json_object_object_get_ex(p, "est_start", &v));
        est = (uint64_t) json_object_get_int64(v);
        assert_int_equal(est, manager_find_job(m, id)->start_time + 3600);
        json_object_put(r);

        /* Spaced out like passes: a second what-if too soon has no estimate, but still
         * says the job would be accepted. */
        m->last_schedule_usec = 500000;
        r = call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE "}");
        p = params_of(r);
        assert_true(json_object_object_get_ex(p, "estimate_unavailable", &v));
        assert_false(json_object_object_get_ex(p, "est_start", &v));
        assert_true(json_object_object_get_ex(p, "accepted", &v) && json_object_get_boolean(v));
        json_object_put(r);
        m->last_schedule_usec = 0;

        /* Held: accepted, no estimate. */
        m->last_estimate_end = 0;
        r = call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        p = params_of(r);
        assert_true(json_object_object_get_ex(p, "reason", &v));
        assert_string_equal(json_object_get_string(v), "JobHeldUser");
        json_object_put(r);

        /* Refused as Submit refuses. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":9}"), "InvalidParameter",
                     "more CPUs than this machine has");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE ",\"nice\":-1}"), "PermissionDenied",
                     "administrators");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{\"argv\":[\"/bin/true\"],\"workdir\":\"rel\"}"),
                     "InvalidParameter", NULL);
        m->config->max_jobs_per_user = 1;
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, "{" SUBMIT_TRUE "}"), "QuotaExceeded",
                     "MaxJobsPerUser=1");
        m->config->max_jobs_per_user = 0;

        /* Only the one real submission exists, in memory and in the store. */
        assert_int_equal(m->n_jobs, 1);
        assert_int_equal(m->next_id, id + 1);
        assert_int_equal(store_commit(m->store), 0);
        assert_int_equal(store_load_jobs(m->store, count_stored, &stored), 0);
        assert_int_equal(stored, 1);

        /* An sbatch list: one task per index, the list kept in the stored request. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"12,1,6-7%2\"}");
        id = job_id_of(r);
        json_object_put(r);
        assert_int_equal(m->n_jobs, 5);
        {
                static const uint32_t want[] = { 1, 6, 7, 12 };
                for (size_t i = 0; i < 4; i++) {
                        Job *task = manager_find_job(m, id + i);
                        assert_non_null(task);
                        assert_int_equal(task->array_job_id, id);
                        assert_int_equal(task->array_task_id, want[i]);
                        assert_int_equal(job_shared(task)->array.max_concurrent, 2);
                }
        }
        manager_for_test_free(m);
}

/* List's "history": the jobs the store keeps beyond the day the daemon has in memory
 * (sacct), paged like the rest, filtered by when they ended; array tasks whose first task
 * is on an earlier page still have their request. */
static void test_list_history(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        uint64_t now = (uint64_t) time(NULL), old, array, next = 0, seen = 0;
        char params[160];
        json_object *r;
        Job *j;

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        old = job_id_of(r);
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"1-3\",\"name\":\"arr\"}");
        array = job_id_of(r);
        json_object_put(r);
        /* The first job and the array's first task ended a month ago, and are purged. */
        j = manager_find_job(m, old);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, NULL), 0);
        j->end_time = now - 30 * 86400;
        assert_int_equal(manager_job_save(m, j), 0);
        j = manager_find_job(m, array);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, NULL), 0);
        j->end_time = now - 30 * 86400;
        assert_int_equal(manager_job_save(m, j), 0);
        assert_int_equal(store_commit(m->store), 0);
        manager_purge_finished(m, now);
        assert_null(manager_find_job(m, old));
        assert_int_equal(m->n_jobs, 2);

        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{\"states\":[\"all\"]}");
        assert_int_equal(page_len(r, &next), 2);
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_LIST, "{\"states\":[\"all\"],\"history\":true}");
        assert_int_equal(page_len(r, &next), 4);
        assert_int_equal(next, 0);
        if (!strstr(json_object_to_json_string(r), "\"CANCELLED\""))
                fail_msg("history: %s", json_object_to_json_string(r));
        json_object_put(r);
        /* Ended before the window: left out; unfinished ones stay. */
        snprintf(params, sizeof params, "{\"states\":[\"all\"],\"history\":true,\"ended_since\":%llu}",
                 (unsigned long long) (now - 86400));
        r = call(m, NOBODY, CORRAL_METHOD_LIST, params);
        assert_int_equal(page_len(r, &next), 2);
        json_object_put(r);
        /* One job a page: the array's later tasks after its first on another page. */
        do {
                size_t len;
                json_object *p, *jobs;

                snprintf(params, sizeof params, "{\"states\":[\"all\"],\"history\":true,\"limit\":1,\"after_id\":%llu}",
                         (unsigned long long) next);
                r = call(m, NOBODY, CORRAL_METHOD_LIST, params);
                len = page_len(r, &next);
                assert_true(json_object_object_get_ex(r, "parameters", &p) &&
                            json_object_object_get_ex(p, "jobs", &jobs));
                if (len == 1 && seen >= 2 && !strstr(json_object_to_json_string(jobs), "\"arr\""))
                        fail_msg("array task without its request: %s", json_object_to_json_string(jobs));
                seen += len;
                json_object_put(r);
        } while (next && seen < 10);
        assert_int_equal(seen, 4);
        expect_error(call(m, NOBODY, CORRAL_METHOD_LIST, "{\"history\":1}"), "InvalidParameter", NULL);

        /* Show reaches it too (sacct's details, corral show); a job never submitted is none. */
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) old);
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, params);
        assert_null(error_of(r));
        if (!strstr(json_object_to_json_string(r), "\"CANCELLED\""))
                fail_msg("show: %s", json_object_to_json_string(r));
        json_object_put(r);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SHOW, "{\"job_id\":999}"), "NoSuchJob", NULL);
        manager_for_test_free(m);
}

/* The per-user index agrees with the table: every job with a user is in its user's list,
 * once, in id order, and the lists hold nothing else. */
static void assert_user_index(Manager *m) {
        size_t listed = 0, with_user = 0;

        for (size_t u = 0; u < m->n_user_jobs; u++) {
                const UserJobs *uj = &m->user_jobs[u];
                assert_true(u == 0 || (uintptr_t) m->user_jobs[u - 1].user < (uintptr_t) uj->user);
                for (size_t i = 0; i < uj->n; i++) {
                        assert_ptr_equal(job_user(uj->jobs[i]), uj->user);
                        assert_ptr_equal(manager_find_job(m, uj->jobs[i]->id), uj->jobs[i]);
                        assert_true(i == 0 || uj->jobs[i - 1]->id < uj->jobs[i]->id);
                }
                listed += uj->n;
        }
        for (size_t i = 0; i < m->n_jobs; i++)
                with_user += job_user(m->jobs[i]) != NULL;
        assert_int_equal(listed, with_user);
}

/* A job submitted held asks for no scheduling pass (nothing a pass decides changed); one
 * submitted to run, or released, does. */
static void test_held_submit_no_pass(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        char params[64];
        json_object *r;
        uint64_t id;

        m->sched_needed = false;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"1-3\"}");
        id = job_id_of(r);
        json_object_put(r);
        assert_false(m->sched_needed);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);
        r = call(m, NOBODY, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_true(m->sched_needed);
        m->sched_needed = false;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        json_object_put(r);
        assert_true(m->sched_needed);
        manager_for_test_free(m);
}

/* Passes are spaced by what the whole of one took (the queue built for sched/, the pass,
 * its results applied), not by the pass alone: with every job waiting for a begin time the
 * rest was most of it, and a pass after nearly every submit held the filling of a large
 * queue to a crawl. */
static void test_pass_spacing(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        char params[128];
        json_object *r;

        snprintf(params, sizeof params, "{" SUBMIT_TRUE ",\"begin_time\":%llu}",
                 (unsigned long long) time(NULL) + 86400);
        for (int i = 0; i < 20; i++) {
                r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, params);
                assert_null(error_of(r));
                json_object_put(r);
        }
        assert_int_equal(manager_schedule(m), 0);
        assert_true(m->last_pass_end > 0);
        assert_true(m->last_schedule_usec >= m->last_pass_usec);
        assert_int_equal(m->last_pass_jobs, 20);

        /* A fast pass in a slow whole: the next one waits four times the whole. */
        m->last_pass_usec = 10;
        m->last_schedule_usec = 100000;
        m->last_pass_end = now_usec(CLOCK_MONOTONIC);
        assert_true(manager_sched_deferred(m));
        m->last_pass_end -= 4 * 100000 + 1;
        assert_false(manager_sched_deferred(m));
        /* Under a millisecond: never spaced. */
        m->last_schedule_usec = 999;
        m->last_pass_end = now_usec(CLOCK_MONOTONIC);
        assert_false(manager_sched_deferred(m));
        manager_for_test_free(m);
}

/* Lists one user's jobs over pages of `limit`: their ids, in order. */
static size_t list_user(Manager *m, uid_t as, const char *user, unsigned limit, uint64_t *ids, size_t max) {
        uint64_t next = 0;
        size_t n = 0;
        char params[160];

        do {
                json_object *r, *p, *jobs;
                snprintf(params, sizeof params, "{\"user\":\"%s\",\"limit\":%u,\"after_id\":%llu}", user,
                         limit, (unsigned long long) next);
                r = call(m, as, CORRAL_METHOD_LIST, params);
                page_len(r, &next);
                assert_true(json_object_object_get_ex(r, "parameters", &p) &&
                            json_object_object_get_ex(p, "jobs", &jobs));
                for (size_t k = 0; k < json_object_array_length(jobs); k++) {
                        json_object *id;
                        assert_true(json_object_object_get_ex(json_object_array_get_idx(jobs, k), "id", &id));
                        assert_true(n < max);
                        ids[n++] = (uint64_t) json_object_get_int64(id);
                }
                json_object_put(r);
        } while (next);
        return n;
}

/* corral queue --me reads its user's own jobs through the per-user index, which follows
 * submissions, a rolled-back one, and the purge; MaxJobsPerUser counts by uid through it,
 * also a job whose name was another account's when it was submitted. */
static void test_user_index(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        uint64_t ids[64], now = (uint64_t) time(NULL), expect[8];
        size_t n_expect = 0;
        const char *nobody;
        json_object *r;
        Job *j;

        m->config->max_array_size = 0;
        for (int round = 0; round < 4; round++) {
                r = call(m, 0, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"array\":\"1-500\"}");
                json_object_put(r);
                r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
                expect[n_expect++] = job_id_of(r);
                json_object_put(r);
        }
        nobody = job_user(manager_find_job(m, expect[0]));
        assert_int_equal(m->n_user_jobs, 2);
        assert_user_index(m);
        /* Another user's listing of nobody's jobs, a page of one job at a time too. */
        assert_int_equal(list_user(m, 0, nobody, 1000, ids, ELEMENTSOF(ids)), n_expect);
        assert_memory_equal(ids, expect, n_expect * sizeof ids[0]);
        assert_int_equal(list_user(m, NOBODY, nobody, 1, ids, ELEMENTSOF(ids)), n_expect);
        assert_memory_equal(ids, expect, n_expect * sizeof ids[0]);
        assert_int_equal(manager_user_jobs(m, "root")->n, 2000);
        assert_null(manager_user_jobs(m, "nobody-here"));

        /* A submission rolled back: the table's last job (nobody's) leaves their list. */
        manager_truncate_jobs(m, m->n_jobs - 1);
        n_expect--;
        assert_user_index(m);
        assert_int_equal(list_user(m, NOBODY, nobody, 2, ids, ELEMENTSOF(ids)), n_expect);

        /* Purged: one of nobody's and a hundred of root's, ended a month ago. */
        j = manager_find_job(m, expect[1]);
        assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, NULL), 0);
        j->end_time = now - 30 * 86400;
        for (uint64_t id = 1; id <= 100; id++) {
                j = manager_find_job(m, id);
                assert_int_equal(manager_job_transition(m, j, JOB_EVENT_CANCEL, JOB_CANCELLED, NULL), 0);
                j->end_time = now - 30 * 86400;
        }
        manager_purge_finished(m, now);
        assert_user_index(m);
        assert_int_equal(manager_user_jobs(m, "root")->n, 1900);
        assert_int_equal(list_user(m, 0, nobody, 1000, ids, ELEMENTSOF(ids)), 2);
        assert_true(ids[0] == expect[0] && ids[1] == expect[2]);

        /* A job under root's name but nobody's uid (the name was nobody's account's when it
         * was submitted): it counts against nobody's MaxJobsPerUser. Nobody has two
         * unfinished jobs of their own, and this one. */
        j = job_new();
        assert_non_null(j);
        j->id = m->next_id;
        j->uid = NOBODY;
        j->user = intern_id("root");
        j->project = m->jobs[0]->project;
        j->queue = m->jobs[0]->queue;
        j->state = JOB_HELD;
        assert_int_equal(manager_add_job(m, j), 0);
        assert_true(manager_user_jobs(m, "root")->mixed_uids);
        assert_user_index(m);
        m->config->max_jobs_per_user = 3;
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}"), "QuotaExceeded",
                     "MaxJobsPerUser=3");
        m->config->max_jobs_per_user = 4;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_null(error_of(r));
        json_object_put(r);
        assert_user_index(m);
        manager_for_test_free(m);
}

/* Four declared NVIDIA GPUs, two A100s on node 0 and two H100s on node 1, behind nvidiactl,
 * as m's devices and its machine's (gpus and numa_ids static: not the manager's to free). */
static void declare_four_gpus(Manager *m, SchedGpu *gpus, unsigned *numa_ids) {
        char *err = NULL;

        m->devices = new0(DeviceSet, 1);
        assert_non_null(m->devices);
        for (int g = 0; g < 4; g++) {
                char name[8], node[32];
                char *dnodes[] = { node, NULL };

                snprintf(name, sizeof name, "gpu%d", g);
                snprintf(node, sizeof node, "/dev/nvidia%d", g);
                assert_int_equal(device_set_apply(m->devices, &(DeviceDecl) { .name = name, .vendor = "nvidia",
                                                  .nodes = dnodes, .model = g < 2 ? "NVIDIA A100-SXM4-40GB" : "NVIDIA H100",
                                                  .numa_node = g / 2, .numa_node_set = true }, &err), 0);
                gpus[g] = (SchedGpu) { .node = g / 2 };
        }
        assert_int_equal(strv_extend(&m->devices->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidiactl"), 0);
        assert_int_equal(device_set_finish(m->devices), 0);
        m->machine.gpus = gpus;
        m->machine.n_gpus = 4;
        m->numa_ids = numa_ids;
}

/* Four declared NVIDIA GPUs on two nodes: a job's GPU request reaches SchedJob (type and
 * constraint as a mask), and its spec is fenced to its own GPUs' nodes plus nvidiactl, the
 * machine's base list kept, with the environment numbered inside the fence. */
static void test_gpu_job(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        _cleanup_(job_spec_freep) JobSpec *spec = NULL, *cpu_spec = NULL;
        static SchedGpu gpus[4];
        static unsigned numa_ids[2] = { 0, 1 };
        SchedJob sj;
        uint64_t id, cpu;
        Job *j;

        declare_four_gpus(m, gpus, numa_ids);
        assert_int_equal(strv_extend(&m->device_fence_base, "char-pts"), 0);
        assert_int_equal(strv_extend(&m->device_fence_base, "/dev/nvidia9"), 0);

        id = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT,
                            "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":2,\"gpu_type\":\"h100\",\"env\":[\"CUDA_VISIBLE_DEVICES=7\"]}"));
        j = manager_find_job(m, id);
        assert_non_null(j);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpus, 2);
        assert_int_equal(sj.gpu_allowed, (UINT64_C(1) << 2) | (UINT64_C(1) << 3));
        /* A constraint over the features; one nothing matches allows no GPU of the machine. */
        set_gpu_request(j, NULL, "a100|nvlink");
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpu_allowed, 3);
        set_gpu_request(j, NULL, "mi250x");
        manager_sched_job(m, j, &sj);
        assert_true(sj.gpu_allowed != 0);
        assert_int_equal(sj.gpu_allowed & 0xf, 0);

        /* Started on gpu1 and gpu3. */
        job_run_ensure(j)->alloc = new0(SchedAllocation, 1);
        cpu_set_add(&job_alloc(j)->cpus, 0);
        job_alloc(j)->node_mask = 1;
        job_alloc(j)->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 3);
        assert_int_equal(manager_build_spec(m, j, &spec), 0);
        assert_true(spec->device_fence);
        assert_true(strv_contains(spec->device_allow, "char-pts"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia9"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia1"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia3"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidiactl"));
        assert_false(strv_contains(spec->device_allow, "/dev/nvidia0"));
        assert_false(strv_contains(spec->device_allow, "/dev/nvidia2"));
        assert_string_equal(strv_env_get(spec->device_environment, "CUDA_VISIBLE_DEVICES"), "0,1");
        assert_string_equal(strv_env_get(spec->device_environment, "GPU_DEVICE_ORDINAL"), "0,1");
        assert_string_equal(strv_env_get(spec->device_environment, "SLURM_JOB_GPUS"), "1,3");
        assert_string_equal(strv_env_get(spec->device_environment, "CORRAL_GPUS"), "1,3");
        assert_string_equal(strv_env_get(spec->device_environment, "SLURM_GPUS_ON_NODE"), "2");
        assert_null(strv_env_get(spec->device_environment, "ROCR_VISIBLE_DEVICES"));

        /* A CPU job on this machine: fenced, no GPU node, not even nvidiactl, no GPU variable. */
        cpu = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}"));
        j = manager_find_job(m, cpu);
        job_run_ensure(j)->alloc = new0(SchedAllocation, 1);
        cpu_set_add(&job_alloc(j)->cpus, 1);
        assert_int_equal(manager_build_spec(m, j, &cpu_spec), 0);
        assert_true(cpu_spec->device_fence);
        assert_int_equal(strv_length(cpu_spec->device_allow), 2);
        assert_null(cpu_spec->device_environment);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpus, 0);
        assert_int_equal(sj.gpu_allowed, 0);

        m->machine.gpus = NULL; /* static */
        m->numa_ids = NULL;
        manager_for_test_free(m);
}

static void add_device(DeviceSet *s, const char *model, const char *node, bool mig, unsigned gi, const char *profile,
                       const char *mig_uuid) {
        Device d = { .vendor = DEVICE_VENDOR_NVIDIA, .numa_node = 0, .mig = mig, .mig_gi = gi };

        assert_non_null(d.model = strdup(model));
        assert_int_equal(asprintf(&d.name, "gpu%zu", s->n_devices), (int) strlen("gpu") + (s->n_devices > 9 ? 2 : 1));
        assert_int_equal(strv_extend(&d.nodes, "/dev/nvidia0"), 0);
        if (!mig) {
                free(d.nodes[0]);
                assert_non_null(d.nodes[0] = strdup(node));
                assert_non_null(d.pci_address = strdup(node[11] == '0' ? "0000:3b:00.0" : "0000:5e:00.0"));
        } else {
                assert_int_equal(strv_extendf(&d.nodes, "/dev/nvidia-caps/nvidia-cap%u", gi * 9 + 3), 0);
                assert_int_equal(strv_extendf(&d.nodes, "/dev/nvidia-caps/nvidia-cap%u", gi * 9 + 4), 0);
                assert_non_null(d.mig_parent = strdup("0000:3b:00.0"));
                assert_int_equal(asprintf(&d.uuid, "MIG-0000:3b:00.0/%u/0", gi), (int) strlen("MIG-0000:3b:00.0/1/0"));
        }
        assert_int_equal(device_derive_features(&d), 0);
        if (mig)
                assert_true(devices_mig_update(&d, mig_uuid, profile, UINT64_C(5) << 30) >= 0);
        assert_int_equal(device_set_add(s, &d), 0);
}

/* An A100 in MIG mode (gpu0) with a 1g.5gb (gpu2, named by NVML) and a MIG device NVML has
 * not read yet (gpu3), beside a whole A100 (gpu1): --gres=gpu:1g.5gb is given gpu2 alone,
 * --gres=gpu:a100 the whole card alone, the GPU in MIG mode nobody; a type only the unread
 * MIG device could have is not refused; the fence opens the MIG device's GPU node and its
 * two capability nodes and no other's, CUDA_VISIBLE_DEVICES names it by its UUID (and is
 * left out while a MIG device's UUID is unknown); the job is charged 1/7 of a GPU's hours. */
static void test_mig_job(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        _cleanup_(job_spec_freep) JobSpec *spec = NULL, *spec2 = NULL;
        static SchedGpu gpus[4];
        static unsigned numa_ids[2] = { 0, 1 };
        JobCharge c;
        SchedJob sj;
        uint64_t id;
        Job *j;

        m->devices = new0(DeviceSet, 1);
        assert_non_null(m->devices);
        add_device(m->devices, "NVIDIA A100-SXM4-40GB", "/dev/nvidia0", false, 0, NULL, NULL);
        m->devices->devices[0].mig_mode = true;
        add_device(m->devices, "NVIDIA A100-SXM4-40GB", "/dev/nvidia1", false, 0, NULL, NULL);
        add_device(m->devices, "NVIDIA A100-SXM4-40GB", NULL, true, 9, "1g.5gb", "MIG-7a8b0c1d-0000-5000-8000-000000000009");
        add_device(m->devices, "NVIDIA A100-SXM4-40GB", NULL, true, 2, NULL, NULL);
        m->devices->placed = true;
        assert_int_equal(strv_extend(&m->devices->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidiactl"), 0);
        assert_int_equal(device_set_finish(m->devices), 0);
        for (size_t g = 0; g < 4; g++)
                gpus[g] = (SchedGpu) { .node = 0, .offline = !device_is_schedulable(&m->devices->devices[g]) };
        assert_true(gpus[0].offline);
        m->machine.gpus = gpus;
        m->machine.n_gpus = 4;
        m->numa_ids = numa_ids;
        accounting_set_devices(m->acct, m->devices);

        id = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":1,\"gpu_type\":\"1g.5gb\"}"));
        j = manager_find_job(m, id);
        assert_non_null(j);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpu_allowed, UINT64_C(1) << 2);
        set_gpu_request(j, "a100", NULL);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpu_allowed, UINT64_C(1) << 1);
        set_gpu_request(j, "nvidia_a100-sxm4-40gb_1g.5gb", NULL);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpu_allowed, UINT64_C(1) << 2);
        /* Untyped: any GPU but the one in MIG mode. */
        set_gpu_request(j, NULL, NULL);
        manager_sched_job(m, j, &sj);
        assert_int_equal(sj.gpu_allowed, 0);

        /* GetInfo, as corral info and sinfo read it back. */
        {
                json_object *r = call(m, NOBODY, CORRAL_METHOD_GET_INFO, "{}"), *v;
                DeviceInfo *di = NULL;
                size_t n = 0;
                const char *bad = NULL;

                assert_true(json_object_object_get_ex(params_of(r), "devices", &v));
                assert_int_equal(device_info_array_from_json(v, &di, &n, &bad), 0);
                assert_int_equal(n, 4);
                assert_true(di[0].mig_mode);
                assert_non_null(di[0].offline);
                assert_false(di[1].mig_mode);
                assert_null(di[1].mig_of);
                assert_string_equal(di[2].mig_of, "gpu0");
                assert_int_equal(di[2].mig_gi, 9);
                assert_string_equal(di[2].mig_profile, "1g.5gb");
                assert_string_equal(di[2].mig_uuid, "MIG-7a8b0c1d-0000-5000-8000-000000000009");
                assert_int_equal(di[2].memory, UINT64_C(5) << 30);
                assert_null(di[3].mig_profile);
                device_info_array_free(di, n);
                json_object_put(r);
        }

        /* The unread MIG device might be a 3g.20gb: one is not refused, two are. */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":1,\"gpu_type\":\"3g.20gb\"}"));
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":2,\"gpu_type\":\"3g.20gb\"}"),
                     "InvalidParameter", "--gpus=2 of type 3g.20gb: this machine has 0 such GPUs");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":4}"),
                     "InvalidParameter", "--gpus=4: this machine has 3 GPUs");

        /* Started on the 1g.5gb. */
        job_run_ensure(j)->alloc = new0(SchedAllocation, 1);
        cpu_set_add(&job_alloc(j)->cpus, 0);
        job_alloc(j)->node_mask = 1;
        job_alloc(j)->gpu_mask = UINT64_C(1) << 2;
        assert_int_equal(manager_build_spec(m, j, &spec), 0);
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia0"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia-caps/nvidia-cap84"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidia-caps/nvidia-cap85"));
        assert_true(strv_contains(spec->device_allow, "/dev/nvidiactl"));
        assert_false(strv_contains(spec->device_allow, "/dev/nvidia1"));
        assert_false(strv_contains(spec->device_allow, "/dev/nvidia-caps/nvidia-cap21"));
        assert_string_equal(strv_env_get(spec->device_environment, "CUDA_VISIBLE_DEVICES"),
                            "MIG-7a8b0c1d-0000-5000-8000-000000000009");
        assert_string_equal(strv_env_get(spec->device_environment, "CORRAL_GPUS"), "2");

        /* With the whole card and the MIG device NVML has not named: CUDA finds them through
         * the fence alone. */
        job_alloc(j)->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 3);
        assert_int_equal(manager_build_spec(m, j, &spec2), 0);
        assert_true(strv_contains(spec2->device_allow, "/dev/nvidia1"));
        assert_true(strv_contains(spec2->device_allow, "/dev/nvidia-caps/nvidia-cap21"));
        assert_null(strv_env_get(spec2->device_environment, "CUDA_VISIBLE_DEVICES"));
        assert_string_equal(strv_env_get(spec2->device_environment, "SLURM_GPUS_ON_NODE"), "2");

        /* Charged its slice: 2 hours on a 1g of an A100 is 2/7 GPU-hours. */
        job_alloc(j)->gpu_mask = UINT64_C(1) << 2;
        j->state = JOB_RUNNING;
        j->start_time = (uint64_t) time(NULL) - 7200;
        assert_int_equal(accounting_job_charge(m->acct, j, (uint64_t) time(NULL), &c), 0);
        assert_true(c.gpu_hours > 2.0 / 7 - 0.01 && c.gpu_hours < 2.0 / 7 + 0.01);
        /* The whole card: all of its hours. */
        job_alloc(j)->gpu_mask = UINT64_C(1) << 1;
        assert_int_equal(accounting_job_charge(m->acct, j, (uint64_t) time(NULL), &c), 0);
        assert_true(c.gpu_hours > 1.99 && c.gpu_hours < 2.01);
        j->state = JOB_QUEUED;

        m->machine.gpus = NULL; /* static */
        m->numa_ids = NULL;
        manager_for_test_free(m);
}

/* NVLink is preferred, not required: a 2-GPU job that waits for CPUs while the two free
 * GPUs (1 and 2) are not linked to each other (0-1 and 2-3 are) is told so by why. */
static void test_gpu_why_links(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        static SchedGpu gpus[4];
        static unsigned numa_ids[2] = { 0, 1 };
        char params[64];
        uint64_t holders[2], id;
        json_object *r;

        declare_four_gpus(m, gpus, numa_ids);
        for (int g = 0; g < 4; g++)
                gpus[g].links = UINT64_C(1) << (g ^ 1);

        /* Jobs holding GPUs 0 and 3 and a CPU each. */
        for (int i = 0; i < 2; i++) {
                Job *h;

                holders[i] = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":1}"));
                h = manager_find_job(m, holders[i]);
                job_run_ensure(h)->alloc = new0(SchedAllocation, 1);
                assert_non_null(job_alloc(h));
                cpu_set_add(&job_alloc(h)->cpus, (unsigned) i * 4);
                job_alloc(h)->node_mask = UINT64_C(1) << i;
                job_alloc(h)->gpu_mask = UINT64_C(1) << (i * 3);
                h->state = JOB_RUNNING;
                h->start_time = (uint64_t) time(NULL);
        }
        id = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":8,\"gpus\":2}"));
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_find_job(m, id)->state, JOB_QUEUED);
        snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", id);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        if (!strstr(json_object_to_json_string(r), "2 GPUs free but not linked (at most 1 of them NVLinked to each other)"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        for (int i = 0; i < 2; i++)
                manager_find_job(m, holders[i])->state = JOB_QUEUED;
        m->machine.gpus = NULL; /* static */
        m->numa_ids = NULL;
        manager_for_test_free(m);
}

/* A reload rebuilds the devices (discovery on this host, none expected to be GPUs, and the
 * [Device] sections): each device keeps its index (a declared one by its name), a new one
 * takes the next, and a device the configuration drops keeps its index, gone: the running
 * job holding it keeps it and nobody else is given it. */
static void test_gpu_reload(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        static unsigned numa_ids[2] = { 0, 1 };
        char *err = NULL;
        uint64_t id;
        Job *j;

        if (access("/dev/nvidiactl", F_OK) >= 0 || access("/dev/kfd", F_OK) >= 0) {
                manager_for_test_free(m);
                skip(); /* this host has GPUs of its own: the numbering below would differ */
                return;
        }
        /* As after load_machine(): the machine is known, so a reload loads devices. */
        m->nodes = nodes;
        m->numa_ids = numa_ids;
        put(t->dir, "corral.conf",
            "[Device]\nName=ga\nVendor=nvidia\nNodes=/dev/fake-ga\nNumaNode=0\n"
            "[Device]\nName=gb\nVendor=nvidia\nNodes=/dev/fake-gb\nNumaNode=1\n"
            "[Device]\nName=gc\nVendor=nvidia\nNodes=/dev/fake-gc\nNumaNode=1\n");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_int_equal(m->machine.n_gpus, 3);
        assert_string_equal(m->devices->devices[1].name, "gb");
        assert_int_equal(m->gpus[0].node, 0);
        assert_int_equal(m->gpus[1].node, 1);
        assert_non_null(m->device_fence_base);

        id = job_id_of(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true,\"gpus\":2}"));
        j = manager_find_job(m, id);
        j->state = JOB_RUNNING;
        job_run_ensure(j)->alloc = new0(SchedAllocation, 1);
        cpu_set_add(&job_alloc(j)->cpus, 0);
        job_alloc(j)->gpu_mask = (UINT64_C(1) << 1) | (UINT64_C(1) << 2); /* gb, gc */

        /* ga goes, a0 comes: gb and gc keep 1 and 2, ga's 0 is gone, a0 takes 3. */
        put(t->dir, "corral.conf",
            "[Device]\nName=gc\nVendor=nvidia\nNodes=/dev/fake-gc\nNumaNode=1\n"
            "[Device]\nName=a0\nVendor=nvidia\nNodes=/dev/fake-a0\nNumaNode=0\n"
            "[Device]\nName=gb\nVendor=nvidia\nNodes=/dev/fake-gb\nNumaNode=1\n");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_int_equal(m->machine.n_gpus, 4);
        assert_string_equal(m->devices->devices[0].name, "ga");
        assert_true(m->devices->devices[0].gone);
        assert_true(m->gpus[0].offline);
        assert_string_equal(m->devices->devices[1].name, "gb");
        assert_string_equal(m->devices->devices[2].name, "gc");
        assert_string_equal(m->devices->devices[3].name, "a0");
        assert_false(m->gpus[3].offline);
        assert_int_equal(job_alloc(j)->gpu_mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 2));

        /* gb goes under the job: it keeps index 1, offline, held by the job alone. */
        put(t->dir, "corral.conf",
            "[Device]\nName=gc\nVendor=nvidia\nNodes=/dev/fake-gc\nNumaNode=1\n"
            "[Device]\nName=a0\nVendor=nvidia\nNodes=/dev/fake-a0\nNumaNode=0\n");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_int_equal(m->machine.n_gpus, 4);
        assert_true(m->gpus[1].offline);
        assert_false(m->gpus[2].offline);
        assert_int_equal(job_alloc(j)->gpu_mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 2));

        /* gb is declared again: its own index back. */
        put(t->dir, "corral.conf",
            "[Device]\nName=gb\nVendor=nvidia\nNodes=/dev/fake-gb\nNumaNode=1\n"
            "[Device]\nName=gc\nVendor=nvidia\nNodes=/dev/fake-gc\nNumaNode=1\n");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_string_equal(m->devices->devices[1].name, "gb");
        assert_false(m->gpus[1].offline);
        assert_true(m->gpus[3].offline);

        /* No device left: every index gone, every job fenced from every GPU node. */
        put(t->dir, "corral.conf", "");
        assert_int_equal(manager_reload(m, &err), 0);
        assert_int_equal(m->machine.n_gpus, 4);
        for (size_t g = 0; g < 4; g++)
                assert_true(m->gpus[g].offline);
        assert_non_null(m->device_fence_base);
        assert_int_equal(job_alloc(j)->gpu_mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 2));

        j->state = JOB_QUEUED;
        m->nodes = NULL; /* static */
        m->numa_ids = NULL;
        manager_for_test_free(m);
}

/* Finished jobs keep their allocation for the record, and never write it again: equal ones
 * are one in memory (a day of short jobs would otherwise hold 1.5 KB each), also as a
 * restart loads them, and each job lets go of its own reference. */
static void test_finished_alloc_shared(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir), *m2;
        uint64_t first = submit_ok(m, "{" SUBMIT_TRUE ",\"array\":\"1-3\"}");
        Job *j[3];

        assert_int_equal(manager_commit(m), 0);
        for (unsigned k = 0; k < 3; k++) {
                j[k] = manager_find_job(m, first + k);
                assert_int_equal(manager_job_transition(m, j[k], JOB_EVENT_START, JOB_RUNNING, NULL), 0);
                job_run_ensure(j[k])->alloc = new0(SchedAllocation, 1);
                assert_non_null(job_alloc(j[k]));
                cpu_set_add(&job_alloc(j[k])->cpus, k == 2 ? 1 : 0); /* the third on another CPU */
                job_alloc(j[k])->node_mask = 1;
                job_alloc(j[k])->mem[0] = UINT64_C(1) << 20;
        }
        for (unsigned k = 0; k < 3; k++) {
                job_run_ensure(j[k])->exit_code = 0;
                assert_int_equal(manager_job_transition(m, j[k], JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        }
        assert_int_equal(manager_commit(m), 0);
        assert_ptr_equal(job_alloc(j[0]), job_alloc(j[1]));
        assert_ptr_not_equal(job_alloc(j[0]), job_alloc(j[2]));
        assert_int_equal(cpu_set_count(&job_alloc(j[0])->cpus), 1);
        assert_int_equal(cpu_set_next(&job_alloc(j[0])->cpus, 0), 0);
        assert_int_equal(cpu_set_count(&job_alloc(j[2])->cpus), 1);
        assert_int_equal(cpu_set_next(&job_alloc(j[2])->cpus, 0), 1);
        assert_int_equal(job_alloc(j[2])->mem[0], UINT64_C(1) << 20);

        /* A restart's: the same, shared with what the first manager still holds. */
        m2 = manager_for_test(t->dir);
        assert_int_equal(manager_load_jobs(m2), 0);
        assert_ptr_equal(job_alloc(manager_find_job(m2, first)), job_alloc(j[0]));
        assert_ptr_equal(job_alloc(manager_find_job(m2, first + 1)), job_alloc(j[0]));
        assert_ptr_equal(job_alloc(manager_find_job(m2, first + 2)), job_alloc(j[2]));
        manager_for_test_free(m2);
        /* Still there for the jobs of the first. */
        assert_int_equal(cpu_set_next(&job_alloc(j[1])->cpus, 0), 0);
        assert_int_equal(job_alloc(j[1])->mem[0], UINT64_C(1) << 20);
        manager_for_test_free(m);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "corral-methods");
}

/* The built-in express queue suspends other users' normal jobs: out of the box only root,
 * the operator group and the corral-express group may submit to it, and a user who may
 * not is told which queue, which group and how an administrator opens it. */
/* Interactive jobs: only Run makes them (Submit refuses the flag), a queue's
 * AllowInteractive=no and MaxInteractiveWalltime= refuse them naming queue and key (for
 * --test-only too), no arrays, and the scheduler never preempts one. */
static void test_interactive_rules(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        char *err = NULL;
        SchedJob sj;
        json_object *r;
        Job *j;

        put(t->dir, "corral.conf", "[Queue]\nName=batchonly\nAllowInteractive=no\n"
                                   "[Queue]\nName=short\nMaxInteractiveWalltime=10min\n");
        assert_int_equal(manager_reload(m, &err), 0);
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"interactive\":true}"),
                     "InvalidParameter", "submit it with Run");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT,
                          "{" SUBMIT_TRUE ",\"interactive\":true,\"queue\":\"batchonly\"}"),
                     "InvalidParameter", "queue batchonly takes no interactive jobs (its AllowInteractive=no)");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT,
                          "{" SUBMIT_TRUE ",\"interactive\":true,\"queue\":\"short\",\"walltime_sec\":3600}"),
                     "InvalidParameter", "queue short allows an interactive job (its MaxInteractiveWalltime=600s)");
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT,
                          "{" SUBMIT_TRUE ",\"interactive\":true,\"array\":\"1-3\"}"),
                     "InvalidParameter", "cannot be an array");
        r = call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT,
                 "{" SUBMIT_TRUE ",\"interactive\":true,\"queue\":\"short\",\"walltime_sec\":300}");
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(m->n_jobs, 0);

        /* The scheduler's view: a job made interactive is never a preemption victim. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        j = manager_find_job(m, job_id_of(r));
        json_object_put(r);
        assert_non_null(j);
        manager_sched_job(m, j, &sj);
        assert_true(sj.preemptable);
        j->req.interactive = true;
        manager_sched_job(m, j, &sj);
        assert_false(sj.preemptable);
        manager_for_test_free(m);
}

static void test_express_access(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        const char *express = "{" SUBMIT_TRUE ",\"hold\":true,\"queue\":\"express\"}";
        json_object *r;
        char *err = NULL;

        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, express), "PermissionDenied",
                     "queue express is open only to members of the groups corral-express (its AllowGroups=)");
        expect_error(call(m, NOBODY, CORRAL_METHOD_SUBMIT, express), "PermissionDenied",
                     "empty AllowGroups= in a [Queue] Name=express section");
        /* --test-only answers the same. */
        expect_error(call(m, NOBODY, CORRAL_METHOD_TEST_SUBMIT, express), "PermissionDenied", "corral-express");
        assert_int_equal(m->n_jobs, 0);
        r = call(m, 0, CORRAL_METHOD_SUBMIT, express);
        assert_null(error_of(r));
        json_object_put(r);
        /* normal stays everyone's. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"hold\":true}");
        assert_null(error_of(r));
        json_object_put(r);

        /* The operator group is let in by authz.c. */
        put(t->dir, "corral.conf", "[Manager]\nOperatorGroup=nogroup\n");
        assert_int_equal(manager_reload(m, &err), 0);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, express);
        assert_null(error_of(r));
        json_object_put(r);

        /* Opened to another group (nobody's primary group), merged into the built-in: the
         * rest of express stays (priority 2, Preempts=normal, ChargeFactor=3). */
        put(t->dir, "corral.conf", "[Queue]\nName=express\nAllowGroups=nogroup\n");
        assert_int_equal(manager_reload(m, &err), 0);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, express);
        assert_null(error_of(r));
        json_object_put(r);
        assert_int_equal(config_find_queue(m->config, "express")->priority, 2);
        assert_true(config_find_queue(m->config, "express")->charge_factor == 3.0);
        assert_non_null(config_find_queue(m->config, "bonus"));

        /* Opened to everyone. */
        put(t->dir, "corral.conf", "[Queue]\nName=express\nAllowGroups=\n");
        assert_int_equal(manager_reload(m, &err), 0);
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, express);
        assert_null(error_of(r));
        json_object_put(r);
        manager_for_test_free(m);
}

/* Preemption through the pass and the transitions: an express job suspends the normal
 * job holding every CPU (recorded as the scheduler's suspension, which nobody resumes by
 * hand, and which corral why explains), and the normal job resumes when it ends. */
static void test_preemption(void **state) {
        Tree *t = *state;
        Manager *m;
        char params[64], want[96];
        json_object *r;
        uint64_t a, b;
        Job *ja, *jb;

        /* Express open to everyone, as an administrator opens it (corral.conf(5)). */
        put(t->dir, "corral.conf", "[Queue]\nName=express\nAllowGroups=\n");
        m = manager_for_test(t->dir);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":8,\"walltime_sec\":3600,\"queue\":\"normal\"}");
        a = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a);
        assert_int_equal(ja->state, JOB_RUNNING);
        ja->launching = false; /* its scope started */

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":2,\"walltime_sec\":60,\"queue\":\"express\"}");
        b = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        jb = manager_find_job(m, b);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(ja->state, JOB_SUSPENDED);
        assert_true(ja->suspended_by_sched);
        assert_false(ja->suspended_by_admin);
        assert_int_equal(job_run(ja)->preempted_by, b);
        assert_string_equal(job_reason(ja), "Preempted");
        assert_int_equal(job_run(ja)->preempt_act, PREEMPT_ACT_FREEZE);
        m->n_to_launch = 0; /* no executor here to act */

        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) a);
        expect_error(call(m, 0, CORRAL_METHOD_RESUME, params), "PermissionDenied", "the scheduler suspended");
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        snprintf(want, sizeof want, "to let job %llu", (unsigned long long) b);
        if (!strstr(json_object_to_json_string(r), want))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* Still running: no second suspension, no resumption. */
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(ja->state, JOB_SUSPENDED);

        job_run_ensure(ja)->suspend_start -= 7; /* as if frozen for seven seconds */
        assert_int_equal(manager_job_transition(m, jb, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_false(ja->suspended_by_sched);
        assert_int_equal(job_run(ja)->preempt_act, PREEMPT_ACT_THAW);
        assert_true(job_run(ja)->suspended_usec >= 7 * UINT64_C(1000000));
        assert_true(job_run(ja)->last_resume > 0);
        assert_int_equal(cpu_set_count(&job_alloc(ja)->cpus), 8);
        m->n_to_launch = 0;
        manager_for_test_free(m);
}

static int find_stored(Job *j, void *userdata) {
        Job **want = userdata;
        if (j->id == (*want)->id) {
                job_free(*want);
                *want = j;
        } else
                job_free(j);
        return 0;
}

/* A person's suspension and the scheduler's of the same job: both hold it. The pass does
 * not resume a job a person suspended too, a person's resume lifts only their hold (the
 * job stays the scheduler's, which resumes it when CPUs allow), and the preemptor and the
 * holds survive a restart (the store). */
static void test_preemption_and_person(void **state) {
        Tree *t = *state;
        Manager *m;
        char params[64];
        json_object *r;
        uint64_t a, b;
        Job *ja, *jb, *stored;

        /* Express open to everyone, as an administrator opens it (corral.conf(5)). */
        put(t->dir, "corral.conf", "[Queue]\nName=express\nAllowGroups=\n");
        m = manager_for_test(t->dir);

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":8,\"walltime_sec\":3600,\"queue\":\"normal\"}");
        a = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        ja = manager_find_job(m, a);
        ja->launching = false;
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE ",\"cpus\":2,\"walltime_sec\":60,\"queue\":\"express\"}");
        b = job_id_of(r);
        json_object_put(r);
        assert_int_equal(manager_schedule(m), 0);
        jb = manager_find_job(m, b);
        assert_int_equal(ja->state, JOB_SUSPENDED);
        assert_true(ja->suspended_by_sched);
        m->n_to_launch = 0; /* no executor here to act */
        job_run_ensure(ja)->preempt_act = PREEMPT_ACT_NONE;

        /* An admin suspends it too (their freeze lost the race, or came after): accepted,
         * nothing to freeze, both hold it; a second suspend is refused. */
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) a);
        r = call(m, 0, CORRAL_METHOD_SUSPEND, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_true(ja->suspended_by_sched);
        assert_true(ja->suspended_by_person);
        assert_true(ja->suspended_by_admin);
        expect_error(call(m, 0, CORRAL_METHOD_SUSPEND, params), "InvalidState", NULL);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, params);
        if (!strstr(json_object_to_json_string(r), "suspended it too"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* After a restart, the store says the same: who holds it, and for which job. */
        assert_int_equal(store_commit(m->store), 0);
        stored = job_new();
        assert_non_null(stored);
        stored->id = a;
        assert_int_equal(store_load_jobs(m->store, find_stored, &stored), 0);
        assert_int_equal(stored->state, JOB_SUSPENDED);
        assert_true(stored->suspended_by_sched);
        assert_true(stored->suspended_by_person);
        assert_true(stored->suspended_by_admin);
        assert_int_equal(job_run(stored)->preempted_by, b);
        job_free(stored);

        /* The preemptor ends: the pass does not resume a job a person holds suspended. */
        assert_int_equal(manager_job_transition(m, jb, JOB_EVENT_END, JOB_COMPLETED, NULL), 0);
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(ja->state, JOB_SUSPENDED);
        assert_true(ja->suspended_by_sched);
        assert_int_equal(job_run(ja)->preempt_act, PREEMPT_ACT_NONE);

        /* Their owner may not lift an admin's hold; the admin's resume lifts only theirs,
         * says so, and the job stays the scheduler's until a pass resumes it. */
        m->authz.users_may_suspend = true;
        expect_error(call(m, NOBODY, CORRAL_METHOD_RESUME, params), "PermissionDenied", NULL);
        r = call(m, 0, CORRAL_METHOD_RESUME, params);
        assert_null(error_of(r));
        assert_non_null(strstr(message_of(r), "the scheduler still holds it"));
        json_object_put(r);
        assert_int_equal(ja->state, JOB_SUSPENDED);
        assert_true(ja->suspended_by_sched);
        assert_false(ja->suspended_by_person);
        expect_error(call(m, 0, CORRAL_METHOD_RESUME, params), "PermissionDenied", "the scheduler suspended");
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_false(ja->suspended_by_sched);
        assert_int_equal(job_run(ja)->preempt_act, PREEMPT_ACT_THAW);
        m->n_to_launch = 0;
        manager_for_test_free(m);
}

/* An administrator's hold stands whatever the owner does: their own hold of the held job
 * is refused and changes nothing, and only an administrator releases it. An
 * administrator's hold of a job its owner held makes the hold theirs, in the store too. */
static void test_admin_hold_stands(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir);
        json_object *r;
        Job *stored;
        uint64_t id;
        char params[64];

        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" SUBMIT_TRUE "}");
        id = job_id_of(r);
        json_object_put(r);
        snprintf(params, sizeof params, "{\"job_id\":%llu}", (unsigned long long) id);

        r = call(m, 0, CORRAL_METHOD_HOLD, params);
        assert_null(error_of(r));
        json_object_put(r);
        expect_error(call(m, NOBODY, CORRAL_METHOD_HOLD, params), "InvalidState", NULL);
        assert_true(manager_find_job(m, id)->held_by_admin);
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied", NULL);
        assert_int_equal(manager_find_job(m, id)->state, JOB_HELD);
        r = call(m, 0, CORRAL_METHOD_RELEASE, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_false(manager_find_job(m, id)->held_by_admin);

        /* The owner holds it, then an administrator. */
        r = call(m, NOBODY, CORRAL_METHOD_HOLD, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_false(manager_find_job(m, id)->held_by_admin);
        r = call(m, 0, CORRAL_METHOD_HOLD, params);
        assert_null(error_of(r));
        json_object_put(r);
        assert_true(manager_find_job(m, id)->held_by_admin);
        assert_string_equal(job_reason(manager_find_job(m, id)), "JobHeldAdmin");
        expect_error(call(m, NOBODY, CORRAL_METHOD_RELEASE, params), "PermissionDenied", NULL);
        assert_int_equal(store_commit(m->store), 0);
        stored = job_new();
        assert_non_null(stored);
        stored->id = id;
        assert_int_equal(store_load_jobs(m->store, find_stored, &stored), 0);
        assert_int_equal(stored->state, JOB_HELD);
        assert_true(stored->held_by_admin);
        job_free(stored);
        manager_for_test_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_submit_bounds, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_wait_error_names_job, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_gpu_job, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_mig_job, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_gpu_why_links, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_gpu_reload, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_mail, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_mail_after_commit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_mail_user_budget, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_mail_array, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_job_mail_time_limit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_list_charges, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_list_pages, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_list_history, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_user_index, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_held_submit_no_pass, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_pass_spacing, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_transitions, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_hold_requeue_rules, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_history, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_signal, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_projects_submit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_release_requeue_recheck, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_blocked_by_limit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_dependencies, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_why_gpus, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_preemption, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_express_access, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_preemption_and_person, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_admin_hold_stands, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_test_submit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_gpu_submit, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_shard_jobs, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_interactive_rules, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_finished_alloc_shared, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
