/* SPDX-License-Identifier: GPL-2.0-or-later */
/* forward/: a request as sbatch's arguments (every field, and every refusal), the state
 * table against Corral's states, the idempotence key, and the readers of Slurm 22.05's
 * output recorded in tests/data/slurm/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/job-state.h"
#include "forward/slurm.h"
#include "strv.h"

static char *read_data(const char *name) {
        const char *src = getenv("CORRAL_SRCDIR") ?: ".";
        char path[512];
        char *buf;
        long n;
        FILE *f;

        snprintf(path, sizeof path, "%s/tests/data/slurm/%s", src, name);
        f = fopen(path, "re");
        assert_non_null(f);
        assert_int_equal(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        rewind(f);
        buf = malloc(n + 1);
        assert_non_null(buf);
        assert_int_equal(fread(buf, 1, n, f), (size_t) n);
        buf[n] = 0;
        fclose(f);
        return buf;
}

/* Forwarded Corral jobs 40 -> Slurm 900, 41 -> Slurm 901; 42 waits here; others are
 * local. */
static int deps(uint64_t id, void *userdata, uint64_t *ret) {
        (void) userdata;
        if (id == 40 || id == 41) {
                *ret = 860 + id;
                return 0;
        }
        return id == 42 ? -EAGAIN : -ENOENT;
}

static const SlurmSubmitParams params = {
        .job_id = 57,
        .host = "login1",
        .user = "alice",
        .partition = "batch",
        .account = "phys01",
        .dependency = deps,
};

static bool has(char **argv, const char *arg) {
        return strv_contains(argv, arg);
}

static void test_submit_every_field(void **state) {
        SubmitRequest req = SUBMIT_REQUEST_INIT;
        char *env[] = { (char *) "HOME=/home/alice", (char *) "SLURM_CONF=/elsewhere/slurm.conf", (char *) "SBATCH_PARTITION=x",
                        (char *) "OMP_NUM_THREADS=4", (char *) "MY_SLURM_THING=kept", NULL };
        SlurmSubmit s = {};
        char *reason = NULL;

        setenv("TZ", "UTC", 1);
        tzset();
        req.name = (char *) "sim";
        req.script = (char *) "#!/bin/sh\necho hi\n";
        req.env = env;
        req.workdir = (char *) "/home/alice/run";
        req.stdin_path = (char *) "in.txt";
        req.stdout_path = (char *) "out-%j-%x-%u-%A.log";
        req.stderr_path = (char *) "/tmp/err-%N-%%-100%";
        req.cpus = 4;
        req.memory = (UINT64_C(3) << 30) + 1;   /* rounds up to the next MiB */
        req.gpus = 2;
        req.gpu_type = (char *) "a100";
        req.constraint = (char *) "gpu&nvlink";
        req.gpu_binding = true;
        req.walltime_sec = 90061;               /* 1-01:01:01 -> whole minutes, up */
        req.exclusive = true;
        req.rerunnable = 0;
        req.hold = true;
        req.nice = 5;
        req.begin_time = 1795000000;
        req.warn_signal = 10;
        req.warn_sec = 120;
        req.warn_batch_only = true;
        req.mail_events = MAIL_ALL | MAIL_TIME_LIMIT_80;
        req.mail_user = (char *) "alice@example.org";
        req.umask = 0027;
        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTEROK, 40), 0);
        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTERANY, 41), 0);

        assert_int_equal(slurm_submit_build(&req, &params, &s, &reason), 0);
        assert_null(reason);
        assert_string_equal(s.argv[0], "sbatch");
        assert_true(has(s.argv, "--parsable"));
        assert_true(has(s.argv, "--comment=corral:login1:57"));
        assert_true(has(s.argv, "--export=ALL"));
        assert_true(has(s.argv, "--nodes=1"));
        assert_true(has(s.argv, "--ntasks=1"));
        assert_true(has(s.argv, "--cpus-per-task=4"));
        assert_true(has(s.argv, "--job-name=sim"));
        assert_true(has(s.argv, "--partition=batch"));
        assert_true(has(s.argv, "--account=phys01"));
        assert_true(has(s.argv, "--chdir=/home/alice/run"));
        assert_true(has(s.argv, "--input=in.txt"));
        /* Corral's ids in the path, so the file is where corral logs looks; Slurm's own
         * patterns escaped, so it writes them as Corral would, literally. */
        assert_true(has(s.argv, "--output=out-57-sim-alice-57.log"));
        assert_true(has(s.argv, "--error=/tmp/err-%%N-%%-100%%"));
        assert_true(has(s.argv, "--mem=3073M"));
        assert_true(has(s.argv, "--time=1-01:02:00"));
        assert_true(has(s.argv, "--gpus=a100:2"));
        assert_true(has(s.argv, "--constraint=gpu&nvlink"));
        assert_true(has(s.argv, "--gres-flags=enforce-binding"));
        assert_true(has(s.argv, "--exclusive"));
        assert_true(has(s.argv, "--no-requeue"));
        assert_true(has(s.argv, "--hold"));
        assert_true(has(s.argv, "--nice=5"));
        assert_true(has(s.argv, "--dependency=afterok:900,afterany:901"));
        assert_true(has(s.argv, "--begin=2026-11-18T11:06:40"));
        assert_true(has(s.argv, "--signal=B:10@120"));
        assert_true(has(s.argv, "--mail-type=ALL,TIME_LIMIT_80"));
        assert_true(has(s.argv, "--mail-user=alice@example.org"));
        assert_false(has(s.argv, "--requeue"));
        for (char **a = s.argv; *a; a++)
                assert_false(strncmp(*a, "--wrap", 6) == 0 || strncmp(*a, "--array", 7) == 0);
        assert_string_equal(s.stdin_data, req.script);
        assert_int_equal(s.umask, 0027);
        /* The job's environment, less what would steer sbatch or name another cluster. */
        assert_int_equal(strv_length(s.env), 3);
        assert_true(has(s.env, "HOME=/home/alice"));
        assert_true(has(s.env, "OMP_NUM_THREADS=4"));
        assert_true(has(s.env, "MY_SLURM_THING=kept"));
        slurm_submit_done(&s);
        free(req.dependencies);
}

