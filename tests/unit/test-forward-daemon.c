/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corrald's forwarding queue (daemon/backend-slurm.c) against a store in a tmpdir and a fake
 * Slurm client: what runs as whom with which arguments, the states the client's answers
 * lead to, and the faults (slurmctld unreachable, a crash between sbatch and the commit,
 * corrald restarted with jobs on the cluster). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting/accounting.h"
#include "daemon/backend-slurm.h"
#include "daemon/commit.h"
#include "daemon/job-table.h"
#include "daemon/manager.h"
#include "daemon/sched-driver.h"
#include "daemon/store.h"
#include "daemon/usage.h"
#include "forward/slurm.h"
#include "strv.h"
#include "tmp-tree.h"
#include "test-manager-call.h"

#define NOBODY 65534

/* ---- the fake client: calls are kept until the test answers them ---- */

typedef struct FakeCall {
        uid_t uid;
        char **argv, **env;
        char *stdin_data;
        ExecutorCommandDone done;
        void *cookie;
        size_t max_output;
        bool answered;
} FakeCall;

static FakeCall calls[64];
static size_t n_calls;
static int fail_next; /* the next run's error: systemd not reachable */

static int fake_run(void *userdata, const ExecutorCommand *c, ExecutorCommandDone done, void *cookie) {
        FakeCall *f;

        if (fail_next < 0) {
                int r = fail_next;
                fail_next = 0;
                return r;
        }
        assert_true(n_calls < ELEMENTSOF(calls));
        f = &calls[n_calls++];
        *f = (FakeCall) { .uid = c->uid, .argv = strv_copy(c->argv), .env = c->env ? strv_copy(c->env) : NULL,
                          .stdin_data = c->stdin_data ? strdup(c->stdin_data) : NULL, .done = done, .cookie = cookie,
                          .max_output = c->max_output };
        return 0;
}

static const ForwardRunnerOps fake_ops = { .run = fake_run };

static void calls_reset(void) {
        for (size_t i = 0; i < n_calls; i++) {
                strv_free(calls[i].argv);
                strv_free(calls[i].env);
                free(calls[i].stdin_data);
        }
        n_calls = 0;
}

static const char *tool_of(const FakeCall *c) {
        const char *s = strrchr(c->argv[0], '/');
        return s ? s + 1 : c->argv[0];
}

/* The last call, which must be of tool and unanswered. */
static FakeCall *last(const char *tool) {
        FakeCall *c;

        assert_true(n_calls > 0);
        c = &calls[n_calls - 1];
        if (!streq(tool_of(c), tool))
                fail_msg("expected %s, the last call was %s", tool, tool_of(c));
        assert_false(c->answered);
        return c;
}

static void answer(FakeCall *c, const char *out, const char *err) {
        c->answered = true;
        c->done(0, out, err, c->cookie);
}

static void answer_error(FakeCall *c, int error) {
        c->answered = true;
        c->done(error, "", "", c->cookie);
}

static bool has_arg(const FakeCall *c, const char *a) {
        return strv_contains(c->argv, a);
}

/* After a crash: a user's squeue of keys, whose comments are that user's text. */
static void answer_keys(const char *user, const char *out) {
        FakeCall *c = last("squeue");

        assert_int_equal(c->uid, 0);
        assert_true(has_arg(c, "--format=" SLURM_SQUEUE_KEYS_FORMAT));
        assert_true(has_arg(c, user));
        answer(c, out, "");
}

/* ---- a fake cluster: squeue's answer printed from its jobs in the format asked for ---- */

typedef struct FakeSlurmJob {
        uint64_t id;
        const char *state, *reason, *elapsed, *user;
        const char *comment; /* the user's text, as `scontrol update Comment=` sets it */
} FakeSlurmJob;

static const char *arg_value(const FakeCall *c, const char *prefix) {
        STRV_FOREACH(a, c->argv)
                if (strneq(*a, prefix, strlen(prefix)))
                        return *a + strlen(prefix);
        return NULL;
}

/* What the real squeue prints for the jobs of the users in --users, in --format. */
static char *squeue_render(const FakeCall *c, const FakeSlurmJob *jobs, size_t n) {
        const char *fmt = arg_value(c, "--format="), *users = NULL;
        char *out = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&out, &size);

        assert_non_null(fmt);
        assert_non_null(f);
        for (size_t i = 0; c->argv[i]; i++)
                if (streq(c->argv[i], "--users") && c->argv[i + 1])
                        users = c->argv[i + 1];
        assert_non_null(users);
        for (size_t i = 0; i < n; i++) {
                _cleanup_strv_free_ char **u = NULL;

                assert_int_equal(strv_split(users, ",", &u), 0);

                if (!strv_contains(u, jobs[i].user))
                        continue;
                for (const char *p = fmt; *p; p++) {
                        if (*p != '%' || !p[1]) {
                                fputc(*p, f);
                                continue;
                        }
                        switch (*++p) {
                        case 'A':
                        case 'F':
                                fprintf(f, "%" PRIu64, jobs[i].id);
                                break;
                        case 'K':
                                fputs("N/A", f);
                                break;
                        case 'T':
                                fputs(jobs[i].state, f);
                                break;
                        case 'r':
                                fputs(jobs[i].reason, f);
                                break;
                        case 'M':
                                fputs(jobs[i].elapsed, f);
                                break;
                        case 'u':
                                fputs(jobs[i].user, f);
                                break;
                        case 'k':
                                fputs(jobs[i].comment ?: "(null)", f);
                                break;
                        default:
                                fail_msg("squeue format %%%c not faked", *p);
                        }
                }
                fputc('\n', f);
        }
        assert_int_equal(fclose(f), 0);
        return out;
}

/* Every squeue of the round under way answered from the fake cluster. */
static void answer_squeues(const FakeSlurmJob *jobs, size_t n) {
        while (n_calls > 0 && !calls[n_calls - 1].answered && streq(tool_of(&calls[n_calls - 1]), "squeue")) {
                FakeCall *c = &calls[n_calls - 1];
                _cleanup_free_ char *out = squeue_render(c, jobs, n);

                assert_int_equal(c->uid, 0);
                answer(c, out, "");
        }
}

/* ---- the manager ---- */

static SchedNode nodes[1];

static Manager *manager_for_test(const char *dir, const char *conf) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL, path[256];
        FILE *f;

        assert_non_null(m);
        manager_pick_backends(m);
        snprintf(path, sizeof path, "%s/corral.conf", dir);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(conf, f);
        fclose(f);
        m->confdir = strdup(dir);
        if (manager_reload(m, &err) < 0)
                fail_msg("configuration: %s", strna(err));
        assert_int_equal(store_open(dir, &m->store), 0);
        assert_int_equal(accounting_new(m->store, NULL, m->config, &m->acct), 0);
        m->sched = sched_context_new();
        nodes[0] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
        for (unsigned c = 0; c < 4; c++)
                cpu_set_add(&nodes[0].cpus, c);
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 1 };
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        assert_int_equal(manager_forward_start(m), 0);
        manager_forward_set_runner(m, &fake_ops, NULL);
        return m;
}

