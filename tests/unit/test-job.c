/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/job.h"
#include "strv.h"

/* Jobs come from slabs and keep their request's strings in shared chunks: many jobs,
 * freed in a scrambled order and reallocated, must each keep exactly their own strings. */
static void set_request(Job *j, const char *name, const char *workdir, unsigned cpus) {
        SubmitRequest req = SUBMIT_REQUEST_INIT;

        req.name = (char *) name;
        req.workdir = (char *) workdir;
        req.cpus = cpus;
        assert_int_equal(job_set_request(j, &req), 0);
}

static void test_trim_and_pack(void **state) {
        enum { N = 5000 };
        Job **jobs = calloc(N, sizeof *jobs);
        char buf[128];

        assert_non_null(jobs);
        for (int round = 0; round < 3; round++) {
                for (int i = 0; i < N; i++) {
                        if (jobs[i])
                                continue;
                        Job *j = job_new();
                        assert_non_null(j);
                        assert_int_equal(job_run(j)->exit_code, -1);
                        assert_null(j->run);
                        assert_null(j->shared);
                        j->id = (uint64_t) i + 1;
                        SubmitRequest req = SUBMIT_REQUEST_INIT;
                        snprintf(buf, sizeof buf, "job-%d-%d", round, i);
                        req.name = strdup(buf);
                        snprintf(buf, sizeof buf, "/home/u%d/dir", i);
                        req.workdir = strdup(buf);
                        if (i % 3 == 0)
                                req.stdout_path = strdup("out.%j");
                        if (i % 7 == 0) /* a big one takes the rare path */
                                req.stderr_path = calloc(1, 20000), memset(req.stderr_path, 'e', 19999);
                        if (i % 5 == 0)
                                req.gpu_type = strdup("a100"), req.constraint = strdup("nvlink|h100");
                        assert_int_equal(strv_extend(&req.argv, "/bin/true"), 0);
                        req.script = strdup("#!/bin/sh\n");
                        req.queue = strdup("normal");
                        req.cpus = 3;
                        req.gpus = 2;
                        req.gpu_binding = true;
                        req.tasks_max = 99; /* launch only: read back from the store */
                        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTEROK, 17), 0);
                        assert_int_equal(job_set_request(j, &req), 0);
                        submit_request_done(&req); /* j->req is a copy */
                        assert_int_equal(j->req.cpus, 3);
                        assert_int_equal(j->req.gpus, 2);
                        assert_true(j->req.gpu_binding);
                        assert_int_equal(j->req.n_dependencies, 1);
                        assert_int_equal(j->req.dependencies[0].job_id, 17);
                        assert_int_equal(j->req.dependencies[0].type, SCHED_DEP_AFTEROK);
                        assert_true(j->has_script);
                        jobs[i] = j;
                }
                for (int i = 0; i < N; i++) {
                        Job *j = jobs[i];
                        snprintf(buf, sizeof buf, "/home/u%d/dir", i);
                        assert_string_equal(job_str(j, JOB_WORKDIR), buf);
                        assert_int_equal(j->id, i + 1);
                        if (i % 3 == 0)
                                assert_string_equal(job_str(j, JOB_STDOUT_PATH), "out.%j");
                        else
                                assert_null(job_str(j, JOB_STDOUT_PATH));
                        if (i % 7 == 0)
                                assert_int_equal(strlen(job_str(j, JOB_STDERR_PATH)), 19999);
                        if (i % 5 == 0) {
                                assert_string_equal(job_str(j, JOB_GPU_TYPE), "a100");
                                assert_string_equal(job_str(j, JOB_CONSTRAINT), "nvlink|h100");
                        } else
                                assert_null(job_str(j, JOB_GPU_TYPE));
                }
                /* free two thirds in a scrambled order */
                for (int i = 0; i < N; i++)
                        if ((i * 7919 + round) % 3 != 0)
                                jobs[i] = job_free(jobs[i]);
        }
        for (int i = 0; i < N; i++)
                job_free(jobs[i]);
        free(jobs);
}

