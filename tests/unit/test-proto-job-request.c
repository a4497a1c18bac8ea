/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto/job-request.h"
#include "proto/json-util.h"
#include "proto/message.h"
#include "strv.h"

static void test_array_spec(void **state) {
        static const struct {
                const char *s;
                int r;
                uint32_t start, end, step, max;
                const char *canonical;
        } t[] = {
                { "1-100%10", 0, 1, 100, 1, 10, "1-100%10" },
                { "0-15:4", 0, 0, 15, 4, 0, "0-15:4" },
                { "7", 0, 7, 7, 1, 0, "7" },
                { "3%1", 0, 3, 3, 1, 1, "3%1" },
                { "5-1", -EINVAL, 0, 0, 0, 0, NULL },
                { "1-10:0", -EINVAL, 0, 0, 0, 0, NULL },
                { "1-10%0", -EINVAL, 0, 0, 0, 0, NULL },
                /* Lists: evenly spaced, one range; otherwise their ranges, ascending. */
                { "1,2,3", 0, 1, 3, 1, 0, "1-3" },
                { "1-20:2,21%5", 0, 1, 21, 2, 5, "1-21:2%5" },
                { "1,6-7,12", 0, 1, 12, 1, 0, "1,6-7,12" },
                { "12,1,6-7", 0, 1, 12, 1, 0, "1,6-7,12" },
                { "0-20:10,3,40-43%2", 0, 0, 43, 1, 2, "0-20:10,3,40-43%2" },
                { "1-5,3", -EINVAL, 0, 0, 0, 0, NULL },         /* an index twice */
                { "1,,2", -EINVAL, 0, 0, 0, 0, NULL },
                { "1,2,", -EINVAL, 0, 0, 0, 0, NULL },
                { "1%2,3", -EINVAL, 0, 0, 0, 0, NULL },
                { "0-99999,100000", -ERANGE, 0, 0, 0, 0, NULL },
                { "1,3,7,15,31,63,127,255,511,1023,2047,4095,8191,16383,32767,65535,131071,262143,524287,1048575,"
                  "1,3,7,15,31,63,127,255,511,1023,2047,4095,8191,16383,32767,65535,131071,262143,524287,1048575,9",
                  -ERANGE, 0, 0, 0, 0, NULL },                  /* 41 ranges */
                { "", -EINVAL, 0, 0, 0, 0, NULL },
                { "-1", -EINVAL, 0, 0, 0, 0, NULL },
                { "1-", -EINVAL, 0, 0, 0, 0, NULL },
                { "0-4000001", -ERANGE, 0, 0, 0, 0, NULL },
                { "0-200000", -ERANGE, 0, 0, 0, 0, NULL }, /* more tasks than allowed */
                { "99999999999999999999", -ERANGE, 0, 0, 0, 0, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                ArraySpec a = {}, b = {};
                char buf[CORRAL_ARRAY_SPEC_LENGTH_MAX + 1];

                if (array_spec_parse(t[i].s, &a) != t[i].r)
                        fail_msg("array_spec_parse(\"%s\") = %d, want %d", t[i].s, array_spec_parse(t[i].s, &b), t[i].r);
                if (t[i].r < 0)
                        continue;
                assert_int_equal(a.start, t[i].start);
                assert_int_equal(a.end, t[i].end);
                assert_int_equal(a.step, t[i].step);
                assert_int_equal(a.max_concurrent, t[i].max);
                assert_string_equal(array_spec_format(&a, buf, sizeof(buf)), t[i].canonical);
                /* The canonical form reads back the same, and copies are equal. */
                assert_int_equal(array_spec_parse(buf, &b), 0);
                assert_int_equal(array_spec_count(&a), array_spec_count(&b));
                array_spec_done(&b);
                assert_int_equal(array_spec_copy(&a, &b), 0);
                for (uint32_t k = 0; k < array_spec_count(&a); k++)
                        assert_int_equal(array_spec_index(&a, k), array_spec_index(&b, k));
                array_spec_done(&b);
                array_spec_done(&a);
        }

        /* The tasks of a list, in order. */
        {
                static const uint32_t want[] = { 0, 10, 20, 3, 40, 41, 42, 43 };
                ArraySpec a = {};
                assert_int_equal(array_spec_parse("0-20:10,3,40-43%2", &a), 0);
                assert_int_equal(array_spec_count(&a), ELEMENTSOF(want));
                for (uint32_t k = 0; k < ELEMENTSOF(want); k++)
                        assert_int_equal(array_spec_index(&a, k), want[k]);
                array_spec_done(&a);
        }
}

static SubmitRequest full_request(void) {
        SubmitRequest req = SUBMIT_REQUEST_INIT;

        req.name = strdup("sim-run");
        assert_int_equal(strv_extend(&req.argv, "/usr/bin/sim"), 0);
        assert_int_equal(strv_extend(&req.argv, "--steps=10"), 0);
        assert_int_equal(strv_extend(&req.env, "HOME=/home/ann"), 0);
        assert_int_equal(strv_extend(&req.env, "BASH_FUNC_f%%=() { :; }"), 0);
        req.workdir = strdup("/home/ann/run");
        req.stdin_path = strdup("in.txt");
        req.stdout_path = strdup("out-%j.log");
        req.stderr_path = strdup("/tmp/err-%x.log");
        req.cpus = 4;
        req.memory = UINT64_C(4) << 30;
        req.walltime_sec = 3600;
        assert_int_equal(io_device_limits_add(&req.io_read_bw, "/dev/vdb", 10 << 20), 0);
        assert_int_equal(io_device_limits_add(&req.io_write_bw, "/dev/vdb", 5 << 20), 0);
        assert_int_equal(io_device_limits_add(&req.io_write_bw, "/dev/vdc", 1 << 20), 0);
        assert_int_equal(io_device_limits_add(&req.io_read_iops, "/dev/vdb", 1000), 0);
        assert_int_equal(io_device_limits_add(&req.io_write_iops, "/dev/vdb", 500), 0);
        req.io_weight = 200;
        req.tasks_max = 512;
        req.queue = strdup("batch");
        req.project = strdup("physics-1");
        req.exclusive = true;
        req.rerunnable = 0;
        req.hold = true;
        req.nice = -5;
        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTEROK, 12), 0);
        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTERANY, 13), 0);
        assert_int_equal(array_spec_parse("1-100:3%10", &req.array), 0);
        req.begin_time = 1700000000;
        return req;
}