/* corrald restarted on the same store: the jobs and their links loaded again. */
static Manager *manager_restart(Manager *old, const char *dir, const char *conf) {
        Manager *m;

        assert_int_equal(manager_commit(old), 0);
        manager_free(old);
        m = manager_for_test(dir, conf);
        manager_forward_free(m);
        assert_int_equal(manager_load_jobs(m), 0);
        assert_int_equal(manager_forward_start(m), 0);
        manager_forward_set_runner(m, &fake_ops, NULL);
        return m;
}

static uint64_t submit_as(Manager *m, uid_t uid, const char *params) {
        json_object *r = call(m, uid, CORRAL_METHOD_SUBMIT, params), *p, *v;
        uint64_t id;

        if (!json_object_object_get_ex(r, "parameters", &p) || !json_object_object_get_ex(p, "job_id", &v))
                fail_msg("submit refused: %s", json_object_to_json_string(r));
        id = (uint64_t) json_object_get_int64(v);
        json_object_put(r);
        assert_int_equal(manager_commit(m), 0);
        return id;
}

static uint64_t submit(Manager *m, const char *params) {
        return submit_as(m, NOBODY, params);
}

/* A scheduling pass as corrald's loop runs it: pass, commit, launches, forwarding. */
static void pass(Manager *m) {
        assert_int_equal(manager_schedule(m), 0);
        assert_int_equal(manager_commit(m), 0);
        manager_forward_submit(m);
        assert_int_equal(manager_commit(m), 0);
}

static char *meta(Manager *m, uint64_t id) {
        char key[48], *v = NULL;
        snprintf(key, sizeof key, "forward.%" PRIu64, id);
        (void) store_get_meta(m->store, key, &v);
        return v;
}

static void assert_meta(Manager *m, uint64_t id, const char *want) {
        char *v = meta(m, id);
        if (!v || !streq(v, want))
                fail_msg("job %" PRIu64 ": link '%s', expected '%s'", id, strna(v), want);
        free(v);
}

#define CONF "[Queue]\nName=cluster\nBackend=slurm\nSlurmPartition=batch\nSlurmAccount=acct0\nMaxForwarded=2\n"
#define JOB "\"queue\":\"cluster\",\"workdir\":\"/tmp\",\"env\":[\"HOME=/tmp\",\"SLURM_CONF=/x\"]"