static void test_submit_argv_array_defaults(void **state) {
        SubmitRequest req = SUBMIT_REQUEST_INIT;
        char *argv[] = { (char *) "python3", (char *) "-c", (char *) "print('it''s')", NULL };
        SlurmSubmitParams p = params;
        SlurmSubmit s = {};
        char *reason = NULL;

        req.argv = argv;
        req.walltime_sec = CORRAL_WALLTIME_INFINITY;
        req.rerunnable = 1;
        req.shards = 3;                         /* not dropped on the way: gres/shard there too */
        req.stdout_path = (char *) "o-%A_%a.txt";
        assert_int_equal(array_spec_parse("1-9:2%3", &req.array), 0);
        p.job_id = 70;
        p.array_job_id = 66;
        p.partition = p.account = NULL;
        assert_int_equal(slurm_submit_build(&req, &p, &s, &reason), 0);
        assert_true(has(s.argv, "--wrap='python3' '-c' 'print('\\''it'\\'''\\''s'\\'')'"));
        assert_true(has(s.argv, "--array=1-9:2%3"));
        assert_true(has(s.argv, "--output=o-66_%a.txt"));
        assert_true(has(s.argv, "--time=UNLIMITED"));
        assert_true(has(s.argv, "--requeue"));
        assert_true(has(s.argv, "--gres=shard:3"));
        assert_true(has(s.argv, "--cpus-per-task=1"));
        assert_true(has(s.argv, "--comment=corral:login1:70"));
        assert_null(s.stdin_data);
        assert_non_null(s.env);
        assert_null(s.env[0]);
        for (char **a = s.argv; *a; a++)
                assert_false(strncmp(*a, "--partition", 11) == 0 || strncmp(*a, "--account", 9) == 0 ||
                             strncmp(*a, "--job-name", 10) == 0 || strncmp(*a, "--mem", 5) == 0 ||
                             strncmp(*a, "--mail", 6) == 0 || strncmp(*a, "--dependency", 12) == 0);
        slurm_submit_done(&s);
        array_spec_done(&req.array);
}

