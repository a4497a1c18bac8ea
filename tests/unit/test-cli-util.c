/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli-util.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/submit-test.h"
#include "proto/device-info.h"
#include "cli/table.h"
#include "strv.h"

/* 2023-11-14T22:13:20Z, a Tuesday. Tests run with TZ=UTC. */
#define NOW ((time_t) 1700000000)

static int setup_tz(void **state) {
        setenv("TZ", "UTC", 1);
        tzset();
        return 0;
}

/* scancel --signal and corral signal: Slurm's forms. */
static void test_signal_parse(void **state) {
        int sig = 0;

        assert_int_equal(signal_parse("USR1", &sig), 0);
        assert_int_equal(sig, SIGUSR1);
        assert_int_equal(signal_parse("SIGUSR2", &sig), 0);
        assert_int_equal(sig, SIGUSR2);
        assert_int_equal(signal_parse("sigterm", &sig), 0);
        assert_int_equal(sig, SIGTERM);
        assert_int_equal(signal_parse("kill", &sig), 0);
        assert_int_equal(sig, SIGKILL);
        assert_int_equal(signal_parse("10", &sig), 0);
        assert_int_equal(sig, 10);
        assert_int_equal(signal_parse("64", &sig), 0);
        assert_int_equal(sig, 64);
        assert_int_equal(signal_parse("0", &sig), -EINVAL);
        assert_int_equal(signal_parse("65", &sig), -EINVAL);
        assert_int_equal(signal_parse("-1", &sig), -EINVAL);
        assert_int_equal(signal_parse("99999999999999999999", &sig), -EINVAL);
        assert_int_equal(signal_parse("10x", &sig), -EINVAL);
        assert_int_equal(signal_parse("USR", &sig), -EINVAL);
        assert_int_equal(signal_parse("SIG", &sig), -EINVAL);
        assert_int_equal(signal_parse("", &sig), -EINVAL);
        assert_int_equal(signal_parse(NULL, &sig), -EINVAL);
}