static void test_submit_track_finish(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        json_object *r;
        FakeCall *c;
        Job *j;
        uint64_t id;

        calls_reset();
        /* What Slurm cannot do is refused at submission, with the reason. */
        r = call(m, NOBODY, CORRAL_METHOD_SUBMIT, "{" JOB ",\"argv\":[\"/bin/true\"],\"io_weight\":50}");
        if (!strstr(json_object_to_json_string(r), "Slurm has no per-job I"))
                fail_msg("%s", json_object_to_json_string(r));
        json_object_put(r);
        /* Bigger than this machine (one node of 4 CPUs and 8G) is the cluster's business. */
        id = submit(m, "{" JOB ",\"script\":\"#!/bin/sh\\necho hi\\n\",\"cpus\":16,\"memory\":34359738368,"
                       "\"name\":\"big\"}");
        j = manager_find_job(m, id);
        assert_true(manager_job_forwarded(m, j));

        pass(m);
        /* Not started here: sbatch, as the user, recorded in the store first. */
        assert_int_equal(j->state, JOB_QUEUED);
        assert_int_equal(n_calls, 1);
        c = last("sbatch");
        assert_int_equal(c->uid, NOBODY);
        assert_true(has_arg(c, "--comment=corral:testhost:1"));
        assert_true(has_arg(c, "--partition=batch"));
        assert_true(has_arg(c, "--account=acct0"));
        assert_true(has_arg(c, "--cpus-per-task=16"));
        assert_true(has_arg(c, "--mem=32768M"));
        assert_true(has_arg(c, "--job-name=big"));
        assert_string_equal(c->stdin_data, "#!/bin/sh\necho hi\n");
        assert_true(strv_contains(c->env, "HOME=/tmp"));
        assert_false(strv_contains(c->env, "SLURM_CONF=/x"));
        assert_meta(m, id, "submitting");
        /* Passes while sbatch runs do not submit it again. */
        pass(m);
        assert_int_equal(n_calls, 1);

        answer(c, "4120\n", "");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, id, "linked 4120");
        assert_int_equal(manager_job_slurm_id(m, j), 4120);
        assert_string_equal(job_reason(j), "Slurm:Submitted");

        /* One squeue per user with forwarded jobs, as root, in a format that prints
         * nothing a user writes: it confirms the id sbatch claimed as the user's. */
        manager_forward_poll(m);
        c = last("squeue");
        assert_int_equal(c->uid, 0);
        assert_true(has_arg(c, "nobody"));
        assert_true(has_arg(c, "--format=" SLURM_SQUEUE_FORMAT));
        assert_false(has_arg(c, "--format=" SLURM_SQUEUE_KEYS_FORMAT));
        answer(c, "4120|4120|N/A|PENDING|Resources|0:00|nobody\n4077|4077|N/A|RUNNING|None|0:01|nobody\n", "");
        assert_true(calls[n_calls - 1].answered); /* no squeue of keys: no crash */
        assert_int_equal(j->state, JOB_QUEUED);
        assert_string_equal(job_reason(j), "Slurm:Resources");
        /* corral show and why name the Slurm job and Slurm's reason. */
        r = call(m, NOBODY, CORRAL_METHOD_SHOW, "{\"job_id\":1}");
        if (!strstr(json_object_to_json_string(r), "\"reason\": \"Slurm job 4120: Resources\""))
                fail_msg("show: %s", json_object_to_json_string(r));
        json_object_put(r);
        r = call(m, NOBODY, CORRAL_METHOD_WHY, "{\"job_id\":1}");
        if (!strstr(json_object_to_json_string(r), "\"slurm_job_id\": 4120") ||
            !strstr(json_object_to_json_string(r), "it is Slurm job 4120 of the cluster (partition batch); Slurm says: "
                                                   "Resources") ||
            strstr(json_object_to_json_string(r), "scheduler has not considered"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);
        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|RUNNING|None|0:05|nobody\n", "");
        assert_int_equal(j->state, JOB_RUNNING);
        assert_false(j->launching);
        /* A running forwarded job is not the local scheduler's. */
        pass(m);
        assert_int_equal(j->state, JOB_RUNNING);
        /* Suspending it is the cluster's administrators' (scontrol suspend): refused by its
         * backend, with nothing run, still running. */
        {
                size_t before = n_calls;
                r = call(m, 0, CORRAL_METHOD_SUSPEND, "{\"job_id\":1}");
                if (!strstr(json_object_to_json_string(r), "InvalidParameter"))
                        fail_msg("suspend: %s", json_object_to_json_string(r));
                json_object_put(r);
                assert_int_equal(n_calls, before);
                assert_int_equal(j->state, JOB_RUNNING);
        }

        /* Requeue: the user's scontrol requeue of the same Slurm job; back in the queue
         * here when the poll shows it pending, then running again. */
        r = call(m, NOBODY, CORRAL_METHOD_REQUEUE, "{\"job_id\":1}");
        assert_null(json_object_object_get(r, "error"));
        json_object_put(r);
        c = last("scontrol");
        assert_int_equal(c->uid, NOBODY);
        assert_true(has_arg(c, "requeue") && has_arg(c, "4120"));
        answer(c, "", "");
        assert_int_equal(j->state, JOB_RUNNING);
        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|PENDING|BeginTime|0:00|nobody\n", "");
        assert_int_equal(j->state, JOB_QUEUED);
        assert_string_equal(job_reason(j), "Slurm:BeginTime");
        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|RUNNING|None|0:01|nobody\n", "");
        assert_int_equal(j->state, JOB_RUNNING);
        /* requeue --hold: held here once Slurm holds it; released, it runs again. */
        r = call(m, NOBODY, CORRAL_METHOD_REQUEUE, "{\"job_id\":1,\"hold\":true}");
        assert_null(json_object_object_get(r, "error"));
        json_object_put(r);
        assert_true(has_arg(last("scontrol"), "requeuehold"));
        answer(last("scontrol"), "", "");
        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|PENDING|JobHeldUser|0:00|nobody\n", "");
        assert_int_equal(j->state, JOB_HELD);
        json_object_put(call(m, NOBODY, CORRAL_METHOD_RELEASE, "{\"job_id\":1}"));
        assert_true(has_arg(last("scontrol"), "release"));
        answer(last("scontrol"), "", "");
        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|RUNNING|None|0:01|nobody\n", "");
        assert_int_equal(j->state, JOB_RUNNING);

        manager_forward_poll(m);
        answer(last("squeue"), "4120|4120|N/A|FAILED|NonZeroExitCode|0:07|nobody\n", "");
        assert_int_equal(j->state, JOB_RUNNING); /* until its record says how */
        c = last("sacct");
        assert_true(has_arg(c, "4120"));
        answer(c, "4120|4120|FAILED|3:0|7|00:01.500||nobody\n4120.batch|4120.batch|FAILED|3:0|7|00:01.500|2048K|\n", "");
        assert_int_equal(j->state, JOB_FAILED);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, id, "ended 4120"); /* where its output is, for corral logs */
        /* corral logs: Slurm's slurm-%j.out in its working directory, stderr with it;
         * never this machine's journal. */
        r = call(m, NOBODY, CORRAL_METHOD_LOGS, "{\"job_id\":1}");
        if (!strstr(json_object_to_json_string(r), "\"stdout_path\": \"\\/tmp\\/slurm-4120.out\"") ||
            !strstr(json_object_to_json_string(r), "\"stderr_path\": \"\\/tmp\\/slurm-4120.out\"") ||
            strstr(json_object_to_json_string(r), "\"lines\"") ||
            /* whose rights root's corral logs opens them with */
            !strstr(json_object_to_json_string(r), "\"uid\": 65534") ||
            !strstr(json_object_to_json_string(r), "\"gid\": 65534"))
                fail_msg("logs: %s", json_object_to_json_string(r));
        json_object_put(r);
        assert_int_equal(job_run(j)->exit_code, 3);
        assert_int_equal(job_run(j)->usage.cpu_usec, 1500000);
        assert_int_equal(job_run(j)->usage.memory_peak, 2048 * 1024);
        assert_int_equal(manager_commit(m), 0);
        /* Charged to its project like a run here, its time and usage Slurm's. */
        {
                JobCharge ch = {};
                assert_int_equal(store_load_charge(m->store, id, &ch), 0);
                assert_int_equal(ch.cpus, 16);
                assert_int_equal(ch.run_usec, 7 * UINT64_C(1000000));
                assert_int_equal(ch.cpu_usec, 1500000);
                assert_true(ch.core_hours > 0.031 && ch.core_hours < 0.032); /* 16 CPUs x 7 s */
        }
        /* Ended: nothing more is polled. */
        manager_forward_poll(m);
        assert_true(calls[n_calls - 1].answered);
        calls_reset();
        manager_free(m);
}

/* slurmctld down: the job stays queued here with the reason, and goes at the next try;
 * the poll failing changes no state. A cluster's refusal ends the job, its words kept. */
static void test_unreachable(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        uint64_t id, id2;
        Job *j, *j2;

        calls_reset();
        id = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        j = manager_find_job(m, id);
        pass(m);
        answer(last("sbatch"), "", "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
                                   "(connect failure)\n");
        assert_int_equal(j->state, JOB_QUEUED);
        assert_string_equal(job_reason(j), "SlurmUnreachable");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, id, "none");
        /* sbatch killed at its time limit says nothing: tried again, not refused. */
        pass(m);
        answer(last("sbatch"), "", "");
        assert_int_equal(j->state, JOB_QUEUED);
        pass(m);
        answer(last("sbatch"), "77\n", "");
        assert_int_equal(manager_job_slurm_id(m, j), 77);
        assert_int_equal(n_calls, 3);

        manager_forward_poll(m);
        answer(last("squeue"), "", "squeue: error: Unable to contact slurm controller (connect failure)\n");
        assert_int_equal(j->state, JOB_QUEUED);
        assert_string_equal(job_reason(j), "SlurmUnreachable");
        assert_int_equal(manager_job_slurm_id(m, j), 77);

        id2 = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        j2 = manager_find_job(m, id2);
        pass(m);
        answer(last("sbatch"), "", "sbatch: error: Batch job submission failed: Invalid account or "
                                   "account/partition combination specified\n");
        assert_int_equal(j2->state, JOB_CANCELLED);
        assert_string_equal(job_reason(j2), "SlurmRefused");
        assert_non_null(strstr(job_run(j2)->launch_error, "Invalid account"));
        calls_reset();
        manager_free(m);
}

/* A crash between sbatch and the commit, then a restart: the job found by its key is
 * adopted, not submitted again; one not found goes again, once. Linked jobs keep their
 * link, and a running one is not taken for lost. */