static void test_submit_refusals(void **state) {
        static const struct {
                int what;
                int ret;
                const char *reason;
        } t[] = {
                { 0, -EOPNOTSUPP, "I/O bandwidth" },
                { 1, -EOPNOTSUPP, "I/O bandwidth, IOPS or weight" },
                { 2, -EOPNOTSUPP, "TasksMax" },
                { 3, -EOPNOTSUPP, "negative nice (-5)" },
                { 4, -EOPNOTSUPP, "job 7, which it depends on, does not run on the cluster" },
                { 5, -EAGAIN, "job 42, which it depends on, is not on the cluster yet" },
                { 6, -EOPNOTSUPP, "%j in an array task's path" },
                { 7, -EOPNOTSUPP, "this machine's name" },
                { 8, -EOPNOTSUPP, "neither a script nor a command" },
                { 9, -EOPNOTSUPP, "backslash" },
                { 10, -EOPNOTSUPP, "interactive job" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                SubmitRequest req = SUBMIT_REQUEST_INIT;
                SlurmSubmitParams p = params;
                SlurmSubmit s = {};
                char *reason = NULL;

                req.script = (char *) "#!/bin/sh\n";
                switch (t[i].what) {
                case 0: assert_int_equal(io_device_limits_add(&req.io_read_bw, "/dev/vdb", 1000), 0); break;
                case 1: req.io_weight = 50; break;
                case 2: req.tasks_max = 100; break;
                case 3: req.nice = -5; break;
                case 4: assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTEROK, 7), 0); break;
                case 5: assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTER, 42), 0); break;
                case 6:
                        assert_int_equal(array_spec_parse("1-3", &req.array), 0);
                        req.stderr_path = (char *) "e-%j";
                        break;
                case 7: p.host = "bad host"; break;
                case 8: req.script = NULL; break;
                case 9:
                        assert_int_equal(array_spec_parse("1-3", &req.array), 0);
                        req.stdout_path = (char *) "a\\b-%a";
                        break;
                case 10: req.interactive = true; break;
                }
                assert_int_equal(slurm_submit_build(&req, &p, &s, &reason), t[i].ret);
                assert_non_null(reason);
                if (!strstr(reason, t[i].reason))
                        fail_msg("case %zu: '%s' does not say '%s'", i, reason, t[i].reason);
                assert_null(s.argv);
                free(reason);
                io_device_limits_done(&req.io_read_bw);
                free(req.dependencies);
                array_spec_done(&req.array);
        }
}

static void test_key(void **state) {
        char buf[SLURM_KEY_LENGTH_MAX];
        uint64_t id = 0;

        assert_int_equal(slurm_key_format("login1.example.org", 123, buf, sizeof buf), 0);
        assert_string_equal(buf, "corral:login1.example.org:123");
        assert_true(slurm_key_parse(buf, "login1.example.org", &id));
        assert_int_equal(id, 123);
        assert_false(slurm_key_parse(buf, "login1", &id));
        assert_false(slurm_key_parse("corral:login1:", "login1", &id));
        assert_false(slurm_key_parse("corral:login1:12x", "login1", &id));
        assert_false(slurm_key_parse("corral:login1:0", "login1", &id));
        assert_false(slurm_key_parse("(null)", "login1", &id));
        assert_false(slurm_key_parse(NULL, "login1", &id));
        assert_int_equal(slurm_key_format("a:b", 1, buf, sizeof buf), -EINVAL);
        assert_int_equal(slurm_key_format("", 1, buf, sizeof buf), -EINVAL);
}

static void test_parsable(void **state) {
        uint64_t id = 0;
        char *cluster = NULL;

        assert_int_equal(slurm_parse_parsable("4120\n", &id, &cluster), 0);
        assert_int_equal(id, 4120);
        assert_null(cluster);
        assert_int_equal(slurm_parse_parsable("4121;tiger\n", &id, &cluster), 0);
        assert_int_equal(id, 4121);
        assert_string_equal(cluster, "tiger");
        free(cluster);
        assert_int_equal(slurm_parse_parsable("4122", &id, NULL), 0);
        assert_int_equal(id, 4122);
        for (const char *const *bad = (const char *const[]) { "", "\n", "0\n", "x\n", "12 \n", "12;\n", "12\n13\n",
                                                             "Submitted batch job 12\n", "-1\n",
                                                             "99999999999999999999999\n", NULL };
             *bad; bad++)
                if (slurm_parse_parsable(*bad, &id, NULL) != -EBADMSG)
                        fail_msg("'%s' was taken", *bad);
        assert_int_equal(slurm_parse_parsable(NULL, &id, NULL), -EBADMSG);
}

