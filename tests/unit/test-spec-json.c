/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "spec-json.h"

static void test_spec_round_trip(void **state) {
        _cleanup_job_spec_free_ JobSpec *s = new0(JobSpec, 1), *t = NULL;
        _cleanup_free_ char *json = NULL, *json2 = NULL;
        gid_t gids[] = { 100, 2001 };

        assert_non_null(s);
        s->id = 42;
        s->name = strdup("sim \"quoted\"\n");
        s->user = strdup("alice");
        s->uid = 2001;
        s->gid = 2001;
        s->supplementary_gids = malloc(sizeof gids);
        memcpy(s->supplementary_gids, gids, sizeof gids);
        s->n_supplementary_gids = 2;
        s->home = strdup("/home/alice");
        s->shell = strdup("/bin/zsh");
        s->project = strdup("physics");
        s->script = strdup("#!/bin/sh\necho hi\n");
        assert_int_equal(strv_extend(&s->environment, "A=b=c"), 0);
        s->stdout_path = strdup("/home/alice/out.%j");
        assert_int_equal(cpu_set_parse("0-3,8", &s->cpus), 0);
        assert_int_equal(cpu_set_parse("1", &s->mem_nodes), 0);
        s->memory_max = UINT64_C(4) << 30;
        s->walltime_sec = 3600;
        s->warn_signal = 10;
        s->warn_sec = 300;
        s->warn_batch_only = true;
        s->output_append = true;
        s->array_job_id = 40;
        s->array_task_id = 3;
        s->array_task_min = 1;
        s->array_task_max = 9;
        s->array_task_count = 5;
        s->array_task_step = 2;
        s->io_limits = new0(JobIoLimit, 1);
        s->io_limits[0].device = strdup("/dev/vdb");
        s->io_limits[0].write_bps = 1 << 20;
        s->n_io_limits = 1;

        s->device_fence = true;
        assert_int_equal(strv_extend(&s->device_allow, "char-pts"), 0);
        assert_int_equal(strv_extend(&s->device_allow, "/dev/nvidia1"), 0);
        assert_int_equal(strv_extend(&s->device_environment, "CUDA_VISIBLE_DEVICES=0"), 0);

        assert_int_equal(job_spec_to_json(s, &json), 0);
        assert_int_equal(job_spec_from_json(json, &t), 0);
        assert_int_equal(job_spec_to_json(t, &json2), 0);
        assert_string_equal(json, json2);
        assert_true(t->device_fence);
        assert_string_equal(t->device_allow[1], "/dev/nvidia1");
        assert_string_equal(t->device_environment[0], "CUDA_VISIBLE_DEVICES=0");
        assert_string_equal(t->name, s->name);
        assert_true(cpu_set_equal(&t->cpus, &s->cpus));
        assert_int_equal(t->n_supplementary_gids, 2);
        assert_int_equal(t->supplementary_gids[1], 2001);
        assert_string_equal(t->home, "/home/alice");
        assert_string_equal(t->shell, "/bin/zsh");
        assert_int_equal(t->io_limits[0].write_bps, 1 << 20);
        assert_int_equal(t->warn_signal, 10);
        assert_int_equal(t->warn_sec, 300);
        assert_true(t->warn_batch_only);
        assert_true(t->output_append);
        assert_int_equal(t->array_task_id, 3);
        assert_int_equal(t->array_task_min, 1);
        assert_int_equal(t->array_task_max, 9);
        assert_int_equal(t->array_task_count, 5);
        assert_int_equal(t->array_task_step, 2);
        assert_null(t->argv);
        assert_null(t->stderr_path);
        /* A spec without a umask (an older daemon's) says so: the supervisor then uses
         * 0022, not whatever it inherited. */
        assert_false(t->has_umask);
        assert_null(strstr(json, "umask"));
}