/* Jobs of one array or one script's loop submit the same request: they share one
 * JobShared, each job still reads its own values, one that differs by a number or a
 * string gets its own, and a probe made and freed between them (Submit's) costs its
 * chunk nothing. */
static void test_request_shared(void **state) {
        enum { N = 1000 };
        Job *jobs[N], *other, *probe;
        const JobShared *first;

        for (int i = 0; i < N; i++) {
                SubmitRequest req = SUBMIT_REQUEST_INIT;

                req.name = (char *) "sweep";
                req.workdir = (char *) "/home/ann";
                req.memory = UINT64_C(1) << 30;
                req.walltime_sec = 3600;
                req.cpus = (unsigned) (i % 4) + 1; /* in the job itself: not in what is shared */
                if (i % 2 == 0) {
                        /* a probe as Submit's output_paths_fit() makes, then frees */
                        SubmitRequest named = SUBMIT_REQUEST_INIT;
                        named.name = (char *) "sweep";
                        probe = job_new();
                        assert_non_null(probe);
                        assert_int_equal(job_set_request(probe, &named), 0);
                        job_free(probe);
                }
                jobs[i] = job_new();
                assert_non_null(jobs[i]);
                assert_int_equal(job_set_request(jobs[i], &req), 0);
        }
        first = jobs[0]->shared;
        assert_non_null(first);
        for (int i = 0; i < N; i++) {
                assert_ptr_equal(jobs[i]->shared, first);
                assert_int_equal(jobs[i]->req.cpus, (i % 4) + 1);
                assert_string_equal(job_str(jobs[i], JOB_NAME), "sweep");
                assert_int_equal(job_shared(jobs[i])->memory, UINT64_C(1) << 30);
        }
        assert_int_equal(first->refs, N);

        /* Another name, another begin time: not shared. */
        other = job_new();
        assert_non_null(other);
        set_request(other, "sweep2", "/home/ann", 1);
        assert_ptr_not_equal(other->shared, first);
        assert_string_equal(job_str(other, JOB_NAME), "sweep2");
        {
                SubmitRequest req = SUBMIT_REQUEST_INIT;
                req.name = (char *) "sweep";
                req.workdir = (char *) "/home/ann";
                req.memory = UINT64_C(1) << 30;
                req.walltime_sec = 3600;
                req.begin_time = 1;
                assert_int_equal(job_set_request(other, &req), 0);
                assert_ptr_not_equal(other->shared, first);
                assert_int_equal(job_shared(other)->begin_time, 1);
                assert_int_equal(job_shared(jobs[0])->begin_time, 0);
        }
        /* The probes' blocks went back: the jobs' block and the other's are neighbours. */
        assert_ptr_equal((const char *) other->shared,
                         (const char *) first + ((sizeof(JobShared) + first->size + 7) & ~(size_t) 7));
        job_free(other);
        for (int i = 0; i < N; i++)
                job_free(jobs[i]);
}

static void test_reason_and_info(void **state) {
        Job *j = job_new();
        JobInfo info;

        j->id = 7;
        j->user = intern_id("alice");
        j->project = intern_id("physics");
        j->queue = intern_id("normal");
        j->state = JOB_QUEUED;
        set_request(j, "sim", "/home/alice", 4);
        assert_int_equal(job_set_reason(j, "Priority"), 1);
        assert_int_equal(job_set_reason(j, "Priority"), 0); /* unchanged: no write */
        assert_ptr_equal(job_reason(j), intern("Priority"));

        assert_int_equal(job_to_info(j, false, NULL, "host", &info), 0);
        assert_string_equal(info.state, "PENDING");
        assert_string_equal(info.reason, "Priority");
        assert_null(info.workdir); /* public view */
        assert_null(info.node);    /* not started */
        job_info_done(&info);
        assert_int_equal(job_to_info(j, true, NULL, "host", &info), 0);
        assert_string_equal(info.workdir, "/home/alice");
        job_info_done(&info);
        job_free(j);
}