static void test_crash_and_restart(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        uint64_t a, b;
        Job *j;

        calls_reset();
        a = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        b = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        pass(m);
        assert_int_equal(n_calls, 2);
        /* Both sbatch ran (one got as far as Slurm), neither answer was recorded. */
        assert_meta(m, a, "submitting");
        assert_meta(m, b, "submitting");
        m = manager_restart(m, t->dir, CONF);
        calls_reset();
        pass(m);
        assert_int_equal(n_calls, 0); /* nothing submitted before the poll says */
        manager_forward_poll(m);
        answer(last("squeue"), "900|900|N/A|RUNNING|None|0:03|nobody\n"
                               "901|901|N/A|RUNNING|None|0:03|nobody\n", "");
        /* Then the keys; a comment's made-up line naming a job the user's squeue did not
         * show adopts nothing. */
        answer_keys("nobody", "900|900|N/A|nobody|corral:testhost:1\n"
                              "901|901|N/A|nobody|corral:otherhost:2\n"
                              "903|903|N/A|nobody|x\n950|950|N/A|nobody|corral:testhost:2\n");
        j = manager_find_job(m, a);
        assert_int_equal(manager_job_slurm_id(m, j), 900);
        assert_int_equal(j->state, JOB_RUNNING);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, a, "linked 900 confirmed");
        assert_meta(m, b, "none");
        pass(m);
        assert_int_equal(n_calls, 3); /* the two squeues, and b submitted again */
        assert_true(has_arg(last("sbatch"), "--comment=corral:testhost:2"));
        answer(last("sbatch"), "902\n", "");
        assert_int_equal(manager_commit(m), 0);

        /* A restart with jobs on the cluster keeps their links and states. */
        m = manager_restart(m, t->dir, CONF);
        calls_reset();
        assert_int_equal(manager_job_slurm_id(m, manager_find_job(m, a)), 900);
        assert_int_equal(manager_find_job(m, a)->state, JOB_RUNNING);
        assert_int_equal(manager_job_slurm_id(m, manager_find_job(m, b)), 902);
        pass(m);
        assert_int_equal(n_calls, 0);
        /* Gone from squeue (MinJobAge passed while corrald was down): sacct, and without
         * slurmdbd scontrol, then the state squeue last gave is all there is. */
        manager_forward_poll(m);
        answer(last("squeue"), "902|902|N/A|PENDING|Priority|0:00|nobody\n", "");
        answer(last("sacct"), "", "sacct: error: Slurm accounting storage is disabled\n");
        /* Only the linked job is asked for; its record is its first, not what its name
         * made up after it. */
        assert_true(has_arg(last("scontrol"), "900"));
        answer(last("scontrol"),
               "JobId=900 JobName=wrap UserId=nobody(65534) JobState=COMPLETED Reason=None Dependency=(null) "
               "ExitCode=0:0 RunTime=00:00:09 Comment=corral:testhost:1\n"
               "JobId=900 UserId=nobody(65534) JobState=FAILED ExitCode=9:0 RunTime=00:00:09\n", "");
        assert_int_equal(manager_find_job(m, a)->state, JOB_COMPLETED);
        assert_int_equal(job_run(manager_find_job(m, a))->exit_code, 0);
        assert_string_equal(job_reason(manager_find_job(m, b)), "Slurm:Priority");
        calls_reset();
        manager_free(m);
}

/* The id sbatch prints is the user's claim (sbatch runs in the user's environment): it is
 * confirmed by root's squeue of the user's jobs, which prints nothing a user writes,
 * before any record of it is read as root. An id that squeue does not show (another
 * user's), or one that two jobs here claim, ends the job; one linked while a poll ran
 * waits for the next. sbatch's output is bounded. */
static void test_claimed_id(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF "MaxForwarded=10\n");
        uint64_t a, b, c, d, e;
        Job *ja, *jb, *jc, *jd, *je;
        FakeCall *sq;

        calls_reset();
        a = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        b = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        c = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        e = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        ja = manager_find_job(m, a), jb = manager_find_job(m, b), jc = manager_find_job(m, c);
        je = manager_find_job(m, e);
        pass(m);
        assert_int_equal(n_calls, 4);
        /* What the user runs may print 64 KiB; more is a refusal, not a retry. */
        assert_int_equal(calls[0].max_output, 64 * 1024);
        answer(&calls[0], "4200\n", "");       /* alice's job */
        answer(&calls[1], "4400\n", "");       /* the user's, */
        answer(&calls[2], "4400\n", "");       /* twice */
        answer_error(&calls[3], -EFBIG);
        assert_int_equal(je->state, JOB_CANCELLED);
        assert_string_equal(job_reason(je), "SlurmRefused");
        assert_non_null(strstr(job_run(je)->launch_error, "64 KiB"));
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, a, "linked 4200");

        manager_forward_poll(m);
        sq = last("squeue");
        assert_int_equal(sq->max_output, 0); /* root's: the executor's bound */
        /* d goes while the poll runs: its id is not judged by this squeue. */
        d = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        jd = manager_find_job(m, d);
        pass(m);
        answer(last("sbatch"), "4500\n", "");
        /* nobody's squeue: a line of alice's in it is none of Slurm's (dropped). */
        assert_true(has_arg(sq, "nobody") && !has_arg(sq, "alice"));
        answer(sq, "4200|4200|N/A|COMPLETED|None|0:05|alice\n"
                   "4400|4400|N/A|COMPLETED|None|0:05|nobody\n", "");
        /* No record of any of them read as root. */
        assert_true(streq(tool_of(&calls[n_calls - 1]), "squeue") || streq(tool_of(&calls[n_calls - 1]), "sbatch"));
        for (size_t i = 0; i < n_calls; i++)
                assert_false(streq(tool_of(&calls[i]), "sacct") || streq(tool_of(&calls[i]), "scontrol"));
        assert_int_equal(ja->state, JOB_CANCELLED);
        assert_string_equal(job_reason(ja), "SlurmIdMismatch");
        assert_non_null(strstr(job_run(ja)->launch_error, "not among the user's"));
        assert_int_equal(jb->state, JOB_CANCELLED);
        assert_string_equal(job_reason(jb), "SlurmIdMismatch");
        assert_non_null(strstr(job_run(jb)->launch_error, "another job's"));
        assert_int_equal(jc->state, JOB_CANCELLED);
        assert_string_equal(job_reason(jc), "SlurmIdMismatch");
        assert_int_equal(job_run(ja)->exit_code, -1);
        assert_int_equal(jd->state, JOB_QUEUED);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, d, "linked 4500");

        /* The next poll confirms d; a line not of the format (a field too many: a
         * comment) is skipped, the rest read. */
        manager_forward_poll(m);
        answer(last("squeue"), "4600|4600|N/A|RUNNING|None|0:01|nobody|two\nlines\n"
                               "4500|4500|N/A|RUNNING|None|0:01|nobody\n", "");
        assert_true(calls[n_calls - 1].answered);
        assert_int_equal(jd->state, JOB_RUNNING);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, d, "linked 4500 confirmed");
        /* Two lines for one job, which Slurm does not print: nothing decided on them. */
        manager_forward_poll(m);
        answer(last("squeue"), "4500|4500|N/A|RUNNING|None|0:02|nobody\n"
                               "4500|4500|N/A|COMPLETED|None|0:02|nobody\n", "");
        assert_int_equal(jd->state, JOB_RUNNING);
        assert_true(calls[n_calls - 1].answered);

        /* A line of the old format, with a comment (the user's text, which may make it
         * up), confirms nothing: only a line of nothing a user writes does. */
        {
                uint64_t g = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
                Job *jg = manager_find_job(m, g);
                char line[256];

                pass(m);
                answer(last("sbatch"), "4700\n", "");
                manager_forward_poll(m);
                snprintf(line, sizeof line, "4500|4500|N/A|RUNNING|None|0:03|nobody\n"
                                            "4800|4800|N/A|RUNNING|None|0:01|nobody\n"
                                            "4700|4700|N/A|COMPLETED|None|0:05|nobody|corral:testhost:%" PRIu64 "\n", g);
                answer(last("squeue"), line, "");
                for (size_t i = 0; i < n_calls; i++)
                        assert_false(streq(tool_of(&calls[i]), "sacct") || streq(tool_of(&calls[i]), "scontrol"));
                assert_int_equal(jg->state, JOB_CANCELLED);
                assert_string_equal(job_reason(jg), "SlurmIdMismatch");
                assert_non_null(strstr(job_run(jg)->launch_error, "not among the user's"));
                assert_int_equal(job_run(jg)->exit_code, -1);
                assert_int_equal(job_run(jg)->usage.memory_peak, 0);
        }
        calls_reset();
        manager_free(m);
}