static void test_job_ref_parse(void **state) {
        static const struct {
                const char *s;
                int r;
                uint64_t id;
                bool has_task;
                uint32_t task;
        } cases[] = {
                { "42", 0, 42, false, 0 },
                { "1", 0, 1, false, 0 },
                { "42_3", 0, 42, true, 3 },
                { "42_0", 0, 42, true, 0 },
                { "9007199254740992", 0, UINT64_C(9007199254740992), false, 0 }, /* 2^53 */
                { "9007199254740993", -EINVAL, 0, false, 0 },
                { "0", -EINVAL, 0, false, 0 },
                { "", -EINVAL, 0, false, 0 },
                { "-4", -EINVAL, 0, false, 0 },
                { "+4", -EINVAL, 0, false, 0 },
                { " 4", -EINVAL, 0, false, 0 },
                { "4x", -EINVAL, 0, false, 0 },
                { "42_", -EINVAL, 0, false, 0 },
                { "_3", -EINVAL, 0, false, 0 },
                { "42_-1", -EINVAL, 0, false, 0 },
                { "42_3_4", -EINVAL, 0, false, 0 },
                { "42_4000001", -EINVAL, 0, false, 0 },
                { "42.pbs01", -EINVAL, 0, false, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JobRef ref = {};
                int r = job_ref_parse(cases[i].s, &ref);

                if (r != cases[i].r)
                        fail_msg("'%s': got %d, want %d", cases[i].s, r, cases[i].r);
                if (r == 0) {
                        assert_true(ref.id == cases[i].id);
                        assert_int_equal(ref.has_task, cases[i].has_task);
                        assert_int_equal(ref.task, cases[i].task);
                }
        }
}

static void test_queue_sections(void **state) {
        assert_int_equal(queue_section_of_state("RUNNING"), QUEUE_SECTION_ACTIVE);
        assert_int_equal(queue_section_of_state("SUSPENDED"), QUEUE_SECTION_ACTIVE);
        assert_int_equal(queue_section_of_state("PENDING"), QUEUE_SECTION_ELIGIBLE);
        assert_int_equal(queue_section_of_state("HELD"), QUEUE_SECTION_BLOCKED);
        assert_int_equal(queue_section_of_state("BLOCKED"), QUEUE_SECTION_BLOCKED);
        for (const char *const *s = (const char *const[]) { "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                                             "OUT_OF_MEMORY", "NODE_FAIL", NULL };
             *s; s++) {
                assert_int_equal(queue_section_of_state(*s), QUEUE_SECTION_FINISHED);
                assert_true(job_state_name_is_final(*s));
        }
        /* A newer daemon's state: never promised a start, never taken as final. */
        assert_int_equal(queue_section_of_state("CONFIGURING"), QUEUE_SECTION_BLOCKED);
        assert_int_equal(queue_section_of_state(NULL), QUEUE_SECTION_BLOCKED);
        assert_false(job_state_name_is_final("CONFIGURING"));
        assert_false(job_state_name_is_final("RUNNING"));
        assert_false(job_state_name_is_final("running")); /* names are exact on the wire */
        assert_string_equal(queue_section_name(QUEUE_SECTION_ELIGIBLE), "eligible");
        assert_int_equal(strv_length((char **) cli_job_states), 11);
}

static void expect_states(const char *arg, const char *want) {
        _cleanup_strv_free_ char **l = NULL, **w = NULL;
        _cleanup_free_ char *bad = NULL;

        assert_int_equal(job_states_parse(arg, &l, &bad), 0);
        assert_int_equal(strv_split(want, ",", &w), 0);
        assert_int_equal(strv_length(l), strv_length(w));
        for (size_t i = 0; w[i]; i++)
                assert_string_equal(l[i], w[i]);
}

static void test_job_states_parse(void **state) {
        _cleanup_strv_free_ char **l = NULL;
        char *bad = NULL;

        expect_states("RUNNING", "RUNNING");
        expect_states("running,held", "RUNNING,HELD");
        expect_states("PD", "PENDING,HELD,BLOCKED");
        expect_states("pd,R,PENDING", "PENDING,HELD,BLOCKED,RUNNING");
        expect_states("CD,F,CA,TO,OOM,NF,S", "COMPLETED,FAILED,CANCELLED,TIMEOUT,OUT_OF_MEMORY,NODE_FAIL,SUSPENDED");
        expect_states("all", "RUNNING,SUSPENDED,PENDING,HELD,BLOCKED,COMPLETED,FAILED,CANCELLED,TIMEOUT,"
                             "OUT_OF_MEMORY,NODE_FAIL");

        assert_int_equal(job_states_parse("RUNNING,sleeping", &l, &bad), -EINVAL);
        assert_string_equal(bad, "sleeping");
        free(bad);
        bad = NULL;
        assert_int_equal(job_states_parse(",", &l, &bad), -EINVAL);
        free(bad);
        assert_null(l);
}

#define SCRIPT(s) text_is_script((s), strlen(s))

static void test_script_detection(void **state) {
        assert_true(SCRIPT("#!/bin/sh\necho hi\n"));
        assert_true(SCRIPT("#!"));
        assert_true(SCRIPT("#SBATCH -n 2\necho\n"));
        assert_true(SCRIPT("\n# setup\n#PBS -l walltime=1:00:00\nrun\n"));
        assert_true(SCRIPT("#CORRAL --mem=1G"));
        assert_true(SCRIPT("#SBATCH\r\n"));

        assert_false(SCRIPT(""));
        assert_false(SCRIPT("echo hi\n#SBATCH -n 2\n"));  /* after the first command */
        assert_false(SCRIPT("#SBATCHX -n 2\n"));
        assert_false(SCRIPT("##SBATCH -n 2\n"));
        assert_false(SCRIPT(" #SBATCH -n 2\n"));          /* indented: sbatch ignores it too */
        assert_false(SCRIPT("# just a comment\n"));
        assert_false(SCRIPT("\x7f" "ELF\x02\x01"));
        assert_false(text_is_script("#!/bin/sh\0binary", 16));

        assert_true(text_has_shebang("#!/bin/sh", 9));
        assert_false(text_has_shebang("#SBATCH", 7));
        assert_false(text_has_shebang("#", 1));
}

static void test_exit_status(void **state) {
        static const struct {
                const char *state, *reason;
                int code, sig, want;
                const char *outcome;
        } cases[] = {
                { "COMPLETED", NULL, 0, 0, 0, "COMPLETED, exit code 0" },
                { "FAILED", "LaunchFailed: cannot change to the working directory /root: Permission denied", -1, 0, 1,
                  "FAILED (LaunchFailed: cannot change to the working directory /root: Permission denied)" },
                { "FAILED", "NonZeroExitCode", 3, 0, 3, "FAILED, exit code 3 (NonZeroExitCode)" },
                { "TIMEOUT", "TimeLimit", -1, 15, 143, "TIMEOUT, killed by signal 15 (TERM) (TimeLimit)" },
                { "CANCELLED", "", -1, 0, 1, "CANCELLED" },
                { "COMPLETED", "weird", -1, 0, 0, "COMPLETED" },
                { "FAILED", NULL, 3, 0, 3, "FAILED, exit code 3" },
                { "FAILED", NULL, -1, 9, 137, "FAILED, killed by signal 9 (KILL)" },
                { "FAILED", NULL, -1, 0, 1, "FAILED" },
                { "CANCELLED", NULL, -1, 0, 1, "CANCELLED" },
                { "CANCELLED", NULL, -1, 15, 143, "CANCELLED, killed by signal 15 (TERM)" },
                { "TIMEOUT", NULL, 0, 0, 1, "TIMEOUT, exit code 0" },
                { "OUT_OF_MEMORY", NULL, -1, 9, 137, "OUT_OF_MEMORY, killed by signal 9 (KILL)" },
                { "NODE_FAIL", NULL, -1, 0, 1, "NODE_FAIL" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JobInfo info = { .state = (char *) cases[i].state, .reason = (char *) cases[i].reason,
                                 .exit_code = cases[i].code, .exit_signal = cases[i].sig };
                char buf[128];

                assert_int_equal(job_exit_status(&info), cases[i].want);
                assert_string_equal(format_job_outcome(buf, sizeof(buf), &info), cases[i].outcome);
        }
}

static void test_time_formatting(void **state) {
        char buf[64];
        JobInfo j = JOB_INFO_INIT;

        assert_string_equal(format_elapsed(buf, sizeof(buf), 0), "0:00");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 59), "0:59");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 61), "1:01");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 3600), "1:00:00");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 3723), "1:02:03");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 86399), "23:59:59");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 86400 + 5), "1-00:00:05");
        assert_string_equal(format_elapsed(buf, sizeof(buf), 12 * 86400 + 3723), "12-01:02:03");

        assert_string_equal(format_timestamp(buf, sizeof(buf), NOW), "2023-11-14T22:13:20");
        assert_string_equal(format_timestamp(buf, sizeof(buf), 0), "n/a");

        assert_string_equal(format_short_time(buf, sizeof(buf), NOW - 3600, NOW), "21:13");
        assert_string_equal(format_short_time(buf, sizeof(buf), NOW + 7200, NOW), "Wed 00:13");
        assert_string_equal(format_short_time(buf, sizeof(buf), NOW - 3 * 86400, NOW), "Sat 22:13");
        assert_string_equal(format_short_time(buf, sizeof(buf), NOW + 30 * 86400, NOW), "2023-12-14");
        assert_string_equal(format_start_estimate(buf, sizeof(buf), NOW - 5, NOW), "now");
        assert_string_equal(format_start_estimate(buf, sizeof(buf), NOW + 600, NOW), "22:23");

        assert_int_equal(job_elapsed(&j, NOW), 0);
        j.start_time = NOW - 100;
        assert_int_equal(job_elapsed(&j, NOW), 100);
        j.end_time = NOW - 40;
        assert_int_equal(job_elapsed(&j, NOW), 60);
        j.end_time = NOW - 200; /* clock went backwards: never negative */
        assert_int_equal(job_elapsed(&j, NOW), 0);
}