static void test_expand_path(void **state) {
        Job *j = job_new();
        char *p;

        j->id = 42;
        j->user = intern_id("bob");
        set_request(j, "run", NULL, 0);
        j->array_job_id = 40;
        j->array_task_id = 3;
        assert_int_equal(job_expand_path(j, "out-%j-%x-%u-%A_%a-%%-%q.txt%", &p), 0);
        assert_string_equal(p, "out-42-run-bob-40_3-%-%q.txt%");
        free(p);
        assert_int_equal(job_expand_path(j, NULL, &p), 0);
        assert_null(p);
        job_free(j);
}

/* The overflow of the old code: each two-byte %x grew into the 255-byte name inside a
 * buffer sized for four bytes per pattern byte. Now the result is bounded by PATH_MAX. */
static void test_expand_path_bounded(void **state) {
        Job *j = job_new();
        char name[256], pattern[4200], *p;
        size_t n;

        memset(name, 'n', 255);
        name[255] = 0;
        j->id = 7;
        j->user = intern_id("bob");
        set_request(j, name, NULL, 0);
        /* 15 × 255 + 15 = 3840 bytes: fits. */
        n = 0;
        for (int i = 0; i < 15; i++)
                n += (size_t) sprintf(pattern + n, "%%x/");
        assert_int_equal(job_expand_path(j, pattern, &p), 0);
        assert_int_equal(strlen(p), 15 * 256);
        free(p);
        /* 2047 × %x: 520 KB in the old code; refused now. */
        for (n = 0; n + 2 < sizeof pattern; n += 2)
                memcpy(pattern + n, "%x", 2);
        pattern[n] = 0;
        p = (char *) 0x1;
        assert_int_equal(job_expand_path(j, pattern, &p), -ENAMETOOLONG);
        /* Exactly PATH_MAX - 1 bytes fit, one more does not. */
        memset(pattern, 'a', 4095);
        pattern[4095] = 0;
        assert_int_equal(job_expand_path(j, pattern, &p), 0);
        assert_int_equal(strlen(p), 4095);
        free(p);
        memcpy(pattern + 4095, "b", 2);
        assert_int_equal(job_expand_path(j, pattern, &p), -ENAMETOOLONG);
        job_free(j);
}

/* A launch error names the owner's paths: the public view must not carry it. */
static void test_launch_error_private(void **state) {
        Job *j = job_new();
        JobInfo pub, mine;

        j->id = 9;
        j->user = intern_id("alice");
        j->queue = intern_id("normal");
        j->state = JOB_FAILED;
        job_run_ensure(j)->launch_error = strdup("cannot open /home/alice/secret/out.txt: Permission denied");
        assert_int_equal(job_set_reason(j, "LaunchFailed"), 1);
        assert_int_equal(job_to_info(j, false, NULL, "host", &pub), 0);
        assert_string_equal(pub.reason, "LaunchFailed");
        assert_int_equal(job_to_info(j, true, NULL, "host", &mine), 0);
        assert_string_equal(mine.reason, "LaunchFailed: cannot open /home/alice/secret/out.txt: Permission denied");
        job_info_done(&pub);
        job_info_done(&mine);
        job_free(j);
}

/* Each of the eight strings comes back as given, a NULL one as NULL; strings beyond what
 * the 16-bit offsets reach are refused, leaving nothing behind. */