/* After a crash, a Slurm job carrying the job's key is adopted only if the user's squeue,
 * which prints nothing a user writes, shows it: another user may plant that comment, and
 * a comment may make up a line of keys. */
static void test_adopt_only_own(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        uint64_t a;
        Job *j;

        calls_reset();
        a = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        pass(m);
        assert_meta(m, a, "submitting");
        m = manager_restart(m, t->dir, CONF);
        calls_reset();
        manager_forward_poll(m);
        answer(last("squeue"), "900|900|N/A|RUNNING|None|0:03|mallory\n", "");
        answer_keys("nobody", "900|900|N/A|mallory|corral:testhost:1\n"
                              "901|901|N/A|nobody|x\n900|900|N/A|nobody|corral:testhost:1\n");
        j = manager_find_job(m, a);
        assert_int_equal(manager_job_slurm_id(m, j), 0);
        assert_int_equal(j->state, JOB_QUEUED);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, a, "none");
        pass(m);
        assert_true(has_arg(last("sbatch"), "--comment=corral:testhost:1"));
        calls_reset();
        manager_free(m);
}

/* Each user's squeue is read about that user's jobs only: a line of another user's in it
 * (none of Slurm's: it was asked for that user's) changes nothing, neither ending a job nor
 * making it ambiguous. A user's own lines are read as they come. */
static void test_other_users_lines(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        Job *ja, *jb;
        FakeCall *c;

        calls_reset();
        ja = manager_find_job(m, submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        jb = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        pass(m);
        assert_int_equal(calls[0].uid, NOBODY);
        assert_int_equal(calls[1].uid, 1);
        answer(&calls[0], "800\n", "");
        answer(&calls[1], "810\n", "");
        manager_forward_poll(m);
        c = last("squeue");
        assert_true(has_arg(c, "nobody") && !has_arg(c, "daemon"));
        answer(c, "800|800|N/A|RUNNING|None|0:01|nobody\n", "");
        c = last("squeue");
        assert_true(has_arg(c, "daemon") && !has_arg(c, "nobody"));
        answer(c, "810|810|N/A|RUNNING|None|0:01|daemon\n"
                  "800|800|N/A|COMPLETED|None|0:01|nobody\n", "");
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_RUNNING);

        /* In daemon's output: a line of nobody's job as if daemon's, and one ending it. */
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:02|nobody\n", "");
        answer(last("squeue"), "810|810|N/A|RUNNING|None|0:02|daemon\n"
                               "800|800|N/A|COMPLETED|None|0:02|daemon\n"
                               "800|800|N/A|CANCELLED|None|0:02|nobody\n", "");
        assert_int_equal(ja->state, JOB_RUNNING);
        for (size_t i = 0; i < n_calls; i++)
                assert_false(streq(tool_of(&calls[i]), "sacct") || streq(tool_of(&calls[i]), "scontrol"));
        /* nobody's job gone from slurmctld's memory: a line in daemon's output does not
         * keep it running; its record is asked for. daemon's own job ends as its line says. */
        manager_forward_poll(m);
        answer(last("squeue"), "", "");
        answer(last("squeue"), "810|810|N/A|COMPLETED|None|0:03|daemon\n"
                               "800|800|N/A|RUNNING|None|0:03|daemon\n", "");
        c = last("sacct");
        assert_true(has_arg(c, "800,810"));
        answer(c, "800|800|COMPLETED|0:0|3|00:00.100||nobody\n810|810|COMPLETED|0:0|3|00:00.100||daemon\n", "");
        assert_int_equal(ja->state, JOB_COMPLETED);
        assert_int_equal(jb->state, JOB_COMPLETED);
        calls_reset();
        manager_free(m);
}

/* One user's squeue failing (Slurm knows no such user there, or more output than corrald
 * reads) costs that user only: the others' jobs go on; that user's links and states are
 * left as they are (an absence from no output is no end, no mismatch) and its queued jobs
 * say why. The cluster itself down (the client's words, or no user's squeue answering) is
 * the round's failure, as ever. */