static void test_submit_round_trip(void **state) {
        _cleanup_(submit_request_done) SubmitRequest req = full_request(), back = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = NULL, *o2 = NULL;
        const char *bad = NULL;

        assert_int_equal(submit_request_validate(&req, &bad), 0);
        assert_int_equal(submit_request_to_json(&req, &o), 0);
        assert_int_equal(submit_request_from_json(o, &back, &bad), 0);

        assert_string_equal(back.name, "sim-run");
        assert_int_equal(strv_length(back.argv), 2);
        assert_string_equal(back.argv[1], "--steps=10");
        assert_null(back.script);
        assert_string_equal(back.env[1], "BASH_FUNC_f%%=() { :; }");
        assert_string_equal(back.stdout_path, "out-%j.log");
        assert_int_equal(back.cpus, 4);
        assert_true(back.memory == UINT64_C(4) << 30);
        assert_int_equal(back.walltime_sec, 3600);
        assert_int_equal(back.io_write_bw.n, 2);
        assert_string_equal(back.io_write_bw.items[1].device, "/dev/vdc");
        assert_int_equal(back.io_write_bw.items[1].limit, 1 << 20);
        assert_int_equal(back.io_read_iops.items[0].limit, 1000);
        assert_int_equal(back.io_weight, 200);
        assert_int_equal(back.tasks_max, 512);
        assert_string_equal(back.queue, "batch");
        assert_string_equal(back.project, "physics-1");
        assert_true(back.exclusive);
        assert_int_equal(back.rerunnable, 0);
        assert_true(back.hold);
        assert_int_equal(back.nice, -5);
        assert_int_equal(back.n_dependencies, 2);
        assert_int_equal(back.dependencies[0].type, DEPENDENCY_AFTEROK);
        assert_int_equal(back.dependencies[1].job_id, 13);
        assert_int_equal(back.array.step, 3);
        assert_int_equal(back.array.max_concurrent, 10);
        assert_int_equal(back.begin_time, 1700000000);

        /* And to JSON again, identically. */
        assert_int_equal(submit_request_to_json(&back, &o2), 0);
        assert_string_equal(json_object_to_json_string(o), json_object_to_json_string(o2));
}

static void test_submit_minimal_and_defaults(void **state) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = NULL;
        const char *bad = NULL;

        o = json_tokener_parse("{\"script\":\"#!/bin/sh\\necho hi\\n\",\"walltime_sec\":\"infinity\"}");
        assert_int_equal(submit_request_from_json(o, &req, &bad), 0);
        assert_string_equal(req.script, "#!/bin/sh\necho hi\n");
        assert_int_equal(req.rerunnable, -1);
        assert_int_equal(req.cpus, 0);
        assert_true(req.walltime_sec == CORRAL_WALLTIME_INFINITY);
        json_object_put(o);
        assert_int_equal(submit_request_to_json(&req, &o), 0);
        assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                            "{\"script\":\"#!\\/bin\\/sh\\necho hi\\n\",\"walltime_sec\":\"infinity\"}");
}