/* Every Slurm state maps to one of Corral's states, which daemon/job-state.c knows. */
static void test_state_map(void **state) {
        static const struct {
                const char *slurm, *reason, *corral;
        } t[] = {
                { "PENDING", "Resources", "PENDING" },
                { "PENDING", "JobHeldUser", "HELD" },
                { "PENDING", "JobHeldAdmin", "HELD" },
                { "CONFIGURING", "None", "PENDING" },
                { "REQUEUED", "None", "PENDING" },
                { "REQUEUE_HOLD", "JobHeldAdmin", "HELD" },
                { "SPECIAL_EXIT", "None", "HELD" },
                { "RUNNING", "None", "RUNNING" },
                { "COMPLETING", "None", "RUNNING" },
                { "STAGE_OUT", "None", "RUNNING" },
                { "SUSPENDED", "None", "SUSPENDED" },
                { "STOPPED", "None", "SUSPENDED" },
                { "COMPLETED", "None", "COMPLETED" },
                { "FAILED", "NonZeroExitCode", "FAILED" },
                { "BOOT_FAIL", "None", "FAILED" },
                { "DEADLINE", "None", "FAILED" },
                { "CANCELLED", "None", "CANCELLED" },
                { "CANCELLED by 1001", NULL, "CANCELLED" },
                { "PREEMPTED", "None", "CANCELLED" },
                { "TIMEOUT", "TimeLimit", "TIMEOUT" },
                { "OUT_OF_MEMORY", "None", "OUT_OF_MEMORY" },
                { "NODE_FAIL", "None", "NODE_FAIL" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const char *c = slurm_state_to_corral(t[i].slurm, t[i].reason);
                assert_non_null(c);
                assert_string_equal(c, t[i].corral);
                assert_true(job_state_from_string(c) >= 0);
        }
        assert_null(slurm_state_to_corral("PENDINGX", NULL));
        assert_null(slurm_state_to_corral("", NULL));
        assert_null(slurm_state_to_corral(NULL, NULL));
        assert_null(slurm_state_to_corral("RUNNIN", NULL));
}

static void test_time_rss(void **state) {
        static const struct {
                const char *s;
                uint64_t usec;
        } t[] = {
                { "0:00", 0 },
                { "0:05", 5000000 },
                { "1:02:37", 3757000000 },
                { "3-04:05:06", ((3 * 24 + 4) * 3600 + 5 * 60 + 6) * UINT64_C(1000000) },
                { "00:00.012", 12000 },
                { "01:00.512", 60512000 },
                { "1-01:01:01", 90061000000 },
                { "00:00:00", 0 },
        };
        static const char *const bad[] = { "", "5", "1:60", "1-2", "1-2:3", "a:00", "1:00.", "1:00.x", "1:2:3:4",
                                           "-1:00", "1:00 " };
        uint64_t u;

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                assert_int_equal(slurm_parse_time(t[i].s, &u), 0);
                assert_int_equal(u, t[i].usec);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (slurm_parse_time(bad[i], &u) != -EBADMSG)
                        fail_msg("'%s' was taken", bad[i]);
        assert_int_equal(slurm_parse_rss("", &u), 0);
        assert_int_equal(u, 0);
        assert_int_equal(slurm_parse_rss("1280K", &u), 0);
        assert_int_equal(u, 1280 * 1024);
        assert_int_equal(slurm_parse_rss("2.50M", &u), 0);
        assert_int_equal(u, 2621440);
        assert_int_equal(slurm_parse_rss("1048576K", &u), 0);
        assert_int_equal(u, UINT64_C(1) << 30);
        assert_int_equal(slurm_parse_rss("12X", &u), -EBADMSG);
        /* Found by fuzz-slurm-output: a number beyond 64 bits, without a unit. */
        assert_int_equal(slurm_parse_rss("88888888888888888888888888888888", &u), -ERANGE);
        assert_int_equal(slurm_parse_rss("K", &u), -EBADMSG);
}

static void test_squeue(void **state) {
        char *out = read_data("squeue.txt");
        SlurmJobStatus *j = NULL;
        size_t n = 0;

        assert_int_equal(slurm_parse_squeue(out, &j, &n), 0);
        assert_int_equal(n, 17);
        assert_int_equal(j[0].job_id, 4119);
        assert_int_equal(j[0].array_task_id, SLURM_NO_TASK);
        assert_string_equal(j[0].state, "RUNNING");
        assert_int_equal(j[0].elapsed_sec, 3757);
        assert_null(j[0].comment);
        assert_string_equal(j[0].user, "alice");
        assert_string_equal(j[12].user, "bob");
        assert_int_equal(j[3].job_id, 4123);
        assert_int_equal(j[3].array_job_id, 4122);
        assert_int_equal(j[3].array_task_id, 1);
        assert_string_equal(slurm_state_to_corral(j[7].state, j[7].reason), "HELD");
        assert_int_equal(j[13].elapsed_sec, (3 * 24 + 4) * 3600 + 5 * 60 + 6);
        /* Slurm's description of a reason, where it has one, is read whole. */
        assert_string_equal(j[16].reason, "ReqNodeNotAvail, UnavailableNodes:n[1-2]");
        for (size_t i = 0; i < n; i++)
                assert_non_null(slurm_state_to_corral(j[i].state, j[i].reason));
        slurm_job_status_free_many(j, n);
        free(out);

        assert_int_equal(slurm_parse_squeue("", &j, &n), 0);
        assert_int_equal(n, 0);
        free(j);
        for (const char *const *bad = (const char *const[]) { "1|1|N/A|RUNNING|None|0:00\n", "x|1|N/A|RUNNING|None|0:00|u\n",
                                                             "1|1|one|RUNNING|None|0:00|u\n", "1|1|N/A|running|None|0:00|u\n",
                                                             "1|1|N/A|RUNNING||0:00|u\n", "1|1|N/A|RUNNING|None|soon|u\n",
                                                             "1|1|N/A|RUNNING|None|0:00|\n", "0|1|N/A|RUNNING|None|0:00|u\n",
                                                             /* a field more: the comment of the old format */
                                                             "1|1|N/A|RUNNING|None|0:00|u|corral:h:1\n",
                                                             "1|1|N/A|RUNNING|None|0:00|u|\n",
                                                             /* a state not in the table, or more than the word */
                                                             "1|1|N/A|BOGUS|None|0:00|u\n",
                                                             "1|1|N/A|CANCELLED by 0|None|0:00|u\n",
                                                             "1|1|N/A|RUNNING|None|0:00|u v\n",
                                                             "1|1|N/A|RUNNING|No\tne|0:00|u\n",
                                                             "squeue: error: Invalid user: carol\n", NULL };
             *bad; bad++) {
                /* Skipped, counted: no job from it. */
                if (slurm_parse_squeue(*bad, &j, &n) != 1 || n != 0)
                        fail_msg("'%s' was taken", *bad);
                free(j);
        }
        /* A line of the old format, a comment holding a newline and a made-up line: the
         * made-up line has the comment's field too much, and goes with the rest. */
        assert_int_equal(slurm_parse_squeue("5|5|N/A|PENDING|Priority|0:00|bob|x\n"
                                            "6|6|N/A|RUNNING|None|0:01|bob|corral:login1:9\n"
                                            "6|6|N/A|COMPLETED|None|0:01|bob\n", &j, &n), 2);
        assert_int_equal(n, 1);
        assert_int_equal(j[0].job_id, 6);
        assert_string_equal(j[0].state, "COMPLETED");
        slurm_job_status_free_many(j, n);
}

/* The keys: ids, a user, and the comment, which is the rest of the line. */
static void test_squeue_keys(void **state) {
        char *out = read_data("squeue-keys.txt");
        SlurmJobStatus *j = NULL;
        size_t n = 0;
        uint64_t sid = 0;

        assert_int_equal(slurm_parse_squeue_keys(out, &j, &n), 0);
        assert_int_equal(n, 16);
        assert_int_equal(j[0].job_id, 4119);
        assert_string_equal(j[0].comment, "corral:login1:56");
        assert_string_equal(j[0].user, "alice");
        assert_null(j[0].state);
        assert_int_equal(j[3].array_job_id, 4122);
        assert_int_equal(j[3].array_task_id, 1);
        assert_null(j[13].comment);
        assert_string_equal(j[14].comment, "a comment | with bars");

        /* The idempotence check: the job a crash left unrecorded is found by its key, an
         * array by its array's id, another machine's job of the same Corral id is not. */
        assert_int_equal(slurm_find_key(j, n, "login1", 57, "alice", NULL, NULL, &sid), 0);
        assert_int_equal(sid, 4120);
        assert_int_equal(slurm_find_key(j, n, "login1", 60, "alice", NULL, NULL, &sid), 0);
        assert_int_equal(sid, 4122);
        assert_int_equal(slurm_find_key(j, n, "login2", 57, "bob", NULL, NULL, &sid), 0);
        assert_int_equal(sid, 4127);
        assert_int_equal(slurm_find_key(j, n, "login1", 64, "alice", NULL, NULL, &sid), -ENOENT);
        assert_int_equal(slurm_find_key(j, n, "login3", 57, "alice", NULL, NULL, &sid), -ENOENT);
        /* Only the job's user's: anyone may write anyone's key into a comment. */
        assert_int_equal(slurm_find_key(j, n, "login2", 57, "alice", NULL, NULL, &sid), -ENOENT);
        assert_int_equal(slurm_find_key(j, n, "login1", 63, "alice", NULL, NULL, &sid), -ENOENT);
        assert_int_equal(slurm_find_key(j, n, "login1", 63, "mallory", NULL, NULL, &sid), 0);
        assert_int_equal(sid, 4129);
        assert_int_equal(slurm_find_key(j, n, "login1", 57, NULL, NULL, NULL, &sid), -ENOENT);
        slurm_job_status_free_many(j, n);
        free(out);

        for (const char *const *bad = (const char *const[]) { "1|1|N/A|\n", "1|1|N/A\n", "0|1|N/A|u|c\n",
                                                             "1|x|N/A|u|c\n", "1|1|N/A|u v|c\n", NULL };
             *bad; bad++) {
                if (slurm_parse_squeue_keys(*bad, &j, &n) != 1 || n != 0)
                        fail_msg("'%s' was taken", *bad);
                free(j);
        }
}

/* A key is taken only on an id the caller trusts: the first such, not the first line. */
static bool trust_only_7(uint64_t sid, void *userdata) {
        (*(unsigned *) userdata)++;
        return sid == 7;
}

static void test_find_key_trusted(void **state) {
        SlurmJobStatus *j = NULL;
        size_t n = 0;
        uint64_t sid = 0;
        unsigned asked = 0;

        assert_int_equal(slurm_parse_squeue_keys("6|6|N/A|alice|corral:h:3\n7|7|N/A|alice|corral:h:3\n"
                                                 "8|8|N/A|alice|corral:h:4\n", &j, &n), 0);
        assert_int_equal(slurm_find_key(j, n, "h", 3, "alice", trust_only_7, &asked, &sid), 0);
        assert_int_equal(sid, 7);
        assert_int_equal(asked, 2);
        assert_int_equal(slurm_find_key(j, n, "h", 4, "alice", trust_only_7, &asked, &sid), -ENOENT);
        slurm_job_status_free_many(j, n);
}

static void test_sacct(void **state) {
        char *out = read_data("sacct.txt");
        SlurmJobRecord *r = NULL;
        size_t n = 0;

        assert_int_equal(slurm_parse_sacct(out, &r, &n), 0);
        assert_int_equal(n, 7);
        assert_int_equal(r[0].job_id, 4117);
        assert_string_equal(r[0].state, "COMPLETED");
        assert_int_equal(r[0].exit_code, 0);
        assert_int_equal(r[0].elapsed_sec, 5);
        assert_int_equal(r[0].cpu_usec, 12000);
        assert_int_equal(r[0].max_rss, 1280 * 1024);
        assert_string_equal(r[0].user, "alice");
        assert_string_equal(r[6].user, "bob");
        assert_int_equal(r[1].exit_code, 3);
        assert_string_equal(slurm_state_to_corral(r[1].state, NULL), "FAILED");
        assert_string_equal(slurm_state_to_corral(r[2].state, NULL), "CANCELLED");
        assert_int_equal(r[3].job_id, 4123); /* an array task: its own id */
        assert_int_equal(r[3].max_rss, UINT64_C(512) << 20);
        assert_string_equal(r[4].state, "TIMEOUT");
        assert_int_equal(r[4].max_rss, 2621440);
        assert_int_equal(r[5].exit_signal, 125);
        assert_string_equal(slurm_state_to_corral(r[5].state, NULL), "OUT_OF_MEMORY");
        assert_int_equal(r[6].cpu_usec, UINT64_C(90061000000));
        slurm_job_record_free_many(r, n);
        free(out);

        /* Bad lines are skipped, the good ones kept. */
        assert_int_equal(slurm_parse_sacct("12.batch|12.batch|COMPLETED|0:0|1|00:01.000|1K|\n", &r, &n), 1);
        assert_int_equal(n, 0);
        free(r);
        assert_int_equal(slurm_parse_sacct("12|12|COMPLETED|0|1|00:01.000||u\n", &r, &n), 1);
        assert_int_equal(n, 0);
        free(r);
        assert_int_equal(slurm_parse_sacct("12|12|COMPLETED|0:0|1|00:01.000||u|x\n", &r, &n), 1);
        assert_int_equal(n, 0);
        free(r);
        assert_int_equal(slurm_parse_sacct("12|12|COMPLETED|0:0|1|00:01.000||\n", &r, &n), 1); /* no owner */
        assert_int_equal(n, 0);
        free(r);
        assert_int_equal(slurm_parse_sacct("12|12|COMPLETED|0:0|1|00:01.000||u\n13|13\n14|14|FAILED|1:0|2|00:00.500||u\n"
                                           "14.batch|14.batch|FAILED|1:0|2|00:00.500|99999999999P|\n", &r, &n), 2);
        assert_int_equal(n, 2);
        assert_int_equal(r[0].job_id, 12);
        assert_int_equal(r[1].job_id, 14);
        assert_int_equal(r[1].exit_code, 1);
        assert_int_equal(r[1].max_rss, 0);
        slurm_job_record_free_many(r, n);
}

static void test_scontrol(void **state) {
        char *out = read_data("scontrol.txt");
        SlurmJobRecord *r = NULL;
        size_t n = 0;

        assert_int_equal(slurm_parse_scontrol(out, &r, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(r[0].job_id, 4118);
        assert_string_equal(r[0].state, "FAILED");
        assert_int_equal(r[0].exit_code, 3);
        assert_int_equal(r[0].elapsed_sec, 1);
        /* Comment=, not AdminComment=, past a WorkDir= with a space. */
        assert_string_equal(r[0].comment, "corral:login1:55");
        assert_string_equal(r[0].user, "alice");
        assert_string_equal(r[1].user, "bob");
        assert_int_equal(r[1].job_id, 4130);
        assert_int_equal(r[1].elapsed_sec, 90061);
        assert_null(r[1].comment);
        assert_int_equal(r[1].cpu_usec, 0);
        slurm_job_record_free_many(r, n);
        free(out);

        assert_int_equal(slurm_parse_scontrol("slurm_load_jobs error: Invalid job id specified\n", &r, &n), 1);
        assert_int_equal(n, 0);
        free(r);
        assert_int_equal(slurm_parse_scontrol("JobId=1 UserId=a(1) JobState=FAILED ExitCode=1 RunTime=00:00:01\n", &r, &n), 1);
        assert_int_equal(n, 0);
        free(r);
        /* A job name with a newline and a made-up record after it: the made-up line is
         * a record of its own (the daemon takes an id's first), and a "JobId=" further on
         * in a line is a name's, not a record's start. */
        assert_int_equal(slurm_parse_scontrol("JobId=7 JobName=x UserId=mallory(1003) JobState=RUNNING ExitCode=0:0 "
                                              "RunTime=00:00:01\n"
                                              "JobId=7 JobName=y UserId=alice(1001) JobState=COMPLETED ExitCode=0:0 "
                                              "RunTime=00:00:01\n"
                                              "Name JobId=8 UserId=alice(1001) JobState=COMPLETED ExitCode=0:0 "
                                              "RunTime=00:00:01\n", &r, &n), 1);
        assert_int_equal(n, 2);
        assert_int_equal(r[0].job_id, 7);
        assert_string_equal(r[0].user, "mallory");
        slurm_job_record_free_many(r, n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_submit_every_field),
                cmocka_unit_test(test_submit_argv_array_defaults),
                cmocka_unit_test(test_submit_refusals),
                cmocka_unit_test(test_key),
                cmocka_unit_test(test_parsable),
                cmocka_unit_test(test_state_map),
                cmocka_unit_test(test_time_rss),
                cmocka_unit_test(test_squeue),
                cmocka_unit_test(test_squeue_keys),
                cmocka_unit_test(test_find_key_trusted),
                cmocka_unit_test(test_sacct),
                cmocka_unit_test(test_scontrol),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
