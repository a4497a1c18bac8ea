/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Slurm front ends' output, byte for byte as Slurm's tools print it (workflow
 * managers parse it), and the parity of sbatch's options with corral submit's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <regex.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/submit-options.h"
#include "proto/device-info.h"
#include "slurm/hostlist.h"
#include "slurm/slurm-common.h"
#include "slurm/slurm-format.h"
#include "strv.h"

/* 2023-11-14T22:13:20Z. Tests run with TZ=UTC. */
#define NOW ((time_t) 1700000000)

static int setup_tz(void **state) {
        setenv("TZ", "UTC", 1);
        tzset();
        return 0;
}

/* What f printed into a memstream, malloc'ed. */
#define CAPTURE(buf, expr)                                                     \
        do {                                                                   \
                size_t _len;                                                   \
                FILE *_f = open_memstream(&(buf), &_len);                      \
                assert_non_null(_f);                                           \
                assert_int_equal((expr), 0);                                   \
                fclose(_f);                                                    \
        } while (0)
#define F _f

static JobInfo running_job(void) {
        return (JobInfo) {
                .id = 42, .name = (char *) "wrap", .user = (char *) "alice", .uid = 1001,
                .project = (char *) "physics", .queue = (char *) "batch", .state = (char *) "RUNNING",
                .cpus = 4, .memory = UINT64_C(2048) << 20, .walltime_sec = 3600, .submit_time = NOW - 100,
                .start_time = NOW - 65, .exit_code = -1, .node = (char *) "node1",
        };
}