static void test_submit_rejections(void **state) {
        static const struct {
                const char *json;
                const char *field;
        } t[] = {
                { "[]", "parameters" },
                { "\"x\"", "parameters" },
                { "{}", "argv" },
                { "{\"argv\":[\"a\"],\"script\":\"x\"}", "script" },
                { "{\"argv\":[]}", "argv" },
                { "{\"argv\":[\"\"]}", "argv" },
                { "{\"argv\":\"/bin/true\"}", "argv" },
                { "{\"argv\":[1]}", "argv" },
                { "{\"argv\":[\"a\\u0000b\"]}", "argv" },
                { "{\"script\":\"\"}", "script" },
                { "{\"script\":\"a\\u0000b\"}", "script" },
                { "{\"argv\":[\"a\"],\"cpu\":4}", "cpu" }, /* unknown key, named as sent */
                { "{\"argv\":[\"a\"],\"cpus\":0}", "cpus" },
                { "{\"argv\":[\"a\"],\"cpus\":8193}", "cpus" },
                /* a time or B: without a signal */
                { "{\"argv\":[\"a\"],\"warn_sec\":60}", "warn_signal" },
                { "{\"argv\":[\"a\"],\"warn_batch_only\":true}", "warn_signal" },
                { "{\"argv\":[\"a\"],\"cpus\":-1}", "cpus" },
                { "{\"argv\":[\"a\"],\"cpus\":2.5}", "cpus" },
                { "{\"argv\":[\"a\"],\"cpus\":\"4\"}", "cpus" },
                { "{\"argv\":[\"a\"],\"cpus\":null}", "cpus" },
                { "{\"argv\":[\"a\"],\"memory\":18446744073709551615}", "memory" },
                { "{\"argv\":[\"a\"],\"memory\":99999999999999999999999}", "memory" },
                { "{\"argv\":[\"a\"],\"memory\":0}", "memory" },
                { "{\"argv\":[\"a\"],\"walltime_sec\":\"forever\"}", "walltime_sec" },
                { "{\"argv\":[\"a\"],\"walltime_sec\":0}", "walltime_sec" },
                { "{\"argv\":[\"a\"],\"nice\":10001}", "nice" },
                { "{\"argv\":[\"a\"],\"nice\":-10001}", "nice" },
                { "{\"argv\":[\"a\"],\"nice\":-99999999999999999999999}", "nice" },
                { "{\"argv\":[\"a\"],\"io_weight\":0}", "io_weight" },
                { "{\"argv\":[\"a\"],\"io_weight\":10001}", "io_weight" },
                { "{\"argv\":[\"a\"],\"tasks_max\":4194305}", "tasks_max" },
                { "{\"argv\":[\"a\"],\"io_read_bw\":[{\"device\":\"vdb\",\"limit\":1}]}", "io_read_bw" },
                { "{\"argv\":[\"a\"],\"io_read_bw\":[{\"device\":\"/dev/vdb\",\"limit\":0}]}", "io_read_bw" },
                { "{\"argv\":[\"a\"],\"io_write_iops\":[{\"device\":\"/dev/vdb\"}]}", "io_write_iops" },
                { "{\"argv\":[\"a\"],\"io_write_bw\":[{\"device\":\"/dev/vdb\",\"limit\":1,\"x\":1}]}", "io_write_bw" },
                { "{\"argv\":[\"a\"],\"io_read_iops\":{}}", "io_read_iops" },
                { "{\"argv\":[\"a\"],\"env\":[\"NOEQUALS\"]}", "env" },
                { "{\"argv\":[\"a\"],\"env\":[\"=x\"]}", "env" },
                { "{\"argv\":[\"a\"],\"env\":[\"1A=x\"]}", "env" },
                { "{\"argv\":[\"a\"],\"env\":[\"A B=x\"]}", "env" },
                { "{\"argv\":[\"a\"],\"env\":[\"A=x\\u0000y\"]}", "env" },
                { "{\"argv\":[\"a\"],\"workdir\":\"relative/dir\"}", "workdir" },
                { "{\"argv\":[\"a\"],\"workdir\":\"\"}", "workdir" },
                { "{\"argv\":[\"a\"],\"stdout_path\":\"\"}", "stdout_path" },
                { "{\"argv\":[\"a\"],\"stderr_path\":\"a\\nb\"}", "stderr_path" },
                { "{\"argv\":[\"a\"],\"stdin_path\":5}", "stdin_path" },
                { "{\"argv\":[\"a\"],\"name\":\"a\\tb\"}", "name" },
                { "{\"argv\":[\"a\"],\"name\":\"\"}", "name" },
                { "{\"argv\":[\"a\"],\"queue\":\"bad queue\"}", "queue" },
                { "{\"argv\":[\"a\"],\"project\":\"p/q\"}", "project" },
                { "{\"argv\":[\"a\"],\"exclusive\":1}", "exclusive" },
                { "{\"argv\":[\"a\"],\"rerunnable\":\"yes\"}", "rerunnable" },
                { "{\"argv\":[\"a\"],\"hold\":null}", "hold" },
                { "{\"argv\":[\"a\"],\"dependencies\":[{\"type\":\"afterwards\",\"job_id\":1}]}", "dependencies" },
                { "{\"argv\":[\"a\"],\"dependencies\":[{\"type\":\"afterok\",\"job_id\":0}]}", "dependencies" },
                { "{\"argv\":[\"a\"],\"dependencies\":[{\"type\":\"afterok\"}]}", "dependencies" },
                { "{\"argv\":[\"a\"],\"dependencies\":{}}", "dependencies" },
                { "{\"argv\":[\"a\"],\"array\":\"10-1\"}", "array" },
                { "{\"argv\":[\"a\"],\"array\":5}", "array" },
                { "{\"argv\":[\"a\"],\"begin_time\":-1}", "begin_time" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                _cleanup_json_ json_object *o = json_tokener_parse(t[i].json);
                const char *bad = NULL;

                assert_non_null(o);
                if (submit_request_from_json(o, &req, &bad) != -EINVAL || !bad || !streq(bad, t[i].field)) {
                        fprintf(stderr, "case %zu %s: got field %s\n", i, t[i].json, strna(bad));
                        fail();
                }
                /* Nothing is handed out on failure. */
                assert_null(req.argv);
                assert_null(req.name);
        }
}

/* Names and paths other users see printed: a control character (C0, DEL, C1) or invalid
 * UTF-8 is refused, naming the field and the byte. The values travel as bytes, not as
 * JSON escapes, as a hostile client would send them. */
static void test_submit_text_refusals(void **state) {
        static const struct {
                const char *key, *value;
                TextProblem problem;
                size_t offset;
        } t[] = {
                /* U+009B (CSI) as UTF-8, then "31m": red text on the reader's terminal. */
                { "name", "a\xc2\x9b" "31m", TEXT_CONTROL, 1 },
                { "name", "\xc2\x85", TEXT_CONTROL, 0 },                 /* NEL */
                { "name", "job\x1b[2J", TEXT_CONTROL, 3 },
                { "name", "ab\x9b", TEXT_INVALID_UTF8, 2 },              /* Latin-1's CSI */
                { "name", "ok\xc0\x80", TEXT_INVALID_UTF8, 2 },          /* overlong NUL */
                { "name", "\xc1\x9b", TEXT_INVALID_UTF8, 0 },            /* overlong ESC [ */
                { "name", "\xe0\x80\xaf", TEXT_INVALID_UTF8, 0 },        /* overlong '/' */
                { "name", "x\xed\xa0\x80", TEXT_INVALID_UTF8, 1 },       /* a surrogate */
                { "name", "cut\xe2\x9c", TEXT_INVALID_UTF8, 3 },
                { "workdir", "/tmp/\x1b]0;title\x07", TEXT_CONTROL, 5 },
                { "workdir", "/home/\xe9t\xe9", TEXT_INVALID_UTF8, 6 },
                { "stdout_path", "out\xc2\x9b.txt", TEXT_CONTROL, 3 },
                { "stderr_path", "err\x7f", TEXT_CONTROL, 3 },
                { "stdin_path", "in\tput", TEXT_CONTROL, 2 },
                { "io_read_bw", "/dev/\x1b", TEXT_CONTROL, 5 },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                _cleanup_json_ json_object *o = json_object_new_object();
                SubmitRequestError e = {};
                const char *bad = NULL;
                json_object *argv = json_object_new_array();

                assert_int_equal(json_object_array_add(argv, json_object_new_string("/bin/true")), 0);
                assert_int_equal(json_add(o, "argv", argv), 0);
                assert_int_equal(json_add_string(o, "workdir", "/tmp"), 0);
                if (streq(t[i].key, "io_read_bw")) {
                        json_object *l = json_object_new_array(), *d = json_object_new_object();
                        assert_int_equal(json_add_string(d, "device", t[i].value), 0);
                        assert_int_equal(json_add_u64(d, "limit", 1024), 0);
                        assert_int_equal(json_object_array_add(l, d), 0);
                        assert_int_equal(json_add(o, t[i].key, l), 0);
                } else
                        assert_int_equal(json_add_string(o, t[i].key, t[i].value), 0);

                if (submit_request_decode(o, 0, &req, &e) != -EINVAL || !e.field || !streq(e.field, t[i].key) ||
                    e.problem != t[i].problem || e.offset != t[i].offset) {
                        fprintf(stderr, "case %zu: got field %s, problem %d at %zu\n", i, strna(e.field), e.problem,
                                e.offset);
                        fail();
                }
                assert_null(req.argv);
                /* The short form names the field; and corrald's own store loads what it
                 * accepted before these rules, to be escaped where it is shown. */
                assert_int_equal(submit_request_from_json(o, &req, &bad), -EINVAL);
                assert_string_equal(bad, t[i].key);
                assert_int_equal(submit_request_decode(o, SUBMIT_REQUEST_STORED, &req, NULL), 0);
                submit_request_done(&req);
        }

        /* As a JSON escape, U+009B is the same two bytes once decoded. */
        {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                _cleanup_json_ json_object *o = json_tokener_parse("{\"argv\":[\"a\"],\"name\":\"x\\u009b1m\"}");
                SubmitRequestError e = {};

                assert_non_null(o);
                assert_int_equal(submit_request_decode(o, 0, &req, &e), -EINVAL);
                assert_string_equal(e.field, "name");
                assert_int_equal(e.problem, TEXT_CONTROL);
                assert_int_equal(e.offset, 1);
        }
        /* The CLI's early check agrees. */
        assert_false(job_name_is_valid("a\xc2\x9b" "31m"));
        assert_false(job_name_is_valid("ok\xc0\x80"));
        assert_true(job_name_is_valid("caf\xc3\xa9 \xe2\x9c\x93"));
}

/* What the job gets as it was given (arguments, environment, script) may hold control
 * characters and any bytes; and names in other scripts than Latin are fine. */
static void test_submit_text_accepted(void **state) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *argv = json_object_new_array(), *env = json_object_new_array();
        SubmitRequestError e = {};

        assert_int_equal(json_object_array_add(argv, json_object_new_string("printf")), 0);
        assert_int_equal(json_object_array_add(argv, json_object_new_string("\x1b[1m%s\n\xe9")), 0);
        assert_int_equal(json_add(o, "argv", argv), 0);
        assert_int_equal(json_object_array_add(env, json_object_new_string("PS1=\x1b[32m$ \x1b[0m")), 0);
        assert_int_equal(json_add(o, "env", env), 0);
        assert_int_equal(json_add_string(o, "name", "\xd0\xb7\xd0\xb0\xd0\xb4\xd0\xb0\xd1\x87\xd0\xb0 \xe4\xbd\x9c\xe4\xb8\x9a"), 0);
        assert_int_equal(json_add_string(o, "workdir", "/home/alice/donn\xc3\xa9" "es"), 0);
        assert_int_equal(submit_request_decode(o, 0, &req, &e), 0);
        assert_string_equal(req.argv[1], "\x1b[1m%s\n\xe9");
}