static void test_request_strings(void **state) {
        static const char *const given[_JOB_STRING_MAX] = {
                [JOB_NAME] = "sim", [JOB_WORKDIR] = "/home/alice", [JOB_STDIN_PATH] = "in.txt",
                [JOB_STDOUT_PATH] = "out.%j", [JOB_STDERR_PATH] = "err.%j", [JOB_GPU_TYPE] = "a100",
                [JOB_CONSTRAINT] = "nvlink|h100", [JOB_MAIL_USER] = "alice@example.org",
        };
        Job *j = job_new();
        char *big[4];

        assert_non_null(j);
        for (unsigned without = 0; without <= _JOB_STRING_MAX; without++) {
                SubmitRequest req = SUBMIT_REQUEST_INIT; /* borrowed strings: not freed */
                char **to[_JOB_STRING_MAX] = { &req.name,        &req.workdir,  &req.stdin_path, &req.stdout_path,
                                               &req.stderr_path, &req.gpu_type, &req.constraint, &req.mail_user };

                for (unsigned k = 0; k < _JOB_STRING_MAX; k++)
                        *to[k] = k == without ? NULL : (char *) given[k];
                assert_int_equal(job_set_request(j, &req), 0);
                for (unsigned k = 0; k < _JOB_STRING_MAX; k++)
                        if (k == without)
                                assert_null(job_str(j, k));
                        else
                                assert_string_equal(job_str(j, k), given[k]);
        }
        {
                SubmitRequest req = SUBMIT_REQUEST_INIT;
                for (unsigned k = 0; k < ELEMENTSOF(big); k++) {
                        big[k] = malloc(20000);
                        assert_non_null(big[k]);
                        memset(big[k], 'a' + k, 19999);
                        big[k][19999] = 0;
                }
                req.workdir = big[0], req.stdin_path = big[1], req.stdout_path = big[2], req.stderr_path = big[3];
                req.cpus = 2;
                assert_int_equal(job_set_request(j, &req), -E2BIG);
                assert_null(j->shared);
                for (unsigned k = 0; k < _JOB_STRING_MAX; k++)
                        assert_null(job_str(j, k));
                req.stderr_path = NULL; /* 60,000 bytes: they fit */
                assert_int_equal(job_set_request(j, &req), 0);
                assert_string_equal(job_str(j, JOB_STDOUT_PATH), big[2]);
                assert_null(job_str(j, JOB_STDERR_PATH));
                for (unsigned k = 0; k < ELEMENTSOF(big); k++)
                        free(big[k]);
        }
        job_free(j);
}

/* A job that never started has no run and reads zeros; its run is made on first write,
 * and forgotten (a requeue) it reads zeros again. */
/* A queued job is kept as narrow as the decoder's bounds allow (100,000 of them are
 * corrald's memory): what the decoder lets through is kept exactly, at both ends of each
 * bound, and what only a caller bypassing the decoder could give is refused, never
 * truncated. */
static void test_request_narrow(void **state) {
        SubmitRequest req = SUBMIT_REQUEST_INIT;
        Job *j = job_new();

        assert_non_null(j);
        /* The budget: 100,000 queued jobs in 25 MB (issue 39). */
        assert_true(sizeof(Job) <= 256);
        req.cpus = CORRAL_CPUS_MAX;
        req.gpus = CORRAL_GPUS_MAX;
        req.nice = CORRAL_NICE_MIN;
        req.mail_events = MAIL_ALL | MAIL_ARRAY_TASKS | MAIL_TIME_LIMITS;
        assert_int_equal(job_set_request(j, &req), 0);
        assert_int_equal(j->req.cpus, CORRAL_CPUS_MAX);
        assert_int_equal(j->req.gpus, CORRAL_GPUS_MAX);
        assert_int_equal(job_shared(j)->nice, CORRAL_NICE_MIN);
        assert_int_equal(job_shared(j)->mail_events, MAIL_ALL | MAIL_ARRAY_TASKS | MAIL_TIME_LIMITS);
        req.nice = CORRAL_NICE_MAX;
        assert_int_equal(job_set_request(j, &req), 0);
        assert_int_equal(job_shared(j)->nice, CORRAL_NICE_MAX);

        req.cpus = CORRAL_CPUS_MAX + 1;
        assert_int_equal(job_set_request(j, &req), -ERANGE);
        assert_int_equal(j->req.cpus, 0);
        req.cpus = 1;
        req.gpus = CORRAL_GPUS_MAX + 1;
        assert_int_equal(job_set_request(j, &req), -ERANGE);
        req.gpus = 0;
        req.nice = CORRAL_NICE_MIN - 1;
        assert_int_equal(job_set_request(j, &req), -ERANGE);
        req.nice = CORRAL_NICE_MAX + 1;
        assert_int_equal(job_set_request(j, &req), -ERANGE);
        req.nice = 0;
        assert_int_equal(job_set_request(j, &req), 0);
        assert_int_equal(j->req.cpus, 1);

        /* The flags are bits of one word: each set alone leaves the others and the state. */
        j->state = JOB_RUNNING;
        j->launching = true;
        j->held_by_admin = 7; /* a bool: any non-zero is true */
        assert_true(j->held_by_admin);
        assert_true(j->launching);
        assert_false(j->rerunnable || j->suspended_by_admin || j->suspended_by_sched || j->suspended_by_person ||
                     j->has_script || j->scope_empty_seen || j->cancel_requested);
        assert_int_equal(j->state, JOB_RUNNING);
        j->launching = false;
        assert_true(j->held_by_admin);
        job_free(j);
}