static void test_signals(void **state) {
        assert_int_equal(signal_from_string("TERM"), SIGTERM);
        assert_int_equal(signal_from_string("SIGUSR1"), SIGUSR1);
        assert_int_equal(signal_from_string("sigkill"), SIGKILL);
        assert_int_equal(signal_from_string("10"), 10);
        assert_int_equal(signal_from_string("0"), -EINVAL);
        assert_int_equal(signal_from_string("999"), -EINVAL);
        assert_int_equal(signal_from_string("SIG"), -EINVAL);
        assert_int_equal(signal_from_string("FOO"), -EINVAL);
        assert_int_equal(signal_from_string(""), -EINVAL);
        assert_string_equal(signal_to_string(SIGKILL), "KILL");
}

static void test_argv_display(void **state) {
        _cleanup_free_ char *a = argv_to_display((char *[]) { (char *) "sleep", (char *) "10", NULL });
        _cleanup_free_ char *b = argv_to_display(
                (char *[]) { (char *) "sh", (char *) "-c", (char *) "echo 'hi' $X", (char *) "", NULL });
        _cleanup_free_ char *c = argv_to_display((char *[]) { NULL });

        assert_string_equal(a, "sleep 10");
        assert_string_equal(b, "sh -c 'echo '\\''hi'\\'' $X' ''");
        assert_string_equal(c, "");
}

