/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One job's efficiency (`corral usage --job`, seff): the figures taken from Show's job and
 * its gpu_usage, and seff's text from them, against hand-worked values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job-efficiency.h"
#include "json-util.h"

static char *print(const JobEfficiency *e) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);

        assert_non_null(f);
        assert_int_equal(job_efficiency_print(f, e), 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static void assert_text(const JobEfficiency *e, const char *want) {
        char *got = print(e);

        if (!streq(got, want))
                fail_msg("got:\n%s\nwant:\n%s", got, want);
        free(got);
}

/* A finished job of 4 cores and 1 h that used 2 h of CPU (50 %), 1.5 of 4 GiB (37.5 %),
 * and two GPUs an hour each at 50 % and 25 %: 0.75 of 2 GPU-hours (37.5 %). */
static void test_finished_gpu_job(void **state) {
        JobInfo info = JOB_INFO_INIT;
        JobEfficiency e;
        json_object *usage = json_tokener_parse(
                "[{\"gpu\":0,\"samples\":60,\"util_mean\":50.0,\"util_max\":90,\"memory_max\":2147483648,"
                "\"energy_j\":1000.0,\"held_sec\":3600,\"running\":false},"
                "{\"gpu\":1,\"samples\":60,\"util_mean\":25,\"util_max\":60,\"memory_max\":1073741824,"
                "\"energy_j\":500.25,\"held_sec\":3600,\"running\":false}]");

        assert_non_null(usage);
        info.id = 42;
        info.user = (char *) "alice";
        info.state = (char *) "COMPLETED";
        info.cpus = 4;
        info.memory = UINT64_C(4) << 30;
        info.start_time = 1000;
        info.end_time = 1000 + 3600;
        info.exit_code = 0;
        info.usage.cpu_usec = UINT64_C(7200) * 1000000 + 400000; /* rounds to 7200 s */
        info.usage.memory_peak = UINT64_C(3) << 29;               /* 1.5 GiB */

        job_efficiency_from_info(&info, usage, 99999, &e);
        assert_int_equal(e.gpus, 2);
        assert_int_equal(e.gpus_sampled, 2);
        assert_int_equal(e.gpu_held_sec, 7200);
        assert_int_equal(e.gpu_sampled_sec, 7200);
        assert_true(e.gpu_used_sec > 2700 - 1e-9 && e.gpu_used_sec < 2700 + 1e-9);
        assert_int_equal(e.wall_sec, 3600);
        e.cluster = "testhost";
        e.group = "users";
        e.state = info.state;
        assert_text(&e,
                    "Job ID: 42\n"
                    "Cluster: testhost\n"
                    "User/Group: alice/users\n"
                    "State: COMPLETED (exit code 0)\n"
                    "Nodes: 1\n"
                    "Cores per node: 4\n"
                    "CPU Utilized: 02:00:00\n"
                    "CPU Efficiency: 50.00% of 04:00:00 core-walltime\n"
                    "Job Wall-clock time: 01:00:00\n"
                    "Memory Utilized: 1.50 GB\n"
                    "Memory Efficiency: 37.50% of 4.00 GB\n"
                    "GPUs: 2\n"
                    "GPU-hours Held: 2.00 (02:00:00 GPU-walltime)\n"
                    "GPU Utilization: 37.50% mean, 90% max\n"
                    "GPU Memory Max: 2.00 GB\n"
                    "GPU Efficiency: 37.50% of 02:00:00 GPU-walltime\n"
                    "GPU Energy: 1500 J\n");

        /* The same as JSON; unknown figures null. */
        json_object *o = job_efficiency_to_json(&e), *v;
        assert_non_null(o);
        assert_true(json_object_object_get_ex(o, "gpu_efficiency", &v));
        assert_true(json_object_get_double(v) > 0.375 - 1e-12 && json_object_get_double(v) < 0.375 + 1e-12);
        assert_true(json_object_object_get_ex(o, "gpu_hours_used", &v));
        assert_true(json_object_get_double(v) > 0.75 - 1e-12 && json_object_get_double(v) < 0.75 + 1e-12);
        assert_true(json_object_object_get_ex(o, "cpu_efficiency", &v));
        assert_true(json_object_get_double(v) > 0.5 - 1e-12 && json_object_get_double(v) < 0.5 + 1e-12);
        assert_true(json_object_object_get_ex(o, "memory_efficiency", &v));
        assert_true(json_object_get_double(v) > 0.375 - 1e-12 && json_object_get_double(v) < 0.375 + 1e-12);
        json_object_put(o);
        json_object_put(usage);
}

/* One GPU never read: efficiency of the read one only, said so; none read: "-", never 0 %.
 * A running array task: figures so far and seff's warning; no memory requested. */
static void test_unread_gpus_running(void **state) {
        JobInfo info = JOB_INFO_INIT;
        JobEfficiency e;
        json_object *usage = json_tokener_parse(
                "[{\"gpu\":0,\"samples\":10,\"util_mean\":80,\"util_max\":100,\"memory_max\":512,"
                "\"held_sec\":1800,\"running\":true},"
                "{\"gpu\":3,\"samples\":0,\"held_sec\":1800,\"running\":true}]");
        json_object *unread = json_tokener_parse("[{\"gpu\":0,\"samples\":0,\"held_sec\":90061}]");
        json_object *o, *v;

        info.id = 7;
        info.array_job_id = 5;
        info.array_task_id = 2;
        info.user = (char *) "bob";
        info.state = (char *) "RUNNING";
        info.cpus = 1;
        info.start_time = 1000;
        info.usage.cpu_usec = 900 * 1000000ULL;

        job_efficiency_from_info(&info, usage, 1000 + 1800, &e);
        e.cluster = "testhost";
        e.group = "bob";
        e.state = info.state;
        assert_text(&e,
                    "Job ID: 7\n"
                    "Array Job ID: 5_2\n"
                    "Cluster: testhost\n"
                    "User/Group: bob/bob\n"
                    "State: RUNNING\n"
                    "Cores: 1\n"
                    "CPU Utilized: 00:15:00\n"
                    "CPU Efficiency: 50.00% of 00:30:00 core-walltime\n"
                    "Job Wall-clock time: 00:30:00\n"
                    "Memory Utilized: 0.00 MB\n"
                    "Memory Efficiency: - (no memory requested)\n"
                    "GPUs: 2\n"
                    "GPU-hours Held: 1.00 (01:00:00 GPU-walltime)\n"
                    "GPU Utilization: 80.00% mean, 100% max\n"
                    "GPU Memory Max: 0.50 KB\n"
                    "GPU Efficiency: 80.00% of 00:30:00 GPU-walltime (1 of 2 GPUs read)\n"
                    "WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");

        job_efficiency_from_info(&info, unread, 1000 + 90061, &e);
        e.cluster = "testhost";
        e.group = "bob";
        e.state = info.state;
        assert_text(&e,
                    "Job ID: 7\n"
                    "Array Job ID: 5_2\n"
                    "Cluster: testhost\n"
                    "User/Group: bob/bob\n"
                    "State: RUNNING\n"
                    "Cores: 1\n"
                    "CPU Utilized: 00:15:00\n"
                    "CPU Efficiency: 1.00% of 1-01:01:01 core-walltime\n"
                    "Job Wall-clock time: 1-01:01:01\n"
                    "Memory Utilized: 0.00 MB\n"
                    "Memory Efficiency: - (no memory requested)\n"
                    "GPUs: 1\n"
                    "GPU-hours Held: 25.02 (1-01:01:01 GPU-walltime)\n"
                    "GPU Utilization: - (not read)\n"
                    "GPU Efficiency: - (not read)\n"
                    "WARNING: Efficiency statistics may be misleading for RUNNING jobs.\n");
        o = job_efficiency_to_json(&e);
        assert_true(json_object_object_get_ex(o, "gpu_efficiency", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "gpu_hours_used", &v));
        assert_null(v);
        assert_true(json_object_object_get_ex(o, "memory_efficiency", &v));
        assert_null(v);
        json_object_put(o);
        json_object_put(usage);
        json_object_put(unread);
}

/* A pending job: no efficiency, as seff says; no GPU lines without GPUs. */
static void test_pending(void **state) {
        JobInfo info = JOB_INFO_INIT;
        JobEfficiency e;

        info.id = 9;
        info.user = (char *) "carol";
        info.state = (char *) "PENDING";
        info.cpus = 2;
        info.memory = 1 << 20;
        job_efficiency_from_info(&info, NULL, 5000, &e);
        e.cluster = "testhost";
        e.group = NULL;
        e.state = info.state;
        assert_text(&e,
                    "Job ID: 9\n"
                    "Cluster: testhost\n"
                    "User/Group: carol/n/a\n"
                    "State: PENDING\n"
                    "Nodes: 1\n"
                    "Cores per node: 2\n"
                    "Efficiency not available for jobs in the PENDING state.\n");
}

/* seff's time2str() and kbytes2str(). */
static void test_units(void **state) {
        char b[32];

        assert_string_equal(job_efficiency_time(b, sizeof b, 0), "00:00:00");
        assert_string_equal(job_efficiency_time(b, sizeof b, 86399), "23:59:59");
        assert_string_equal(job_efficiency_time(b, sizeof b, 86400 * 12 + 61), "12-00:01:01");
        assert_string_equal(job_efficiency_size(b, sizeof b, 0), "0.00 MB");
        assert_string_equal(job_efficiency_size(b, sizeof b, 1023 * 1024), "1023.00 KB");
        assert_string_equal(job_efficiency_size(b, sizeof b, 1 << 20), "1.00 MB");
        assert_string_equal(job_efficiency_size(b, sizeof b, (UINT64_C(5) << 40) / 2), "2.50 TB");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_finished_gpu_job),
                cmocka_unit_test(test_unread_gpus_running),
                cmocka_unit_test(test_pending),
                cmocka_unit_test(test_units),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