static void test_submit_limits(void **state) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = NULL;
        const char *bad = NULL;
        _cleanup_free_ char *big = NULL;

        /* A script of exactly the limit passes, one byte more does not. */
        big = malloc(CORRAL_SCRIPT_SIZE_MAX + 2);
        memset(big, '#', CORRAL_SCRIPT_SIZE_MAX + 1);
        big[CORRAL_SCRIPT_SIZE_MAX] = 0;
        o = json_object_new_object();
        assert_int_equal(json_add_string(o, "script", big), 0);
        assert_int_equal(submit_request_from_json(o, &req, &bad), 0);
        submit_request_done(&req);
        json_object_put(o);

        big[CORRAL_SCRIPT_SIZE_MAX] = '#';
        big[CORRAL_SCRIPT_SIZE_MAX + 1] = 0;
        o = json_object_new_object();
        assert_int_equal(json_add_string(o, "script", big), 0);
        assert_int_equal(submit_request_from_json(o, &req, &bad), -EINVAL);
        assert_string_equal(bad, "script");
        json_object_put(o);

        /* Too many argv entries. */
        o = json_object_new_object();
        {
                json_object *a = json_object_new_array();
                for (unsigned i = 0; i <= CORRAL_ARGV_MAX; i++)
                        json_object_array_add(a, json_object_new_string("x"));
                json_add(o, "argv", a);
        }
        assert_int_equal(submit_request_from_json(o, &req, &bad), -EINVAL);
        assert_string_equal(bad, "argv");
        json_object_put(o);
        o = NULL;

        /* validate() catches what C code builds. */
        req = full_request();
        req.cpus = 9000;
        assert_int_equal(submit_request_validate(&req, &bad), -EINVAL);
        assert_string_equal(bad, "cpus");
        req.cpus = 1;
        req.rerunnable = 2;
        assert_int_equal(submit_request_validate(&req, &bad), -EINVAL);
        assert_string_equal(bad, "rerunnable");
}