static void test_output_path_expand(void **state) {
        JobInfo j = { .id = 42, .name = (char *) "md", .user = (char *) "ann", .exit_code = -1 };
        char *p;

        p = output_path_expand("out-%j-%x-%u.log", &j);
        assert_string_equal(p, "out-42-md-ann.log");
        free(p);
        p = output_path_expand("%A_%a 100%% %q %", &j);
        assert_string_equal(p, "42_0 100% %q %"); /* outside arrays %A is the job's own id */
        free(p);
        j.array_job_id = 40;
        j.array_task_id = 3;
        p = output_path_expand("/d/%A_%a.out", &j);
        assert_string_equal(p, "/d/40_3.out");
        free(p);
        /* A step's task (submitit's "srun --output %j_%t_log.out"); not outside one. */
        p = output_path_expand_step("%j_%t_%s_%n_%N_%J.out", &j, 2, "node1");
        assert_string_equal(p, "42_2_0_0_node1_42.0.out");
        free(p);
        p = output_path_expand("%j_%t_%N.out", &j);
        assert_string_equal(p, "42_%t_%N.out");
        free(p);
}

/* Runs print and returns what it wrote. */
static char *capture_table(const Table *t, bool header, size_t from, size_t to) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(table_print(t, f, header, from, to), 0);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void test_table(void **state) {
        _cleanup_table_ Table *t = table_new((const char *const[]) { "ID", "NAME", "CPUS", "NOTE", NULL });
        _cleanup_free_ char *all = NULL, *slice = NULL, *utf = NULL;

        assert_non_null(t);
        assert_int_equal(table_get_columns(t), 4);
        table_set_align_right(t, 0, true);
        table_set_align_right(t, 2, true);
        table_set_max_width(t, 1, 8);
        assert_int_equal(table_add_row(t, (const char *const[]) { "7", "short", "1", "x" }), 0);
        assert_int_equal(table_add_row(t, (const char *const[]) { "1234", "exactly8", "16", NULL }), 0);
        assert_int_equal(table_add_row(t, (const char *const[]) { "99", "muchtoolongname", "", "last one" }), 0);
        assert_int_equal(table_get_rows(t), 3);
        assert_int_equal(table_column_width(t, 0), 4);
        assert_int_equal(table_column_width(t, 1), 8);
        assert_int_equal(table_column_width(t, 2), 4);
        assert_int_equal(table_column_width(t, 3), 8);

        all = capture_table(t, true, 0, SIZE_MAX);
        assert_string_equal(all,
                            "  ID  NAME      CPUS  NOTE\n"
                            "   7  short        1  x\n"
                            "1234  exactly8    16  -\n"
                            "  99  muchtoo~     -  last one\n");

        /* A slice keeps the whole table's widths: the queue's sections line up. */
        slice = capture_table(t, false, 1, 2);
        assert_string_equal(slice, "1234  exactly8    16  -\n");

        table_set_ellipsis(t, "…");
        assert_int_equal(table_add_row(t, (const char *const[]) { "5", "žluťoučký kůň", "2", "é" }), 0);
        assert_int_equal(utf8_display_width("žluťoučký"), 9);
        utf = capture_table(t, false, 2, 4);
        assert_string_equal(utf,
                            "  99  muchtoo…     -  last one\n"
                            "   5  žluťouč…     2  é\n");
}

static JobEntry entry(uint64_t id, const char *state, const char *name, unsigned cpus) {
        JobEntry e = { .info = JOB_INFO_INIT };

        e.info.id = id;
        e.info.state = strdup(state);
        e.info.name = strdup(name);
        e.info.user = strdup("ann");
        e.info.queue = strdup("batch");
        e.info.cpus = cpus;
        return e;
}