static void test_run(void **state) {
        Job *j = job_new();
        JobRun *run;

        assert_non_null(j);
        assert_null(j->run);
        assert_int_equal(job_run(j)->usage.cpu_usec, 0);
        assert_int_equal(job_run(j)->suspended_usec, 0);
        assert_int_equal(job_run(j)->preempted_by, 0);
        assert_int_equal(job_run(j)->preempt_act, PREEMPT_ACT_NONE);
        assert_null(job_run(j)->launch_error);
        assert_null(j->run); /* reading made none */

        assert_int_equal(job_run(j)->exit_code, -1); /* none yet */
        assert_true(job_run_is_empty(job_run(j)));
        run = job_run_ensure(j);
        assert_non_null(run);
        assert_true(job_run_is_empty(run)); /* made, nothing in it yet */
        assert_ptr_equal(job_run_ensure(j), run);
        assert_int_equal(run->exit_code, -1);
        assert_int_equal(run->usage.cpu_usec, 0);
        run->usage.cpu_usec = 5;
        run->preempted_by = 3;
        assert_int_equal(job_take_launch_error(j, strdup("first")), 0);
        assert_int_equal(job_take_launch_error(j, strdup("second")), 0); /* the first freed */
        assert_string_equal(job_run(j)->launch_error, "second");
        assert_int_equal(job_run(j)->usage.cpu_usec, 5);

        assert_false(job_run_is_empty(j->run));
        assert_null(job_alloc(j));
        run->alloc = calloc(1, sizeof(SchedAllocation));
        assert_non_null(run->alloc);
        assert_ptr_equal(job_alloc(j), run->alloc);

        job_run_forget(j); /* its allocation with it */
        assert_null(job_alloc(j));
        assert_null(j->run);
        assert_true(job_run_is_empty(j->run));
        assert_int_equal(job_run(j)->exit_code, -1);
        assert_int_equal(job_run(j)->usage.cpu_usec, 0);
        assert_int_equal(job_run(j)->preempted_by, 0);
        assert_null(job_run(j)->launch_error);
        assert_int_equal(job_take_launch_error(j, strdup("third")), 0);
        job_free(j); /* its run with it */
}

/* A run is kept for any one field that is not job_run_none's (a restart loads only such
 * runs): each field alone makes it not empty. */