static void test_submit_umask(void **state) {
        static const struct {
                const char *json;
                int r;
                mode_t umask;
                const char *back; /* to_json of the decoded request, "umask" only */
        } t[] = {
                { "{\"argv\":[\"a\"]}", 0, 0022, NULL },            /* an older client: the default */
                { "{\"argv\":[\"a\"],\"umask\":18}", 0, 0022, NULL }, /* 0022 itself stays off the wire */
                { "{\"argv\":[\"a\"],\"umask\":63}", 0, 0077, "63" },
                { "{\"argv\":[\"a\"],\"umask\":0}", 0, 0, "0" },     /* 0 is a umask, not "unset" */
                { "{\"argv\":[\"a\"],\"umask\":511}", 0, 0777, "511" },
                { "{\"argv\":[\"a\"],\"umask\":512}", -EINVAL, 0, NULL },
                { "{\"argv\":[\"a\"],\"umask\":-1}", -EINVAL, 0, NULL },
                { "{\"argv\":[\"a\"],\"umask\":4294967314}", -EINVAL, 0, NULL }, /* 2^32 + 0022 */
                { "{\"argv\":[\"a\"],\"umask\":\"0022\"}", -EINVAL, 0, NULL },
                { "{\"argv\":[\"a\"],\"umask\":18.5}", -EINVAL, 0, NULL },
                { "{\"argv\":[\"a\"],\"umask\":null}", -EINVAL, 0, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT,
                                                             back = SUBMIT_REQUEST_INIT;
                _cleanup_json_ json_object *o = json_tokener_parse(t[i].json), *o2 = NULL;
                const char *bad = NULL;
                json_object *v;

                assert_non_null(o);
                if (submit_request_from_json(o, &req, &bad) != t[i].r) {
                        fprintf(stderr, "case %zu %s: got field %s\n", i, t[i].json, strna(bad));
                        fail();
                }
                if (t[i].r < 0) {
                        assert_string_equal(bad, "umask");
                        continue;
                }
                assert_int_equal(req.umask, t[i].umask);
                assert_int_equal(submit_request_to_json(&req, &o2), 0);
                if (!t[i].back)
                        assert_false(json_object_object_get_ex(o2, "umask", NULL));
                else {
                        assert_true(json_object_object_get_ex(o2, "umask", &v));
                        assert_string_equal(json_object_to_json_string(v), t[i].back);
                }
                /* And back again: what the daemon stores is what it reads after a restart. */
                assert_int_equal(submit_request_from_json(o2, &back, &bad), 0);
                assert_int_equal(back.umask, t[i].umask);
        }

        /* What the CLI builds in C is checked by the same rule. */
        {
                _cleanup_(submit_request_done) SubmitRequest req = full_request();
                const char *bad = NULL;

                assert_int_equal(req.umask, CORRAL_UMASK_DEFAULT);
                req.umask = 0777;
                assert_int_equal(submit_request_validate(&req, &bad), 0);
                req.umask = 01000;
                assert_int_equal(submit_request_validate(&req, &bad), -EINVAL);
                assert_string_equal(bad, "umask");
        }
}

static void test_validators(void **state) {
        assert_true(env_assignment_is_valid("A=1"));
        assert_true(env_assignment_is_valid("_x="));
        assert_true(env_assignment_is_valid("A=b=c"));
        assert_false(env_assignment_is_valid("A"));
        assert_false(env_assignment_is_valid("=1"));
        assert_false(env_assignment_is_valid("9A=1"));
        assert_true(ident_is_valid("gpu.long_q-2"));
        assert_false(ident_is_valid(""));
        assert_false(ident_is_valid("a b"));
        assert_true(job_name_is_valid("my job (2)"));
        assert_false(job_name_is_valid("a\nb"));
        assert_string_equal(dependency_type_to_string(DEPENDENCY_AFTERNOTOK), "afternotok");
        assert_int_equal(dependency_type_from_string("afterany"), DEPENDENCY_AFTERANY);
}

static void test_job_info_round_trip(void **state) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT, back = JOB_INFO_INIT, pub = JOB_INFO_INIT;
        _cleanup_json_ json_object *o = NULL, *p = NULL;
        const char *bad = NULL;

        info.id = 17;
        info.name = strdup("train");
        info.user = strdup("ann");
        info.uid = 1000;
        info.project = strdup("ml");
        info.queue = strdup("batch");
        info.state = strdup("COMPLETED");
        info.reason = strdup("None");
        info.cpus = 8;
        info.memory = UINT64_C(16) << 30;
        info.walltime_sec = CORRAL_WALLTIME_INFINITY;
        info.nice = 3;
        info.submit_time = 1700000000;
        info.start_time = 1700000010;
        info.end_time = 1700000100;
        info.exit_code = 0;
        info.node = strdup("node1");
        info.cpus_allocated = strdup("0-7");
        info.array_job_id = 16;
        info.array_task_id = 4;
        info.has_details = true;
        strv_extend(&info.argv, "/bin/train");
        strv_extend(&info.env, "A=1");
        info.workdir = strdup("/home/ann");
        info.stdout_path = strdup("/home/ann/out-17.log");
        info.usage = (JobUsage) { .cpu_usec = 123456, .memory_peak = 1 << 30, .io_read_bytes = 5,
                                  .io_write_bytes = 6, .tasks_peak = 9 };

        assert_int_equal(job_info_to_json(&info, true, &o), 0);
        assert_int_equal(job_info_from_json(o, &back, &bad), 0);
        assert_int_equal(back.id, 17);
        assert_string_equal(back.state, "COMPLETED");
        assert_int_equal(back.uid, 1000);
        assert_true(back.walltime_sec == CORRAL_WALLTIME_INFINITY);
        assert_int_equal(back.exit_code, 0);
        assert_int_equal(back.exit_signal, 0);
        assert_string_equal(back.cpus_allocated, "0-7");
        assert_int_equal(back.array_task_id, 4);
        assert_true(back.has_details);
        assert_string_equal(back.argv[0], "/bin/train");
        assert_string_equal(back.stdout_path, "/home/ann/out-17.log");
        assert_int_equal(back.usage.cpu_usec, 123456);
        assert_int_equal(back.usage.tasks_peak, 9);

        /* The public view leaves out everything owner-only. */
        assert_int_equal(job_info_to_json(&info, false, &p), 0);
        assert_null(json_object_object_get(p, "argv"));
        assert_null(json_object_object_get(p, "env"));
        assert_null(json_object_object_get(p, "workdir"));
        assert_null(json_object_object_get(p, "stdout_path"));
        assert_null(json_object_object_get(p, "usage"));
        assert_int_equal(job_info_from_json(p, &pub, &bad), 0);
        assert_false(pub.has_details);
        assert_null(pub.argv);
        assert_string_equal(pub.user, "ann");
}