static void test_queue_print(void **state) {
        JobEntry jobs[5];
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        jobs[0] = entry(5, "HELD", "h", 1);
        jobs[0].info.reason = strdup("JobHeldUser");
        jobs[1] = entry(3, "PENDING", "low", 2);
        jobs[1].has_priority = true;
        jobs[1].priority = 1;
        jobs[2] = entry(4, "PENDING", "high", 2);
        jobs[2].has_priority = true;
        jobs[2].priority = 10;
        jobs[2].has_est_start = true;
        jobs[2].est_start = NOW + 600;
        jobs[3] = entry(2, "RUNNING", "run", 4);
        jobs[3].info.start_time = NOW - 65;
        jobs[3].info.node = strdup("n1");
        jobs[3].info.memory = UINT64_C(2) << 30;
        jobs[4] = entry(1, "SUSPENDED", "susp", 2);
        jobs[4].info.start_time = NOW - 7200;

        f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(queue_print(f, jobs, ELEMENTSOF(jobs), NOW,
                                     (1U << QUEUE_SECTION_ACTIVE) | (1U << QUEUE_SECTION_ELIGIBLE) |
                                             (1U << QUEUE_SECTION_BLOCKED),
                                     0),
                         0);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf,
                "active jobs-----------------------------\n"
                "JOBID  NAME  USER  PROJECT  QUEUE  STATE         TIME  CPUS  MEM  START  NODELIST(REASON)\n"
                "    1  susp  ann   -        batch  SUSPENDED  2:00:00     2    -  20:13  -\n"
                "    2  run   ann   -        batch  RUNNING       1:05     4   2G  22:12  n1\n"
                "\n"
                "2 active jobs using 6 CPUs\n"
                "\n"
                "eligible jobs---------------------------\n"
                "JOBID  NAME  USER  PROJECT  QUEUE  STATE         TIME  CPUS  MEM  START  NODELIST(REASON)\n"
                "    4  high  ann   -        batch  PENDING       0:00     2    -  22:23  -\n"
                "    3  low   ann   -        batch  PENDING       0:00     2    -  -      -\n"
                "\n"
                "2 eligible jobs\n"
                "\n"
                "blocked jobs----------------------------\n"
                "JOBID  NAME  USER  PROJECT  QUEUE  STATE         TIME  CPUS  MEM  START  NODELIST(REASON)\n"
                "    5  h     ann   -        batch  HELD          0:00     1    -  -      (JobHeldUser)\n"
                "\n"
                "1 blocked job\n"
                "\n"
                "Total jobs: 5\n");
        free(buf);

        /* Only what was asked for: empty sections outside the mask are left out. */
        buf = NULL;
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        /* sorted by now: jobs[1] is the running one */
        assert_int_equal(queue_print(f, jobs + 1, 1, NOW, 0, 0), 0);
        assert_int_equal(fclose(f), 0);
        assert_null(strstr(buf, "eligible"));
        assert_non_null(strstr(buf, "1 active job using 4 CPUs\n"));
        free(buf);

        /* --long: the charge of the jobs that have one, blank for the others. */
        jobs[1].charge = (ChargeView) { .set = true, .cpus = 4, .run_usec = 65 * UINT64_C(1000000),
                                        .core_hours = 0.0722, .charge_factor = 3, .service_units = 0.2167,
                                        .efficiency = 0.5, .memory_peak = UINT64_C(3) << 29 };
        buf = NULL;
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(queue_print(f, jobs, 2, NOW, 0, QUEUE_PRINT_LONG), 0);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf,
                "active jobs-----------------------------\n"
                "JOBID  NAME  USER  PROJECT  QUEUE  STATE         TIME  CPUS  MEM  START  CORE-H    SU  CPU-EFF  MAXMEM  NODELIST(REASON)\n"
                "    1  susp  ann   -        batch  SUSPENDED  2:00:00     2    -  20:13       -     -        -       -  -\n"
                "    2  run   ann   -        batch  RUNNING       1:05     4   2G  22:12    0.07  0.22      50%    1.5G  n1\n"
                "\n"
                "2 active jobs using 6 CPUs\n"
                "\n"
                "Total jobs: 2\n");
        free(buf);

        /* --long -a: a finished job's charge (what corrald stored at its end) as well. */
        job_entry_done(&jobs[0]);
        jobs[0] = entry(7, "COMPLETED", "done", 2);
        jobs[0].info.start_time = NOW - 3600;
        jobs[0].info.end_time = NOW - 1800;
        jobs[0].charge = (ChargeView) { .set = true, .cpus = 2, .run_usec = 1800 * UINT64_C(1000000),
                                        .core_hours = 1, .charge_factor = 1, .service_units = 1,
                                        .efficiency = 0.25, .memory_peak = UINT64_C(1) << 30 };
        buf = NULL;
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(queue_print(f, jobs, 1, NOW, 0, QUEUE_PRINT_LONG), 0);
        assert_int_equal(fclose(f), 0);
        if (!strstr(buf, "    7  done  ann   -        batch  COMPLETED  30:00     2    -  21:13    1.00  1.00      25%      1G  -\n"))
                fail_msg("queue --long of a finished job:\n%s", buf);
        free(buf);

        for (size_t i = 0; i < ELEMENTSOF(jobs); i++)
                job_entry_done(&jobs[i]);

        /* A job with GPUs brings the GPUS column, and the active ones' GPUs are summed. */
        {
                JobEntry g[2] = { entry(8, "RUNNING", "train", 4), entry(9, "PENDING", "cpu", 1) };

                g[0].info.gpus = 2;
                g[0].info.start_time = NOW - 60;
                g[0].info.node = strdup("n1");
                buf = NULL;
                f = open_memstream(&buf, &size);
                assert_non_null(f);
                assert_int_equal(queue_print(f, g, 2, NOW, 0, 0), 0);
                assert_int_equal(fclose(f), 0);
                assert_string_equal(buf,
                        "active jobs-----------------------------\n"
                        "JOBID  NAME   USER  PROJECT  QUEUE  STATE    TIME  CPUS  GPUS  MEM  START  NODELIST(REASON)\n"
                        "    8  train  ann   -        batch  RUNNING  1:00     4     2    -  22:12  n1\n"
                        "\n"
                        "1 active job using 4 CPUs and 2 GPUs\n"
                        "\n"
                        "eligible jobs---------------------------\n"
                        "JOBID  NAME   USER  PROJECT  QUEUE  STATE    TIME  CPUS  GPUS  MEM  START  NODELIST(REASON)\n"
                        "    9  cpu    ann   -        batch  PENDING  0:00     1     -    -  -      -\n"
                        "\n"
                        "1 eligible job\n"
                        "\n"
                        "Total jobs: 2\n");
                free(buf);

                /* Its GPUs idle (List's gpu_idle_sec): marked beside its host, explained below. */
                g[0].info.gpu_idle_sec = 2520;
                buf = NULL;
                f = open_memstream(&buf, &size);
                assert_non_null(f);
                assert_int_equal(queue_print(f, g, 1, NOW, 0, 0), 0);
                assert_int_equal(fclose(f), 0);
                assert_string_equal(buf,
                        "active jobs-----------------------------\n"
                        "JOBID  NAME   USER  PROJECT  QUEUE  STATE    TIME  CPUS  GPUS  MEM  START  NODELIST(REASON)\n"
                        "    8  train  ann   -        batch  RUNNING  1:00     4     2    -  22:12  n1 IDLE-GPU\n"
                        "\n"
                        "1 active job using 4 CPUs and 2 GPUs\n"
                        "\n"
                        "IDLE-GPU: every GPU the job holds has been idle for GPUIdleSec= (corral why JOBID)\n"
                        "\n"
                        "Total jobs: 1\n");
                free(buf);

                /* Telemetry read its GPUs (List's gpu_util): the GPU% column, blank for a
                 * job it did not read. */
                g[0].info.gpu_idle_sec = 0;
                g[0].info.gpu_util = 3;
                buf = NULL;
                f = open_memstream(&buf, &size);
                assert_non_null(f);
                assert_int_equal(queue_print(f, g, 2, NOW, 1U << QUEUE_SECTION_ACTIVE, 0), 0);
                assert_int_equal(fclose(f), 0);
                assert_string_equal(buf,
                        "active jobs-----------------------------\n"
                        "JOBID  NAME   USER  PROJECT  QUEUE  STATE    TIME  CPUS  GPUS  GPU%  MEM  START  NODELIST(REASON)\n"
                        "    8  train  ann   -        batch  RUNNING  1:00     4     2    3%    -  22:12  n1\n"
                        "\n"
                        "1 active job using 4 CPUs and 2 GPUs\n"
                        "\n"
                        "eligible jobs---------------------------\n"
                        "JOBID  NAME   USER  PROJECT  QUEUE  STATE    TIME  CPUS  GPUS  GPU%  MEM  START  NODELIST(REASON)\n"
                        "    9  cpu    ann   -        batch  PENDING  0:00     1     -     -    -  -      -\n"
                        "\n"
                        "1 eligible job\n"
                        "\n"
                        "Total jobs: 2\n");
                free(buf);
                job_entry_done(&g[0]);
                job_entry_done(&g[1]);
        }
}