static void test_one_user_fails(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF "MaxForwarded=10\n");
        Job *ja, *jb, *jc, *jd;
        json_object *r;
        FakeCall *c;
        size_t before;

        calls_reset();
        ja = manager_find_job(m, submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        jb = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        jc = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        pass(m);
        assert_int_equal(n_calls, 3);
        answer(&calls[0], "800\n", "");
        answer(&calls[1], "810\n", "");
        answer(&calls[2], "811\n", "");
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|PENDING|Resources|0:00|nobody\n", "");
        answer(last("squeue"), "810|810|N/A|RUNNING|None|0:01|daemon\n"
                               "811|811|N/A|PENDING|Priority|0:00|daemon\n", "");
        assert_string_equal(job_reason(ja), "Slurm:Resources");
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_string_equal(job_reason(jc), "Slurm:Priority");
        assert_int_equal(manager_forward_polls(m), 1);
        /* d goes after that poll: its claimed id awaits the next poll's confirmation. */
        jd = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        pass(m);
        answer(last("sbatch"), "812\n", "");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jd->id, "linked 812");

        /* daemon unknown to the cluster: nobody's job goes on; daemon's running job is not
         * taken for ended (no record asked for), d's claim is not judged, the queued ones
         * say why. */
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:01|nobody\n", "");
        c = last("squeue");
        assert_true(has_arg(c, "daemon") && !has_arg(c, "nobody"));
        answer(c, "", "squeue: error: Invalid user: daemon\n");
        for (size_t i = 0; i < n_calls; i++)
                assert_true(calls[i].answered); /* no sacct */
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(jc->state, JOB_QUEUED);
        assert_string_equal(job_reason(jc), "SlurmPollFailed");
        assert_int_equal(jd->state, JOB_QUEUED);
        assert_string_equal(job_reason(jd), "SlurmPollFailed");
        assert_int_equal(manager_forward_polls(m), 2);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jb->id, "linked 810 confirmed");
        assert_meta(m, jc->id, "linked 811 confirmed");
        assert_meta(m, jd->id, "linked 812");
        r = call(m, 1, CORRAL_METHOD_WHY, "{\"job_id\":3}");
        if (!strstr(json_object_to_json_string(r), "squeue of daemon's jobs failed") ||
            strstr(json_object_to_json_string(r), "Slurm says"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* Both users' squeues fail, neither with the controller's words: the round is the
         * cluster's failure, as with one user. Nothing changes but the reasons. */
        manager_forward_poll(m);
        answer(last("squeue"), "", "squeue: error: Invalid user: nobody\n");
        c = last("squeue");
        assert_true(has_arg(c, "daemon"));
        answer_error(c, -EFBIG);
        assert_true(calls[n_calls - 1].answered);
        assert_string_equal(job_reason(jc), "SlurmUnreachable");
        assert_string_equal(job_reason(jd), "SlurmUnreachable");
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(manager_forward_polls(m), 2);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jd->id, "linked 812");

        /* Both answer again: c runs, b ends with its record, d is confirmed. */
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:02|nobody\n", "");
        answer(last("squeue"), "810|810|N/A|COMPLETED|None|0:05|daemon\n"
                               "811|811|N/A|RUNNING|None|0:01|daemon\n"
                               "812|812|N/A|PENDING|Priority|0:00|daemon\n", "");
        c = last("sacct");
        assert_true(has_arg(c, "810"));
        answer(c, "810|810|COMPLETED|0:0|5|00:00.100||daemon\n", "");
        assert_int_equal(jb->state, JOB_COMPLETED);
        assert_int_equal(jc->state, JOB_RUNNING);
        assert_int_equal(jd->state, JOB_QUEUED);
        assert_int_equal(manager_forward_polls(m), 3);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jd->id, "linked 812 confirmed");

        /* The controller's words in the first user's squeue: nobody else's is asked. */
        manager_forward_poll(m);
        before = n_calls;
        answer(last("squeue"), "", "squeue: error: Unable to contact slurm controller (connect failure)\n");
        assert_int_equal(n_calls, before);
        assert_string_equal(job_reason(jd), "SlurmUnreachable");
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(jc->state, JOB_RUNNING);
        r = call(m, 1, CORRAL_METHOD_WHY, "{\"job_id\":4}");
        if (!strstr(json_object_to_json_string(r), "Slurm job 812 of a cluster whose controller did not answer") ||
            strstr(json_object_to_json_string(r), "Slurm says"))
                fail_msg("why: %s", json_object_to_json_string(r));
        json_object_put(r);

        /* All answer again: a ends. */
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|COMPLETED|None|0:03|nobody\n", "");
        answer(last("squeue"), "811|811|N/A|RUNNING|None|0:02|daemon\n"
                               "812|812|N/A|PENDING|Priority|0:00|daemon\n", "");
        c = last("sacct");
        assert_true(has_arg(c, "800"));
        answer(c, "800|800|COMPLETED|0:0|3|00:00.100||nobody\n", "");
        assert_int_equal(ja->state, JOB_COMPLETED);
        assert_string_equal(job_reason(jd), "Slurm:Priority");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jd->id, "linked 812 confirmed");
        calls_reset();
        manager_free(m);
}

/* After a crash, a job left "submitting" whose user's squeue, or squeue of keys, fails is
 * not submitted again: that user's Slurm jobs are not known, its key may be among them.
 * The other user's is adopted as usual. */
static void test_one_user_fails_after_crash(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        uint64_t a, b;

        calls_reset();
        a = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        b = submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        pass(m);
        assert_int_equal(n_calls, 2);
        m = manager_restart(m, t->dir, CONF);
        calls_reset();
        manager_forward_poll(m);
        answer(last("squeue"), "900|900|N/A|PENDING|Priority|0:00|nobody\n", "");
        answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");
        answer_keys("nobody", "900|900|N/A|nobody|corral:testhost:1\n");
        assert_int_equal(manager_job_slurm_id(m, manager_find_job(m, a)), 900);
        assert_string_equal(job_reason(manager_find_job(m, b)), "SlurmPollFailed");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, a, "linked 900 confirmed");
        assert_meta(m, b, "submitting");
        pass(m);
        for (size_t i = 0; i < n_calls; i++)
                assert_false(streq(tool_of(&calls[i]), "sbatch"));
        /* Its user's squeue answers, the squeue of keys fails: it still waits. */
        manager_forward_poll(m);
        answer(last("squeue"), "900|900|N/A|PENDING|Priority|0:00|nobody\n", "");
        answer(last("squeue"), "", "");
        assert_true(has_arg(last("squeue"), "--format=" SLURM_SQUEUE_KEYS_FORMAT));
        assert_false(has_arg(last("squeue"), "nobody"));
        answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, b, "submitting");
        pass(m);
        for (size_t i = 0; i < n_calls; i++)
                assert_false(streq(tool_of(&calls[i]), "sbatch"));
        /* Both answer, without its key: then it goes again. */
        manager_forward_poll(m);
        answer(last("squeue"), "900|900|N/A|PENDING|Priority|0:00|nobody\n", "");
        answer(last("squeue"), "", "");
        answer_keys("daemon", "");
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, b, "none");
        pass(m);
        assert_true(has_arg(last("sbatch"), "--comment=corral:testhost:2"));
        assert_int_equal(last("sbatch")->uid, 1);
        calls_reset();
        manager_free(m);
}

/* Cancel, hold and release pass through as the user's scancel/scontrol; MaxForwarded=
 * keeps the rest here; a dependency waits until what it names is on the cluster, then
 * names its Slurm id; an array goes once and its tasks follow their Slurm tasks. */