static void test_job_info_rejections(void **state) {
        static const struct {
                const char *json;
                const char *field;
        } t[] = {
                { "[]", "job" },
                { "{\"state\":\"RUNNING\"}", "id" },
                { "{\"id\":1}", "state" },
                { "{\"id\":\"1\",\"state\":\"RUNNING\"}", "id" },
                { "{\"id\":1,\"state\":\"RUNNING\",\"exit_code\":256}", "exit_code" },
                { "{\"id\":1,\"state\":\"RUNNING\",\"name\":\"a\\u0000\"}", "name" },
                { "{\"id\":1,\"state\":\"RUNNING\",\"usage\":{\"cpu_usec\":-1}}", "usage" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                _cleanup_json_ json_object *o = json_tokener_parse(t[i].json);
                const char *bad = NULL;

                assert_int_equal(job_info_from_json(o, &info, &bad), -EINVAL);
                assert_string_equal(bad, t[i].field);
        }

        /* Unknown keys from a newer daemon are fine. */
        {
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                _cleanup_json_ json_object *o = json_tokener_parse("{\"id\":1,\"state\":\"QUEUED\",\"gpus\":2}");
                assert_int_equal(job_info_from_json(o, &info, NULL), 0);
        }
}

static void test_submit_in_request_envelope(void **state) {
        /* The path the daemon takes: envelope, then parameters. */
        static const char text[] = "{\"method\":\"io.corral.Manager.Submit\",\"parameters\":"
                                   "{\"argv\":[\"/bin/true\"],\"cpus\":2,\"memroy\":5}}";
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *reply = NULL;
        Request r;
        const char *bad = NULL;

        assert_int_equal(request_parse(text, strlen(text), &r, NULL), 0);
        assert_int_equal(r.method, CORRAL_METHOD_SUBMIT);
        assert_int_equal(submit_request_from_json(r.parameters, &req, &bad), -EINVAL);
        assert_string_equal(bad, "memroy");
        reply = reply_invalid_parameter(bad, NULL);
        assert_string_equal(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN),
                            "{\"error\":\"io.corral.Manager.InvalidParameter\",\"parameters\":{\"parameter\":\"memroy\"}}");
        request_done(&r);
}

/* The codec tables, row by row: every key refuses a value of the wrong type and one just
 * beyond its bounds, naming itself; the bounds themselves are accepted. */