static void test_show_print(void **state) {
        JobEntry e = entry(42, "FAILED", "md", 8);
        char *buf = NULL;
        size_t size = 0;
        FILE *f;

        e.info.uid = 1000;
        e.info.submit_time = NOW - 100;
        e.info.start_time = NOW - 90;
        e.info.end_time = NOW - 30;
        e.info.exit_code = 0;
        e.info.exit_signal = 9;
        e.info.walltime_sec = CORRAL_WALLTIME_INFINITY;
        e.info.has_details = true;
        e.info.argv = strv_copy((char *[]) { (char *) "sleep", (char *) "1 0", NULL });
        e.info.workdir = strdup("/home/ann");
        e.info.stdout_path = strdup("/home/ann/out-42.log");

        f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(job_show_print(f, &e, NOW), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(buf, "         JobId: 42\n"));
        assert_non_null(strstr(buf, "     TimeLimit: UNLIMITED\n"));
        assert_non_null(strstr(buf, "      ExitCode: 0:9 (SIGKILL)\n"));
        assert_non_null(strstr(buf, "       RunTime: 1:00\n"));
        assert_non_null(strstr(buf, "       Command: sleep '1 0'\n"));
        assert_non_null(strstr(buf, "        StdErr: with StdOut\n"));
        assert_non_null(strstr(buf, "          Unit: corral-job-42.scope\n"));
        assert_null(strstr(buf, "GPUs"));
        free(buf);

        e.info.gpus = 2;
        e.info.gpu_type = strdup("a100");
        e.info.gpus_allocated = strdup("1,3");
        buf = NULL;
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        assert_int_equal(job_show_print(f, &e, NOW), 0);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(buf, "          GPUs: 2 of type a100 (GPU 1,3)\n"));
        free(buf);
        job_entry_done(&e);

        /* The figures GPU telemetry recorded, and a GPU it never read. */
        json_object *job = json_tokener_parse(
                "{\"gpu_usage\":[{\"gpu\":1,\"samples\":2,\"util_mean\":50.0,\"util_max\":70,"
                "\"memory_max\":3221225472,\"energy_j\":1234.4,\"held_sec\":100,\"running\":false},"
                "{\"gpu\":3,\"samples\":0,\"held_sec\":60,\"running\":true}]}");
        assert_non_null(job);
        buf = NULL;
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        job_gpu_usage_print(f, job);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf, "     GPU1Usage: 50% busy on average, 70% at most; 3G memory at most; 1234 J; held 1:40\n"
                                 "     GPU3Usage: held 1:00 so far, not read (no GPU telemetry)\n");
        free(buf);
        json_object_put(job);
}