static void test_states(void **state) {
        static const char *const cases[][3] = {
                { "PENDING", "PENDING", "PD" },      { "HELD", "PENDING", "PD" },
                { "BLOCKED", "PENDING", "PD" },      { "RUNNING", "RUNNING", "R" },
                { "SUSPENDED", "SUSPENDED", "S" },   { "COMPLETED", "COMPLETED", "CD" },
                { "FAILED", "FAILED", "F" },         { "CANCELLED", "CANCELLED", "CA" },
                { "TIMEOUT", "TIMEOUT", "TO" },      { "OUT_OF_MEMORY", "OUT_OF_MEMORY", "OOM" },
                { "NODE_FAIL", "NODE_FAIL", "NF" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_string_equal(slurm_state_name(cases[i][0]), cases[i][1]);
                assert_string_equal(slurm_state_compact(cases[i][0]), cases[i][2]);
                assert_true(slurm_state_matches(cases[i][2], cases[i][0]));
                assert_true(slurm_state_matches(cases[i][1], cases[i][0]));
        }
        /* Every state the daemon names has a Slurm name. */
        for (const char *const *s = cli_job_states; *s; s++)
                assert_string_not_equal(slurm_state_compact(*s), "?");
        assert_false(slurm_state_matches("R", "PENDING"));
        assert_true(slurm_state_matches("pd", "HELD"));
        assert_true(slurm_state_matches("all", "FAILED"));
}

static void test_times(void **state) {
        char b[64];

        assert_string_equal(slurm_format_secs(b, sizeof(b), 0), "0:00");
        assert_string_equal(slurm_format_secs(b, sizeof(b), 65), "1:05");
        assert_string_equal(slurm_format_secs(b, sizeof(b), 3600), "1:00:00");
        assert_string_equal(slurm_format_secs(b, sizeof(b), 86400 + 3661), "1-01:01:01");
        assert_string_equal(slurm_format_elapsed(b, sizeof(b), 5), "00:00:05");
        assert_string_equal(slurm_format_elapsed(b, sizeof(b), 3 * 86400 + 5), "3-00:00:05");
        assert_string_equal(slurm_format_cpu_usec(b, sizeof(b), 1234567), "00:01.234");
        assert_string_equal(slurm_format_cpu_usec(b, sizeof(b), UINT64_C(7200) * 1000000), "02:00:00");
        assert_string_equal(slurm_format_time(b, sizeof(b), NOW), "2023-11-14T22:13:20");
        assert_string_equal(slurm_format_time(b, sizeof(b), 0), "Unknown");
}

static void test_parse_time(void **state) {
        uint64_t t;

        assert_int_equal(slurm_parse_time("now", NOW, &t), 0);
        assert_int_equal(t, NOW);
        assert_int_equal(slurm_parse_time("now-1hours", NOW, &t), 0);
        assert_int_equal(t, NOW - 3600);
        assert_int_equal(slurm_parse_time("now-2d", NOW, &t), 0);
        assert_int_equal(t, NOW - 2 * 86400);
        assert_int_equal(slurm_parse_time("today", NOW, &t), 0);
        assert_int_equal(t, 1699920000);
        assert_int_equal(slurm_parse_time("2023-11-14T10:00", NOW, &t), 0);
        assert_int_equal(t, 1699956000);
        assert_int_equal(slurm_parse_time("2023-11-14", NOW, &t), 0);
        assert_int_equal(t, 1699920000);
        assert_int_equal(slurm_parse_time("10:00:00", NOW, &t), 0);
        assert_int_equal(t, 1699956000);
        /* Slurm's other forms (parse_time()): named hours, AM/PM, month/day with or
         * without the year and a time, in local time (UTC here). */
        assert_int_equal(slurm_parse_time("noon", NOW, &t), 0);
        assert_int_equal(t, 1699963200);
        assert_int_equal(slurm_parse_time("teatime", NOW, &t), 0);
        assert_int_equal(t, 1699977600);
        assert_int_equal(slurm_parse_time("10:00PM", NOW, &t), 0);
        assert_int_equal(t, 1699999200);
        assert_int_equal(slurm_parse_time("12:30am", NOW, &t), 0);
        assert_int_equal(t, 1699921800);
        assert_int_equal(slurm_parse_time("11/14", NOW, &t), 0);
        assert_int_equal(t, 1699920000);
        assert_int_equal(slurm_parse_time("11/14/22", NOW, &t), 0);
        assert_int_equal(t, 1699920000 - 365 * 86400);
        assert_int_equal(slurm_parse_time("11.14.22-10:00", NOW, &t), 0);
        assert_int_equal(t, 1699956000 - 365 * 86400);
        assert_int_equal(slurm_parse_time("111422", NOW, &t), 0);
        assert_int_equal(t, 1699920000 - 365 * 86400);
        assert_int_equal(slurm_parse_time("1114-10:00:00", NOW, &t), 0);
        assert_int_equal(t, 1699956000);
        assert_int_equal(slurm_parse_time("02/31", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("13/01", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("11/14.22", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("13:00PM", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("11/14-25:00", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("yesterday-ish", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("now-3x", NOW, &t), -EINVAL);
        assert_int_equal(slurm_parse_time("", NOW, &t), -EINVAL);
}

static void test_format_parse(void **state) {
        SlurmFormat f = {};

        assert_int_equal(slurm_format_parse("%.18i %9P|%j%%", &f), 0);
        assert_int_equal(f.n, 6);
        assert_int_equal(f.items[0].field, 'i');
        assert_int_equal(f.items[0].width, 18);
        assert_true(f.items[0].right);
        assert_string_equal(f.items[1].text, " ");
        assert_int_equal(f.items[2].field, 'P');
        assert_false(f.items[2].right);
        assert_string_equal(f.items[3].text, "|");
        assert_int_equal(f.items[4].field, 'j');
        assert_int_equal(f.items[4].width, 0);
        assert_string_equal(f.items[5].text, "%");
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("%", &f), -EINVAL);
        assert_int_equal(slurm_format_parse("%.5", &f), -EINVAL);
        assert_int_equal(slurm_format_parse("", &f), -EINVAL);

        assert_int_equal(slurm_fields_parse("JobIDRaw,State,Account%20,JobName%-5", &f), 0);
        assert_int_equal(f.n, 4);
        assert_string_equal(f.items[2].name, "Account");
        assert_int_equal(f.items[2].width, 20);
        assert_true(f.items[2].right);
        assert_int_equal(f.items[3].width, 5);
        assert_false(f.items[3].right);
        slurm_format_done(&f);
        assert_int_equal(slurm_fields_parse("JobID,,State", &f), -EINVAL);
        assert_int_equal(slurm_fields_parse("Account%x", &f), -EINVAL);

        assert_int_equal(slurm_format_parse_long("JobID,Name:.30,State", &f), 0);
        assert_int_equal(f.items[0].width, 20);
        assert_int_equal(f.items[1].width, 30);
        assert_true(f.items[1].right);
        slurm_format_done(&f);
}

static void test_squeue_default(void **state) {
        JobInfo run = running_job();
        JobInfo pend = running_job();
        JobInfo arr = running_job();
        SqueueJob jobs[3] = { { .info = &run }, { .info = &pend }, { .info = &arr } };
        SlurmFormat f = {};
        char *out = NULL;

        pend.id = 43;
        pend.name = (char *) "a_rather_long_name";
        pend.state = (char *) "HELD";
        pend.reason = (char *) "JobHeldUser";
        pend.start_time = 0;
        arr.id = 50;
        arr.array_job_id = 44;
        arr.array_task_id = 6;

        assert_int_equal(slurm_format_parse(SQUEUE_FORMAT_DEFAULT, &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 3, true, NOW));
        assert_string_equal(out,
                            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n"
                            "                42     batch     wrap    alice  R       1:05      1 node1\n"
                            "                43     batch a_rather    alice PD       0:00      1 (JobHeldUser)\n"
                            "              44_6     batch     wrap    alice  R       1:05      1 node1\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("%i|%A|%F|%K|%T|%l|%L|%C|%m|%a|%u|%r", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 3, false, NOW));
        assert_string_equal(out, "42|42|42|N/A|RUNNING|1:00:00|58:55|4|2G|physics|alice|None\n"
                                 "43|43|43|N/A|PENDING|1:00:00|1:00:00|4|2G|physics|alice|JobHeldUser\n"
                                 "44_6|50|44|6|RUNNING|1:00:00|58:55|4|2G|physics|alice|None\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse_long("JobID:6,State:.9,Name", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 1, true, NOW));
        assert_string_equal(out, "JOBID     STATENAME                \n"
                                 "42      RUNNINGwrap                \n");
        free(out);
        slurm_format_done(&f);

        /* %b and -O tres-per-node: the GPUs as Slurm's tres_per_node, N/A for none. */
        run.gpus = 2;
        pend.gpus = 1;
        pend.gpu_type = (char *) "a100";
        assert_int_equal(slurm_format_parse("%i %b", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 3, true, NOW));
        assert_string_equal(out, "JOBID TRES_PER_NODE\n42 gres/gpu:2\n43 gres/gpu:a100:1\n44_6 N/A\n");
        free(out);
        slurm_format_done(&f);
        assert_int_equal(slurm_format_parse_long("JobID:5,tres-per-node:16", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 1, true, NOW));
        assert_string_equal(out, "JOBIDTRES_PER_NODE   \n42   gres/gpu:2      \n");
        free(out);
        slurm_format_done(&f);
        /* Shards: gres/shard:K. */
        run.gpus = 0;
        run.shards = 3;
        assert_int_equal(slurm_format_parse("%i %b", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 1, false, NOW));
        assert_string_equal(out, "42 gres/shard:3\n");
        free(out);
        slurm_format_done(&f);
        run.shards = 0;
        run.gpus = 2;

        assert_int_equal(slurm_format_parse("%i %s", &f), 0);
        const char *bad = NULL;
        assert_int_equal(squeue_format_check(&f, &bad), -EINVAL);
        assert_string_equal(bad, "s");
        slurm_format_done(&f);
}

/* What the clients of issue 38 read: Open OnDemand's -O fields with their \x1F suffix,
 * batchspawner's %T %B, --noconvert, Slurm's state names in -t. */
static void test_squeue_clients(void **state) {
        JobInfo run = running_job(), pend = running_job();
        SqueueJob jobs[2] = { { .info = &run, .group = "physics", .gid = 2001 }, { .info = &pend, .gid = 2001 } };
        SlurmFormat f = {};
        char *out = NULL;

        pend.id = 43;
        pend.state = (char *) "PENDING";
        pend.start_time = 0;
        pend.node = NULL;
        run.comment = (char *) "rule_a";
        run.constraint = (char *) "a100";

        /* "JobID:\x1F": width 0, the suffix after each field, a trailing comma. */
        assert_int_equal(slurm_format_parse_long("JobID:\x1f,StateCompact:\x1f,BatchHost:\x1f,", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 2, true, NOW));
        assert_string_equal(out, "JOBID\x1fST\x1f" "EXEC_HOST\x1f\n42\x1fR\x1fnode1\x1f\n43\x1fPD\x1fn/a\x1f\n");
        free(out);
        slurm_format_done(&f);
        /* A suffix after a width, right justified. */
        assert_int_equal(slurm_format_parse_long("JobID:.4|,Name:3", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 1, false, NOW));
        assert_string_equal(out, "  42|wra\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("%T %B", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 2, false, NOW));
        assert_string_equal(out, "RUNNING node1\nPENDING n/a\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("%k|%f|%g|%G|%d|%E|%h|%z|%O|%X|%m", &f), 0);
        CAPTURE(out, squeue_print(F, &f, jobs, 2, false, NOW));
        assert_string_equal(out, "rule_a|a100|physics|2001|0|(null)|OK|*:*:*|0|N/A|2G\n"
                                 "(null)|(null)|(null)|2001|0|(null)|OK|*:*:*|0|N/A|2G\n");
        free(out);
        jobs[0].noconvert = true;
        CAPTURE(out, squeue_print(F, &f, jobs, 1, false, NOW));
        assert_string_equal(out, "rule_a|a100|physics|2001|0|(null)|OK|*:*:*|0|N/A|2048M\n");
        free(out);
        assert_true(squeue_format_needs_details(&f)); /* %k */
        slurm_format_done(&f);
        assert_int_equal(slurm_format_parse("%i %T %B", &f), 0);
        assert_false(squeue_format_needs_details(&f));
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse_long("JobArrayID,UserID:5,tres-alloc:40,WorkDir:4,Comment", &f), 0);
        assert_true(squeue_format_needs_details(&f));
        CAPTURE(out, squeue_print(F, &f, jobs, 1, true, NOW));
        assert_string_equal(out, "JOBID               UID  TRES_ALLOC                              WORK" "COMMENT             \n"
                                 "42                  1001 cpu=4,mem=2G,node=1,billing=4           (nul" "rule_a              \n");
        free(out);
        slurm_format_done(&f);

        /* Every state Slurm takes, those Corral never has included; not made-up ones. */
        static const char *const known[] = { "CF", "CG", "RF", "RH", "RQ", "SE", "RS", "SI", "SO", "ST",
                                             "PR", "BF", "DL", "REQUEUED", "COMPLETING", "SPECIAL_EXIT", "pd",
                                             "all" };
        static const char *const unknown[] = { "XX", "DONE", "", "PEND" };
        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                assert_true(slurm_state_is_known(known[i]));
        for (size_t i = 0; i < ELEMENTSOF(unknown); i++)
                assert_false(slurm_state_is_known(unknown[i]));
}

/* Open OnDemand's history query and Snakemake's efficiency report. */
static void test_sacct_clients(void **state) {
        JobInfo j = running_job();
        const JobInfo *jobs[] = { &j };
        SlurmFormat f = {};
        char *out = NULL;

        j.state = (char *) "OUT_OF_MEMORY";
        j.end_time = NOW;
        j.memory = UINT64_C(64) << 20;
        j.usage.memory_peak = UINT64_C(512000) << 10;
        j.comment = (char *) "rule_a";

        assert_int_equal(slurm_fields_parse("JobID,Group,State,ReqMem,MaxRSS,Comment", &f), 0);
        f.delimiter = "\x1f";
        f.units = 'G';
        f.group_of = NULL;
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "42\x1f\x1fOUT_OF_MEMORY\x1f" "0.06G\x1f" "0.49G\x1frule_a\n");
        free(out);
        f.units = 'M';
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE, false, NOW));
        assert_string_equal(out, "42\x1f\x1fOUT_OF_MEMORY\x1f" "64M\x1f" "500M\x1frule_a\x1f\n");
        free(out);
        /* GPU telemetry's figures as Slurm's TRES usage and energy. */
        slurm_format_done(&f);
        j.has_details = true;
        j.usage.cpu_usec = 61500000;
        j.gpu_totals = (JobGpuTotals) { .n = 2, .util_mean = 75.4, .util_max = 180, .memory_max = UINT64_C(6) << 30,
                                        .has_energy = true, .energy_j = 4500 };
        assert_int_equal(slurm_fields_parse("TRESUsageInAve,TRESUsageInMax,ConsumedEnergy,ConsumedEnergyRaw", &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "cpu=00:01:01,gres/gpuutil=75,mem=512000K|"
                                 "cpu=00:01:01,gres/gpumem=6144M,gres/gpuutil=180,mem=512000K|4.50K|4500\n");
        free(out);
        j.gpu_totals = (JobGpuTotals) {};
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "cpu=00:01:01,mem=512000K|cpu=00:01:01,mem=512000K|0|0\n");
        free(out);
        slurm_format_done(&f);
        assert_int_equal(slurm_fields_parse("JobID,Group,State,ReqMem,MaxRSS,Comment", &f), 0);
        f.units = 'K';
        f.delimiter = NULL;
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "42||OUT_OF_MEMORY|65536K|512000K|rule_a\n");
        free(out);
        slurm_format_done(&f);
}

static void test_sacct(void **state) {
        JobInfo done = running_job(), fail = running_job(), pend = running_job();
        const JobInfo *jobs[] = { &done, &fail, &pend };
        SlurmFormat f = {};
        char *out = NULL, b[64];

        done.state = (char *) "COMPLETED";
        done.end_time = NOW - 5;
        done.exit_code = 0;
        done.usage.cpu_usec = 61500000;
        done.usage.memory_peak = UINT64_C(10) << 20;
        fail.id = 43;
        fail.name = (char *) "a_rather_long_name";
        fail.state = (char *) "FAILED";
        fail.end_time = NOW;
        fail.exit_code = 0;
        fail.exit_signal = 9;
        pend.id = 44;
        pend.state = (char *) "BLOCKED";
        pend.start_time = 0;
        pend.walltime_sec = CORRAL_WALLTIME_INFINITY;
        pend.memory = 0;

        assert_int_equal(slurm_fields_parse("JobIdRaw,State", &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 3, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "42|COMPLETED\n43|FAILED\n44|PENDING\n");
        free(out);
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE, true, NOW));
        assert_string_equal(out, "JobIDRaw|State|\n42|COMPLETED|\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_fields_parse(SACCT_FORMAT_DEFAULT, &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 3, SACCT_FIXED, true, NOW));
        assert_string_equal(out,
                            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
                            "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
                            "42                 wrap      batch    physics          4  COMPLETED      0:0 \n"
                            "43           a_rather_+      batch    physics          4     FAILED      0:9 \n"
                            "44                 wrap      batch    physics          0    PENDING      0:0 \n");
        free(out);
        slurm_format_done(&f);

        /* Snakemake guesses the account with "sacct -nu USER -o Account%20". */
        assert_int_equal(slurm_fields_parse("Account%20", &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_FIXED, false, NOW));
        assert_string_equal(out, "             physics \n");
        free(out);
        slurm_format_done(&f);

        assert_string_equal(sacct_field_value("Elapsed", &done, NOW, b, sizeof(b)), "00:01:00");
        assert_string_equal(sacct_field_value("CPUTime", &done, NOW, b, sizeof(b)), "00:04:00");
        assert_string_equal(sacct_field_value("TotalCPU", &done, NOW, b, sizeof(b)), "01:01.500");
        assert_string_equal(sacct_field_value("MaxRSS", &done, NOW, b, sizeof(b)), "10240K");
        assert_string_equal(sacct_field_value("ReqMem", &done, NOW, b, sizeof(b)), "2G");
        assert_string_equal(sacct_field_value("ReqMem", &pend, NOW, b, sizeof(b)), "0");
        assert_string_equal(sacct_field_value("Start", &done, NOW, b, sizeof(b)), "2023-11-14T22:12:15");
        assert_string_equal(sacct_field_value("End", &pend, NOW, b, sizeof(b)), "Unknown");
        assert_string_equal(sacct_field_value("NodeList", &done, NOW, b, sizeof(b)), "node1");
        assert_string_equal(sacct_field_value("NodeList", &pend, NOW, b, sizeof(b)), "None assigned");
        assert_string_equal(sacct_field_value("Timelimit", &done, NOW, b, sizeof(b)), "01:00:00");
        assert_string_equal(sacct_field_value("Timelimit", &pend, NOW, b, sizeof(b)), "UNLIMITED");
        assert_string_equal(sacct_field_value("User", &done, NOW, b, sizeof(b)), "alice");
        assert_string_equal(sacct_field_value("Elapsed", &pend, NOW, b, sizeof(b)), "00:00:00");
        assert_null(sacct_field_value("NoSuchField", &done, NOW, b, sizeof(b)));

        /* TRES, sorted by name as sacct prints them; nothing allocated before a start. */
        assert_string_equal(sacct_field_value("ReqTRES", &done, NOW, b, sizeof(b)), "billing=4,cpu=4,mem=2G,node=1");
        assert_string_equal(sacct_field_value("AllocTRES", &done, NOW, b, sizeof(b)), "billing=4,cpu=4,mem=2G,node=1");
        assert_string_equal(sacct_field_value("AllocTRES", &pend, NOW, b, sizeof(b)), "");
        done.gpus = 2;
        pend.gpus = 1;
        assert_string_equal(sacct_field_value("AllocTRES", &done, NOW, b, sizeof(b)),
                            "billing=4,cpu=4,gres/gpu=2,mem=2G,node=1");
        assert_string_equal(sacct_field_value("ReqTRES", &pend, NOW, b, sizeof(b)), "billing=4,cpu=4,gres/gpu=1,node=1");
        done.gpus = 0;
        done.shards = 2;
        assert_string_equal(sacct_field_value("AllocTRES", &done, NOW, b, sizeof(b)),
                            "billing=4,cpu=4,gres/shard=2,mem=2G,node=1");
        done.shards = 0;
        done.gpus = 2;
        assert_int_equal(slurm_fields_parse("JobIDRaw,ReqTRES,AllocTRES", &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 3, SACCT_PARSABLE2, true, NOW));
        assert_string_equal(out, "JobIDRaw|ReqTRES|AllocTRES\n"
                                 "42|billing=4,cpu=4,gres/gpu=2,mem=2G,node=1|billing=4,cpu=4,gres/gpu=2,mem=2G,node=1\n"
                                 "43|billing=4,cpu=4,mem=2G,node=1|billing=4,cpu=4,mem=2G,node=1\n"
                                 "44|billing=4,cpu=4,gres/gpu=1,node=1|\n");
        free(out);
        slurm_format_done(&f);

        const char *bad = NULL;
        assert_int_equal(slurm_fields_parse("JobID,Bogus", &f), 0);
        assert_int_equal(sacct_fields_check(&f, &bad), -EINVAL);
        assert_string_equal(bad, "Bogus");
        slurm_format_done(&f);
}

static void test_sinfo(void **state) {
        SinfoPartition p[] = {
                { .name = "batch", .is_default = true, .node = "node1", .cpus = 4, .cpus_allocated = 2,
                  .memory = UINT64_C(8192) << 20 },
                { .name = "express", .max_walltime = 3600, .node = "node1", .cpus = 4 },
        };
        SlurmFormat f = {};
        char *out = NULL;

        assert_int_equal(slurm_format_parse(SINFO_FORMAT_DEFAULT, &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, true));
        assert_string_equal(out, "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
                                 "batch*       up   infinite      1    mix node1\n"
                                 "express      up    1:00:00      1   idle node1\n");
        free(out);
        slurm_format_done(&f);

        /* Snakemake finds the default partition with "sinfo -o %P". */
        assert_int_equal(slurm_format_parse("%P", &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "batch*\nexpress\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("%c %m %C %T", &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 1, false));
        assert_string_equal(out, "4 8192 2/2/0/4 mixed\n");
        free(out);
        slurm_format_done(&f);

        /* GRES: "(null)" without GPUs; per model as Slurm's autodetection names them. */
        DeviceInfo d[] = {
                { .name = (char *) "gpu0", .model = (char *) "NVIDIA A100-SXM4-40GB" },
                { .name = (char *) "gpu1", .model = (char *) "Tesla T4" },
                { .name = (char *) "gpu2", .model = (char *) "NVIDIA A100-SXM4-40GB" },
                { .name = (char *) "fpga0" },
        };
        char gres[128];
        assert_string_equal(sinfo_format_gres(d, 4, gres, sizeof gres),
                            "gpu:nvidia_a100-sxm4-40gb:2,gpu:tesla_t4:1,gpu:1");
        assert_string_equal(sinfo_format_gres(d, 0, gres, sizeof gres), "");
        /* Cut at an entry, never inside one. */
        assert_string_equal(sinfo_format_gres(d, 4, gres, 40), "gpu:nvidia_a100-sxm4-40gb:2");
        /* Shared GPUs: their shards after the GPUs, as Slurm prints gres/shard; in use. */
        d[0].shards = 4, d[2].shards = 4, d[2].shards_used = 3;
        assert_string_equal(sinfo_format_gres(d, 4, gres, sizeof gres),
                            "gpu:nvidia_a100-sxm4-40gb:2,gpu:tesla_t4:1,gpu:1,shard:8");
        assert_string_equal(sinfo_format_gres_used(d, 4, gres, sizeof gres),
                            "gpu:nvidia_a100-sxm4-40gb:0(IDX:N/A),gpu:tesla_t4:0(IDX:N/A),gpu:0(IDX:N/A),shard:3");
        d[0].shards = 0, d[2].shards = 0, d[2].shards_used = 0;
        /* MIG: a GPU in MIG mode counts as its MIG devices, each type its profile. */
        DeviceInfo mig[] = {
                { .index = 0, .name = (char *) "gpu0", .model = (char *) "NVIDIA A100-SXM4-40GB", .mig_mode = true },
                { .index = 1, .name = (char *) "gpu1", .model = (char *) "NVIDIA A100-SXM4-40GB" },
                { .index = 2, .name = (char *) "gpu2", .model = (char *) "NVIDIA A100-SXM4-40GB", .mig_of = (char *) "gpu0",
                  .mig_profile = (char *) "1g.5gb", .job_id = 7 },
                { .index = 3, .name = (char *) "gpu3", .model = (char *) "NVIDIA A100-SXM4-40GB", .mig_of = (char *) "gpu0",
                  .mig_profile = (char *) "1g.5gb" },
                { .index = 4, .name = (char *) "gpu4", .model = (char *) "NVIDIA A100-SXM4-40GB", .mig_of = (char *) "gpu0",
                  .mig_profile = (char *) "3g.20gb", .job_id = 8 },
                /* A card gone: none of the node's GPUs. */
                { .index = 5, .name = (char *) "gpu5", .model = (char *) "NVIDIA A100-SXM4-40GB", .offline = (char *) "gone" },
        };
        assert_string_equal(sinfo_format_gres(mig, 6, gres, sizeof gres),
                            "gpu:nvidia_a100-sxm4-40gb:1,gpu:1g.5gb:2,gpu:3g.20gb:1");
        assert_string_equal(sinfo_format_gres_used(mig, 6, gres, sizeof gres),
                            "gpu:nvidia_a100-sxm4-40gb:0(IDX:N/A),gpu:1g.5gb:1(IDX:2),gpu:3g.20gb:1(IDX:4)");
        assert_int_equal(slurm_format_parse("%P %G", &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 1, true));
        assert_string_equal(out, "PARTITION GRES\nbatch* (null)\n");
        free(out);
        p[0].gres = "gpu:tesla_t4:4";
        CAPTURE(out, sinfo_print(F, &f, p, 1, false));
        assert_string_equal(out, "batch* gpu:tesla_t4:4\n");
        free(out);
        slurm_format_done(&f);

        /* The node's reason (%E %u %H, sinfo -R): its GPUs in use outside Corral, by the
         * last telemetry reading, named as corral info names them (gpu1, a declared
         * device, by its PCI address: discovery read no UUID of it). */
        {
                json_object *params = json_tokener_parse(
                        "{\"devices\":[{\"name\":\"gpu0\",\"uuid\":\"GPU-a\"},{\"name\":\"gpu1\",\"pci_address\":\"0000:5e:00.0\"}],"
                        "\"gpu_telemetry\":{\"state\":\"on\",\"sampled\":1700000000,\"gpus\":["
                        "{\"uuid\":\"GPU-a\"},"
                        "{\"uuid\":\"GPU-b\",\"pci_address\":\"0000:5E:00.0\",\"outside_corral\":[{\"pid\":4242,\"uid\":1000,\"user\":\"ann\"},"
                        "{\"pid\":77,\"uid\":1001}]}]}}");
                const char *user;
                uint64_t when;
                char reason[128];

                assert_non_null(params);
                assert_true(slurm_node_reason(params, reason, sizeof reason, &user, &when));
                assert_string_equal(reason, "gpu1 in use outside Corral: pid 4242 (ann), pid 77 (uid 1001)");
                assert_string_equal(user, "ann");
                assert_true(when == 1700000000);
                p[0].reason = reason;
                p[0].reason_user = user;
                p[0].reason_time = when;
                assert_int_equal(slurm_format_parse("%30E|%u|%N", &f), 0);
                CAPTURE(out, sinfo_print(F, &f, p, 1, true));
                assert_string_equal(out, "REASON                        |USER|NODELIST\n"
                                         "gpu1 in use outside Corral: pi|ann|node1\n");
                free(out);
                slurm_format_done(&f);
                json_object_put(params);

                /* No process outside: no reason, "none" as Slurm prints it. */
                params = json_tokener_parse("{\"gpu_telemetry\":{\"gpus\":[{\"uuid\":\"GPU-a\"}]}}");
                assert_false(slurm_node_reason(params, reason, sizeof reason, &user, &when));
                json_object_put(params);
                p[0].reason = NULL;
                p[0].reason_user = NULL;
                assert_int_equal(slurm_format_parse("%E %u %H", &f), 0);
                CAPTURE(out, sinfo_print(F, &f, p, 1, false));
                assert_string_equal(out, "none Unknown Unknown\n");
                free(out);
                slurm_format_done(&f);
        }
}

/* Open OnDemand's sinfo calls: a node's counts and CPUs as one line (no partition
 * field: Slurm merges the partitions' lines), -O long names with widths and no separator,
 * and records of control characters. */
static void test_sinfo_clients(void **state) {
        SinfoPartition p[] = {
                { .name = "batch", .is_default = true, .node = "node1", .cpus = 4, .cpus_allocated = 2,
                  .memory = UINT64_C(8192) << 20 },
                { .name = "express", .max_walltime = 3600, .node = "node1", .cpus = 4, .cpus_allocated = 2 },
        };
        SlurmFormat f = {};
        const char *bad = NULL;
        char *out = NULL;

        assert_int_equal(slurm_format_parse("%F/%C", &f), 0);
        assert_int_equal(sinfo_format_check(&f, &bad), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "1/0/0/1/2/2/0/4\n");
        free(out);
        CAPTURE(out, sinfo_print(F, &f, p, 2, true));
        assert_string_equal(out, "NODES(A/I/O/T)/CPUS(A/I/O/T)\n1/0/0/1/2/2/0/4\n");
        free(out);
        p[0].cpus_allocated = p[1].cpus_allocated = 0;
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "0/1/0/1/0/4/0/4\n");
        free(out);
        slurm_format_done(&f);

        /* A partition's field keeps one line per partition. */
        assert_int_equal(slurm_format_parse("%R %F", &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "batch 0/1/0/1\nexpress 0/1/0/1\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_format_parse("\x1E%c\x1F%n\x1F%f", &f), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "\x1E" "4\x1F" "node1\x1F(null)\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(sinfo_format_parse_long("nodehost:10,gres:8,GresUsed:.12,statelong", &f, &bad), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, true));
        assert_string_equal(out, "HOSTNAMES GRES       GRES_USEDSTATE               \n"
                                 "node1     (null)        (null)idle                \n");
        free(out);
        p[0].cpus_allocated = 2;
        p[0].gres = "gpu:tesla_t4:2";
        p[0].gres_used = "gpu:tesla_t4:1(IDX:1)";
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "node1     gpu:teslgpu:tesla_t4mixed               \n");
        free(out);
        slurm_format_done(&f);
        /* A suffix after a width (Slurm's, as squeue -O has it) is printed after the field. */
        assert_int_equal(sinfo_format_parse_long("nodehost:5|,statelong:4", &f, &bad), 0);
        CAPTURE(out, sinfo_print(F, &f, p, 2, false));
        assert_string_equal(out, "node1|mixe\n");
        free(out);
        slurm_format_done(&f);
        assert_int_equal(sinfo_format_parse_long("nodehost,bogus", &f, &bad), -EINVAL);
        assert_string_equal(bad, "bogus");
        slurm_format_done(&f);

        /* GresUsed: per type, the count held and the indices, "N/A" for none. */
        DeviceInfo d[] = {
                { .index = 0, .model = (char *) "Tesla T4", .job_id = 7 },
                { .index = 1, .model = (char *) "Tesla T4" },
                { .index = 2, .model = (char *) "Tesla T4", .job_id = 8 },
                { .index = 3, .model = (char *) "Tesla T4", .job_id = 8 },
                { .index = 4, .model = (char *) "NVIDIA A100-SXM4-40GB" },
        };
        char used[128];
        assert_string_equal(sinfo_format_gres_used(d, 5, used, sizeof used),
                            "gpu:tesla_t4:3(IDX:0,2-3),gpu:nvidia_a100-sxm4-40gb:0(IDX:N/A)");
        assert_string_equal(sinfo_format_gres_used(d, 0, used, sizeof used), "");
}

static void check_hosts(const char *list, const char *joined) {
        char **v = NULL, j[256] = "";
        size_t n = 99;

        assert_int_equal(slurm_hostlist_expand(list, &v, &n), 0);
        STRV_FOREACH(s, v)
                snprintf(j + strlen(j), sizeof j - strlen(j), "%s%s", s == v ? "" : " ", *s);
        assert_string_equal(j, joined);
        assert_int_equal(n, strv_length(v));
        strv_free(v);
}

/* scontrol show hostnames (Parsl: "scontrol show hostname $SLURM_NODELIST"). */
static void test_hostlist(void **state) {
        char **v = NULL;

        check_hosts("node1", "node1");
        check_hosts("node[1-3,5]", "node1 node2 node3 node5");
        check_hosts("n[08-11],login", "n08 n09 n10 n11 login");
        check_hosts("n[8-10]", "n8 n9 n10");
        check_hosts("r[1-2]n[1-2]-ib", "r1n1-ib r1n2-ib r2n1-ib r2n2-ib");
        check_hosts("a b\tc,,d", "a b c d");
        check_hosts("a,a", "a a");
        check_hosts("", "");
        assert_int_equal(slurm_hostlist_expand("node[1-3", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[3-1]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[a-b]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[1-2]]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[1-[2]]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("node[1--2]", &v, NULL), -EINVAL);
        assert_int_equal(slurm_hostlist_expand("n[1-999999999]", &v, NULL), -E2BIG);
        assert_int_equal(slurm_hostlist_expand("n[1-300]m[1-300]", &v, NULL), -E2BIG);
        assert_int_equal(slurm_hostlist_expand("n[1-1000000000]", &v, NULL), -EINVAL);
        assert_null(v);
}

static void test_scontrol(void **state) {
        JobInfo j = running_job();
        char *out = NULL;

        CAPTURE(out, scontrol_show_job(F, &j, NOW, false));
        assert_string_equal(out, "JobId=42 JobName=wrap\n"
                                 "   UserId=alice(1001) Account=physics QOS=normal\n"
                                 "   Priority=0 Nice=0\n"
                                 "   JobState=RUNNING Reason=None\n"
                                 "   ExitCode=0:0\n"
                                 "   RunTime=00:01:05 TimeLimit=01:00:00\n"
                                 "   SubmitTime=2023-11-14T22:11:40 StartTime=2023-11-14T22:12:15 EndTime=Unknown\n"
                                 "   Partition=batch\n"
                                 "   NodeList=node1\n"
                                 "   BatchHost=node1\n"
                                 "   NumNodes=1 NumCPUs=4 NumTasks=1 CPUs/Task=4\n"
                                 "   TRES=cpu=4,mem=2G,node=1,billing=4\n"
                                 "   MinMemoryNode=2G\n"
                                 "   Features=(null)\n"
                                 "   TresPerNode=(null)\n"
                                 "\n");
        free(out);

        /* A GPU job: its GPUs in TRES (Slurm's TRES id order: gres last), its type and
         * constraint, and the GPUs it holds as scontrol -d's GRES= names them. */
        j.gpus = 2;
        j.gpu_type = (char *) "a100";
        j.constraint = (char *) "a100|h100";
        j.gpus_allocated = (char *) "1,3";
        CAPTURE(out, scontrol_show_job(F, &j, NOW, false));
        assert_non_null(strstr(out, "   TRES=cpu=4,mem=2G,node=1,billing=4,gres/gpu=2\n"));
        assert_non_null(strstr(out, "   Features=a100|h100\n"));
        assert_non_null(strstr(out, "   TresPerNode=gres/gpu:a100:2\n"));
        assert_non_null(strstr(out, "   GRES=gpu:a100:2(IDX:1,3)\n"));
        free(out);

        /* A shard job: its shards in TRES, TresPerNode and GRES, on its one GPU. */
        j.gpus = 0;
        j.gpu_type = NULL;
        j.constraint = NULL;
        j.shards = 2;
        j.gpus_allocated = (char *) "1";
        CAPTURE(out, scontrol_show_job(F, &j, NOW, false));
        assert_non_null(strstr(out, "   TRES=cpu=4,mem=2G,node=1,billing=4,gres/shard=2\n"));
        assert_non_null(strstr(out, "   TresPerNode=gres/shard:2\n"));
        assert_non_null(strstr(out, "   GRES=shard:2(IDX:1)\n"));
        free(out);
}

/* The first submatch of an extended regular expression in s, as a number; -1: no match. */
static long regex_number(const char *re, const char *s) {
        regex_t r;
        regmatch_t m[2];
        long v = -1;

        assert_int_equal(regcomp(&r, re, REG_EXTENDED), 0);
        if (regexec(&r, s, 2, m, 0) == 0 && m[1].rm_so >= 0)
                v = strtol(s + m[1].rm_so, NULL, 10);
        regfree(&r);
        return v;
}

static void test_scontrol_config(void **state) {
        ShowConfig c = {
                .hostname = "node1", .policy = "easy", .max_array_size = 10000,
                .min_job_age_sec = 86400, .sched_interval_sec = 30,
        };
        char *out = NULL;

        CAPTURE(out, scontrol_show_config(F, &c, NOW));
        assert_string_equal(out, "Configuration data as of 2023-11-14T22:13:20\n"
                                 "AccountingStorageType   = accounting_storage/slurmdbd\n"
                                 "AcctGatherNodeFreq      = 0 sec\n"
                                 "ClusterName             = node1\n"
                                 "JobAcctGatherFrequency  = 30\n"
                                 "JobAcctGatherType       = jobacct_gather/cgroup\n"
                                 "MaxArraySize            = 10000\n"
                                 "MaxJobCount             = 10000\n"
                                 "MinJobAge               = 86400 sec\n"
                                 "SLURM_VERSION           = 22.05.8\n"
                                 "SchedulerParameters     = sched_interval=30\n"
                                 "SchedulerTimeSlice      = 30 sec\n"
                                 "SchedulerType           = sched/backfill\n"
                                 "SelectType              = select/cons_tres\n"
                                 "SelectTypeParameters    = CR_CPU_MEMORY\n"
                                 "SlurmctldHost[0]        = node1\n"
                                 "\n"
                                 "Slurmctld(primary) at node1 is UP\n");
        /* Snakemake's executor plugin's patterns (snakemake-executor-plugin-slurm,
         * __init__.py: r"MinJobAge\s*=\s*(\d+)\s*(sec|s|h)?" and utils.py's
         * r"MaxArraySize\s*=?\s*(\d+)"), \s and \d spelled in POSIX classes. */
        assert_int_equal(regex_number("MinJobAge[[:space:]]*=[[:space:]]*([0-9]+)[[:space:]]*(sec|s|h)?", out),
                         86400);
        assert_int_equal(regex_number("MaxArraySize[[:space:]]*=?[[:space:]]*([0-9]+)", out), 10000);
        /* The polling interval another engine derives from these two keys. */
        assert_int_equal(regex_number("SchedulerTimeSlice[[:space:]]*=[[:space:]]*([0-9]+)", out), 30);
        assert_int_equal(regex_number("AcctGatherNodeFreq[[:space:]]*=[[:space:]]*([0-9]+)", out), 0);
        free(out);

        c.policy = "fcfs";
        c.hostname = "a-host-name-longer-than-the-key-column";
        CAPTURE(out, scontrol_show_config(F, &c, NOW));
        assert_non_null(strstr(out, "\nSchedulerType           = sched/builtin\n"));
        assert_non_null(strstr(out, "\nClusterName             = a-host-name-longer-than-the-key-column\n"));
        free(out);
}

static void test_scontrol_partition(void **state) {
        SinfoPartition p = {
                .name = "batch", .is_default = true, .max_walltime = 2 * 86400, .node = "node1",
                .cpus = 16, .cpus_allocated = 4, .memory = UINT64_C(64) << 30,
        };
        char *out = NULL;

        CAPTURE(out, scontrol_show_partition(F, &p, false));
        assert_string_equal(out, "PartitionName=batch\n"
                                 "   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n"
                                 "   AllocNodes=ALL Default=YES QoS=N/A\n"
                                 "   DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO\n"
                                 "   MaxNodes=1 MaxTime=2-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n"
                                 "   Nodes=node1\n"
                                 "   PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n"
                                 "   OverTimeLimit=NONE PreemptMode=OFF\n"
                                 "   State=UP TotalCPUs=16 TotalNodes=1 SelectTypeParameters=NONE\n"
                                 "   JobDefaults=(null)\n"
                                 "   DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n"
                                 "   TRES=cpu=16,mem=64G,node=1,billing=16\n"
                                 "\n");
        free(out);

        p.is_default = false;
        p.max_walltime = 0;
        p.name = "long";
        CAPTURE(out, scontrol_show_partition(F, &p, true));
        assert_string_equal(out, "PartitionName=long AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL "
                                 "AllocNodes=ALL Default=NO QoS=N/A "
                                 "DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO "
                                 "MaxNodes=1 MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED "
                                 "Nodes=node1 "
                                 "PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO "
                                 "OverTimeLimit=NONE PreemptMode=OFF "
                                 "State=UP TotalCPUs=16 TotalNodes=1 SelectTypeParameters=NONE "
                                 "JobDefaults=(null) "
                                 "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED "
                                 "TRES=cpu=16,mem=64G,node=1,billing=16\n");
        free(out);
}

static void test_scontrol_node(void **state) {
        ShowNode n = {
                .name = "node1", .cpus = 16, .memory = UINT64_C(64) << 30, .partitions = "batch,long",
        };
        char *out = NULL;

        CAPTURE(out, scontrol_show_node(F, &n, false));
        assert_string_equal(out, "NodeName=node1 CoresPerSocket=1\n"
                                 "   CPUAlloc=0 CPUEfctv=16 CPUTot=16\n"
                                 "   AvailableFeatures=(null)\n"
                                 "   ActiveFeatures=(null)\n"
                                 "   Gres=(null)\n"
                                 "   NodeAddr=node1 NodeHostName=node1 Version=22.05.8\n"
                                 "   RealMemory=65536 AllocMem=0 FreeMem=N/A Sockets=16 Boards=1\n"
                                 "   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n"
                                 "   Partitions=batch,long\n"
                                 "   CfgTRES=cpu=16,mem=64G,billing=16\n"
                                 "\n");
        free(out);

        n.cpus_allocated = 4;
        n.gres = "gpu:tesla_t4:2";
        CAPTURE(out, scontrol_show_node(F, &n, true));
        assert_non_null(strstr(out, "NodeName=node1 CoresPerSocket=1 CPUAlloc=4 CPUEfctv=16 CPUTot=16 "));
        assert_non_null(strstr(out, " Gres=gpu:tesla_t4:2 "));
        assert_non_null(strstr(out, " State=MIXED "));
        assert_non_null(strstr(out, " CfgTRES=cpu=16,mem=64G,billing=16\n"));
        assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
        free(out);

        n.cpus_allocated = 16;
        CAPTURE(out, scontrol_show_node(F, &n, false));
        assert_non_null(strstr(out, "\n   State=ALLOCATED "));
        free(out);
}

static void test_scontrol_oneliner(void **state) {
        JobInfo j = running_job();
        char *out = NULL;

        CAPTURE(out, scontrol_show_job(F, &j, NOW, true));
        assert_string_equal(out, "JobId=42 JobName=wrap UserId=alice(1001) Account=physics QOS=normal "
                                 "Priority=0 Nice=0 JobState=RUNNING Reason=None ExitCode=0:0 "
                                 "RunTime=00:01:05 TimeLimit=01:00:00 "
                                 "SubmitTime=2023-11-14T22:11:40 StartTime=2023-11-14T22:12:15 EndTime=Unknown "
                                 "Partition=batch NodeList=node1 BatchHost=node1 "
                                 "NumNodes=1 NumCPUs=4 NumTasks=1 CPUs/Task=4 "
                                 "TRES=cpu=4,mem=2G,node=1,billing=4 MinMemoryNode=2G "
                                 "Features=(null) TresPerNode=(null)\n");
        free(out);
}

/* squeue, sacct and scontrol print what corrald stored before it refused control
 * characters (or what a newer one sends) escaped. */
static void test_escaped(void **state) {
        JobInfo j = running_job();
        const JobInfo *jobs[] = { &j };
        SqueueJob sj[] = { { .info = &j } };
        SlurmFormat f = {};
        char *out = NULL;

        j.name = (char *) "x\xc2\x9b" "31m\x1b[2J";
        j.workdir = (char *) "/tmp/\xe9";
        j.has_details = true;

        assert_int_equal(slurm_format_parse("%.30j|%j", &f), 0);
        CAPTURE(out, squeue_print(F, &f, sj, 1, false, NOW));
        assert_string_equal(out, "             x\\u009b31m\\x1b[2J|x\\u009b31m\\x1b[2J\n");
        free(out);
        slurm_format_done(&f);

        assert_int_equal(slurm_fields_parse("JobName,WorkDir", &f), 0);
        CAPTURE(out, sacct_print(F, &f, jobs, 1, SACCT_PARSABLE2, false, NOW));
        assert_string_equal(out, "x\\u009b31m\\x1b[2J|/tmp/\\xe9\n");
        free(out);
        slurm_format_done(&f);

        CAPTURE(out, scontrol_show_job(F, &j, NOW, false));
        assert_non_null(strstr(out, "JobId=42 JobName=x\\u009b31m\\x1b[2J\n"));
        assert_non_null(strstr(out, "   WorkDir=/tmp/\\xe9\n"));
        assert_null(strchr(out, '\x1b'));
        assert_null(strstr(out, "\xc2\x9b"));
        free(out);
}

/* sbatch has no parser of its own: the same words through corral submit's and sbatch's
 * paths make the same request, except for -q (the queue for corral, --qos for sbatch). */
static void test_option_parity(void **state) {
        static const char *const argvs[][12] = {
                { "x", "-n", "2", "-c", "3", "--mem=1G", "-t", "1:00:00", "-J", "job", "cmd", NULL },
                { "x", "--ntasks=4", "--cpus-per-task=2", "-p", "batch", "-A", "physics", "cmd", NULL },
                { "x", "--export=NONE", "-D", "/tmp", "-o", "out-%j.log", "-e", "err-%x.log", "cmd", NULL },
                { "x", "--array=1-4%2", "--dependency=afterok:3", "--nice=5", "-H", "cmd", NULL },
                { "x", "-G", "a100:2", "-C", "a100|h100", "--gres-flags=enforce-binding", "cmd", NULL },
                { "x", "--gres=gpu:1", "--gpus-per-task=2", "-n", "3", "cmd", NULL },
        };
        size_t n;
        const SubmitOption *t = submit_options_table(&n);

        for (size_t k = 0; k < ELEMENTSOF(argvs); k++) {
                SubmitOptions a, b;
                _cleanup_json_ json_object *ja = NULL, *jb = NULL;
                char *err = NULL;
                int first_a, first_b, argc = 0;

                while (argvs[k][argc])
                        argc++;
                submit_options_init(&a, NOW);
                submit_options_init(&b, NOW);
                b.slurm_dialect = true;
                assert_int_equal(submit_options_parse_argv(argc, (char **) argvs[k], &a, &first_a, &err), 0);
                assert_int_equal(submit_options_parse_argv(argc, (char **) argvs[k], &b, &first_b, &err), 0);
                assert_int_equal(first_a, first_b);
                a.req.argv = strv_copy((char **) argvs[k] + first_a);
                b.req.argv = strv_copy((char **) argvs[k] + first_b);
                assert_int_equal(submit_options_finalize(&a, "/home/a", NULL, &err), 0);
                assert_int_equal(submit_options_finalize(&b, "/home/a", NULL, &err), 0);
                /* What only sbatch's dialect adds: Slurm's names of the request's shape. */
                {
                        _cleanup_strv_free_ char **kept = NULL;
                        STRV_FOREACH(e, b.req.env) {
                                if (streq(*e, "SLURM_SUBMIT_DIR=/home/a") ||
                                    (k == 0 && (streq(*e, "SLURM_NTASKS=2") || streq(*e, "SLURM_CPUS_PER_TASK=3"))) ||
                                    (k == 1 && (streq(*e, "SLURM_NTASKS=4") || streq(*e, "SLURM_CPUS_PER_TASK=2"))) ||
                                    (k == 5 && (streq(*e, "SLURM_NTASKS=3") || streq(*e, "SLURM_CPUS_PER_TASK=1"))))
                                        continue;
                                assert_int_equal(strv_extend(&kept, *e), 0);
                        }
                        assert_int_equal(strv_length(b.req.env) - strv_length(kept), k < 2 || k == 5 ? 3 : 1);
                        strv_free(b.req.env);
                        b.req.env = TAKE_PTR(kept);
                }
                if (b.req.env && !b.req.env[0])
                        b.req.env = strv_free(b.req.env);
                assert_int_equal(submit_request_to_json(&a.req, &ja), 0);
                assert_int_equal(submit_request_to_json(&b.req, &jb), 0);
                assert_string_equal(json_object_to_json_string(ja), json_object_to_json_string(jb));
                if (k == 4) {
                        assert_int_equal(b.req.gpus, 2);
                        assert_string_equal(b.req.gpu_type, "a100");
                        assert_string_equal(b.req.constraint, "a100|h100");
                        assert_true(b.req.gpu_binding);
                }
                if (k == 5)
                        assert_int_equal(b.req.gpus, 6); /* the later --gpus-per-task x 3 tasks */
                submit_options_done(&a);
                submit_options_done(&b);
        }

        /* -q: the queue for corral submit, Slurm's --qos for sbatch (a warning, no queue). */
        {
                SubmitOptions a, b;
                char *argv[] = { (char *) "x", (char *) "-q", (char *) "express", (char *) "cmd", NULL };
                char *err = NULL;
                int first;

                submit_options_init(&a, NOW);
                submit_options_init(&b, NOW);
                b.slurm_dialect = true;
                assert_int_equal(submit_options_parse_argv(4, argv, &a, &first, &err), 0);
                assert_int_equal(submit_options_parse_argv(4, argv, &b, &first, &err), 0);
                assert_string_equal(a.req.queue, "express");
                assert_null(b.req.queue);
                assert_string_equal(b.qos, "express");
                submit_options_done(&a);
                submit_options_done(&b);
        }

        /* The single-machine refusals are the table's, with Slurm's option as written. */
        static const char *const refused[] = { "--gres=mps:1", "--constraint=intel*2", "-N2", "--nodelist=n1",
                                               "--gpus=a:1,b:1" };
        for (size_t k = 0; k < ELEMENTSOF(refused); k++) {
                SubmitOptions b;
                char *argv[] = { (char *) "x", (char *) refused[k], (char *) "cmd", NULL };
                char *err = NULL;
                int first;

                submit_options_init(&b, NOW);
                b.slurm_dialect = true;
                assert_int_equal(submit_options_parse_argv(3, argv, &b, &first, &err), -EINVAL);
                assert_non_null(err);
                assert_non_null(strstr(err, refused[k]));
                free(err);
                submit_options_done(&b);
        }

        /* sbatch's client options are its own: none may shadow an option of the table. */
        static const char *const client_only[] = { "wrap", "parsable", "test-only", "quiet", "help" };
        for (size_t k = 0; k < ELEMENTSOF(client_only); k++)
                assert_null(submit_option_find_long(client_only[k], strlen(client_only[k])));
        for (size_t i = 0; i < n; i++)
                assert_true(t[i].short_name != 'Q' && t[i].short_name != 'h');
}

/* sbatch --wrap and --parsable are split off as client options, their values too. */
static void test_sbatch_client_flags(void **state) {
        char *argv[] = { (char *) "sbatch", (char *) "--parsable", (char *) "-J", (char *) "--wrap",
                         (char *) "--wrap", (char *) "echo hi", (char *) "-c2", NULL };
        SubmitClientFlags f = { .sbatch = true };
        _cleanup_free_ char **out = NULL;
        int n;

        assert_int_equal(submit_split_client_flags(7, argv, &n, &out, &f), 0);
        assert_true(f.parsable);
        assert_string_equal(f.wrap, "echo hi");
        assert_int_equal(n, 4);
        assert_string_equal(out[1], "-J");
        assert_string_equal(out[2], "--wrap"); /* the job's name, not the option */
        assert_string_equal(out[3], "-c2");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_states),          cmocka_unit_test(test_times),
                cmocka_unit_test(test_parse_time),      cmocka_unit_test(test_format_parse),
                cmocka_unit_test(test_squeue_default),  cmocka_unit_test(test_sacct),
                cmocka_unit_test(test_squeue_clients),  cmocka_unit_test(test_sacct_clients),
                cmocka_unit_test(test_sinfo),           cmocka_unit_test(test_sinfo_clients),
                cmocka_unit_test(test_hostlist),        cmocka_unit_test(test_scontrol),
                cmocka_unit_test(test_scontrol_config), cmocka_unit_test(test_scontrol_partition),
                cmocka_unit_test(test_scontrol_node), cmocka_unit_test(test_scontrol_oneliner),
                cmocka_unit_test(test_escaped),
                cmocka_unit_test(test_option_parity),   cmocka_unit_test(test_sbatch_client_flags),
        };

        return cmocka_run_group_tests(tests, setup_tz, NULL);
}
