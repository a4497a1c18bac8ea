/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The #CORRAL/#SBATCH/#PBS directive parser of corral submit, on arbitrary job scripts.
 * Every error must format; a script whose directives parse and whose request the CLI
 * completes must be a request that corrald's decoder accepts, through JSON text. */

#include <errno.h>

#include "cli/directives.h"
#include "cli/submit-options.h"
#include "fuzz.h"
#include "json-util.h"

#define NOW ((time_t) 1700000000)

static void check_request_travels(const SubmitRequest *req) {
        _cleanup_(submit_request_done) SubmitRequest got = SUBMIT_REQUEST_INIT;
        _cleanup_json_ json_object *o = NULL, *parsed = NULL;
        const char *text, *bad = NULL;
        int r;

        fuzz_check(submit_request_to_json(req, &o) == 0);
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        fuzz_check(text);
        fuzz_check(json_parse_strict(text, strlen(text), &parsed) == 0);
        r = submit_request_from_json(parsed, &got, &bad);
        if (r < 0)
                fprintf(stderr, "the daemon would refuse %s at \"%s\"\n", text, strna(bad));
        fuzz_check(r == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static char *const environ_list[] = { (char *) "HOME=/home/fuzz", (char *) "PATH=/usr/bin:/bin",
                                              (char *) "LANG=C.UTF-8", NULL };
        _cleanup_(submit_options_done) SubmitOptions o;
        _cleanup_(directive_errors_done) DirectiveErrors errs = {};
        _cleanup_free_ char *script = fuzz_strndup(data, size), *error = NULL;
        int r;

        submit_options_init(&o, NOW);
        r = directives_parse(script, "fuzz.sh", &o, &errs);
        fuzz_check(r == 0 || r == -ENOMEM || (r == -EINVAL && errs.n > 0));
        for (size_t i = 0; i < errs.n; i++) {
                _cleanup_free_ char *s = directive_error_format(&errs.items[i]);
                fuzz_check(s && errs.items[i].line >= 1);
        }
        if (r < 0)
                return 0;

        o.req.script = TAKE_PTR(script);
        r = submit_options_finalize(&o, "/home/fuzz", environ_list, &error);
        fuzz_check(r == 0 || r == -ENOMEM || (r == -EINVAL && error));
        if (r == 0)
                check_request_travels(&o.req);
        return 0;
}