/* corral info's GPU table: every device, its NUMA node and who holds it. */
static void test_devices_print(void **state) {
        char *features[] = { (char *) "a100", (char *) "nvlink", NULL };
        DeviceInfo d[2] = {
                { .index = 0, .name = (char *) "gpu0", .model = (char *) "NVIDIA A100-SXM4-40GB",
                  .pci_address = (char *) "0000:3b:00.0", .numa_node = 0, .features = features, .job_id = 17,
                  .user = (char *) "ann" },
                { .index = 1, .name = (char *) "fpga0", .numa_node = -1 },
        };
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(devices_print(f, d, 2), 0);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf,
                "GPU  NAME   MODEL                  NUMA  PCI           FEATURES     JOB\n"
                "  0  gpu0   NVIDIA A100-SXM4-40GB  0     0000:3b:00.0  a100,nvlink  17 (ann)\n"
                "  1  fpga0  unknown                -     -             -            free\n");
        free(buf);
}

/* A shared GPU (Shards=): its shards in use and by which jobs, or free with how many. */
static void test_devices_print_shards(void **state) {
        DeviceShardHolder holders[] = {
                { .job_id = 12, .user = (char *) "ann", .shards = 1 },
                { .job_id = 13, .user = (char *) "bob", .shards = 2 },
        };
        DeviceInfo d[2] = {
                { .index = 0, .name = (char *) "gpu0", .numa_node = 0, .shards = 4, .shards_used = 3,
                  .shard_holders = holders, .n_shard_holders = 2 },
                { .index = 1, .name = (char *) "gpu1", .numa_node = 0, .shards = 4 },
        };
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(devices_print(f, d, 2), 0);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf,
                "GPU  NAME  MODEL    NUMA  PCI  FEATURES  JOB\n"
                "  0  gpu0  unknown  0     -    -         3/4 shards: 12 (ann, 1), 13 (bob, 2)\n"
                "  1  gpu1  unknown  0     -    -         free, 4 shards\n");
        free(buf);
}

/* --test-only prints the GPU request as it will be sent. */
static void test_request_print_gpus(void **state) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        req.argv = strv_copy((char *[]) { (char *) "true", NULL });
        req.gpus = 2;
        req.gpu_type = strdup("a100");
        req.constraint = strdup("a100|h100");
        req.gpu_binding = true;
        submit_request_print(f, &req, NULL);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(buf, "GPUs:         2 of type a100\n"));
        assert_non_null(strstr(buf, "Constraint:   a100|h100\n"));
        assert_non_null(strstr(buf, "GresFlags:    enforce-binding"));
        free(buf);

        /* Shards instead: said as such, no GPUs line. */
        f = open_memstream(&buf, &size);
        assert_non_null(f);
        req.gpus = 0;
        req.shards = 2;
        submit_request_print(f, &req, NULL);
        assert_int_equal(fclose(f), 0);
        assert_non_null(strstr(buf, "Shards:       2 of one GPU of type a100 (shared)\n"));
        assert_null(strstr(buf, "GPUs:"));
        free(buf);
}