static void test_spec_umask(void **state) {
        static const char base[] = "{\"id\":1,\"argv\":[\"x\"],\"cpus\":\"0\"";
        static const struct {
                const char *tail;
                int r;
                mode_t umask;
        } t[] = {
                { ",\"umask\":63}", 0, 0077 },
                { ",\"umask\":0}", 0, 0 },
                { ",\"umask\":511}", 0, 0777 },
                { ",\"umask\":512}", -ERANGE, 0 },
                { ",\"umask\":\"077\"}", -EINVAL, 0 },
                { ",\"umask\":0,\"warn_signal\":65}", -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_job_spec_free_ JobSpec *s = NULL, *back = NULL;
                _cleanup_free_ char *text = NULL, *json = NULL;

                assert_true(asprintf(&text, "%s%s", base, t[i].tail) > 0);
                assert_int_equal(job_spec_from_json(text, &s), t[i].r);
                if (t[i].r < 0)
                        continue;
                assert_true(s->has_umask);
                assert_int_equal(s->umask, t[i].umask);
                assert_int_equal(job_spec_to_json(s, &json), 0);
                assert_int_equal(job_spec_from_json(json, &back), 0);
                assert_true(back->has_umask);
                assert_int_equal(back->umask, t[i].umask);
        }
}

static void test_spec_rejects(void **state) {
        JobSpec *t = NULL;

        assert_int_equal(job_spec_from_json("[1]", &t), -EBADMSG);
        assert_int_equal(job_spec_from_json("{", &t), -EBADMSG);
        /* neither argv nor script */
        assert_int_equal(job_spec_from_json("{\"id\":1,\"cpus\":\"0\"}", &t), -EBADMSG);
        /* both */
        assert_int_equal(job_spec_from_json("{\"id\":1,\"argv\":[\"x\"],\"script\":\"y\"}", &t), -EBADMSG);
        assert_int_equal(job_spec_from_json("{\"id\":\"x\",\"argv\":[\"x\"]}", &t), -EINVAL);
        assert_int_equal(job_spec_from_json("{\"id\":1,\"argv\":[1]}", &t), -EINVAL);
        assert_int_equal(job_spec_from_json("{\"id\":1,\"argv\":[\"x\"],\"cpus\":\"0-\"}", &t), -EINVAL);
        assert_null(t);
}

static void test_outcome_round_trip(void **state) {
        JobOutcome o = { .id = 7, .exit_code = 3, .oom_killed = true, .start_usec = 1, .end_usec = 2,
                         .cpu_usage_usec = 123456789012ULL, .memory_peak = 1 << 30 }, p = {};
        _cleanup_free_ char *json = NULL;

        o.launch_error = strdup("cannot open the output file: Permission denied");
        o.launch_detail = strdup("cannot open the output file /x: Permission denied");
        assert_int_equal(job_outcome_to_json(&o, &json), 0);
        assert_int_equal(job_outcome_from_json(json, &p), 0);
        assert_int_equal(p.id, 7);
        assert_int_equal(p.exit_code, 3);
        assert_true(p.oom_killed);
        assert_false(p.timed_out);
        assert_true(p.cpu_usage_usec == 123456789012ULL);
        assert_string_equal(p.launch_error, o.launch_error);
        assert_string_equal(p.launch_detail, o.launch_detail);
        assert_false(p.has_pressure); /* none read: none written, none invented */
        job_outcome_done(&p);
        free(json);
        json = NULL;

        /* The stall totals, when the supervisor read them. */
        o.has_pressure = true;
        o.memory_some_usec = 1180000;
        o.memory_full_usec = 5;
        o.io_full_usec = UINT64_C(1) << 40;
        assert_int_equal(job_outcome_to_json(&o, &json), 0);
        assert_int_equal(job_outcome_from_json(json, &p), 0);
        assert_true(p.has_pressure);
        assert_int_equal(p.memory_some_usec, 1180000);
        assert_int_equal(p.memory_full_usec, 5);
        assert_true(p.io_full_usec == UINT64_C(1) << 40);
        assert_int_equal(p.cpu_some_usec, 0);
        job_outcome_done(&o);
        job_outcome_done(&p);
        assert_int_equal(job_outcome_from_json("nope", &p), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_round_trip),
                cmocka_unit_test(test_spec_umask),
                cmocka_unit_test(test_spec_rejects),
                cmocka_unit_test(test_outcome_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