static void test_submit_field_table(void **state) {
        static const struct {
                const char *key;
                const char *ok_min, *ok_max;    /* accepted values (NULL: none to test) */
                const char *wrong_type, *beyond;
        } t[] = {
                { "name", "\"a\"", NULL, "1", "\"\"" },
                { "script", "\"#!/bin/sh\\n\"", NULL, "[]", "\"\"" },
                { "env", "[]", "[\"A=1\"]", "\"A=1\"", "[\"A\"]" },
                { "workdir", "\"/\"", NULL, "true", "\"tmp\"" },
                { "stdin_path", "\"in\"", NULL, "[]", "\"\"" },
                { "stdout_path", "\"out\"", NULL, "{}", "\"a\\nb\"" },
                { "stderr_path", "\"err\"", NULL, "0", "\"\"" },
                { "cpus", "1", "8192", "\"1\"", "0" },
                { "cpus", NULL, NULL, "1.5", "8193" },
                { "memory", "1", "1152921504606846976", "\"1G\"", "0" },
                { "memory", NULL, NULL, "-1", "1152921504606846977" },
                { "walltime_sec", "1", "3153600000", "\"forever\"", "0" },
                { "walltime_sec", "\"infinity\"", NULL, "true", "3153600001" },
                { "io_read_bw", "[]", NULL, "5", "[{\"device\":\"/dev/vdb\",\"limit\":1152921504606846977}]" },
                { "io_write_bw", NULL, NULL, "\"x\"", "[{\"device\":\"/dev/vdb\",\"limit\":0}]" },
                { "io_read_iops", NULL, NULL, "null", "[{\"device\":\"\",\"limit\":1}]" },
                { "io_write_iops", NULL, NULL, "{}", "[{\"device\":\"/dev/vdb\"}]" },
                { "io_weight", "1", "10000", "\"100\"", "0" },
                { "io_weight", NULL, NULL, "false", "10001" },
                { "tasks_max", "1", "4194304", "[]", "4194305" },
                { "umask", "0", "511", "\"022\"", "512" },
                { "queue", "\"q\"", NULL, "1", "\"a b\"" },
                { "project", "\"p\"", NULL, "[]", "\"\"" },
                { "exclusive", "true", "false", "1", NULL },
                { "rerunnable", "true", "false", "\"true\"", NULL },
                { "hold", "false", NULL, "0", NULL },
                { "nice", "-10000", "10000", "\"0\"", "10001" },
                { "nice", NULL, NULL, "0.5", "-10001" },
                { "dependencies", "[]", "[{\"type\":\"after\",\"job_id\":9007199254740992}]", "1",
                  "[{\"type\":\"after\",\"job_id\":9007199254740993}]" },
                { "array", "\"0\"", "\"0-99999\"", "[]", "\"0-100000\"" },
                { "begin_time", "1", "1099511627776", "\"now\"", "1099511627777" },
                { "begin_time", NULL, NULL, "null", "0" },
                { "warn_signal", "1", "64", "\"USR1\"", "65" },
                { "warn_signal", NULL, NULL, "true", "0" },
                { "warn_sec", NULL, NULL, "\"60\"", "65536" },
                { "mail_events", "1", "511", "\"END\"", "512" },
                { "mail_events", NULL, NULL, "[]", "0" },
                { "mail_user", "\"ann\"", "\"ann.lee+jobs@example.org\"", "1", "\"-oQ/tmp\"" },
                { "mail_user", NULL, NULL, "[]", "\"ann\\nBcc: eve@example.org\"" },
                { "mail_user", NULL, NULL, "{}", "\"ann, eve\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const char *values[] = { t[i].ok_min, t[i].ok_max, t[i].wrong_type, t[i].beyond };

                for (size_t k = 0; k < ELEMENTSOF(values); k++) {
                        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                        _cleanup_json_ json_object *o = NULL;
                        char text[512];
                        const char *bad = NULL;
                        int r;

                        if (!values[k])
                                continue;
                        snprintf(text, sizeof(text), "{\"%s\":%s,\"%s\":%s}",
                                 streq(t[i].key, "script") ? "script" : "argv",
                                 streq(t[i].key, "script") ? "\"#!/bin/sh\\n\"" : "[\"a\"]", t[i].key, values[k]);
                        o = json_tokener_parse(text);
                        assert_non_null(o);
                        r = submit_request_from_json(o, &req, &bad);
                        if (k < 2 ? r != 0 : (r != -EINVAL || !bad || !streq(bad, t[i].key))) {
                                fprintf(stderr, "%s: got %d, field %s\n", text, r, strna(bad));
                                fail();
                        }
                }
        }

        /* argv: a list of strings, at least one, the first not empty. */
        {
                static const char *const argv_bad[] = { "\"a\"", "[]", "[\"\"]", "[1]", "[\"a\",null]" };

                for (size_t i = 0; i < ELEMENTSOF(argv_bad); i++) {
                        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                        _cleanup_json_ json_object *o = NULL;
                        char text[64];
                        const char *bad = NULL;

                        snprintf(text, sizeof(text), "{\"argv\":%s}", argv_bad[i]);
                        assert_non_null(o = json_tokener_parse(text));
                        assert_int_equal(submit_request_from_json(o, &req, &bad), -EINVAL);
                        assert_string_equal(bad, "argv");
                }
        }
}

/* The same bounds on requests built in C; 0 (or the default) means "not given". */
static void test_submit_validate_table(void **state) {
        static const char *const fields[] = {
                "cpus", "memory", "walltime_sec", "io_weight", "tasks_max", "umask", "rerunnable",
                "nice", "begin_time", "name", "workdir", "queue", "array", "dependencies", "io_read_bw",
        };

        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT;
                const char *f = fields[i], *bad = NULL;

                assert_int_equal(strv_extend(&req.argv, "a"), 0);
                assert_int_equal(submit_request_validate(&req, &bad), 0);
                if (streq(f, "cpus"))
                        req.cpus = CORRAL_CPUS_MAX + 1;
                else if (streq(f, "memory"))
                        req.memory = CORRAL_SIZE_MAX + 1;
                else if (streq(f, "walltime_sec"))
                        req.walltime_sec = CORRAL_WALLTIME_MAX + 1;
                else if (streq(f, "io_weight"))
                        req.io_weight = CORRAL_IO_WEIGHT_MAX + 1;
                else if (streq(f, "tasks_max"))
                        req.tasks_max = CORRAL_TASKS_MAX_MAX + 1;
                else if (streq(f, "umask"))
                        req.umask = 01000;
                else if (streq(f, "rerunnable"))
                        req.rerunnable = 2;
                else if (streq(f, "nice"))
                        req.nice = CORRAL_NICE_MIN - 1;
                else if (streq(f, "begin_time"))
                        req.begin_time = CORRAL_TIME_MAX + 1;
                else if (streq(f, "name"))
                        req.name = strdup("a\nb");
                else if (streq(f, "workdir"))
                        req.workdir = strdup("rel");
                else if (streq(f, "queue"))
                        req.queue = strdup("");
                else if (streq(f, "array"))
                        req.array = (ArraySpec) { .set = true, .start = 2, .end = 1, .step = 1 };
                else if (streq(f, "dependencies"))
                        assert_int_equal(submit_request_add_dependency(&req, DEPENDENCY_AFTER, 0), 0);
                else if (streq(f, "io_read_bw"))
                        assert_int_equal(io_device_limits_add(&req.io_read_bw, "/dev/vdb", 0), 0);
                assert_int_equal(submit_request_validate(&req, &bad), -EINVAL);
                assert_string_equal(bad, f);
        }
}

/* The exact bytes on the wire: key names, order and what is left out, as older peers
 * expect them. */
