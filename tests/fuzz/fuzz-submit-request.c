/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The JSON decoders of proto/ and the CLI's reply decoding, on arbitrary JSON text:
 * submit_request_from_json() (what corrald accepts from any user) and the deep copy array
 * tasks get, job_info_from_json(), the CLI's job_entry_from_json()/job_list_from_reply(),
 * reply_parse(), array_spec_parse() and GetInfo's device list (device_info_array_from_json(),
 * shard holders included). What decodes must encode and decode again to the same thing. */

#include <errno.h>

#include "cli/commands.h"
#include "device-info.h"
#include "fuzz.h"
#include "job-request.h"
#include "json-util.h"
#include "message.h"

static char *to_text(json_object *o) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        char *d;

        fuzz_check(s);
        d = strdup(s);
        fuzz_check(d);
        return d;
}

static void check_submit_request(json_object *o) {
        _cleanup_(submit_request_done) SubmitRequest req = SUBMIT_REQUEST_INIT, again = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *j1 = NULL, *j2 = NULL, *parsed = NULL;
        _cleanup_free_ char *t1 = NULL, *t2 = NULL;
        const char *bad = NULL;
        int r;

        r = submit_request_from_json(o, &req, &bad);
        if (r == -ENOMEM)
                return;
        if (r < 0) {
                fuzz_check(r == -EINVAL && bad);
                return;
        }
        fuzz_check(submit_request_validate(&req, &bad) == 0);
        fuzz_check(submit_request_to_json(&req, &j1) == 0);
        t1 = to_text(j1);
        /* The deep copy that array tasks get encodes the same. */
        {
                _cleanup_(submit_request_done) SubmitRequest copy = SUBMIT_REQUEST_INIT;
                _cleanup_json_ json_object *jc = NULL;
                _cleanup_free_ char *tc = NULL;

                if (submit_request_copy(&req, &copy) == 0) {
                        fuzz_check(submit_request_to_json(&copy, &jc) == 0);
                        tc = to_text(jc);
                        fuzz_check(streq(t1, tc));
                }
        }
        /* Through text, as it travels. */
        fuzz_check(json_parse_strict(t1, strlen(t1), &parsed) == 0);
        r = submit_request_from_json(parsed, &again, &bad);
        if (r < 0)
                fprintf(stderr, "re-decoding %s failed at \"%s\"\n", t1, bad);
        fuzz_check(r == 0);
        fuzz_check(submit_request_to_json(&again, &j2) == 0);
        t2 = to_text(j2);
        fuzz_check(streq(t1, t2));
}

static void check_job_info(json_object *o) {
        _cleanup_(job_info_done) JobInfo info = JOB_INFO_INIT, again = JOB_INFO_INIT;
        _cleanup_json_ json_object *j1 = NULL, *j2 = NULL;
        _cleanup_free_ char *t1 = NULL, *t2 = NULL;
        const char *bad = NULL;
        int r;

        r = job_info_from_json(o, &info, &bad);
        if (r == -ENOMEM)
                return;
        if (r < 0) {
                fuzz_check(r == -EINVAL && bad);
                return;
        }
        fuzz_check(info.id >= 1 && info.state);
        fuzz_check(job_info_to_json(&info, true, &j1) == 0);
        t1 = to_text(j1);
        r = job_info_from_json(j1, &again, &bad);
        if (r < 0)
                fprintf(stderr, "re-decoding %s failed at \"%s\"\n", t1, bad);
        fuzz_check(r == 0);
        fuzz_check(job_info_to_json(&again, true, &j2) == 0);
        t2 = to_text(j2);
        fuzz_check(streq(t1, t2));
}

static void check_devices(json_object *a) {
        DeviceInfo *d = NULL;
        const char *bad = NULL;
        size_t n = 0;
        int r;

        r = device_info_array_from_json(a, &d, &n, &bad);
        if (r == -ENOMEM)
                return;
        if (r < 0) {
                fuzz_check(r == -EINVAL);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_json_ json_object *j1 = NULL, *arr = NULL;
                _cleanup_free_ char *t1 = NULL, *t2 = NULL;
                DeviceInfo *again = NULL;
                size_t m = 0;

                fuzz_check(d[i].n_shard_holders <= CORRAL_SHARDS_MAX);
                r = device_info_to_json(&d[i], &j1);
                if (r == -ENOMEM)
                        continue;
                fuzz_check(r == 0);
                t1 = to_text(j1);
                arr = json_object_new_array();
                fuzz_check(arr && json_object_array_add(arr, json_object_get(j1)) == 0);
                fuzz_check(device_info_array_from_json(arr, &again, &m, &bad) == 0 && m == 1);
                json_object_put(j1);
                j1 = NULL;
                fuzz_check(device_info_to_json(&again[0], &j1) == 0);
                t2 = to_text(j1);
                fuzz_check(streq(t1, t2));
                device_info_array_free(again, m);
        }
        device_info_array_free(d, n);
}

static void check_cli_decoders(json_object *o) {
        _cleanup_(job_list_done) JobList l = {};
        JobEntry e;
        int r;

        r = job_entry_from_json(o, &e);
        if (r >= 0)
                job_entry_done(&e);
        r = job_list_from_reply(o, &l);
        fuzz_check(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0)
                for (size_t i = 0; i < l.n; i++)
                        fuzz_check(l.items[i].info.id >= 1 && l.items[i].info.state);
}

static void check_array_spec(const char *s) {
        _cleanup_(array_spec_done) ArraySpec a = {}, b = {};
        /* A list of up to 40 ranges, each up to "99999-99999:99999,". */
        char buf[2048], buf2[2048];

        if (array_spec_parse(s, &a) < 0)
                return;
        fuzz_check(a.set && a.step >= 1 && a.start <= a.end && a.end <= CORRAL_ARRAY_INDEX_MAX);
        fuzz_check(array_spec_count(&a) >= 1 && array_spec_count(&a) <= CORRAL_ARRAY_TASKS_MAX);
        array_spec_format(&a, buf, sizeof buf);
        fuzz_check(array_spec_parse(buf, &b) == 0);
        array_spec_format(&b, buf2, sizeof buf2);
        fuzz_check(streq(buf, buf2));
        fuzz_check(array_spec_count(&a) == array_spec_count(&b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_json_ json_object *o = NULL;
        Reply reply = {};
        int r;

        r = json_parse_strict((const char *) data, size, &o);
        if (r < 0)
                return 0;

        check_submit_request(o);
        check_job_info(o);
        check_cli_decoders(o);
        if (json_object_is_type(o, json_type_string))
                check_array_spec(json_object_get_string(o));

        /* The same text as a reply envelope, decoded as the CLI does. */
        if (reply_parse((const char *) data, size, &reply) == 0) {
                _cleanup_(job_list_done) JobList l = {};
                json_object *job;

                if (json_object_object_get_ex(reply.parameters, "job", &job))
                        check_job_info(job);
                if (json_object_object_get_ex(reply.parameters, "devices", &job))
                        check_devices(job);
                if (job_list_from_reply(reply.parameters, &l) == 0)
                        fuzz_check(l.n <= CORRAL_LIST_JOBS_MAX);
                reply_done(&reply);
        }
        return 0;
}