static void test_run_is_empty(void **state) {
        char words[] = "cannot open out.txt";
        SchedAllocation alloc = {};
        JobRun r;

#define ONE(stmt)                                          \
        do {                                               \
                r = job_run_none;                          \
                assert_true(job_run_is_empty(&r));         \
                stmt;                                      \
                if (job_run_is_empty(&r))                  \
                        fail_msg("empty after %s", #stmt); \
        } while (0)

        assert_true(job_run_is_empty(NULL));
        ONE(r.usage.cpu_usec = 1);
        ONE(r.usage.memory_peak = 1);
        ONE(r.usage.io_read_bytes = 1);
        ONE(r.usage.io_write_bytes = 1);
        ONE(r.usage.tasks_peak = 1);
        ONE(r.suspended_usec = 1);
        ONE(r.suspend_start = 1);
        ONE(r.launch_error = words);
        ONE(r.preempted_by = 1);
        ONE(r.resident_memory = 1);
        ONE(r.last_resume = 1);
        ONE(r.preempt_act = PREEMPT_ACT_FREEZE);
        ONE(r.preempt_moved = true);
        ONE(r.preempt_swap_off = true);
        ONE(r.reclaimed = true);
        ONE(r.exit_code = 0); /* exited 0: a run, not none */
        ONE(r.exit_signal = 9);
        ONE(r.alloc = &alloc);
#undef ONE
}

/* The interned names by 32-bit id, as a job keeps its user, project, queue and reason. */
static void test_intern_ids(void **state) {
        uint32_t a = intern_id("intern-test-a"), b = intern_id("intern-test-b");

        assert_int_equal(intern_id(NULL), 0);
        assert_null(intern_name(0));
        assert_null(intern_name(UINT32_MAX)); /* never made */
        assert_int_not_equal(a, 0);
        assert_int_not_equal(b, 0);
        assert_int_not_equal(a, b);
        assert_int_equal(intern_id("intern-test-a"), a); /* equal names, equal ids */
        assert_string_equal(intern_name(a), "intern-test-a");
        assert_ptr_equal(intern_name(a), intern("intern-test-a")); /* the shared copy */
        assert_int_equal(intern_find_id("intern-test-b"), b);
        assert_int_equal(intern_find_id("intern-test-c"), 0); /* not added */
        assert_null(intern_find("intern-test-c"));
        assert_int_equal(intern_find_id("intern-test-c"), 0);
        /* Past the table's first growth (64 slots), every id still leads to its name. */
        for (int i = 0; i < 200; i++) {
                char name[32];
                snprintf(name, sizeof name, "intern-test-%d", i);
                uint32_t id = intern_id(name);
                assert_int_not_equal(id, 0);
                assert_string_equal(intern_name(id), name);
        }
        for (int i = 0; i < 200; i++) {
                char name[32];
                snprintf(name, sizeof name, "intern-test-%d", i);
                assert_string_equal(intern_name(intern_find_id(name)), name);
        }
        assert_int_equal(intern_id("intern-test-a"), a);

        Job *j = job_new();
        assert_non_null(j);
        assert_null(job_user(j)); /* 0: none */
        assert_null(job_reason(j));
        j->user = a;
        assert_string_equal(job_user(j), "intern-test-a");
        assert_int_equal(job_set_reason(j, "intern-test-b"), 1);
        assert_int_equal(j->reason, b);
        assert_int_equal(job_set_reason(j, NULL), 1);
        assert_int_equal(j->reason, 0);
        job_free(j);
}

/* What 100,000 queued jobs cost is mostly their Job (docs/PERFORMANCE.md, issue 39's
 * 25 MB): a member more goes past this on purpose, not by accident. 184 bytes before
 * the times, the interned names and the allocation were narrowed or moved. */
static void test_job_size(void **state) {
        assert_true(sizeof(Job) <= 144);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_trim_and_pack),
                cmocka_unit_test(test_request_shared),
                cmocka_unit_test(test_reason_and_info),
                cmocka_unit_test(test_expand_path),
                cmocka_unit_test(test_expand_path_bounded),
                cmocka_unit_test(test_launch_error_private),
                cmocka_unit_test(test_request_strings),
                cmocka_unit_test(test_run),
                cmocka_unit_test(test_run_is_empty),
                cmocka_unit_test(test_request_narrow),
                cmocka_unit_test(test_intern_ids),
                cmocka_unit_test(test_job_size),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