static void test_pass_through(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        uint64_t a, b, c, arr;
        Job *ja, *jb, *jc;
        char dep[160];

        calls_reset();
        a = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        snprintf(dep, sizeof dep, "{" JOB ",\"argv\":[\"/bin/true\"],\"dependencies\":[{\"type\":\"afterok\","
                                  "\"job_id\":%" PRIu64 "}]}", a);
        b = submit(m, dep);
        c = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}");
        ja = manager_find_job(m, a), jb = manager_find_job(m, b), jc = manager_find_job(m, c);
        pass(m);
        /* b waits for a to be linked; c goes (two in flight: a and c), then nothing more. */
        assert_int_equal(n_calls, 2);
        assert_string_equal(job_reason(jb), "Dependency");
        answer(&calls[0], "500\n", "");
        answer(&calls[1], "502\n", "");
        pass(m);
        assert_int_equal(n_calls, 2);
        assert_string_equal(job_reason(jb), "MaxForwarded");

        /* Cancel of a job on the cluster: the user's scancel, and it ends here. */
        {
                json_object *r = call(m, NOBODY, CORRAL_METHOD_CANCEL, "{\"job_id\":3}");
                assert_null(json_object_object_get(r, "error"));
                json_object_put(r);
        }
        assert_int_equal(jc->state, JOB_CANCELLED);
        {
                FakeCall *k = last("scancel");
                assert_int_equal(k->uid, NOBODY);
                assert_true(has_arg(k, "502"));
                answer(k, "", "");
        }
        /* b names a's Slurm id only once a poll confirmed it: never a mere claim. */
        pass(m);
        assert_string_equal(job_reason(jb), "Dependency");
        assert_false(streq(tool_of(&calls[n_calls - 1]), "sbatch"));
        manager_forward_poll(m);
        answer(last("squeue"), "500|500|N/A|PENDING|Resources|0:00|nobody\n", "");
        pass(m);
        assert_true(has_arg(last("sbatch"), "--dependency=afterok:500"));
        answer(last("sbatch"), "501\n", "");

        /* Requeue of a job still waiting on the cluster: refused, as here, nothing run. */
        {
                size_t before = n_calls;
                json_object *r = call(m, NOBODY, CORRAL_METHOD_REQUEUE, "{\"job_id\":1}");
                assert_non_null(json_object_object_get(r, "error"));
                json_object_put(r);
                assert_int_equal(n_calls, before);
        }
        /* Hold and release: here, then the user's scontrol. */
        json_object_put(call(m, NOBODY, CORRAL_METHOD_HOLD, "{\"job_id\":1}"));
        assert_int_equal(ja->state, JOB_HELD);
        assert_true(has_arg(last("scontrol"), "hold") && has_arg(last("scontrol"), "500"));
        answer(last("scontrol"), "", "");
        json_object_put(call(m, NOBODY, CORRAL_METHOD_RELEASE, "{\"job_id\":1}"));
        assert_int_equal(ja->state, JOB_QUEUED);
        assert_true(has_arg(last("scontrol"), "release"));
        answer(last("scontrol"), "", "");

        /* An array goes once; a run that could not start leaves its tasks to go again. */
        m->config->queues[config_find_queue(m->config, "cluster") - m->config->queues].max_forwarded = 10;
        arr = submit(m, "{" JOB ",\"argv\":[\"/bin/true\"],\"array\":\"1-3\"}");
        {
                size_t before = n_calls;
                fail_next = -ENOTCONN;
                pass(m);
                assert_int_equal(n_calls, before);
                assert_int_equal(manager_job_slurm_id(m, manager_find_job(m, arr + 1)), 0);
        }
        pass(m);
        assert_true(has_arg(last("sbatch"), "--array=1-3"));
        answer(last("sbatch"), "700\n", "");
        for (uint64_t k = arr; k < arr + 3; k++)
                assert_int_equal(manager_job_slurm_id(m, manager_find_job(m, k)), 700);
        manager_forward_poll(m);
        answer(last("squeue"), "701|700|1|RUNNING|None|0:01|nobody\n"
                               "700|700|2|PENDING|Resources|0:00|nobody\n"
                               "700|700|3|PENDING|Resources|0:00|nobody\n"
                               "500|500|N/A|PENDING|Resources|0:00|nobody\n"
                               "501|501|N/A|PENDING|Dependency|0:00|nobody\n", "");
        assert_int_equal(manager_find_job(m, arr)->state, JOB_RUNNING);
        assert_int_equal(manager_find_job(m, arr + 1)->state, JOB_QUEUED);
        assert_string_equal(job_reason(manager_find_job(m, arr + 2)), "Slurm:Resources");
        assert_string_equal(job_reason(jb), "Slurm:Dependency");
        calls_reset();
        manager_free(m);
}

/* OverflowTo=: a local job that waited long enough for this machine goes to the cluster,
 * one that Slurm could not take stays, and so does one that has not waited long. */
static void test_overflow(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF "[Queue]\nName=normal\nOverflowTo=cluster\nOverflowAfterSec=60\n");
        Job *big, *small, *unmappable, *inter;

        calls_reset();
        big = manager_find_job(m, submit(m, "{\"workdir\":\"/tmp\",\"argv\":[\"/bin/true\"],\"cpus\":4}"));
        small = manager_find_job(m, submit(m, "{\"workdir\":\"/tmp\",\"argv\":[\"/bin/true\"]}"));
        unmappable = manager_find_job(m, submit(m, "{\"workdir\":\"/tmp\",\"argv\":[\"/bin/true\"],\"io_weight\":5}"));
        inter = manager_find_job(m, submit(m, "{\"workdir\":\"/tmp\",\"argv\":[\"/bin/true\"]}"));
        inter->req.interactive = true; /* as corral run's: it runs on its client's terminal, here */
        pass(m);
        assert_int_equal(big->state, JOB_RUNNING); /* the machine is full */
        assert_int_equal(small->state, JOB_QUEUED);
        assert_int_equal(n_calls, 0);
        /* Not long enough yet. */
        pass(m);
        assert_int_equal(n_calls, 0);
        assert_string_equal(job_queue(small), "normal");
        small->eligible_time -= 120;
        unmappable->eligible_time -= 120;
        inter->eligible_time -= 120;
        pass(m);
        assert_string_equal(job_queue(small), "cluster");
        assert_true(has_arg(last("sbatch"), "--comment=corral:testhost:2"));
        assert_int_equal(n_calls, 1);
        assert_string_equal(job_queue(unmappable), "normal");
        assert_string_equal(job_queue(inter), "normal");
        answer(last("sbatch"), "990\n", "");
        assert_int_equal(manager_job_slurm_id(m, small), 990);
        calls_reset();
        manager_free(m);
}

/* A comment is its user's text: with a newline in it, the user prints a line of her own
 * making for another of her jobs. The state of a job comes from a squeue that prints
 * nothing a user writes, so a made-up line cannot keep an ended job running (and
 * uncharged), nor hide that it ended. */