static void test_split_client_flags(void **state) {
        char *argv[] = { (char *) "submit", (char *) "--json", (char *) "-n", (char *) "2",
                         (char *) "--name", (char *) "--parsable", (char *) "-Jx", (char *) "--parsable",
                         (char *) "-H", (char *) "prog", (char *) "--json", (char *) "-h", NULL };
        _cleanup_free_ char **out = NULL;
        SubmitClientFlags f = {};
        int n;

        assert_int_equal(submit_split_client_flags((int) ELEMENTSOF(argv) - 1, argv, &n, &out, &f), 0);
        assert_true(f.json);
        assert_true(f.parsable);
        assert_false(f.help); /* the -h after the command is the command's */
        assert_int_equal(n, 10);
        /* "--name --parsable" names the job "--parsable": the value is not a flag. */
        assert_string_equal(out[1], "-n");
        assert_string_equal(out[2], "2");
        assert_string_equal(out[3], "--name");
        assert_string_equal(out[4], "--parsable");
        assert_string_equal(out[5], "-Jx");
        assert_string_equal(out[6], "-H");
        assert_string_equal(out[7], "prog");
        assert_string_equal(out[8], "--json");
        assert_string_equal(out[9], "-h");
        assert_null(out[10]);
}

static void expect_message(const char *verb, const char *subject, const char *json, const char *want, int status) {
        _cleanup_(reply_done) Reply reply = {};
        _cleanup_free_ char *m = NULL;

        assert_int_equal(reply_parse(json, strlen(json), &reply), 0);
        m = cli_error_message(verb, subject, &reply);
        assert_non_null(m);
        if (!streq(m, want))
                fail_msg("got '%s'\nwant '%s'", m, want);
        assert_int_equal(cli_error_exit_status(&reply), status);
}

static void test_error_messages(void **state) {
        expect_message("cancel", "job 42",
                       "{\"error\":\"io.corral.Manager.PermissionDenied\",\"parameters\":{}}",
                       "job 42: permission denied (you can only cancel your own jobs)", 1);
        expect_message("suspend", "job 42",
                       "{\"error\":\"io.corral.Manager.PermissionDenied\",\"parameters\":{\"message\":"
                       "\"only administrators may suspend jobs\"}}",
                       "job 42: permission denied (only administrators may suspend jobs)", 1);
        expect_message("release", "job 7",
                       "{\"error\":\"io.corral.Manager.InvalidState\",\"parameters\":{\"state\":\"RUNNING\"}}",
                       "job 7: cannot release a job that is RUNNING (only held jobs can be released)", 1);
        expect_message("submit", NULL,
                       "{\"error\":\"io.corral.Manager.InvalidParameter\",\"parameters\":{\"parameter\":\"queue\","
                       "\"message\":\"no such queue\"}}",
                       "submit: invalid parameter 'queue': no such queue", 2);
        expect_message("show", "job 9", "{\"error\":\"io.corral.Manager.NoSuchJob\",\"parameters\":{\"job_id\":9}}",
                       "job 9: no such job (it may have finished and been purged; corral queue --all)", 1);
        expect_message("submit", NULL,
                       "{\"error\":\"io.corral.Manager.QuotaExceeded\",\"parameters\":{\"limit\":100}}",
                       "submit: job limit reached (at most 100 jobs per user; wait for some to finish)", 1);
        expect_message("info", NULL, "{\"error\":\"io.corral.Manager.Busy\",\"parameters\":{}}",
                       "info: corrald is busy (reloading?); try again shortly", 3);
        expect_message("info", NULL, "{\"error\":\"org.example.Weird\",\"parameters\":{\"x\":1}}",
                       "info: corrald answered org.example.Weird {\"x\":1}", 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_job_ref_parse),
                cmocka_unit_test(test_signal_parse),
                cmocka_unit_test(test_queue_sections),
                cmocka_unit_test(test_job_states_parse),
                cmocka_unit_test(test_script_detection),
                cmocka_unit_test(test_exit_status),
                cmocka_unit_test(test_time_formatting),
                cmocka_unit_test(test_signals),
                cmocka_unit_test(test_argv_display),
                cmocka_unit_test(test_output_path_expand),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_queue_print),
                cmocka_unit_test(test_devices_print),
                cmocka_unit_test(test_devices_print_shards),
                cmocka_unit_test(test_request_print_gpus),
                cmocka_unit_test(test_show_print),
                cmocka_unit_test(test_split_client_flags),
                cmocka_unit_test(test_error_messages),
        };

        return cmocka_run_group_tests(tests, setup_tz, NULL);
}