static void test_submit_wire_bytes(void **state) {
        static const char full[] =
                "{\"name\":\"n\",\"argv\":[\"/bin/x\",\"\"],\"env\":[\"A=1\"],\"workdir\":\"/w\","
                "\"stdin_path\":\"i\",\"stdout_path\":\"o\",\"stderr_path\":\"e\",\"cpus\":2,\"memory\":3,"
                "\"walltime_sec\":\"infinity\",\"io_read_bw\":[{\"device\":\"/dev/a\",\"limit\":4}],"
                "\"io_write_bw\":[{\"device\":\"/dev/b\",\"limit\":5}],\"io_read_iops\":[{\"device\":\"/dev/c\",\"limit\":6}],"
                "\"io_write_iops\":[{\"device\":\"/dev/d\",\"limit\":7}],\"io_weight\":8,\"tasks_max\":9,\"umask\":0,"
                "\"queue\":\"q\",\"project\":\"p\",\"exclusive\":true,\"rerunnable\":false,\"hold\":true,\"nice\":-5,"
                "\"dependencies\":[{\"type\":\"afterok\",\"job_id\":3}],\"array\":\"1-9:2%3\",\"begin_time\":10}";
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT, copy = SUBMIT_REQUEST_INIT,
                                                     minimal = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = NULL, *j = NULL, *jc = NULL, *jm = NULL;
        const char *bad = NULL;

        assert_non_null(o = json_tokener_parse(full));
        assert_int_equal(submit_request_from_json(o, &req, &bad), 0);
        assert_int_equal(submit_request_to_json(&req, &j), 0);
        assert_string_equal(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), full);

        /* The deep copy shares nothing and encodes the same. */
        assert_int_equal(submit_request_copy(&req, &copy), 0);
        assert_ptr_not_equal(copy.argv, req.argv);
        assert_ptr_not_equal(copy.argv[0], req.argv[0]);
        assert_ptr_not_equal(copy.name, req.name);
        assert_ptr_not_equal(copy.io_read_bw.items, req.io_read_bw.items);
        assert_ptr_not_equal(copy.io_read_bw.items[0].device, req.io_read_bw.items[0].device);
        assert_ptr_not_equal(copy.dependencies, req.dependencies);
        submit_request_done(&req);
        assert_int_equal(submit_request_to_json(&copy, &jc), 0);
        assert_string_equal(json_object_to_json_string_ext(jc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), full);

        /* Defaults are not sent. */
        assert_int_equal(strv_extend(&minimal.argv, "a"), 0);
        assert_int_equal(submit_request_to_json(&minimal, &jm), 0);
        assert_string_equal(json_object_to_json_string_ext(jm, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), "{\"argv\":[\"a\"]}");
}

static void test_job_info_field_table(void **state) {
        static const struct {
                const char *key, *wrong;
        } t[] = {
                { "id", "0" }, { "name", "1" }, { "user", "[]" }, { "uid", "4294967296" },
                { "project", "{}" }, { "queue", "true" }, { "state", "\"\"" }, { "reason", "1" },
                { "cpus", "8193" }, { "memory", "-1" }, { "walltime_sec", "\"never\"" },
                { "nice", "10001" }, { "submit_time", "1099511627777" }, { "start_time", "\"x\"" },
                { "end_time", "-1" }, { "exit_code", "-1" }, { "exit_signal", "128" }, { "node", "1" },
                { "cpus_allocated", "[]" }, { "array_job_id", "9007199254740993" },
                { "array_task_id", "4000001" }, { "argv", "\"a\"" }, { "has_script", "1" },
                { "env", "[1]" }, { "workdir", "1" }, { "stdin_path", "1" }, { "stdout_path", "1" },
                { "stderr_path", "1" }, { "usage", "[]" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT;
                _cleanup_json_ json_object *o = NULL;
                char text[256];
                const char *bad = NULL;

                snprintf(text, sizeof(text), "{\"id\":1,\"state\":\"PENDING\",\"%s\":%s}", t[i].key, t[i].wrong);
                assert_non_null(o = json_tokener_parse(text));
                if (job_info_from_json(o, &info, &bad) != -EINVAL || !bad || !streq(bad, t[i].key)) {
                        fprintf(stderr, "%s: got field %s\n", text, strna(bad));
                        fail();
                }
        }
}

/* est_start and priority: in the codec now, sent only for pending jobs that have them,
 * and a bad value is dropped rather than failing the listing. */
static void test_job_info_sched_view(void **state) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT, back = JOB_INFO_INIT, bad_info = JOB_INFO_INIT;
        _cleanup_json_ json_object *o = NULL, *p = NULL, *b = NULL;

        info.id = 5;
        info.state = strdup("PENDING");
        assert_int_equal(job_info_to_json(&info, false, &o), 0);
        assert_null(json_object_object_get(o, "est_start"));
        assert_null(json_object_object_get(o, "priority"));

        info.est_start = 1700000000;
        info.has_priority = true;
        info.priority = 2.5;
        assert_int_equal(job_info_to_json(&info, false, &p), 0);
        assert_string_equal(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
                            "{\"id\":5,\"uid\":0,\"state\":\"PENDING\",\"cpus\":0,\"memory\":0,"
                            "\"walltime_sec\":0,\"nice\":0,\"est_start\":1700000000,\"priority\":2.5}");
        assert_int_equal(job_info_from_json(p, &back, NULL), 0);
        assert_int_equal(back.est_start, 1700000000);
        assert_true(back.has_priority);
        assert_true(back.priority == 2.5);

        assert_non_null(b = json_tokener_parse("{\"id\":5,\"state\":\"PENDING\",\"est_start\":\"soon\",\"priority\":[]}"));
        assert_int_equal(job_info_from_json(b, &bad_info, NULL), 0);
        assert_int_equal(bad_info.est_start, 0);
        assert_false(bad_info.has_priority);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_array_spec),
                cmocka_unit_test(test_submit_round_trip),
                cmocka_unit_test(test_submit_minimal_and_defaults),
                cmocka_unit_test(test_submit_rejections),
                cmocka_unit_test(test_submit_limits),
                cmocka_unit_test(test_submit_umask),
                cmocka_unit_test(test_validators),
                cmocka_unit_test(test_job_info_round_trip),
                cmocka_unit_test(test_job_info_rejections),
                cmocka_unit_test(test_submit_in_request_envelope),
                cmocka_unit_test(test_submit_text_refusals),
                cmocka_unit_test(test_submit_text_accepted),
                cmocka_unit_test(test_submit_field_table),
                cmocka_unit_test(test_submit_validate_table),
                cmocka_unit_test(test_submit_wire_bytes),
                cmocka_unit_test(test_job_info_field_table),
                cmocka_unit_test(test_job_info_sched_view),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