static void test_comment_forges_line(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        FakeSlurmJob cluster[2] = {
                { 800, "PENDING", "Priority", "0:00", "nobody", "corral:testhost:1" },
                { 801, "RUNNING", "None", "0:05", "nobody", "corral:testhost:2" },
        };
        Job *ja, *jb;
        FakeCall *c;

        calls_reset();
        ja = manager_find_job(m, submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        jb = manager_find_job(m, submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        pass(m);
        answer(&calls[0], "800\n", "");
        answer(&calls[1], "801\n", "");
        manager_forward_poll(m);
        answer_squeues(cluster, 2);
        assert_int_equal(ja->state, JOB_QUEUED);
        assert_int_equal(jb->state, JOB_RUNNING);
        assert_int_equal(manager_commit(m), 0);
        assert_meta(m, jb->id, "linked 801 confirmed");

        /* b ends and slurmctld forgets it; a's comment now holds a line saying b runs. */
        cluster[0].comment = "corral:testhost:1\n801|801|N/A|RUNNING|None|0:06|nobody|corral:testhost:2";
        manager_forward_poll(m);
        answer_squeues(cluster, 1);
        c = last("sacct");
        assert_true(has_arg(c, "801"));
        answer(c, "801|801|COMPLETED|0:0|9|00:00.100||nobody\n", "");
        assert_int_equal(jb->state, JOB_COMPLETED);
        assert_int_equal(ja->state, JOB_QUEUED);

        /* A line for a job still shown: its own state, not the one made up. */
        cluster[0].comment = "x\n800|800|N/A|RUNNING|None|0:06|nobody|corral:testhost:1";
        manager_forward_poll(m);
        answer_squeues(cluster, 1);
        assert_int_equal(ja->state, JOB_QUEUED);
        assert_string_equal(job_reason(ja), "Slurm:Priority");
        cluster[0].state = "COMPLETED", cluster[0].reason = "None";
        cluster[0].comment = "x\n800|800|N/A|RUNNING|None|0:06|nobody|corral:testhost:1";
        manager_forward_poll(m);
        answer_squeues(cluster, 1);
        c = last("sacct");
        assert_true(has_arg(c, "800"));
        answer(c, "800|800|COMPLETED|0:0|3|00:00.100||nobody\n", "");
        assert_int_equal(ja->state, JOB_COMPLETED);
        calls_reset();
        manager_free(m);
}

static int setup(void **state) {
        return tree_setup_prefix(state, "corral-forward");
}

/* A failure that lasts is said when it begins and when it ends, not every round: a user
 * without an account on the cluster (their squeue fails each round) and the cluster down
 * make one warning each, and a notice once they answer again. */
static size_t count_in(FILE *f, const char *what) {
        char line[512];
        size_t n = 0;

        rewind(f);
        while (fgets(line, sizeof line, f))
                if (strstr(line, what))
                        n++;
        return n;
}

static void test_failure_said_once(void **state) {
        Tree *t = *state;
        Manager *m = manager_for_test(t->dir, CONF);
        FILE *log = tmpfile();
        int saved = dup(STDERR_FILENO);
        Job *ja, *jb;

        assert_non_null(log);
        assert_true(saved >= 0);
        calls_reset();
        ja = manager_find_job(m, submit(m, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        jb = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
        pass(m);
        answer(&calls[0], "800\n", "");
        answer(&calls[1], "810\n", "");
        fflush(stderr);
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:01|nobody\n", "");
        answer(last("squeue"), "810|810|N/A|PENDING|Priority|0:00|daemon\n", "");
        fflush(stderr);
        assert_int_equal(dup2(fileno(log), STDERR_FILENO), STDERR_FILENO);

        for (int round = 0; round < 3; round++) {
                manager_forward_poll(m);
                answer(last("squeue"), "800|800|N/A|RUNNING|None|0:01|nobody\n", "");
                answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");
        }
        assert_string_equal(job_reason(jb), "SlurmPollFailed");
        /* The cluster down, twice, then up: daemon's squeue answers too. */
        for (int round = 0; round < 2; round++) {
                manager_forward_poll(m);
                answer(last("squeue"), "", "squeue: error: Unable to contact slurm controller (connect failure)\n");
        }
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:02|nobody\n", "");
        answer(last("squeue"), "810|810|N/A|PENDING|Priority|0:00|daemon\n", "");
        assert_string_equal(job_reason(jb), "Slurm:Priority");
        /* daemon's fails again: said again. */
        manager_forward_poll(m);
        answer(last("squeue"), "800|800|N/A|RUNNING|None|0:03|nobody\n", "");
        answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");

        /* daemon's last forwarded job ends: daemon is polled no more, and forgotten, so
         * that the failure of a later job's poll is said again. */
        {
                char params[64];
                json_object *r;
                size_t before;

                snprintf(params, sizeof params, "{\"job_id\":%" PRIu64 "}", jb->id);
                r = call(m, 1, CORRAL_METHOD_CANCEL, params);
                assert_null(json_object_object_get(r, "error"));
                json_object_put(r);
                assert_int_equal(jb->state, JOB_CANCELLED);
                answer(last("scancel"), "", "");
                /* The round after the end still asks (its link goes at the round's end). */
                manager_forward_poll(m);
                answer(last("squeue"), "800|800|N/A|RUNNING|None|0:04|nobody\n", "");
                answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");
                before = n_calls;
                manager_forward_poll(m);
                answer(last("squeue"), "800|800|N/A|RUNNING|None|0:04|nobody\n", "");
                assert_int_equal(n_calls, before + 1); /* nobody's only */
                jb = manager_find_job(m, submit_as(m, 1, "{" JOB ",\"argv\":[\"/bin/true\"]}"));
                pass(m);
                answer(last("sbatch"), "820\n", "");
                manager_forward_poll(m);
                answer(last("squeue"), "800|800|N/A|RUNNING|None|0:05|nobody\n", "");
                answer(last("squeue"), "", "squeue: error: Invalid user: daemon\n");
        }

        fflush(stderr);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        close(saved);
        assert_int_equal(ja->state, JOB_RUNNING);
        assert_int_equal(count_in(log, "Cannot poll the Slurm jobs of user daemon"), 3);
        assert_int_equal(count_in(log, "The Slurm jobs of user daemon can be polled again"), 1);
        assert_int_equal(count_in(log, "Cannot poll the Slurm jobs ("), 1);
        assert_int_equal(count_in(log, "The Slurm cluster answers again"), 1);
        fclose(log);
        calls_reset();
        manager_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_submit_track_finish, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_unreachable, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_crash_and_restart, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_claimed_id, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_adopt_only_own, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_other_users_lines, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_comment_forges_line, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_one_user_fails, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_one_user_fails_after_crash, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_pass_through, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_overflow, setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_failure_said_once, setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
